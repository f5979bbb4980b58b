import Foundation

/// A property type that an index can hold, convertible from the values that string-key and
/// query-language conditions carry. Ordered indexes also need `Comparable`.
///
/// ModelKit provides the conformances for `Int`, `Int32`, `Int64`, `UInt64`, `Double`, `String`,
/// `Date`, `Bool` and `UUID`.
public protocol IndexableValue: Hashable, QueryValueConvertible {
    /// The value a condition holds, when it can be one of these (`nil` otherwise, and the index
    /// is not used for that condition).
    init?(queryValue: ModelValue)
}

extension Int: IndexableValue {
    public init?(queryValue: ModelValue) {
        switch queryValue {
        case .int(let value): self.init(exactly: value)
        case .uint(let value): self.init(exactly: value)
        case .double(let value): self.init(exactly: value)
        default: return nil
        }
    }
}

extension Int64: IndexableValue {
    public init?(queryValue: ModelValue) {
        guard let value = Int(queryValue: queryValue) else { return nil }
        self.init(value)
    }
}

extension Int32: IndexableValue {
    public init?(queryValue: ModelValue) {
        guard let value = Int(queryValue: queryValue) else { return nil }
        self.init(exactly: value)
    }
}

extension UInt64: IndexableValue {
    public init?(queryValue: ModelValue) {
        switch queryValue {
        case .int(let value): self.init(exactly: value)
        case .uint(let value): self.init(value)
        case .double(let value): self.init(exactly: value)
        default: return nil
        }
    }
}

extension Double: IndexableValue {
    /// Integers convert only when the Double holds them exactly, so that the index and a scan
    /// agree on every comparison.
    public init?(queryValue: ModelValue) {
        switch queryValue {
        case .double(let value) where !value.isNaN: self = value
        case .int(let value): self.init(exactly: value)
        case .uint(let value): self.init(exactly: value)
        default: return nil
        }
    }
}

extension String: IndexableValue {
    public init?(queryValue: ModelValue) {
        guard case .string(let value) = queryValue else { return nil }
        self = value
    }
}

extension Date: IndexableValue {
    public init?(queryValue: ModelValue) {
        guard case .date(let value) = queryValue else { return nil }
        self = value
    }
}

extension Bool: IndexableValue {
    public init?(queryValue: ModelValue) {
        guard case .bool(let value) = queryValue else { return nil }
        self = value
    }
}

extension UUID: IndexableValue {
    public init?(queryValue: ModelValue) {
        // Only the exact text a UUID property encodes to: a scan compares that text.
        guard case .string(let text) = queryValue, let value = UUID(uuidString: text), value.uuidString == text
        else { return nil }
        self = value
    }
}
