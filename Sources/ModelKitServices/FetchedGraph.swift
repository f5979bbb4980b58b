import Foundation
import ModelKit

/// Merges a fetched record and the records it references into the caller's context, all or
/// nothing, in one deserialization: the models the context holds (by object id) are updated in
/// place, the others are added, and pointers between them (cycles included) name the right
/// models because every model id is decided first (``ModelIdAssignment``).
///
/// - The root is always refreshed, its unsaved changes replaced (as a fetch of it alone does).
/// - A referenced model with unsaved changes is left as it is, and its version in the context is
///   not touched, so that saving it later still checks for changes made on the server meanwhile.
/// - A placeholder (without changes) for a record looked for and not found is removed from the
///   context, so that references to it read as none, as after a delete. A loaded model whose
///   record is gone is left alone.
enum FetchedGraph {
    static func merge<M: RemoteModel>(
        root: M, record: RemoteRecord, referenced: ReferencedRecords, into context: ModelContext, versions: VersionTable
    ) throws(ServiceError) {
        var ids = ModelIdAssignment(caller: context)
        _ = ids.assign(record, held: root.modelId)
        var merged: [(record: RemoteRecord, modelId: ModelID)] = [(record, root.modelId)]
        for record in referenced.records {
            let held = ModelIdAssignment.heldModel(for: record.id, in: context)
            if let held, held.hasChanges { continue }
            guard let id = ids.assign(record, held: held?.modelId) else { continue }
            merged.append((record, id))
        }
        try load(merged, as: M.self, into: context, known: ids.assigned, versions: versions)
        // Nothing can fail from here on: the merge is done.
        for id in referenced.missing {
            guard let model = ModelIdAssignment.heldModel(for: id, in: context), model.modelState == .needsData,
                !model.hasChanges
            else { continue }
            model.removeFromContext()
        }
    }

    /// Loads `merged` into `context`, all or nothing, as models of the records' types (the first
    /// one as an `M`), and records their versions. `known` names the model ids already given.
    ///
    /// - Throws: ``ServiceError/Code/invalidResponse`` naming the first record that does not
    ///   decode (its pointers, or its fields); the context is then unchanged.
    /// - Complexity: O(*n*) in the size of the records.
    static func load<M: RemoteModel>(
        _ merged: [(record: RemoteRecord, modelId: ModelID)], as type: M.Type, into context: ModelContext,
        known: [RecordID: ModelID], versions: VersionTable
    ) throws(ServiceError) {
        guard let first = merged.first else { return }
        for (record, _) in merged { try RecordCodec.checkPointers(of: record) }
        do {
            _ = try RecordCodec.load(merged, as: M.self, into: context, known: known)
        } catch {
            let index = (error as? SerializationError)?.modelIndex
            let failed = index.flatMap { merged.indices.contains($0) ? merged[$0].record.id : nil }
            let name = failed?.collection ?? M.modelName
            throw ServiceError(
                .invalidResponse(expected: "a record that decodes as a \(name)", found: "\(error)"),
                record: failed ?? first.record.id)
        }
        for (record, id) in merged { versions[id] = record.version }
    }
}
