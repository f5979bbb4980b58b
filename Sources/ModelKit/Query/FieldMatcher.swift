import Foundation

/// Conditions compiled for a property read in place (see ``PropertyLayout``), for the common
/// cases: an `Int`, `Int64`, `Double` or `String` (also optional) compared with values of its own
/// kind without string options, `[String]` membership, `Bool` equality and `GeoPoint` distance.
/// They decide exactly as ``QueryCondition/matches(_:key:modelName:)`` would, without building a
/// ``ModelValue`` per model: a nil optional matches `notEquals` and `notIn` only. Other cases
/// return `nil` and take the general path (which also reports kinds that don't compare).
enum FieldMatcher {
    static func make(_ field: PropertyLayout.Field, _ condition: QueryCondition) -> ((UnsafeRawPointer) -> Bool)? {
        guard condition.options.isEmpty, let test = test(field.kind, condition) else { return nil }
        return test(field.offset, field.optional, condition.op == .notEqual || condition.op == .notIn)
    }

    /// A maker of the matcher for a field at an offset, optional or not, given what nil answers.
    private typealias Maker = (_ offset: Int, _ optional: Bool, _ nilMatches: Bool) -> (UnsafeRawPointer) -> Bool

    private static func test(_ kind: PropertyLayout.Kind, _ condition: QueryCondition) -> Maker? {
        let op = condition.op
        switch kind {
        case .int:
            // Compared as Int, without converting each model's value.
            guard let values = integers(condition.values)?.compactMap({ Int(exactly: $0) }),
                values.count == condition.values.count, let test = compare(op, values)
            else { return nil }
            return reading(Int.self, test)
        case .double:
            guard let values = doubles(condition.values), let test = compare(op, values) else { return nil }
            return reading(Double.self, test)
        case .string:
            guard let values = strings(condition.values) else { return nil }
            switch op {
            case .beginsWith:
                let prefix = values[0]
                return reading(String.self) { $0.hasPrefix(prefix) }
            case .endsWith:
                let suffix = values[0]
                return reading(String.self) { $0.hasSuffix(suffix) }
            case .contains:
                let needle = values[0]
                return reading(String.self) { needle.isEmpty || $0.contains(needle) }
            default:
                return compare(op, values).map { reading(String.self, $0) }
            }
        case .strings:
            guard let values = strings(condition.values) else { return nil }
            switch op {
            case .contains:
                let element = values[0]
                return reading([String].self) { $0.contains(element) }
            case .containsAll:
                return reading([String].self) { array in values.allSatisfy { array.contains($0) } }
            case .containsAny:
                return reading([String].self) { array in values.contains { array.contains($0) } }
            default:
                return nil
            }
        case .bool:
            guard condition.values.count == 1, case .bool(let value) = condition.values[0] else { return nil }
            switch op {
            case .equal: return reading(Bool.self) { $0 == value }
            case .notEqual: return reading(Bool.self) { $0 != value }
            default: return nil
            }
        case .geoPoint:
            guard op == .within, let center = condition.center else { return nil }
            let kilometers = condition.kilometers
            return reading(GeoPoint.self) { $0.distance(to: center) <= kilometers }
        case .date, .uint:
            return nil
        }
    }

    /// `test` on the value of type `T` at a field; a nil optional answers `nilMatches`.
    private static func reading<T>(_ type: T.Type, _ test: @escaping (T) -> Bool) -> Maker {
        { offset, optional, nilMatches in
            if optional {
                return { base in base.load(fromByteOffset: offset, as: T?.self).map(test) ?? nilMatches }
            }
            return { test($0.load(fromByteOffset: offset, as: T.self)) }
        }
    }

    /// Ordering and membership conditions on a comparable value.
    private static func compare<T: Comparable & Hashable>(_ op: QueryCondition.Operator, _ values: [T]) -> ((T) -> Bool)? {
        switch op {
        case .equal:
            let value = values[0]
            return { $0 == value }
        case .notEqual:
            let value = values[0]
            return { $0 != value }
        case .greater:
            let value = values[0]
            return { $0 > value }
        case .greaterOrEqual:
            let value = values[0]
            return { $0 >= value }
        case .less:
            let value = values[0]
            return { $0 < value }
        case .lessOrEqual:
            let value = values[0]
            return { $0 <= value }
        case .between:
            let (lower, upper) = (values[0], values[1])
            return { lower <= $0 && $0 <= upper }
        case .in:
            let set = Set(values)
            return { set.contains($0) }
        case .notIn:
            let set = Set(values)
            return { !set.contains($0) }
        default:
            return nil
        }
    }

    private static func integers(_ values: [ModelValue]) -> [Int64]? {
        var result: [Int64] = []
        for value in values {
            guard case .int(let integer) = value else { return nil }
            result.append(integer)
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

    private static func strings(_ values: [ModelValue]) -> [String]? {
        var result: [String] = []
        for value in values {
            guard case .string(let string) = value else { return nil }
            result.append(string)
        }
        return result
    }
}
