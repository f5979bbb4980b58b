import Foundation

// How query conditions compare values. Numbers compare across integer and floating-point forms,
// strings by Unicode scalars after normalization (optionally folded), dates by time, booleans
// false before true. Anything else (a string against a number, say) is not comparable, which a
// query reports as an error rather than treating as "no match".

extension ModelValue {
    /// The order of `self` and `other`, or `nil` when they are not comparable (different kinds of
    /// value, or NaN).
    ///
    /// - Complexity: O(1) for numbers, dates and booleans; O(n) in the length for strings.
    func compare(to other: ModelValue, options: StringOptions = []) -> ComparisonResult? {
        switch (self, other) {
        case (.string(let a), .string(let b)):
            let (x, y) = options.isEmpty ? (a, b) : (a.folded(options), b.folded(options))
            return x == y ? .orderedSame : (x < y ? .orderedAscending : .orderedDescending)
        case (.date(let a), .date(let b)):
            return a == b ? .orderedSame : (a < b ? .orderedAscending : .orderedDescending)
        case (.bool(let a), .bool(let b)):
            return a == b ? .orderedSame : (!a ? .orderedAscending : .orderedDescending)
        case (.data(let a), .data(let b)):
            return a == b ? .orderedSame : nil
        default:
            return Self.compareNumbers(self, other)
        }
    }

    private static func compareNumbers(_ a: ModelValue, _ b: ModelValue) -> ComparisonResult? {
        switch (a, b) {
        case (.int(let x), .int(let y)): return order(x, y)
        case (.uint(let x), .uint(let y)): return order(x, y)
        case (.int(let x), .uint(let y)): return x < 0 ? .orderedAscending : order(UInt64(x), y)
        case (.uint(let x), .int(let y)): return y < 0 ? .orderedDescending : order(x, UInt64(y))
        case (.double(let x), .double(let y)):
            guard !x.isNaN, !y.isNaN else { return nil }
            return order(x, y)
        case (.double(let x), _):
            guard let y = b.exactInteger else { return nil }
            return compare(x, y)
        case (_, .double(let y)):
            guard let x = a.exactInteger else { return nil }
            return compare(y, x).map(flip)
        default:
            return nil
        }
    }

    /// An integer (`int` or `uint`) as the pair that compares exactly with a Double.
    private var exactInteger: (negative: Bool, magnitude: UInt64)? {
        switch self {
        case .int(let value): return (value < 0, value.magnitude)
        case .uint(let value): return (false, value)
        default: return nil
        }
    }

    /// Compares a Double with an integer exactly, without rounding the integer to a Double.
    private static func compare(_ x: Double, _ y: (negative: Bool, magnitude: UInt64)) -> ComparisonResult? {
        guard !x.isNaN else { return nil }
        if x.isInfinite { return x > 0 ? .orderedDescending : .orderedAscending }
        let integral = x.rounded(.towardZero)
        // Beyond 2^64 in magnitude the Double is outside every integer's range.
        if integral.magnitude >= 18_446_744_073_709_551_616.0 { return x > 0 ? .orderedDescending : .orderedAscending }
        let xNegative = x < 0
        if xNegative != y.negative {
            if integral == 0 && y.magnitude == 0 {
                return x == 0 ? .orderedSame : (xNegative ? .orderedAscending : .orderedDescending)
            }
            return xNegative ? .orderedAscending : .orderedDescending
        }
        let magnitude = UInt64(integral.magnitude)
        var result: ComparisonResult
        if magnitude != y.magnitude {
            result = magnitude < y.magnitude ? .orderedAscending : .orderedDescending
        } else if integral != x {
            result = .orderedDescending  // same integral part, plus a fraction
        } else {
            return .orderedSame
        }
        if xNegative { result = flip(result) }
        return result
    }

    private static func order<T: Comparable>(_ x: T, _ y: T) -> ComparisonResult {
        x == y ? .orderedSame : (x < y ? .orderedAscending : .orderedDescending)
    }

    private static func flip(_ result: ComparisonResult) -> ComparisonResult {
        switch result {
        case .orderedAscending: return .orderedDescending
        case .orderedDescending: return .orderedAscending
        case .orderedSame: return .orderedSame
        }
    }

    /// Whether this is a number (of any form).
    var isNumber: Bool {
        switch self {
        case .int, .uint, .double: return true
        default: return false
        }
    }

    /// A name for the kind of value, for errors: "a number", "a string", …
    var kindName: String {
        switch self {
        case .null: return "nil"
        case .bool: return "a boolean"
        case .int, .uint, .double: return "a number"
        case .string: return "a string"
        case .date: return "a date"
        case .data: return "data"
        case .array: return "an array"
        case .object(let object):
            if case .string(let type)? = object["__type"] { return "a \(type)" }
            return "an object"
        }
    }

    /// Whether values of the kinds of `self` and `other` can be compared at all.
    func isComparable(with other: ModelValue) -> Bool {
        switch (self, other) {
        case (.null, _), (_, .null): return true
        case (.string, .string), (.date, .date), (.bool, .bool), (.data, .data), (.array, .array): return true
        case (.object, .object): return true
        default: return isNumber && other.isNumber
        }
    }
}
