import Foundation

/// Tests compiled for a property read in place (see ``PropertyLayout``), for the common cases: an
/// `Int`, `Int64`, `Double` or `String` (also optional) compared with values of its own kind
/// without string options, `[String]` membership, `Bool` equality and `GeoPoint` distance. They
/// decide exactly as ``QueryCondition/matches(_:key:modelName:)`` would, without building a
/// ``ModelValue`` per model: a nil optional matches `notEquals` and `notIn` only. Other cases
/// return `nil` and take the general path (which also reports kinds that don't compare).
///
/// Both condition forms compile here: a string-key condition on a field the layout located, and a
/// key-path condition given as an operator and operands (see ``Condition``), so that a scan runs
/// the same tests whichever form asked.
///
/// An integer against integers, a string equal to a string and a string array holding a string
/// are tests a scan makes itself (see ``Kernel``). Any other test is one closure in which the
/// comparison is inlined (the comparisons are structs, not closures, so the generic `reading`
/// specializes around each). Both borrow the property where it lies: a string or an array is
/// compared in place, not copied (a copy retains and releases its storage, which cost more than
/// the comparison).
@usableFromInline enum FieldMatcher {
    /// A test of the properties at an address.
    @usableFromInline typealias Test = (UnsafeRawPointer) -> Bool

    /// The test of a string-key condition on a located field, or `nil`.
    static func make(_ field: PropertyLayout.Field, _ condition: QueryCondition) -> Kernel? {
        guard condition.options.isEmpty else { return nil }
        let place = Place(offset: field.offset, optional: field.optional, op: condition.op)
        let (op, values) = (condition.op, condition.values)
        switch field.kind {
        case .int:
            // Compared as Int, without converting each model's value.
            guard let integers = integers(values) else { return nil }
            return ranged(op, integers, place)
        case .double:
            guard let doubles = doubles(values) else { return nil }
            return closure(ordered(op, doubles, place))
        case .string:
            guard let strings = strings(values) else { return nil }
            return text(op, strings, place)
        case .strings:
            guard let strings = strings(values) else { return nil }
            return elements(op, strings, place)
        case .bool:
            guard let booleans = booleans(values) else { return nil }
            return closure(truth(op, booleans, place))
        case .geoPoint:
            guard op == .within, let center = condition.center else { return nil }
            return .closure(place.reading(Near(center: center, kilometers: condition.kilometers)))
        case .date, .uint:
            return nil
        }
    }

    /// The test of a key-path condition given as an operator and its operands, on the property of
    /// type `Property` (optional when `optional`) at `offset`: the same test the string-key form
    /// of the condition compiles to, or `nil` for other types (the condition's own closure then
    /// runs on the property). The operands keep their type: no ``ModelValue`` in between.
    @usableFromInline static func make<Property>(
        _ type: Property.Type, at offset: Int, optional: Bool, _ operation: Condition<Property>.Operation
    ) -> Kernel? {
        let (op, operands) = (operation.op, operation.operands)
        let place = Place(offset: offset, optional: optional, op: op)
        // The property's type exactly, first: the operands of a condition on an optional type
        // must not be unwrapped into a test that reads a non-optional one. (No `flatMap` here: it
        // would wrap each test in a thunk, one more call per model.)
        if type == Int.self, let values = operands as? [Int] { return ranged(op, values, place) }
        if type == Int64.self, let values = operands as? [Int64] { return closure(ordered(op, values, place)) }
        if type == Double.self, let values = operands as? [Double] { return closure(ordered(op, values, place)) }
        if type == String.self, let values = operands as? [String] { return text(op, values, place) }
        if type == [String].self, let values = operands as? [String] { return elements(op, values, place) }
        if type == Bool.self, let values = operands as? [Bool] { return closure(truth(op, values, place)) }
        return nil
    }

    private static func closure(_ test: Test?) -> Kernel? {
        guard let test else { return nil }
        return .closure(test)
    }

