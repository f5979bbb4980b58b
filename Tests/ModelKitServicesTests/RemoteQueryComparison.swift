import Foundation
import ModelKit
import Testing

@testable import ModelKitServices

/// How ``bothWays(_:_:comparing:isolation:)`` puts the two answers side by side.
enum AnswerComparison {
    /// In the query's order. An unordered query (no sort, limit or offset) lists its local
    /// matches by model id, as the service returns them, so that the order is compared too.
    case inOrder
    /// Both answers sorted by object id: only which models match is compared.
    case asSets
}

/// Runs `query` locally (in its own context) and on the server into a fresh context, and
/// returns both answers as object ids, lined up as `comparing` says.
func bothWays<M: RemoteModel>(
    _ query: Query<M>, _ service: KintoService, comparing: AnswerComparison = .inOrder,
    isolation: isolated (any Actor)? = #isolation
) async throws -> (local: [String], remote: [String]) {
    var local = try query.results()
    if comparing == .inOrder, query.outline.sortKeys.isEmpty, query.outline.limit == nil, query.outline.offset == 0 {
        // Locally, an unordered query lists matches as the context holds them; remotely, by id.
        local.sort { $0.modelId < $1.modelId }
    }
    let remote = try await service.fetch(query.running(in: ModelContext())).map { $0.objectId ?? "?" }
    let localIds = local.map { $0.objectId ?? "?" }
    switch comparing {
    case .inOrder: return (localIds, remote)
    case .asSets: return (localIds.sorted(), remote.sorted())
    }
}

/// Runs `count` queries made by `next` both ways (see ``bothWays(_:_:comparing:isolation:)``)
/// and records an issue for each one whose answers differ or that fails, with the seed, the
/// query's index, `next`'s description of it, both answers and the conditions sent. It stops
/// after five such queries, so that a broken plan does not flood the report.
///
/// - Returns: How many of the queries that ran sent conditions to the server, for the caller's
///   check that the comparison was not vacuous.
func compareRandomQueries<M: RemoteModel>(
    _ count: Int, seed: UInt64, on service: KintoService, comparing: AnswerComparison = .inOrder,
    sourceLocation: SourceLocation = #_sourceLocation, isolation: isolated (any Actor)? = #isolation,
    next: () -> (query: Query<M>, text: String)
) async -> Int {
    var pushed = 0
    var mismatches = 0
    for index in 0..<count {
        let (query, text) = next()
        let plan = service.plan(of: query)
        if !plan.conditions.isEmpty { pushed += 1 }
        let label = "seed \(seed), query \(index): \(text)"
        do {
            let (local, remote) = try await bothWays(query, service, comparing: comparing)
            if local != remote {
                mismatches += 1
                Issue.record(
                    "\(label)\nlocal:  \(local)\nremote: \(remote)\nsent: \(plan.conditions)", sourceLocation: sourceLocation)
            }
        } catch {
            mismatches += 1
            Issue.record("\(label): \(error)", sourceLocation: sourceLocation)
        }
        if mismatches >= 5 { break }
    }
    return pushed
}
