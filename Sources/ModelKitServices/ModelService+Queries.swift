import Foundation
import ModelKit

// Queries on the server, written once for every backend. The query's conditions that the backend
// evaluates are sent (see RemoteQueryPlan); the candidate records that come back are decoded
// into a scratch context, where the query itself runs again, so the answer is exactly the one
// the same query gives locally over the same records. Only the matches reach the caller's
// context.

extension ModelService {
    /// Runs `query` on the server and returns its matches, in the query's order and window (by
    /// model id when it has no order), merged into the query's context by identity: a model the context already holds (by
    /// object id) is updated in place and returned, never duplicated; the others are added.
    ///
    /// ```swift
    /// let authors = try await service.fetch(
    ///     Author.query(in: context).where("age", .greaterThan(30)).sorted(by: "age").limit(20))
    /// ```
    ///
    /// The conditions the server can evaluate are sent to it; the rest (string options, OR
    /// across keys, negated compounds, distances, closures) are evaluated on the candidates it
    /// returns, with the records the conditions reach through references. The results are those
    /// the same query gives locally over the server's records. Models of the context that are not
    /// on the server are not results; a result's unsaved changes are replaced by the server's
    /// values, as by ``fetch(_:referenceDepth:maximumRecords:isolation:)``.
    ///
    /// - Parameter maximumCandidates: How many candidate records the query may decode at most
    ///   (those the server returns, and the records they reference).
    /// - Throws: ``ServiceError``: ``ServiceError/Code/invalidQuery`` for a query that cannot run
    ///   (an unknown key), ``ServiceError/Code/queryTooBroad`` beyond `maximumCandidates`,
    ///   ``ServiceError/Code/invalidResponse`` for a record that does not decode, and the network
    ///   and server errors. The context is then unchanged.
    /// - Complexity: O(*c*) in the candidates, plus a request per page of them; O(*k* log *k*) to
    ///   order *k* matches.
    public func fetch<M: RemoteModel>(
        _ query: Query<M>, maximumCandidates: Int = 100_000, isolation: isolated (any Actor)? = #isolation
    ) async throws(ServiceError) -> [M] {
        try Self.validate(query)
        let outline = query.outline
        if outline.limit == 0 { return [] }
        let plan = RemoteQueryPlan(outline, M.self, service: self)
        var request = RecordListRequest(collection: M.modelName, conditions: plan.conditions)
        var windowed = false
        if let order = plan.serverOrder, let limit = outline.limit {
            // The server orders as the query does: only the window's records are needed.
            let (end, overflow) = outline.offset.addingReportingOverflow(limit)
            if !overflow {
                request = RecordListRequest(collection: M.modelName, conditions: plan.conditions, order: order, limit: end)
                windowed = true
            }
        }
        var candidates = try await collect(request, maximumCandidates: maximumCandidates)
        if windowed, !Self.keepModelIds(candidates, M.self, in: query.queryContext) {
            // Ties would not go as the server ordered them: order all matches here.
            request = RecordListRequest(collection: M.modelName, conditions: plan.conditions)
            candidates = try await collect(request, maximumCandidates: maximumCandidates)
        }
        let referenced = try await referencedRecords(of: candidates, plan: plan, maximumCandidates: maximumCandidates)
        let scratch = try CandidateSet<M>.decode(candidates, referenced, caller: query.queryContext)
        var matches: [M]
        do {
            matches = try query.running(in: scratch.context).results()
        } catch {
            throw ServiceError(.invalidQuery("\(error)"))
        }
        if outline.sortKeys.isEmpty, outline.limit == nil, outline.offset == 0 {
            // Unordered: by model id, as a window without an order goes, not in the order the
            // records came in.
            matches.sort { $0.modelId < $1.modelId }
        }
        return try scratch.merge(
            matches, into: query.queryContext, versions: VersionTable.of(query.queryContext, store: storeIdentifier))
    }

