#if canImport(SwiftUI)
import SwiftUI

/// A SwiftUI property wrapper that keeps a query's results up to date in a view: SwiftData's
/// `@Query`, over ``LiveResults``.
///
/// The query is built once, the first time the view reads the results, and its live results are
/// kept in the view's state for as long as the view is shown. Reading them in `body` tracks them,
/// so the view updates after every change of its context that changes what they show. All the
/// work is done by ``LiveResults``; this wrapper only holds it.
///
/// ```swift
/// struct AuthorList: View {
///     @LiveQuery(Author.query().where(\.age, .greaterThan(30)).sorted(by: \.name))
///     var authors: LiveResults<Author>
///
///     var body: some View {
///         List(authors) { author in Text(author.name) }
///     }
/// }
/// ```
///
/// The query's context is the one it was built in: `Author.query()` uses the main actor's current
/// context, `Author.query(in: context)` the one passed in. A query that can't run (a negative
/// distance, say) shows no results, and their ``LiveResults/lastError`` is its ``QueryError``; to
/// handle the error where the query is made, build it with ``Query/live()`` and hold the results
/// in `@State`.
///
/// - Complexity: The query runs once, when the results are first read; then as ``LiveResults``.
@MainActor @propertyWrapper
public struct LiveQuery<M: Model>: DynamicProperty {
    /// Where the live results are kept between the view's updates, made on first read.
    @MainActor private final class Storage {
        var results: LiveResults<M>?
    }

    @State private var storage = Storage()
    private let makeQuery: () -> Query<M>

    /// Follows `query`, which is built (and run) only when the results are first read.
    ///
    /// - Complexity: O(1).
    public init(_ query: @autoclosure @escaping () -> Query<M>) {
        makeQuery = query
    }

    /// The live results of the query.
    ///
    /// - Complexity: O(1) after the first read, which runs the query.
    public var wrappedValue: LiveResults<M> {
        if let results = storage.results { return results }
        let results = makeQuery().liveOrFailed()
        storage.results = results
        return results
    }
}
#endif
