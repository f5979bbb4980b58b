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
    /// values, as by ``fetch(_:isolation:)``.
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

    /// Every record of `request`, page after page, without duplicates.
    private func collect(_ request: RecordListRequest, maximumCandidates: Int) async throws(ServiceError) -> [RemoteRecord] {
        var records: [RemoteRecord] = []
        var seen = Set<String>()
        var cursor: RecordCursor?
        var emptyPages = 0
        repeat {
            let page = try await listRecords(request, after: cursor)
            for record in page.records where seen.insert(record.id.id).inserted {
                guard record.id.collection == request.collection else {
                    throw ServiceError(
                        .invalidResponse(
                            expected: "records of \(request.collection)", found: "a record of \(record.id.collection)"),
                        record: record.id)
                }
                records.append(record)
            }
            if let limit = request.limit, records.count >= limit {
                records.removeLast(records.count - limit)
                break
            }
            guard records.count <= maximumCandidates else { throw ServiceError(.queryTooBroad(maximum: maximumCandidates)) }
            // A server that keeps answering empty pages with a next one would never end.
            emptyPages = page.records.isEmpty ? emptyPages + 1 : 0
            guard emptyPages < 8 else {
                throw ServiceError(
                    .invalidResponse(expected: "records or the last page", found: "\(emptyPages) empty pages in a row"))
            }
            cursor = page.next
        } while cursor != nil
        return records
    }

    /// The records that the candidates reference through the fields the plan follows, hop after
    /// hop, by collection.
    private func referencedRecords(of candidates: [RemoteRecord], plan: RemoteQueryPlan, maximumCandidates: Int)
        async throws(ServiceError) -> ReferencedRecords
    {
        var result = ReferencedRecords()
        guard plan.followedDepth != 0, !candidates.isEmpty else { return result }
        var known = Set(candidates.map { "\($0.id.collection)/\($0.id.id)" })
        var level = candidates
        var hops = 0
        while !level.isEmpty, plan.followedDepth.map({ hops < $0 }) ?? true {
            hops += 1
            var wanted: [String: [String]] = [:]
            for record in level {
                for (key, value) in record.fields where plan.followedDepth == nil || plan.followedFields.contains(key) {
                    Self.pointers(in: value) { model, objectId in
                        guard known.insert("\(model)/\(objectId)").inserted else { return }
                        wanted[model, default: []].append(objectId)
                    }
                }
            }
            level = []
            for (collection, ids) in wanted.sorted(by: { $0.key < $1.key }) {
                guard RecordCodec.isValidId(collection) else { continue }
                let valid = ids.filter(RecordCodec.isValidId)
                result.missing.formUnion(ids.map { "\(collection)/\($0)" })
                for start in stride(from: 0, to: valid.count, by: 100) {
                    let chunk = Array(valid[start..<min(start + 100, valid.count)])
                    let request = RecordListRequest(
                        collection: collection, conditions: [RecordCondition(.recordId, .in, chunk.map(ModelValue.string))])
                    let found = try await collect(request, maximumCandidates: maximumCandidates)
                    for record in found { result.missing.remove("\(collection)/\(record.id.id)") }
                    level += found
                    result.records += found
                    guard candidates.count + result.records.count <= maximumCandidates else {
                        throw ServiceError(.queryTooBroad(maximum: maximumCandidates))
                    }
                }
            }
        }
        return result
    }

    /// Calls `body` with the model name and object id of each pointer in `value`.
    private static func pointers(in value: ModelValue, _ body: (String, String) -> Void) {
        switch value {
        case .array(let elements):
            for element in elements { pointers(in: element, body) }
        case .object(let object):
            if object["__type"] == "ModelPointer" {
                if let model = object["model"]?.stringValue, let objectId = object["objectId"]?.stringValue {
                    body(model, objectId)
                }
            } else {
                for (_, element) in object { pointers(in: element, body) }
            }
        default:
            break
        }
    }

    /// Whether each candidate would keep the model id its record holds in `context` (ties of a
    /// server-side order go by that id).
    private static func keepModelIds<M: Model>(_ records: [RemoteRecord], _ type: M.Type, in context: ModelContext) -> Bool {
        records.allSatisfy { record in
            guard let text = record.fields["modelId"]?.stringValue, let id = ModelID(text) else { return false }
            if let model = context.model(M.self, objectId: record.id.id) { return model.modelId == id }
            return context.model(withId: id) == nil
        }
    }
}

/// The records that candidates reference, and the pointers to records the server does not have.
struct ReferencedRecords {
    var records: [RemoteRecord] = []
    /// "model/objectId" of records looked for and not found: references to them read as none.
    var missing: Set<String> = []
}