    /// Conditions on an `Int`: the ordering ones as a range (`x > v` is `v + 1 ... Int.max`),
    /// membership as a closure.
    private static func ranged(_ op: QueryCondition.Operator, _ values: [Int], _ place: Place) -> Kernel? {
        let bounds: (lower: Int, upper: Int, negated: Bool)
        switch op {
        case .equal: bounds = (values[0], values[0], false)
        case .notEqual: bounds = (values[0], values[0], true)
        case .greater: bounds = values[0] == .max ? (1, 0, false) : (values[0] + 1, .max, false)
        case .greaterOrEqual: bounds = (values[0], .max, false)
        case .less: bounds = values[0] == .min ? (1, 0, false) : (.min, values[0] - 1, false)
        case .lessOrEqual: bounds = (.min, values[0], false)
        case .between: bounds = (values[0], values[1], false)  // empty when lower > upper
        default: return closure(ordered(op, values, place))
        }
        return .integers(
            IntegerRange(
                offset: place.offset, optional: place.optional, nilMatches: place.nilMatches, lower: bounds.lower,
                upper: bounds.upper, negated: bounds.negated))
    }

    /// Ordering and membership conditions on a comparable value.
    private static func ordered<T: Comparable & Hashable>(_ op: QueryCondition.Operator, _ values: [T], _ place: Place) -> Test? {
        switch op {
        case .equal: return place.reading(Equal(value: values[0], negated: false))
        case .notEqual: return place.reading(Equal(value: values[0], negated: true))
        case .greater: return place.reading(Above(bound: values[0], inclusive: false))
        case .greaterOrEqual: return place.reading(Above(bound: values[0], inclusive: true))
        case .less: return place.reading(Below(bound: values[0], inclusive: false))
        case .lessOrEqual: return place.reading(Below(bound: values[0], inclusive: true))
        case .between: return place.reading(Between(lower: values[0], upper: values[1]))
        case .in: return place.reading(Member(set: Set(values), negated: false))
        case .notIn: return place.reading(Member(set: Set(values), negated: true))
        default: return nil
        }
    }

    /// String conditions: ordering and membership, and the substring conditions.
    private static func text(_ op: QueryCondition.Operator, _ values: [String], _ place: Place) -> Kernel? {
        switch op {
        case .equal, .notEqual: return .text(TextEquality(place, values[0], negated: op == .notEqual))
        case .beginsWith: return .closure(place.reading(Prefix(prefix: values[0])))
        case .endsWith: return .closure(place.reading(Suffix(suffix: values[0])))
        case .contains: return .closure(place.reading(Containing(needle: values[0])))
        default: return closure(ordered(op, values, place))
        }
    }

    /// Membership conditions on a string array.
    private static func elements(_ op: QueryCondition.Operator, _ values: [String], _ place: Place) -> Kernel? {
        switch op {
        case .contains, .containsAll, .containsAny:
            // Every one, or any one, of one element: that element is in the array.
            if values.count == 1 { return .element(ElementMembership(place, values[0])) }
            return .closure(place.reading(Elements(wanted: values, all: op != .containsAny)))
        default:
            return nil
        }
    }

    /// Equality conditions on a boolean.
    private static func truth(_ op: QueryCondition.Operator, _ values: [Bool], _ place: Place) -> Test? {
        guard values.count == 1 else { return nil }
        switch op {
        case .equal: return place.reading(Equal(value: values[0], negated: false))
        case .notEqual: return place.reading(Equal(value: values[0], negated: true))
        default: return nil
        }
    }

    /// Integers that fit an `Int`.
    private static func integers(_ values: [ModelValue]) -> [Int]? {
        var result: [Int] = []
        for value in values {
            guard case .int(let integer) = value, let exact = Int(exactly: integer) else { return nil }
            result.append(exact)
        }
        return result
    }

