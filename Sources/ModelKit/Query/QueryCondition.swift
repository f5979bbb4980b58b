import Foundation

/// One condition on a property named by a string key: the seed's `key:condition:value:`.
///
/// ```swift
/// Author.query().where("age", .between(24, 35))
/// Author.query().where("name", .beginsWith("jo", options: .caseInsensitive))
/// Post.query().where("author.age", .greaterThan(30))      // through a reference
/// Author.query().where("address.city", .equals("Paris")) // into a nested struct
/// ```
///
/// For conditions checked by the compiler, use key paths and ``Condition`` instead.
public struct QueryCondition: Sendable {
    @usableFromInline package enum Operator: String, Sendable {
        case equal = "=="
        case notEqual = "!="
        case greater = ">"
        case greaterOrEqual = ">="
        case less = "<"
        case lessOrEqual = "<="
        case `in` = "IN"
        case notIn = "NOT IN"
        case exists = "EXISTS"
        case notExists = "NOT EXISTS"
        case between = "BETWEEN"
        case beginsWith = "BEGINSWITH"
        case endsWith = "ENDSWITH"
        case contains = "CONTAINS"
        case like = "LIKE"
        case containsAll = "CONTAINSALL"
        case containsAny = "CONTAINSANY"
        case within = "WITHIN"
    }

    package let op: Operator
    package let values: [ModelValue]
    package let options: StringOptions
    /// For ``within(kilometers:of:)``: the centre and the radius.
    package let center: GeoPoint?
    package let kilometers: Double

    package init(_ op: Operator, _ values: [ModelValue], options: StringOptions = [], center: GeoPoint? = nil, kilometers: Double = 0) {
        self.op = op
        self.values = values
        self.options = options
        self.center = center
        self.kilometers = kilometers
    }

    /// The property equals `value` (`nil` matches a nil property).
    public static func equals(_ value: some QueryValueConvertible, options: StringOptions = []) -> Self {
        Self(.equal, [value.queryValue], options: options)
    }

    /// The property differs from `value`. A nil property differs from every value but nil.
    public static func notEquals(_ value: some QueryValueConvertible, options: StringOptions = []) -> Self {
        Self(.notEqual, [value.queryValue], options: options)
    }

    /// The property is greater than `value`. A nil property matches no ordering condition. Strings compare under `options`.
    public static func greaterThan(_ value: some QueryValueConvertible, options: StringOptions = []) -> Self {
        Self(.greater, [value.queryValue], options: options)
    }

    /// The property is greater than or equal to `value`. Strings compare under `options`.
    public static func greaterThanOrEqual(_ value: some QueryValueConvertible, options: StringOptions = []) -> Self {
        Self(.greaterOrEqual, [value.queryValue], options: options)
    }

    /// The property is less than `value`. Strings compare under `options`.
    public static func lessThan(_ value: some QueryValueConvertible, options: StringOptions = []) -> Self {
        Self(.less, [value.queryValue], options: options)
    }

    /// The property is less than or equal to `value`. Strings compare under `options`.
    public static func lessThanOrEqual(_ value: some QueryValueConvertible, options: StringOptions = []) -> Self {
        Self(.lessOrEqual, [value.queryValue], options: options)
    }

    /// The property equals one of `values`.
    public static func `in`<V: QueryValueConvertible>(_ values: [V], options: StringOptions = []) -> Self {
        Self(.in, values.map(\.queryValue), options: options)
    }

    /// The property equals none of `values`. A nil property matches unless `values` holds nil.
    public static func notIn<V: QueryValueConvertible>(_ values: [V], options: StringOptions = []) -> Self {
        Self(.notIn, values.map(\.queryValue), options: options)
    }

    /// The property is not nil (a to-one reference: it resolves to a model).
    public static var exists: Self { Self(.exists, []) }

    /// The property is nil.
    public static var notExists: Self { Self(.notExists, []) }

    /// `lower <= property <= upper`: both bounds are included (the seed's "within").
    public static func between(_ lower: some QueryValueConvertible, _ upper: some QueryValueConvertible) -> Self {
        Self(.between, [lower.queryValue, upper.queryValue])
    }

    /// The string property begins with `prefix`.
    public static func beginsWith(_ prefix: String, options: StringOptions = []) -> Self {
        Self(.beginsWith, [.string(prefix)], options: options)
    }

    /// The string property ends with `suffix`.
    public static func endsWith(_ suffix: String, options: StringOptions = []) -> Self {
        Self(.endsWith, [.string(suffix)], options: options)
    }

    /// A string property contains `value` as a substring (the seed's "like"); an array property
    /// has `value` as an element.
    public static func contains(_ value: some QueryValueConvertible, options: StringOptions = []) -> Self {
        Self(.contains, [value.queryValue], options: options)
    }

    /// The whole string matches `pattern`, where `*` is any run of characters and `?` one
    /// character (`\` escapes either).
    public static func like(_ pattern: String, options: StringOptions = []) -> Self {
        Self(.like, [.string(pattern)], options: options)
    }

    /// The array property has every one of `values` as an element.
    public static func containsAll<V: QueryValueConvertible>(_ values: [V], options: StringOptions = []) -> Self {
        Self(.containsAll, values.map(\.queryValue), options: options)
    }

    /// The array property has at least one of `values` as an element.
    public static func containsAny<V: QueryValueConvertible>(_ values: [V], options: StringOptions = []) -> Self {
        Self(.containsAny, values.map(\.queryValue), options: options)
    }

    /// The ``GeoPoint`` property is at most `kilometers` from `center`, along the great circle,
    /// and on Earth: a point with a latitude outside -90…90 or a longitude outside -180…180
    /// matches no `WITHIN` (so a server can look for matches in a bounding box).
    public static func within(kilometers: Double, of center: GeoPoint) -> Self {
        Self(.within, [], center: center, kilometers: kilometers)
    }
}

extension QueryCondition: CustomStringConvertible {
    public var description: String {
        let suffix =
            options.isEmpty
            ? ""
            : "[" + (options.contains(.caseInsensitive) ? "c" : "")
                + (options.contains(.diacriticInsensitive) ? "d" : "") + "]"
        switch op {
        case .exists, .notExists: return op.rawValue
        case .between: return "BETWEEN {\(values[0]), \(values[1])}"
        case .in, .notIn, .containsAll, .containsAny:
            return op.rawValue + suffix + " {" + values.map(\.description).joined(separator: ", ") + "}"
        case .within:
            return "WITHIN \(kilometers) KM OF {\(center?.latitude ?? 0), \(center?.longitude ?? 0)}"
        default: return op.rawValue + suffix + " " + values[0].description
        }
    }
}
