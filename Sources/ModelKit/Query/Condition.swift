import Foundation

/// A condition on a property's value, checked by the compiler. Use it with a key path:
///
/// ```swift
/// Author.query().where(\.age, .between(24, 35))
/// Author.query().where(\.name, .beginsWith("jo", options: .caseInsensitive))
/// Post.query().where(\.tags, .containsAny(["swift", "ios"]))
/// Author.query().where(\.birthday, .exists())
/// ```
///
/// Conditions combine with `&&`, `||` and `!` when they are on the same property:
/// `.where(\.age, .lessThan(20) || .greaterThan(60))`.
public struct Condition<Value> {
    @usableFromInline let test: (Value) -> Bool
    /// How an index on the property can answer the condition, if one can.
    @usableFromInline var plan: IndexPlan<Value>?

    /// A condition that runs `test` on the property's value.
    @inlinable
    public init(_ test: @escaping (Value) -> Bool) {
        self.test = test
    }

    @inlinable init(plan: IndexPlan<Value>, _ test: @escaping (Value) -> Bool) {
        self.test = test
        self.plan = plan
    }

    /// Both conditions hold.
    @inlinable public static func && (lhs: Self, rhs: Self) -> Self {
        Self { lhs.test($0) && rhs.test($0) }
    }

    /// Either condition holds.
    @inlinable public static func || (lhs: Self, rhs: Self) -> Self {
        Self { lhs.test($0) || rhs.test($0) }
    }

    /// The condition doesn't hold.
    @inlinable public static prefix func ! (condition: Self) -> Self {
        Self { !condition.test($0) }
    }
}

extension Condition where Value: Equatable {
    /// The property equals `value`.
    @inlinable public static func equals(_ value: Value) -> Self { Self(plan: .equals(value)) { $0 == value } }

    /// The property differs from `value`.
    @inlinable public static func notEquals(_ value: Value) -> Self { Self { $0 != value } }

    /// The property equals one of `values`.
    ///
    /// - Complexity: O(*k*) per model for *k* values (O(1) when the values are `Hashable`).
    @inlinable public static func `in`(_ values: [Value]) -> Self { Self(plan: .oneOf(values)) { values.contains($0) } }

    /// The property equals none of `values`.
    @inlinable public static func notIn(_ values: [Value]) -> Self { Self { !values.contains($0) } }
}

extension Condition where Value: Hashable {
    /// The property equals one of `values`, looked up in a set.
    @inlinable public static func `in`(_ values: [Value]) -> Self {
        let set = Set(values)
        return Self(plan: .oneOf(values)) { set.contains($0) }
    }

    /// The property equals none of `values`, looked up in a set.
    @inlinable public static func notIn(_ values: [Value]) -> Self {
        let set = Set(values)
        return Self { !set.contains($0) }
    }
}

extension Condition where Value: Comparable {
    @inlinable public static func greaterThan(_ value: Value) -> Self {
        Self(plan: .range(lower: value, lowerInclusive: false, upper: nil, upperInclusive: false)) { $0 > value }
    }

    @inlinable public static func greaterThanOrEqual(_ value: Value) -> Self {
        Self(plan: .range(lower: value, lowerInclusive: true, upper: nil, upperInclusive: false)) { $0 >= value }
    }

    @inlinable public static func lessThan(_ value: Value) -> Self {
        Self(plan: .range(lower: nil, lowerInclusive: false, upper: value, upperInclusive: false)) { $0 < value }
    }

    @inlinable public static func lessThanOrEqual(_ value: Value) -> Self {
        Self(plan: .range(lower: nil, lowerInclusive: false, upper: value, upperInclusive: true)) { $0 <= value }
    }

    /// `lower <= property <= upper`: both bounds are included. An empty range (`lower > upper`)
    /// matches nothing.
    @inlinable public static func between(_ lower: Value, _ upper: Value) -> Self {
        Self(plan: .range(lower: lower, lowerInclusive: true, upper: upper, upperInclusive: true)) { lower <= $0 && $0 <= upper }
    }
}

extension Condition where Value == String {
    /// The property begins with `prefix`.
    public static func beginsWith(_ prefix: String, options: StringOptions = []) -> Self {
        guard !options.isEmpty else { return Self(plan: .prefix(prefix)) { $0.hasPrefix(prefix) } }
        let folded = prefix.folded(options)
        return Self { $0.folded(options).hasPrefix(folded) }
    }

    /// The property ends with `suffix`.
    public static func endsWith(_ suffix: String, options: StringOptions = []) -> Self {
        guard !options.isEmpty else { return Self { $0.hasSuffix(suffix) } }
        let folded = suffix.folded(options)
        return Self { $0.folded(options).hasSuffix(folded) }
    }

    /// The property contains `substring` (the seed's "like"). The empty string is in every string.
    public static func contains(_ substring: String, options: StringOptions = []) -> Self {
        guard !substring.isEmpty else { return Self { _ in true } }
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

extension Condition where Value: Sequence, Value.Element: Equatable {
    /// The array property has `element` as an element.
    @inlinable public static func contains(_ element: Value.Element) -> Self { Self { $0.contains(element) } }

    /// The array property has every one of `elements`.
    @inlinable public static func containsAll(_ elements: [Value.Element]) -> Self {
        Self { value in elements.allSatisfy { value.contains($0) } }
    }

    /// The array property has at least one of `elements`.
    @inlinable public static func containsAny(_ elements: [Value.Element]) -> Self {
        Self { value in elements.contains { value.contains($0) } }
    }
}

extension Condition where Value == GeoPoint {
    /// The property is at most `kilometers` from `center` along the great circle.
    public static func within(kilometers: Double, of center: GeoPoint) -> Self {
        Self { $0.distance(to: center) <= kilometers }
    }
}

extension Condition {
    /// The optional property is not nil.
    @inlinable public static func exists<Wrapped>() -> Self where Value == Wrapped? { Self { $0 != nil } }

    /// The optional property is nil.
    @inlinable public static func notExists<Wrapped>() -> Self where Value == Wrapped? { Self { $0 == nil } }
}
