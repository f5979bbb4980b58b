import Foundation

/// A condition on a property's value, checked by the compiler. Use it with a key path:
///
/// ```swift
/// Author.query().where(\.age, .between(24, 35))
/// Author.query().where(\.name, .beginsWith("jo", options: .caseInsensitive))
/// Author.query().where(\.name, .equals("émile", options: [.caseInsensitive, .diacriticInsensitive]))
/// Post.query().where(\.tags, .containsAny(["swift", "ios"]))
/// Author.query().where(\.birthday, .exists())
/// ```
///
/// Conditions combine with `&&`, `||` and `!` when they are on the same property:
/// `.where(\.age, .lessThan(20) || .greaterThan(60))`.
///
/// On an optional property, a condition on the wrapped type decides nil as the string-key form
/// and the query language do: `notEquals` and `notIn` match nil, every other condition doesn't,
/// and `&&`, `||` and `!` combine those answers (`!.equals("x")` matches nil, like
/// `.notEquals("x")`). A condition made with ``init(_:)`` doesn't match nil.
public struct Condition<Value> {
    @usableFromInline let test: (Value) -> Bool
    /// How an index on the property can answer the condition, if one can.
    @usableFromInline var plan: IndexPlan<Value>?
    /// Whether a nil optional property satisfies the condition: what the string-key form answers
    /// for nil (see `ModelPredicate.where` on optionals).
    @usableFromInline var matchesNil = false
    /// The condition as an operator and its operands, for the plain conditions the string-key form
    /// also has (no string options, not combined): a scan compiles those to the test the string-key
    /// condition compiles to, which reads the property in place (see `FieldMatcher`), instead of
    /// calling `test` on a copy of it.
    @usableFromInline var operation: Operation?
    /// How the condition was made from others with `&&`, `||` or `!`, so that combining it again
    /// stays flat and shallow (see ``Combination``); `nil` for a plain condition.
    @usableFromInline var combination: Combination?
    /// The nesting: 1 for a plain condition, one more per `&&`, `||` or `!` around it (a chain
    /// of `&&` or of `||` is one level); above ``ModelPredicate/maximumNesting`` it is too deep.
    @usableFromInline var depth = 1

    /// An operator and its operands: an array of values of the property's type, or of its element
    /// type for the array conditions. The array is kept whole, not as an array of `Any`, so that
    /// it is not boxed value by value (a condition may have thousands of values).
    @usableFromInline struct Operation {
        @usableFromInline let op: QueryCondition.Operator
        @usableFromInline let operands: Any

        @inlinable init<Operand>(_ op: QueryCondition.Operator, _ operands: [Operand]) {
            self.op = op
            self.operands = operands
        }
    }

    /// A condition that runs `test` on the property's value. On an optional property, it doesn't
    /// match nil.
    @inlinable
    public init(_ test: @escaping (Value) -> Bool) {
        self.test = test
    }

    @inlinable init(
        plan: IndexPlan<Value>?, matchesNil: Bool = false, operation: Operation? = nil, _ test: @escaping (Value) -> Bool
    ) {
        self.test = test
        self.plan = plan
        self.matchesNil = matchesNil
        self.operation = operation
    }

    /// Both conditions hold.
    ///
    /// - Complexity: O(1) amortized when `lhs` is the longest condition of its chain (the usual
    ///   `c = c && d` in a loop), else O(n) in the operands.
    public static func && (lhs: Self, rhs: Self) -> Self {
        chained(lhs, rhs, isAnd: true)
    }

    /// Either condition holds.
    ///
    /// - Complexity: As `&&`.
    public static func || (lhs: Self, rhs: Self) -> Self {
        chained(lhs, rhs, isAnd: false)
    }

    /// The condition doesn't hold. Negating a negation gives back the condition negated.
    ///
    /// - Complexity: O(1).
    public static prefix func ! (condition: Self) -> Self {
        if condition.isTooDeep { return condition }
        if case .negation(let negated)? = condition.combination { return negated }
        let test = condition.test
        var result = Self(plan: nil, matchesNil: !condition.matchesNil) { !test($0) }
        result.combination = .negation(condition)
        return result.nested(condition.depth + 1)
    }
}