    /// How many records on the server match `query`, ignoring its `limit` and `offset`.
    ///
    /// ```swift
    /// let adults = try await service.count(Author.query(in: context).where("age", .greaterThanOrEqual(18)))
    /// ```
    ///
    /// When the server evaluates every condition exactly, it counts (one request, no record
    /// sent); otherwise the candidates are fetched and counted here, as ``fetch(_:maximumCandidates:isolation:)``
    /// would match them. The context is not changed.
    ///
    /// - Throws: ``ServiceError``, as ``fetch(_:maximumCandidates:isolation:)``.
    /// - Complexity: One request for an exact filter; else as ``fetch(_:maximumCandidates:isolation:)``.
    public func count<M: RemoteModel>(
        _ query: Query<M>, maximumCandidates: Int = 100_000, isolation: isolated (any Actor)? = #isolation
    ) async throws(ServiceError) -> Int {
        try Self.validate(query)
        let plan = RemoteQueryPlan(query.outline, M.self, service: self)
        let request = RecordListRequest(collection: M.modelName, conditions: plan.conditions)
        if plan.isExact {
            return try await countRecords(request)
        }
        let candidates = try await collect(request, maximumCandidates: maximumCandidates)
        let referenced = try await referencedRecords(of: candidates, plan: plan, maximumCandidates: maximumCandidates)
        let scratch = try CandidateSet<M>.decode(candidates, referenced, caller: query.queryContext)
        do {
            return try query.running(in: scratch.context).count()
        } catch {
            throw ServiceError(.invalidQuery("\(error)"))
        }
    }

    /// What the service would send for `query`: the conditions, whether they are exact, and the
    /// order; for tests.
    func plan<M: RemoteModel>(of query: Query<M>) -> RemoteQueryPlan {
        RemoteQueryPlan(query.outline, M.self, service: self)
    }

    /// Checks the query before any request: what the query reports locally (unknown keys,
    /// values of the wrong kind) it reports remotely too.
    private static func validate<M: Model>(_ query: Query<M>, isolation: isolated (any Actor)? = #isolation) throws(ServiceError)
    {
        do {
            _ = try query.running(in: ModelContext()).count()
        } catch {
            throw ServiceError(.invalidQuery("\(error)"))
        }
    }

    /// Every record of `request` (see ``collect(_:maximumCandidates:tooMany:)``), with the query's
    /// error beyond `maximumCandidates`.
    private func collect(_ request: RecordListRequest, maximumCandidates: Int) async throws(ServiceError) -> [RemoteRecord] {
        try await collect(
            request, maximumCandidates: maximumCandidates, tooMany: ServiceError(.queryTooBroad(maximum: maximumCandidates)))
    }

    /// The records that the candidates reference through the fields the plan follows, hop after
    /// hop, by collection.
    private func referencedRecords(of candidates: [RemoteRecord], plan: RemoteQueryPlan, maximumCandidates: Int)
        async throws(ServiceError) -> ReferencedRecords
    {
        // Without a bound on the hops (a condition on a key path through a cycle), every field
        // is followed.
        let walk = ReferenceWalk(
            depth: plan.followedDepth, fields: plan.followedDepth == nil ? nil : plan.followedFields,
            maximumRecords: maximumCandidates, tooMany: ServiceError(.queryTooBroad(maximum: maximumCandidates)))
        return try await referencedRecords(of: candidates, walk: walk)
    }

    /// Whether each candidate would keep the model id its record holds in `context` (ties of a
    /// server-side order go by that id).
    private static func keepModelIds<M: Model>(_ records: [RemoteRecord], _ type: M.Type, in context: ModelContext) -> Bool {
        records.allSatisfy { record in
            guard let text = record.storedModelId, let id = ModelID(text) else { return false }
            if let model = context.model(M.self, objectId: record.id.id) { return model.modelId == id }
            return context.model(withId: id) == nil
        }
    }
}
