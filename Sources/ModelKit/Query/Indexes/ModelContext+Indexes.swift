import Foundation

/// The indexes of one context, by model type. Like the context, used by one isolation domain.
final class IndexRegistry {
    /// Each type's indexes, in a list typed for it: reading them back is a pointer cast, where
    /// casting each index from `AnyObject` to `any MaintainedIndex<M>` would be a dynamic cast
    /// to a parameterized existential on every write of an indexed model (which showed in the
    /// writes of a batch). Unchecked: the registry is its context's, used by one domain, and
    /// every insertion asks it (the run-time check cost more than the empty look-up).
    @exclusivity(unchecked) private var lists: [ObjectIdentifier: AnyIndexList] = [:]

    var isEmpty: Bool { lists.isEmpty }

    func add<M: Model>(_ index: any MaintainedIndex<M> & ClearableIndex) {
        let key = ObjectIdentifier(M.self)
        let list = lists[key].map { unsafeDowncast($0, to: IndexList<M>.self) } ?? IndexList<M>()
        list.indexes.append(index)
        list.clearables.append(index)
        lists[key] = list
        // Models that write quietly must tell the index about their next write.
        ChangeEpoch.advance()
    }

    func removeAll<M: Model>(of type: M.Type) {
        lists[ObjectIdentifier(M.self)] = nil
    }

    /// Runs `body` on the indexes of `M`.
    func withIndexes<M: Model, Result>(of type: M.Type, _ body: ([any MaintainedIndex<M>]) throws -> Result) rethrows
        -> Result
    {
        // Only `add` stores a list under `M`'s key, and it stores an `IndexList<M>`.
        guard let list = lists[ObjectIdentifier(M.self)] else { return try body([]) }
        return try body(unsafeDowncast(list, to: IndexList<M>.self).indexes)
    }

    func forEach<M: Model>(of type: M.Type, _ body: (any MaintainedIndex<M>) -> Void) {
        guard !isEmpty, let list = lists[ObjectIdentifier(M.self)] else { return }
        for index in unsafeDowncast(list, to: IndexList<M>.self).indexes { body(index) }
    }

    func clear() {
        for list in lists.values {
            for index in list.clearables { index.clearAll() }
        }
    }
}

/// The indexes of one model type, whatever the type.
class AnyIndexList {
    /// The same indexes as the typed list's, to clear them.
    var clearables: [any ClearableIndex] = []
}

/// The indexes of the model type `M`.
final class IndexList<M: Model>: AnyIndexList {
    var indexes: [any MaintainedIndex<M>] = []
}

/// Forgets every entry (the context was cleared).
protocol ClearableIndex: AnyObject {
    func clearAll()
}

extension ModelIndex: ClearableIndex {
    func clearAll() { removedAll() }
}

/// The kinds of index a context can keep.
public enum IndexKind: Sendable, Hashable {
    /// Equality and `in` in O(1) per value.
    case hash
    /// Equality, `in`, ranges (`<`, `<=`, `>`, `>=`, `between`) and `beginsWith` in
    /// O(log n + k) for k results; updates cost O(n) moves (many at once trigger a re-sort).
    case ordered
}

extension ModelContext {
    /// Indexes the property at `keyPath` of the models of type `type` in this context, so that
    /// queries with equality, `in` (both kinds), ranges and `beginsWith` (ordered) on it read the
    /// index instead of scanning every model.
    ///
    /// ```swift
    /// context.addIndex(on: \.age, of: Author.self)                  // ordered
    /// context.addIndex(on: \.email, of: Author.self, kind: .hash)
    /// try Author.query(in: context).where(\.age, .between(24, 35)).results()   // uses the index
    /// try Author.query(in: context).filter("age >= 30").count()                // so does this
    /// ```
    ///
    /// The index covers models inserted and removed later, and follows their writes: a write
    /// marks the model, and the next query that uses the index re-reads it. Results are the same
    /// with and without an index.
    ///
    /// - Parameters:
    ///   - keyPath: A property of the model's `Properties` (nested struct fields work too).
    ///   - type: The model type.
    ///   - kind: ``IndexKind/ordered`` (the default) or ``IndexKind/hash``.
    ///   - key: The property's name in string keys and the query language, when ModelKit can't
    ///     find it by itself. It finds it for stored properties (nested ones too) by changing the
    ///     value in a default instance and seeing which key of the encoding changes.
    /// - Complexity: O(n log n) to build over n models of the type.
    public func addIndex<M: Model, Value: IndexableValue & Comparable>(
        on keyPath: KeyPath<M.Properties, Value>, of type: M.Type, kind: IndexKind = .ordered, key: String? = nil
    ) {
        let name = key ?? IndexKeyProbe.key(of: keyPath, in: M.self)
        let less: ((Value, Value) -> Bool)? = kind == .ordered ? { $0 < $1 } : nil
        indexRegistry.add(ModelIndex<M, Value>(keyPath: keyPath, key: name, less: less, models: models(of: M.self)))
    }

    /// Indexes a property whose values are not ordered, such as a `Bool` or a `UUID`, with a
    /// hash index: equality and `in` conditions use it.
    ///
    /// ```swift
    /// context.addHashIndex(on: \.isActive, of: Author.self)
    /// ```
    ///
    /// - Complexity: O(n) to build over n models of the type.
    public func addHashIndex<M: Model, Value: IndexableValue>(
        on keyPath: KeyPath<M.Properties, Value>, of type: M.Type, key: String? = nil
    ) {
        let name = key ?? IndexKeyProbe.key(of: keyPath, in: M.self)
        indexRegistry.add(ModelIndex<M, Value>(keyPath: keyPath, key: name, less: nil, models: models(of: M.self)))
    }

    /// Drops every index of the models of type `type`.
    public func removeIndexes<M: Model>(of type: M.Type) {
        indexRegistry.removeAll(of: M.self)
    }

    /// The number of indexes on models of type `type`.
    public func indexCount<M: Model>(of type: M.Type) -> Int {
        indexRegistry.withIndexes(of: M.self) { $0.count }
    }

    /// Whether the context has any index (a quick check before the generic call below).
    @usableFromInline var hasIndexes: Bool { !indexRegistry.isEmpty }

    /// Tells the indexes of `model`'s type that its properties may have changed.
    @usableFromInline func noteIndexedWrite<M: Model>(_ model: M) {
        guard !indexRegistry.isEmpty else { return }
        indexRegistry.forEach(of: M.self) { $0.written(model) }
    }
}
