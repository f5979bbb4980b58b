import Foundation

/// A query over the models of one type in a context: a filter, an order and a window.
///
/// ```swift
/// let page = try Author.query()
///     .where(\.age, .between(24, 35))
///     .filter("name BEGINSWITH[c] 'jo' OR tags CONTAINS 'swift'")
///     .sorted(by: \.name)
///     .offset(20)
///     .limit(10)
///     .page()
/// page.models      // at most 10 authors
/// page.totalCount  // how many matched in all
/// ```
///
/// A query is a value: each method returns a new query. Nothing is read until ``results()``,
/// ``count()``, ``first()`` or ``page()`` runs it, against the models in the context at that
/// moment. Like any use of models, run a query on the thread (or task) that uses them.
public struct Query<M: Model> {
    let context: ModelContext
    var predicate: ModelPredicate<M> = .all
    var sortKeys: [SortKey<M>] = []
    var limitCount: Int?
    var offsetCount = 0

    init(context: ModelContext) {
        self.context = context
    }

    /// Only models that also satisfy `predicate`.
    public func filter(_ predicate: ModelPredicate<M>) -> Self {
        var query = self
        query.predicate = query.predicate && predicate
        return query
    }

    /// Only models that also satisfy `text`, in the query language (at most
    /// ``ModelPredicate/maximumTextLength`` bytes, nested at most 256 levels).
    ///
    /// - Throws: ``QueryError/Code/syntax`` with the column where `text` goes wrong.
    public func filter(_ text: String) throws(QueryError) -> Self {
        filter(try ModelPredicate(text))
    }

    /// Only models whose property at `keyPath` satisfies `condition`.
    public func `where`<Value>(_ keyPath: KeyPath<M.Properties, Value>, _ condition: Condition<Value>) -> Self {
        filter(.where(keyPath, condition))
    }

    /// Only models whose optional property at `keyPath` satisfies `condition`; nil satisfies
    /// `notEquals` and `notIn`, and no other condition (see ``Condition``).
    public func `where`<Value>(_ keyPath: KeyPath<M.Properties, Value?>, _ condition: Condition<Value>) -> Self {
        filter(.where(keyPath, condition))
    }

    /// Only models whose property at `key` (a dotted path) satisfies `condition`: the seed's
    /// `key:condition:value:`. Any number of conditions may name the same key.
    public func `where`(_ key: String, _ condition: QueryCondition) -> Self {
        filter(.where(key, condition))
    }

    /// Orders the results by the property at `keyPath`; later calls break ties of earlier ones.
    public func sorted<Value: Comparable>(by keyPath: KeyPath<M.Properties, Value>, ascending: Bool = true) -> Self {
        var query = self
        let read = Self.reader(keyPath)
        let field = MemoryLayout<M.Properties>.offset(of: keyPath).map {
            (offset: $0, optional: false, isString: Value.self == String.self)
        }
        query.sortKeys.append(
            .typed(ascending: ascending, field: field, read: Self.sortValueReader(keyPath)) { a, b in Self.order(read(a), read(b))
            })
        return query
    }

    /// Orders the results by an optional property; nil comes before every value in ascending
    /// order (after every value in descending order).
    public func sorted<Value: Comparable>(by keyPath: KeyPath<M.Properties, Value?>, ascending: Bool = true) -> Self {
        var query = self
        let read = Self.reader(keyPath)
        query.sortKeys.append(
            .typed(
                ascending: ascending,
                field: MemoryLayout<M.Properties>.offset(of: keyPath).map {
                    (offset: $0, optional: true, isString: Value.self == String.self)
                },
                read: Self.sortValueReader(keyPath)
            ) { a, b in
                switch (read(a), read(b)) {
                case (nil, nil): return .orderedSame
                case (nil, _): return .orderedAscending
                case (_, nil): return .orderedDescending
                case (let x?, let y?): return Self.order(x, y)
                }
            })
        return query
    }

    /// Orders the results by the property at `key` (a dotted path). Nil comes first in
    /// ascending order; strings compare by Unicode scalars (see ``StringOptions``), or folded
    /// under `options`.
    ///
    /// ```swift
    /// Author.query().sorted(by: "name", options: .caseInsensitive)
    /// ```
    ///
    /// - Complexity: O(k log k) comparisons for k matches. Each model's value is read once (in
    ///   place for the kinds string-key conditions read in place, see <doc:Querying>) and, with
    ///   options, folded once.
    public func sorted(by key: String, ascending: Bool = true, options: StringOptions = []) -> Self {
        var query = self
        let path = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        query.sortKeys.append(.keyed(path: path, ascending: ascending, options: options))
        return query
    }

    /// Orders the results nearest first by the distance of the ``GeoPoint`` at `keyPath` from
    /// `center`.
    public func sorted(byDistanceOf keyPath: KeyPath<M.Properties, GeoPoint>, from center: GeoPoint) -> Self {
        var query = self
        let read = Self.reader(keyPath)
        query.sortKeys.append(
            .typed(ascending: true, field: nil, read: { .double(read($0).distance(to: center)) }) { a, b in
                Self.order(read(a).distance(to: center), read(b).distance(to: center))
            })
        return query
    }

