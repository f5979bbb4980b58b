import Foundation
import ModelKit

// Save, fetch and delete for models, written once for every backend. They run in the caller's
// isolation domain (the context's), and hand the backend only Sendable values.

extension ModelService {
    /// Saves `model`, and first every model it references (directly or not) that is new or
    /// changed, so that no reference on the server points nowhere; cycles included.
    ///
    /// A model without an object id gets one (a UUID string), which becomes its record id. A
    /// model is created when this context has never saved or fetched it through a service of the
    /// same store (``ModelService/storeIdentifier``), and replaced, with its last seen version as
    /// a precondition, when it has changes. A placeholder (``ModelKit/ModelState/needsData``) is
    /// only written when the app set values on it (`Author.instance(objectId: "001")`, then
    /// `author.name = …`), and then only created: if the record exists, that is a conflict, and
    /// nothing on the server is overwritten with values that were never loaded. Afterwards the written models' changes are reset and their state is
    /// ``ModelKit/ModelState/loaded`` (a model changed while the request was in flight keeps its
    /// changes).
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/conflict`` when a record changed on the
    ///   server since this context saw it, and the network and server errors. Local state is then
    ///   exactly as before (object ids given by this call are taken back). Records written by
    ///   earlier requests of the same save stay on the server.
    public func save<M: RemoteModel>(_ model: M, isolation: isolated (any Actor)? = #isolation) async throws(ServiceError) {
        let context = try Self.context(of: model)
        let plan = try SavePlan(root: model, context: context, store: storeIdentifier)
        guard !plan.writes.isEmpty else { return }
        let results: [RecordWriteResult]
        do {
            results = try await perform(plan.writes)
        } catch {
            plan.rollBack()
            throw error
        }
        for result in results {
            if case .failed(let error) = result {
                plan.rollBack()
                throw error
            }
        }
        guard results.count == plan.writes.count else {
            plan.rollBack()
            throw ServiceError(.invalidResponse(expected: "\(plan.writes.count) results", found: "\(results.count)"))
        }
        plan.commit(results, versions: VersionTable.of(context, store: storeIdentifier))
    }

    /// Fills `model` from its record on the server, in place: the instance the app holds is
    /// updated (never duplicated), its changes are reset and its state is
    /// ``ModelKit/ModelState/loaded``. References in the record become references to the
    /// context's models with those object ids, or to new placeholders.
    ///
    /// Typically for a placeholder (`instance(objectId:)`, or the target of a reference), but it
    /// also refreshes a loaded model, replacing unsaved changes.
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/notFound`` when there is no such record,
    ///   ``ServiceError/Code/invalidResponse`` when the record does not decode as the model. The
    ///   context is then unchanged.
    public func fetch<M: RemoteModel>(_ model: M, isolation: isolated (any Actor)? = #isolation) async throws(ServiceError) {
        let context = try Self.context(of: model)
        let id = try Self.recordId(of: model)
        let record = try await read(id)
        guard record.id == id else {
            throw ServiceError(.invalidResponse(expected: "the record \(id)", found: "the record \(record.id)"), record: id)
        }
        // The model may have left its context while the request was in flight.
        guard model.modelContext === context else {
            throw ServiceError(.invalidModel(expected: "a model in a context", found: "a model removed meanwhile"), record: id)
        }
        let entry = try RecordCodec.entry(for: record, modelName: M.modelName, modelId: model.modelId, context: context)
        do {
            _ = try M.instance(from: entry, in: context, options: DeserializationOptions(danglingPointers: .placeholder))
        } catch {
            throw ServiceError(.invalidResponse(expected: "a record that decodes as a \(M.modelName)", found: "\(error)"), record: id)
        }
        VersionTable.of(context, store: storeIdentifier).versions[model.modelId] = record.version
    }

    /// Deletes `model`'s record on the server (with its last seen version as a precondition, when
    /// this context has one), then removes the model from its context: references to it read as
    /// `nil`, as after a local removal.
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/notFound``, ``ServiceError/Code/conflict``,
    ///   and the network and server errors; the model then stays in its context.
    public func delete<M: RemoteModel>(_ model: M, isolation: isolated (any Actor)? = #isolation) async throws(ServiceError) {
        let context = try Self.context(of: model)
        let id = try Self.recordId(of: model)
        let versions = VersionTable.of(context, store: storeIdentifier)
        let results = try await perform([.delete(id, expected: versions.versions[model.modelId])])
        guard let result = results.first else {
            throw ServiceError(.invalidResponse(expected: "a result for the delete", found: "none"), record: id)
        }
        if case .failed(let error) = result { throw error }
        versions.versions[model.modelId] = nil
        model.removeFromContext()
    }

    private static func context<M: Model>(of model: M) throws(ServiceError) -> ModelContext {
        guard let context = model.modelContext else {
            throw ServiceError(.invalidModel(expected: "a model in a context", found: "a \(M.modelName) in none"))
        }
        return context
    }

    private static func recordId<M: Model>(of model: M) throws(ServiceError) -> RecordID {
        guard let objectId = model.objectId else {
            throw ServiceError(.invalidModel(expected: "a model with an object id", found: "a \(M.modelName) without one"))
        }
        let id = RecordID(collection: M.modelName, id: objectId)
        guard RecordCodec.isValidId(objectId), RecordCodec.isValidId(M.modelName) else {
            throw ServiceError(
                .invalidModel(expected: "ids of letters, digits, '_' and '-'", found: "'\(id)'"), record: id)
        }
        return id
    }
}

/// The server versions of the records a context saved or fetched through one store, by model:
/// kept in the context (its package state), so it belongs to the context's domain.
final class VersionTable {
    var versions: [ModelID: RemoteVersion] = [:]

    static func of(_ context: ModelContext, store: String) -> VersionTable {
        let key = "ModelKitServices.versions " + store
        if let table = context[packageState: key] as? VersionTable { return table }
        let table = VersionTable()
        context[packageState: key] = table
        return table
    }
}