// Combining conditions. A condition built in code can be nested or chained without bound:
// `c = c || d` a hundred thousand times, or `!` thirty thousand times. Nested closures would make
// the first quadratic to build and both overflow the stack when run or released. So a chain of
// `&&` or of `||` is one flat list of operands, shared by the conditions built from it one
// operand at a time, double negations cancel, and past ``ModelPredicate/maximumNesting`` levels
// a condition keeps nothing and a query using it throws.
extension Condition {
    /// How a condition was combined from others.
    @usableFromInline indirect enum Combination {
        /// The first `count` operands of a chain.
        case chain(Chain, count: Int)
        /// `!` of this condition.
        case negation(Condition)
        /// Nested deeper than the limit: its operands were dropped.
        case tooDeep
    }

    /// The operands of a chain of `&&` or of `||`. Each condition of the chain sees a prefix,
    /// so that adding an operand to the longest one appends in place.
    @usableFromInline final class Chain {
        let isAnd: Bool
        var operands: [Condition]

        init(isAnd: Bool, operands: [Condition]) {
            self.isAnd = isAnd
            self.operands = operands
        }

        /// Whether the first `count` operands all hold (`&&`) or one of them does (`||`),
        /// looked at in order until the answer is known.
        func test(_ value: Value, count: Int) -> Bool {
            operands.withUnsafeBufferPointer { operands in
                for index in 0..<count where operands[index].test(value) != isAnd { return !isAnd }
                return isAnd
            }
        }
    }

    /// Whether the condition was nested deeper than the limit.
    @usableFromInline var isTooDeep: Bool {
        if case .tooDeep? = combination { return true }
        return false
    }

    /// The condition with nesting `depth`, or one that keeps nothing when that is too deep.
    private func nested(_ depth: Int) -> Self {
        guard depth > maximumQueryNesting else {
            var result = self
            result.depth = depth
            return result
        }
        var result = Self(plan: nil) { _ in false }
        result.combination = .tooDeep
        result.depth = depth
        return result
    }

    /// Whether the condition is a chain of `&&` (`isAnd`) or of `||`.
    private func isChain(isAnd: Bool) -> Bool {
        if case .chain(let chain, _)? = combination { return chain.isAnd == isAnd }
        return false
    }

    /// The operands the condition adds to a chain of `&&` (`isAnd`) or of `||`: its own, if it
    /// is such a chain, else itself.
    private func operands(isAnd: Bool) -> ArraySlice<Self> {
        if case .chain(let chain, let count)? = combination, chain.isAnd == isAnd { return chain.operands[..<count] }
        return [self]
    }

    private static func chained(_ lhs: Self, _ rhs: Self, isAnd: Bool) -> Self {
        if lhs.isTooDeep { return lhs }
        if rhs.isTooDeep { return rhs }
        let left = lhs.isChain(isAnd: isAnd) ? lhs.depth : lhs.depth + 1
        let right = rhs.isChain(isAnd: isAnd) ? rhs.depth : rhs.depth + 1
        let added = rhs.operands(isAnd: isAnd)
        let chain: Chain
        if case .chain(let shared, let count)? = lhs.combination, shared.isAnd == isAnd, count == shared.operands.count {
            shared.operands.append(contentsOf: added)
            chain = shared
        } else {
            chain = Chain(isAnd: isAnd, operands: Array(lhs.operands(isAnd: isAnd) + added))
        }
        let count = chain.operands.count
        let matchesNil = isAnd ? lhs.matchesNil && rhs.matchesNil : lhs.matchesNil || rhs.matchesNil
        var result = Self(plan: nil, matchesNil: matchesNil) { chain.test($0, count: count) }
        result.combination = .chain(chain, count: count)
        return result.nested(max(left, right))
    }
}

extension Condition where Value: Equatable {
    /// The property equals `value`.
    @inlinable public static func equals(_ value: Value) -> Self {
        Self(plan: .equals(value), operation: Operation(.equal, [value])) { $0 == value }
    }

    /// The property differs from `value`. On an optional property, nil differs from every value.
    @inlinable public static func notEquals(_ value: Value) -> Self {
        Self(plan: nil, matchesNil: true, operation: Operation(.notEqual, [value])) { $0 != value }
    }

    /// The property equals one of `values`.
    ///
    /// - Complexity: O(*k*) per model for *k* values (O(1) when the values are `Hashable`).
    @inlinable public static func `in`(_ values: [Value]) -> Self {
        Self(plan: .oneOf(values), operation: Operation(.in, values)) { values.contains($0) }
    }

    /// The property equals none of `values`. On an optional property, nil equals none of them.
    @inlinable public static func notIn(_ values: [Value]) -> Self {
        Self(plan: nil, matchesNil: true, operation: Operation(.notIn, values)) { !values.contains($0) }
    }
}

