import Foundation

/// What a typed condition asks of an index, when an index can answer it.
@usableFromInline enum IndexPlan<Value> {
    case equals(Value)
    case oneOf([Value])
    /// Values between the bounds; a missing bound is open.
    case range(lower: Value?, lowerInclusive: Bool, upper: Value?, upperInclusive: Bool)
    /// Strings beginning with the prefix (no case or diacritic folding).
    case prefix(String)
}

/// A typed condition's way to an index on its key path: given the indexes of the model type,
/// the candidates for the condition (a superset of the models that satisfy it), or `nil` when no
/// index applies.
@usableFromInline struct IndexProbe<M: Model> {
    @usableFromInline let lookup: ([any PropertyIndex<M>]) -> [M]?

    @usableFromInline init<Value>(keyPath: KeyPath<M.Properties, Value>, plan: IndexPlan<Value>) {
        lookup = { indexes in
            for index in indexes where index.keyPath == keyPath {
                if let typed = index as? any PlannedIndex<M, Value>, let candidates = typed.candidates(for: plan) {
                    return candidates
                }
            }
            return nil
        }
    }
}

/// An index on one property of one model type, as the context and the planner see it.
@usableFromInline protocol PropertyIndex<M>: AnyObject {
    associatedtype M: Model
    /// The key path the index covers.
    var keyPath: AnyKeyPath { get }
    /// The property's string key (a dotted path), when known: string-key and query-language
    /// conditions on it use the index too.
    var key: String? { get }
    /// The number of models indexed.
    var count: Int { get }
}

/// The internal side of an index: upkeep and lookups.
protocol MaintainedIndex<M>: PropertyIndex {
    func inserted(_ model: M)
    func removed(_ model: M)
    func written(_ model: M)
    func removedAll()
    /// Brings the index up to date with the models written since the last refresh.
    func refresh()
    /// The candidates for a string-key condition, or `nil` when the index can't answer it.
    func candidates(for condition: QueryCondition) -> [M]?
    /// The indexed property of `model` in the form a string-key condition compares, read
    /// directly (no encoding of the model's properties).
    func queryValue(of model: M) -> ModelValue
}

/// An index that answers typed plans for values of type `Value`.
protocol PlannedIndex<M, Value>: PropertyIndex {
    associatedtype Value
    func candidates(for plan: IndexPlan<Value>) -> [M]?
}
