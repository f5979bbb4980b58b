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
    /// The writes go in dependency order (see ``KintoService/batchesInFlight`` for how Kinto's
    /// adapter pipelines them): a record is never written before a record it references, except
    /// within a cycle of references, whose records are written next to each other (in one request,
    /// unless a request ends among them). After a failed request no further one is sent.
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/conflict`` when a record changed on the
    ///   server since this context saw it, and the network and server errors. When nothing was
    ///   written, local state is then exactly as before (object ids given by this call are taken
    ///   back). When some records were written (``ServiceError/writtenRecords`` names them), their
    ///   models are saved as after a successful save, every other model keeps its changes, and
    ///   the object ids given by this call stay, since written records may reference them: saving
    ///   again writes the rest.
    /// - Complexity: O(*n*) in the size of the graph's records, plus the requests.
    public func save<M: RemoteModel>(_ model: M, isolation: isolated (any Actor)? = #isolation) async throws(ServiceError) {
        let context = try Self.context(of: model)
        let plan = try SavePlan(root: model, context: context, store: storeIdentifier)
        guard !plan.writes.isEmpty else { return }
        let results: [RecordWriteResult]
        do {
            // Files made offline that the records name go first.
            try await (self as? any PendingFileUploads)?.uploadPendingFiles(namedIn: plan.writes)
            if let pipelined = self as? any PipelinedWrites {
                results = try await pipelined.perform(plan.writes, after: .dependencies(plan.dependencies))
            } else {
                results = try await perform(plan.writes)
            }
        } catch {
            plan.rollBack()
            throw error
        }
        guard results.count == plan.writes.count else {
            plan.rollBack()
            throw ServiceError(.invalidResponse(expected: "\(plan.writes.count) results", found: "\(results.count)"))
        }
        // The first failure that is not a consequence of another.
        var failure: ServiceError?
        var written: [RecordID] = []
        for (write, result) in zip(plan.writes, results) {
            switch result {
            case .written: written.append(write.record)
            case .failed(let error):
                if failure == nil || (failure?.code == .notAttempted && error.code != .notAttempted) { failure = error }
            }
        }
        guard var failure else {
            plan.commit(results, versions: VersionTable.of(context, store: storeIdentifier))
            return
        }
        if written.isEmpty {
            plan.rollBack()
        } else {
            plan.commit(results, versions: VersionTable.of(context, store: storeIdentifier))
            failure.writtenRecords = written
        }
        throw failure
    }

    /// Fills `model` from its record on the server, in place, and with a `referenceDepth` the
    /// models it references too: the instances the app holds are updated (never duplicated),
    /// their changes are reset and their state is ``ModelKit/ModelState/loaded``. References in
    /// the records become references to the context's models with those object ids, or to new
    /// placeholders.
    ///
    /// Typically for a placeholder (`instance(objectId:)`, or the target of a reference), but it
    /// also refreshes a loaded model, replacing unsaved changes.
    ///
    /// ```swift
    /// let author = Author.instance(objectId: "001", in: context)
    /// try await service.fetch(author, referenceDepth: 1)   // the author and their posts
    /// ```
    ///
    /// With a depth of *d*, the models reachable from `model` in at most *d* references on the
    /// server are fetched too (`Int.max`: every one); the references beyond stay placeholders.
    /// They are read level by level, one request per collection per 100 records of a level, and
    /// merged all at once, cycles included:
    ///
    /// - A referenced model the context holds with unsaved changes is left as it is (only
    ///   `model` itself is refreshed whatever its changes), and a later save of it still checks
    ///   for changes made on the server since the context last saw it.
    /// - A reference to a record the server does not have reads as `nil` (a placeholder for it
    ///   is removed from the context), as after a delete.
    ///
    /// - Parameters:
    ///   - referenceDepth: How many references away from `model` to fetch: 0 (the default) for
    ///     the model alone, `Int.max` for everything it reaches.
    ///   - maximumRecords: How many records the fetch may decode at most, `model`'s included.
    /// - Throws: ``ServiceError``: ``ServiceError/Code/notFound`` when there is no record for
    ///   `model` (a missing referenced record is not an error), ``ServiceError/Code/queryTooBroad``
    ///   when the references reach more than `maximumRecords` records,
    ///   ``ServiceError/Code/invalidResponse`` when a record does not decode as its model or the
    ///   server answers with records not asked for, and the network and server errors. The
    ///   context is then unchanged.
    /// - Complexity: O(*r*) in the size of the records fetched, plus one request, and one per
    ///   collection per level per 100 records of the level when `referenceDepth` is not 0 (one
    ///   per record for a backend that cannot list records).
    public func fetch<M: RemoteModel>(
        _ model: M, referenceDepth: Int = 0, maximumRecords: Int = 100_000, isolation: isolated (any Actor)? = #isolation
    ) async throws(ServiceError) {
        let context = try Self.context(of: model)
        let id = try Self.recordId(of: model)
        let tooMany = ServiceError(.tooManyReferences(maximum: maximumRecords), record: id)
        guard maximumRecords >= 1 else { throw tooMany }
        let record = try await read(id)
        guard record.id == id else {
            throw ServiceError(.invalidResponse(expected: "the record \(id)", found: "the record \(record.id)"), record: id)
        }
        let walk = ReferenceWalk(depth: max(referenceDepth, 0), fields: nil, maximumRecords: maximumRecords, tooMany: tooMany)
        let referenced = try await referencedRecords(of: [record], walk: walk)
        // The model may have left its context while the requests were in flight. Everything
        // else is decided from here on, with no suspension before the merge.
        guard model.modelContext === context else {
            throw ServiceError(.invalidModel(expected: "a model in a context", found: "a model removed meanwhile"), record: id)
        }
        try FetchedGraph.merge(
            root: model, record: record, referenced: referenced, into: context,
            versions: VersionTable.of(context, store: storeIdentifier))
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
        let results = try await perform([.delete(id, expected: versions[model.modelId])])
        guard let result = results.first else {
            throw ServiceError(.invalidResponse(expected: "a result for the delete", found: "none"), record: id)
        }
        if case .failed(let error) = result { throw error }
        versions[model.modelId] = nil
        model.removeFromContext()
    }

    static func context<M: Model>(of model: M) throws(ServiceError) -> ModelContext {
        guard let context = model.modelContext else {
            throw ServiceError(.invalidModel(expected: "a model in a context", found: "a \(M.modelName) in none"))
        }
        return context
    }

    static func recordId<M: Model>(of model: M) throws(ServiceError) -> RecordID {
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
