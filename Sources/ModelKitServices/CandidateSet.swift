import Foundation
import ModelKit

/// The candidate records of a query, decoded into a scratch context of their own (with the
/// records they reference), where the query runs again; then its matches, merged into the
/// caller's context.
///
/// Each record gets the model id it will have in the caller's context, decided before anything
/// is decoded: the id of the model the caller holds with that object id, else the `modelId` the
/// record holds when it is free, else a new one. So the scratch context orders ties (by model
/// id) exactly as the caller's would.
struct CandidateSet<M: RemoteModel> {
    /// The scratch context.
    let context: ModelContext
    private let candidates: [ModelID: RemoteRecord]
    /// Every decoded record's model id.
    private let assigned: [RecordID: ModelID]

    static func decode(
        _ records: [RemoteRecord], _ referenced: ReferencedRecords, caller: ModelContext,
        isolation: isolated (any Actor)? = #isolation
    ) throws(ServiceError) -> CandidateSet {
        let scratch = ModelContext()
        var ids = ModelIdAssignment(caller: caller)
        var candidates: [ModelID: RemoteRecord] = [:]
        var order: [(RemoteRecord, ModelID)] = []
        for (index, record) in (records + referenced.records).enumerated() {
            let held =
                index < records.count
                ? caller.model(M.self, objectId: record.id.id)?.modelId
                : ModelIdAssignment.heldModel(for: record.id, in: caller)?.modelId
            guard let id = ids.assign(record, held: held) else { continue }
            order.append((record, id))
            if index < records.count { candidates[id] = record }
        }
        let assigned = ids.assigned
        if !order.isEmpty {
            for (record, _) in order { try RecordCodec.checkPointers(of: record) }
            do {
                _ = try RecordCodec.load(order.map { ($0, $1) }, as: M.self, into: scratch, known: assigned)
            } catch {
                throw ServiceError(
                    .invalidResponse(
                        expected: "records that decode as \(M.modelName) and the models they reference", found: "\(error)"))
            }
        }
        // References to records the server does not have read as none, as they do locally
        // once such a model is deleted.
        if !referenced.missing.isEmpty {
            for model in scratch.allModels where model.modelState == .needsData {
                guard let objectId = model.objectId,
                    referenced.missing.contains(RecordID(collection: type(of: model).modelName, id: objectId))
                else { continue }
                model.removeFromContext()
            }
        }
        return CandidateSet(context: scratch, candidates: candidates, assigned: assigned)
    }

    /// Merges the records of `matches` (models of the scratch context) into `caller`, all or
    /// nothing, and returns the caller's models in the same order.
    func merge(_ matches: [M], into caller: ModelContext, versions: VersionTable) throws(ServiceError) -> [M] {
        guard !matches.isEmpty else { return [] }
        var records: [(record: RemoteRecord, modelId: ModelID)] = []
        records.reserveCapacity(matches.count)
        for match in matches {
            guard let record = candidates[match.modelId] else {
                throw ServiceError(.invalidResponse(expected: "a match among the candidates", found: "another model"))
            }
            records.append((record, match.modelId))
        }
        do {
            // Checked when they were decoded into the scratch context.
            _ = try RecordCodec.load(records, as: M.self, into: caller, known: assigned)
        } catch {
            throw ServiceError(.invalidResponse(expected: "records that decode as \(M.modelName)", found: "\(error)"))
        }
        var results: [M] = []
        results.reserveCapacity(matches.count)
        for match in matches {
            guard let model = caller.model(M.self, modelId: match.modelId), let record = candidates[match.modelId] else {
                throw ServiceError(.invalidResponse(expected: "a merged \(M.modelName)", found: "none"))
            }
            versions[model.modelId] = record.version
            results.append(model)
        }
        return results
    }
}