    /// Doubles and the integers a Double holds exactly (beyond 2^53 the general path compares
    /// exactly). NaN values take the general path too.
    private static func doubles(_ values: [ModelValue]) -> [Double]? {
        var result: [Double] = []
        for value in values {
            switch value {
            case .double(let double) where !double.isNaN: result.append(double)
            case .int(let integer) where integer.magnitude <= 1 << 53: result.append(Double(integer))
            default: return nil
            }
        }
        return result
    }

    private static func booleans(_ values: [ModelValue]) -> [Bool]? {
        var result: [Bool] = []
        for value in values {
            guard case .bool(let boolean) = value else { return nil }
            result.append(boolean)
        }
        return result
    }

    private static func strings(_ values: [ModelValue]) -> [String]? {
        var result: [String] = []
        for value in values {
            guard case .string(let string) = value else { return nil }
            result.append(string)
        }
        return result
    }
}

extension FieldMatcher {
    /// Where a test reads its property, and what a nil optional answers: a match for `notEquals`
    /// and `notIn` only.
    struct Place {
        let offset: Int
        let optional: Bool
        let nilMatches: Bool

        init(offset: Int, optional: Bool, op: QueryCondition.Operator) {
            self.offset = offset
            self.optional = optional
            nilMatches = op == .notEqual || op == .notIn
        }

        /// `predicate` on the property, borrowed where it lies.
        func reading<P: ValuePredicate>(_ predicate: P) -> Test {
            let offset = offset
            if optional {
                let nilMatches = nilMatches
                return { base in
                    guard let value = base.advanced(by: offset).assumingMemoryBound(to: P.Value?.self).pointee else {
                        return nilMatches
                    }
                    return predicate.holds(value)
                }
            }
            // The properties' memory is bound to their struct, and so to the type of each stored
            // property in it: the field is read through a typed pointer, without a copy.
            return { base in predicate.holds(base.advanced(by: offset).assumingMemoryBound(to: P.Value.self).pointee) }
        }
    }
}

/// A comparison of one property value, as a type, so that the test reading the property is
/// specialized around it (a closure would be one more indirect call per model).
protocol ValuePredicate {
    associatedtype Value
    func holds(_ value: Value) -> Bool
}

private struct Equal<Value: Equatable>: ValuePredicate {
    let value: Value
    let negated: Bool
    func holds(_ value: Value) -> Bool { (value == self.value) != negated }
}

private struct Above<Value: Comparable>: ValuePredicate {
    let bound: Value
    let inclusive: Bool
    func holds(_ value: Value) -> Bool { inclusive ? value >= bound : value > bound }
}

private struct Below<Value: Comparable>: ValuePredicate {
    let bound: Value
    let inclusive: Bool
    func holds(_ value: Value) -> Bool { inclusive ? value <= bound : value < bound }
}

private struct Between<Value: Comparable>: ValuePredicate {
    let lower: Value
    let upper: Value
    func holds(_ value: Value) -> Bool { lower <= value && value <= upper }
}

private struct Member<Value: Hashable>: ValuePredicate {
    let set: Set<Value>
    let negated: Bool
    func holds(_ value: Value) -> Bool { set.contains(value) != negated }
}

private struct Prefix: ValuePredicate {
    let prefix: String
    func holds(_ value: String) -> Bool { value.hasPrefix(prefix) }
}

private struct Suffix: ValuePredicate {
    let suffix: String
    func holds(_ value: String) -> Bool { value.hasSuffix(suffix) }
}

/// The empty string is in every string.
private struct Containing: ValuePredicate {
    let needle: String
    func holds(_ value: String) -> Bool { needle.isEmpty || value.contains(needle) }
}

/// Every one (`all`) or any one of `wanted` is an element of the array.
private struct Elements: ValuePredicate {
    let wanted: [String]
    let all: Bool
    func holds(_ value: [String]) -> Bool {
        all ? wanted.allSatisfy { value.contains($0) } : wanted.contains { value.contains($0) }
    }
}

private struct Near: ValuePredicate {
    let center: GeoPoint
    let kilometers: Double
    func holds(_ value: GeoPoint) -> Bool { value.isWithin(kilometers: kilometers, of: center) }
}