    /// Orders the results nearest first by the distance of the ``GeoPoint`` at `key` from `center`;
    /// models without a point come last.
    public func sorted(byDistanceOf key: String, from center: GeoPoint) -> Self {
        var query = self
        let path = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        query.sortKeys.append(.distance(path: path, center: center))
        return query
    }

    /// At most `count` results. Paging without an order goes by model id, so pages don't overlap.
    public func limit(_ count: Int) -> Self {
        var query = self
        query.limitCount = max(0, count)
        return query
    }

    /// Skips the first `count` results.
    public func offset(_ count: Int) -> Self {
        var query = self
        query.offsetCount = max(0, count)
        return query
    }

    /// Reads the property at `keyPath` of a model: at its offset for a stored property, without
    /// copying the model's properties (a sort reads two models per comparison).
    static func reader<Value>(_ keyPath: KeyPath<M.Properties, Value>) -> (M) -> Value {
        guard let offset = MemoryLayout<M.Properties>.offset(of: keyPath) else {
            return { $0.storage.values[keyPath: keyPath] }
        }
        return { model in model.storage.box.withValuesPointer { $0.load(fromByteOffset: offset, as: Value.self) } }
    }

    static func order<T: Comparable>(_ a: T, _ b: T) -> ComparisonResult {
        a == b ? .orderedSame : (a < b ? .orderedAscending : .orderedDescending)
    }

    /// Reads a key path's value for sorting, once per model: as a ``SortValue`` for the types it
    /// holds (a nil optional as `.null`; a date as its time since the reference date, which its
    /// `<` and `==` compare), else `.model`, and the key compares the models.
    static func sortValueReader<Value>(_ keyPath: KeyPath<M.Properties, Value>) -> (M) -> SortValue {
        sortValueReader(keyPath, String.self, SortValue.string)
            ?? sortValueReader(keyPath, Int.self, SortValue.int)
            ?? sortValueReader(keyPath, Double.self, SortValue.double)
            ?? sortValueReader(keyPath, Date.self) { .double($0.timeIntervalSinceReferenceDate) }
            ?? { _ in .model }
    }

    /// A reader of `keyPath` when its value is a `Kind` or a `Kind?`, else `nil`.
    private static func sortValueReader<Value, Kind>(
        _ keyPath: KeyPath<M.Properties, Value>, _ kind: Kind.Type, _ wrap: @escaping (Kind) -> SortValue
    ) -> ((M) -> SortValue)? {
        if let path = keyPath as? KeyPath<M.Properties, Kind> {
            let read = reader(path)
            return { wrap(read($0)) }
        }
        if let path = keyPath as? KeyPath<M.Properties, Kind?> {
            let read = reader(path)
            return { read($0).map(wrap) ?? .null }
        }
        return nil
    }
}

/// One key of a query's order.
enum SortKey<M: Model> {
    /// By a key path: where the stored property lies (when it is one) and whether it is a
    /// `String`, so that the key can be described by name and read in place; its value for sorting (see ``SortValue``); and the comparison of two
    /// models, for a value `read` gives as `.model`.
    case typed(
        ascending: Bool, field: (offset: Int, optional: Bool, isString: Bool)?, read: (M) -> SortValue,
        (M, M) -> ComparisonResult)
    case keyed(path: [String], ascending: Bool, options: StringOptions)
    case distance(path: [String], center: GeoPoint)
}

/// A page of results with the number of models that matched in all: the seed's
/// `MKitQueryResultKey` and `MKitQueryItemCountKey`.
public struct QueryPage<M: Model> {
    /// The models in the page, in the query's order.
    public let models: [M]
    /// How many models matched, ignoring `limit` and `offset`.
    public let totalCount: Int
}

extension Model {
    /// A query over the models of this type in `context`.
    ///
    /// ```swift
    /// let authors = try Author.query(in: context).where(\.age, .greaterThan(30)).results()
    /// ```
    ///
    /// - Parameters:
    ///   - context: The context whose models the query reads.
    ///   - isolation: The caller's domain; leave it to the default. A context made outside any
    ///     actor becomes its own (see ``ModelContext/init(isolation:)``).
    /// - Complexity: O(1).
    public static func query(in context: ModelContext, isolation: (any Actor)? = #isolation) -> Query<Self> {
        context.claim(for: isolation)
        return Query(context: context)
    }

    /// A query over the models of this type in the main actor's ``ModelContext/current`` context,
    /// taken now.
    ///
    /// ```swift
    /// let authors = try Author.query().where(\.age, .greaterThan(30)).results()
    /// ```
    ///
    /// - Complexity: O(1).
    @MainActor public static func query() -> Query<Self> {
        Query(context: .current)
    }
}