extension Condition where Value: Hashable {
    /// The property equals one of `values`, looked up in a set.
    @inlinable public static func `in`(_ values: [Value]) -> Self {
        let set = Set(values)
        return Self(plan: .oneOf(values), operation: Operation(.in, values)) { set.contains($0) }
    }

    /// The property equals none of `values`, looked up in a set. On an optional property, nil
    /// equals none of them.
    @inlinable public static func notIn(_ values: [Value]) -> Self {
        let set = Set(values)
        return Self(plan: nil, matchesNil: true, operation: Operation(.notIn, values)) { !set.contains($0) }
    }
}

extension Condition where Value: Comparable {
    @inlinable public static func greaterThan(_ value: Value) -> Self {
        Self(
            plan: .range(lower: value, lowerInclusive: false, upper: nil, upperInclusive: false),
            operation: Operation(.greater, [value])
        ) {
            $0 > value
        }
    }

    @inlinable public static func greaterThanOrEqual(_ value: Value) -> Self {
        Self(
            plan: .range(lower: value, lowerInclusive: true, upper: nil, upperInclusive: false),
            operation: Operation(.greaterOrEqual, [value])
        ) {
            $0 >= value
        }
    }

    @inlinable public static func lessThan(_ value: Value) -> Self {
        Self(
            plan: .range(lower: nil, lowerInclusive: false, upper: value, upperInclusive: false),
            operation: Operation(.less, [value])
        ) {
            $0 < value
        }
    }

    @inlinable public static func lessThanOrEqual(_ value: Value) -> Self {
        Self(
            plan: .range(lower: nil, lowerInclusive: false, upper: value, upperInclusive: true),
            operation: Operation(.lessOrEqual, [value])
        ) {
            $0 <= value
        }
    }

    /// `lower <= property <= upper`: both bounds are included. An empty range (`lower > upper`)
    /// matches nothing.
    @inlinable public static func between(_ lower: Value, _ upper: Value) -> Self {
        Self(
            plan: .range(lower: lower, lowerInclusive: true, upper: upper, upperInclusive: true),
            operation: Operation(.between, [lower, upper])
        ) { lower <= $0 && $0 <= upper }
    }
}

extension Condition where Value == String {
    /// The property begins with `prefix`.
    public static func beginsWith(_ prefix: String, options: StringOptions = []) -> Self {
        guard !options.isEmpty else {
            return Self(plan: .prefix(prefix), operation: Operation(.beginsWith, [prefix])) { $0.hasPrefix(prefix) }
        }
        let folded = prefix.folded(options)
        return Self { $0.folded(options).hasPrefix(folded) }
    }

    /// The property ends with `suffix`.
    public static func endsWith(_ suffix: String, options: StringOptions = []) -> Self {
        guard !options.isEmpty else {
            return Self(plan: nil, operation: Operation(.endsWith, [suffix])) { $0.hasSuffix(suffix) }
        }
        let folded = suffix.folded(options)
        return Self { $0.folded(options).hasSuffix(folded) }
    }

    /// The property contains `substring` (the seed's "like"). The empty string is in every string.
    public static func contains(_ substring: String, options: StringOptions = []) -> Self {
        guard !substring.isEmpty else { return Self { _ in true } }
        guard !options.isEmpty else {
            return Self(plan: nil, operation: Operation(.contains, [substring])) { $0.contains(substring) }
        }
        let folded = substring.folded(options)
        return Self { $0.folded(options).contains(folded) }
    }

    /// The whole property matches `pattern`: `*` is any run of characters, `?` one character,
    /// `\` escapes either.
    public static func like(_ pattern: String, options: StringOptions = []) -> Self {
        let pattern = WildcardPattern(pattern, options: options)
        return Self { pattern.matches($0) }
    }
}

// String options on equality, membership and ordering, as the string-key form and the query
// language (`=[c]`, `IN[cd]`, `<[c]`) take them. The options are not defaulted, so that
// `.equals("x")` stays the plain condition an index can answer. Text compares folded, exactly as
// `QueryCondition` compares it.
extension Condition where Value == String {
    /// The property equals `value` under `options`: `.equals("emile", options: [.caseInsensitive,
    /// .diacriticInsensitive])` matches "Émile".
    public static func equals(_ value: String, options: StringOptions) -> Self {
        guard !options.isEmpty else { return equals(value) }
        let folded = value.folded(options)
        return Self { $0.folded(options) == folded }
    }

    /// The property differs from `value` under `options`. On an optional property, nil differs.
    public static func notEquals(_ value: String, options: StringOptions) -> Self {
        let folded = value.folded(options)
        return Self(plan: nil, matchesNil: true) { $0.folded(options) != folded }
    }

