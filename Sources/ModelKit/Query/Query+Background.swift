import Foundation

// Running a query without blocking the caller: the scan runs on a background task and finds the
// matches' ids; the models are then looked up on the caller's side, so they never cross to
// another isolation domain.

extension Query {
    /// The results, computed on a background task while the caller waits without blocking its
    /// thread (or actor).
    ///
    /// ```swift
    /// @MainActor func refresh() async throws {
    ///     authors = try await Author.query().where(\.age, .greaterThan(30)).resultsInBackground()
    /// }
    /// ```
    ///
    /// The background task reads the models of the context, so, as for any use of models from
    /// another task, don't write them while the query runs. The caller awaits, so its own writes
    /// can't interleave; models written by other tasks are theirs to coordinate. Models removed
    /// from the context while the query ran are left out.
    ///
    /// - Throws: ``QueryError``, as ``results()`` does.
    /// - Complexity: As ``results()``, plus O(k) lookups for k results.
    public func resultsInBackground(isolation: isolated (any Actor)? = #isolation) async throws(QueryError) -> [M] {
        let context = self.context ?? ModelContext.current
        let query = Query(copying: self, context: context)
        let ids = try await BackgroundJob { () throws(QueryError) in try query.results().map(\.modelId) }.run()
        return ids.compactMap { context.model(M.self, modelId: $0) }
    }

    /// How many models match, counted on a background task. See ``resultsInBackground(isolation:)``.
    public func countInBackground(isolation: isolated (any Actor)? = #isolation) async throws(QueryError) -> Int {
        let query = Query(copying: self, context: context ?? ModelContext.current)
        return try await BackgroundJob { () throws(QueryError) in try query.count() }.run()
    }

    init(copying query: Query, context: ModelContext) {
        self.init(context: context)
        predicate = query.predicate
        sortKeys = query.sortKeys
        limitCount = query.limitCount
        offsetCount = query.offsetCount
    }
}

/// Work for a background task: a query bound to its context. The closure is not `Sendable`: it
/// reads the models' properties, which the task may do under the concurrency rule documented on
/// ``Query/resultsInBackground(isolation:)``. Only the `Sendable` result comes back.
private final class BackgroundJob<T: Sendable>: @unchecked Sendable {
    private let work: () throws(QueryError) -> T

    init(_ work: @escaping () throws(QueryError) -> T) {
        self.work = work
    }

    func run() async throws(QueryError) -> T {
        let result = await runDetached { () -> Result<T, QueryError> in
            do throws(QueryError) {
                return .success(try self.work())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}

/// Runs `work` on a detached task. Not generic over the model type, so that no model metatype is
/// captured by the task's closure.
private func runDetached<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await Task.detached(operation: work).value
}
