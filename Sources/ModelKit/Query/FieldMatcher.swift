import Foundation

/// Conditions compiled for a property read in place (see ``PropertyLayout``), for the common
/// cases: an `Int`, `Double` or `String` compared with values of its own kind, without string
/// options, `[String]` membership, `Bool` equality and `GeoPoint` distance. They decide exactly as ``QueryCondition/matches(_:key:modelName:)``
/// would, without building a ``ModelValue`` per model. Other cases return `nil` and take the
/// general path (which also reports kinds that don't compare).
enum FieldMatcher {
    static func make(_ field: PropertyLayout.Field, _ condition: QueryCondition) -> ((UnsafeRawPointer) -> Bool)? {
        guard !field.optional, condition.options.isEmpty else { return nil }
        let offset = field.offset
        switch field.kind {
        case .int:
            guard let values = integers(condition.values) else { return nil }
            return compare(condition.op, values) { Int64($0.load(fromByteOffset: offset, as: Int.self)) }
        case .double:
            guard let values = doubles(condition.values) else { return nil }
            return compare(condition.op, values) { $0.load(fromByteOffset: offset, as: Double.self) }
        case .string:
            guard let values = strings(condition.values) else { return nil }
            switch condition.op {
            case .beginsWith:
                let prefix = values[0]
                return { $0.load(fromByteOffset: offset, as: String.self).hasPrefix(prefix) }
            case .endsWith:
                let suffix = values[0]
                return { $0.load(fromByteOffset: offset, as: String.self).hasSuffix(suffix) }
            case .contains:
                let needle = values[0]
                if needle.isEmpty { return { _ in true } }
                return { $0.load(fromByteOffset: offset, as: String.self).contains(needle) }
            default:
                return compare(condition.op, values) { $0.load(fromByteOffset: offset, as: String.self) }
            }
        case .strings:
            guard let values = strings(condition.values) else { return nil }
            let read = { (base: UnsafeRawPointer) in base.load(fromByteOffset: offset, as: [String].self) }
            switch condition.op {
            case .contains:
                let element = values[0]
                return { read($0).contains(element) }
            case .containsAll:
                return { base in
                    let array = read(base)
                    return values.allSatisfy { array.contains($0) }
                }
            case .containsAny:
                return { base in
                    let array = read(base)
                    return values.contains { array.contains($0) }
                }
            default:
                return nil
            }
        case .bool:
            guard condition.values.count == 1, case .bool(let value) = condition.values[0] else { return nil }
            switch condition.op {
            case .equal: return { $0.load(fromByteOffset: offset, as: Bool.self) == value }
            case .notEqual: return { $0.load(fromByteOffset: offset, as: Bool.self) != value }
            default: return nil
            }
        case .geoPoint:
            guard condition.op == .within, let center = condition.center else { return nil }
            let kilometers = condition.kilometers
            return { $0.load(fromByteOffset: offset, as: GeoPoint.self).distance(to: center) <= kilometers }
        case .date, .uint:
            return nil
        }
    }

    /// Ordering and membership conditions on a comparable value read by `read`.
    private static func compare<T: Comparable & Hashable>(
        _ op: QueryCondition.Operator, _ values: [T], _ read: @escaping (UnsafeRawPointer) -> T
    ) -> ((UnsafeRawPointer) -> Bool)? {
        switch op {
        case .equal:
            let value = values[0]
            return { read($0) == value }
        case .notEqual:
            let value = values[0]
            return { read($0) != value }
        case .greater:
            let value = values[0]
            return { read($0) > value }
        case .greaterOrEqual:
            let value = values[0]
            return { read($0) >= value }
        case .less:
            let value = values[0]
            return { read($0) < value }
        case .lessOrEqual:
            let value = values[0]
            return { read($0) <= value }
        case .between:
            let (lower, upper) = (values[0], values[1])
            return {
                let value = read($0); return lower <= value && value <= upper
            }
        case .in:
            let set = Set(values)
            return { set.contains(read($0)) }
        case .notIn:
            let set = Set(values)
            return { !set.contains(read($0)) }
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
