import Foundation

/// The indexes of one context, by model type. Like the context, used by one isolation domain.
final class IndexRegistry {
    private var indexes: [ObjectIdentifier: [AnyObject]] = [:]

    var isEmpty: Bool { indexes.isEmpty }

    func add<M: Model>(_ index: any MaintainedIndex<M>) {
        indexes[ObjectIdentifier(M.self), default: []].append(index)
        // Models that write quietly must tell the index about their next write.
        ChangeEpoch.advance()
    }

    func removeAll<M: Model>(of type: M.Type) {
        indexes[ObjectIdentifier(M.self)] = nil
    }

    /// Runs `body` on the indexes of `M`.
    func withIndexes<M: Model, Result>(of type: M.Type, _ body: ([any MaintainedIndex<M>]) throws -> Result) rethrows
        -> Result
    {
        let list = (indexes[ObjectIdentifier(M.self)] ?? []).map { $0 as! any MaintainedIndex<M> }
        return try body(list)
    }

    func forEach<M: Model>(of type: M.Type, _ body: (any MaintainedIndex<M>) -> Void) {
        guard !isEmpty else { return }
        withIndexes(of: M.self) { $0.forEach(body) }
    }

    func clear() {
        for list in indexes.values {
            for index in list { (index as? any ClearableIndex)?.clearAll() }
        }
    }
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