    /// The property equals one of `values` under `options`.
    ///
    /// - Complexity: O(*m*) per model for a property of length *m*: the folded values are looked
    ///   up in a set.
    public static func `in`(_ values: [String], options: StringOptions) -> Self {
        guard !options.isEmpty else { return `in`(values) }
        let set = Set(values.map { $0.folded(options) })
        return Self { set.contains($0.folded(options)) }
    }

    /// The property equals none of `values` under `options`. On an optional property, nil equals
    /// none of them.
    public static func notIn(_ values: [String], options: StringOptions) -> Self {
        let set = Set(values.map { $0.folded(options) })
        return Self(plan: nil, matchesNil: true) { !set.contains($0.folded(options)) }
    }

    /// The property orders after `value` under `options` (`>[c]`).
    public static func greaterThan(_ value: String, options: StringOptions) -> Self {
        ordered(value, options) { $0 > $1 } ?? greaterThan(value)
    }

    /// The property orders after `value`, or equals it, under `options` (`>=[c]`).
    public static func greaterThanOrEqual(_ value: String, options: StringOptions) -> Self {
        ordered(value, options) { $0 >= $1 } ?? greaterThanOrEqual(value)
    }

    /// The property orders before `value` under `options` (`<[c]`).
    public static func lessThan(_ value: String, options: StringOptions) -> Self {
        ordered(value, options) { $0 < $1 } ?? lessThan(value)
    }

    /// The property orders before `value`, or equals it, under `options` (`<=[c]`).
    public static func lessThanOrEqual(_ value: String, options: StringOptions) -> Self {
        ordered(value, options) { $0 <= $1 } ?? lessThanOrEqual(value)
    }

    /// A comparison of the folded property with the folded `value`; `nil` without options (the
    /// plain condition, which an index can answer, applies).
    private static func ordered(_ value: String, _ options: StringOptions, _ compare: @escaping (String, String) -> Bool)
        -> Self?
    {
        guard !options.isEmpty else { return nil }
        let folded = value.folded(options)
        return Self { compare($0.folded(options), folded) }
    }
}

extension Condition where Value: Sequence, Value.Element: Equatable {
    /// The array property has `element` as an element.
    @inlinable public static func contains(_ element: Value.Element) -> Self {
        Self(plan: nil, operation: Operation(.contains, [element])) { $0.contains(element) }
    }

    /// The array property has every one of `elements`.
    @inlinable public static func containsAll(_ elements: [Value.Element]) -> Self {
        Self(plan: nil, operation: Operation(.containsAll, elements)) { value in elements.allSatisfy { value.contains($0) } }
    }

    /// The array property has at least one of `elements`.
    @inlinable public static func containsAny(_ elements: [Value.Element]) -> Self {
        Self(plan: nil, operation: Operation(.containsAny, elements)) { value in elements.contains { value.contains($0) } }
    }
}

extension Condition where Value: Sequence, Value.Element == String {
    /// The array property has an element equal to `element` under `options` (`CONTAINS[c]`).
    public static func contains(_ element: String, options: StringOptions) -> Self {
        let folded = element.folded(options)
        return Self { $0.contains { $0.folded(options) == folded } }
    }

    /// The array property has, for every one of `elements`, an element equal to it under `options`.
    public static func containsAll(_ elements: [String], options: StringOptions) -> Self {
        let wanted = Set(elements.map { $0.folded(options) })
        return Self { value in wanted.isSubset(of: value.map { $0.folded(options) }) }
    }

    /// The array property has an element equal to one of `elements` under `options`.
    public static func containsAny(_ elements: [String], options: StringOptions) -> Self {
        let wanted = Set(elements.map { $0.folded(options) })
        return Self { value in value.contains { wanted.contains($0.folded(options)) } }
    }
}

extension Condition where Value == GeoPoint {
    /// The property is at most `kilometers` from `center` along the great circle, and on Earth
    /// (latitude from -90 to 90, longitude from -180 to 180: a point out of range matches no
    /// `WITHIN`, so a server can look for matches in a bounding box).
    public static func within(kilometers: Double, of center: GeoPoint) -> Self {
        Self { $0.isWithin(kilometers: kilometers, of: center) }
    }
}

extension Condition {
    /// The optional property is not nil.
    @inlinable public static func exists<Wrapped>() -> Self where Value == Wrapped? { Self { $0 != nil } }

    /// The optional property is nil.
    @inlinable public static func notExists<Wrapped>() -> Self where Value == Wrapped? { Self { $0 == nil } }
}
