import Foundation

/// A serialized value: what ``Model/serialize(as:)`` returns and what
/// ``Model/instance(from:in:options:isolation:)`` reads.
///
/// It is a typed tree of the values JSON and property lists can hold, plus native dates and data
/// for the property-list form. Objects keep their keys in order, so serialized output is stable.
///
/// ```swift
/// let value = try author.serialize()
/// value["model"]            // .string("Author")
/// value["properties"]?["name"]
/// let plist = value.propertyListObject   // [String: Any] for PropertyListSerialization
/// let json = try value.jsonData()         // UTF-8 JSON text
/// ```
public enum ModelValue: Equatable, Sendable {
    case null
    case bool(Bool)
    /// An integer that fits in `Int64`.
    case int(Int64)
    /// An integer above `Int64.max`.
    case uint(UInt64)
    case double(Double)
    case string(String)
    /// A date (property-list form; the JSON form writes `{"__type": "Date", "iso": …}`).
    case date(Date)
    /// Binary data (property-list form; the JSON form writes `{"__type": "Bytes", "base64": …}`).
    case data(Data)
    case array([ModelValue])
    case object(Object)

    /// The value for `key` when this is an object.
    public subscript(key: String) -> ModelValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    /// The element at `index` when this is an array and the index is in range.
    public subscript(index: Int) -> ModelValue? {
        if case .array(let array) = self, array.indices.contains(index) { return array[index] }
        return nil
    }

    /// The string, when this is a string.
    public var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    /// A short description of the kind of value, for error messages ("string \"abc\"", "number 3").
    var kindDescription: String {
        switch self {
        case .null: return "null"
        case .bool(let value): return "boolean \(value)"
        case .int(let value): return "number \(value)"
        case .uint(let value): return "number \(value)"
        case .double(let value): return "number \(value)"
        case .string(let value):
            let shown = value.count > 40 ? String(value.prefix(40)) + "…" : value
            return "string \"\(shown)\""
        case .date: return "a date"
        case .data(let data): return "\(data.count) bytes of data"
        case .array(let array): return "an array of \(array.count)"
        case .object(let object):
            if case .string(let type)? = object["__type"] { return "a \(type) object" }
            return "an object"
        }
    }
}

extension ModelValue {
    /// An object: keys in insertion order, each at most once.
    public struct Object: Equatable, Sendable, RandomAccessCollection {
        public private(set) var keys: [String] = []
        public private(set) var values: [ModelValue] = []
        /// Built once an object grows past a handful of keys, so that decoding a large dictionary
        /// property stays linear.
        private var index: [String: Int]?

        private static let indexThreshold = 12

        /// Creates an empty object.
        public init() {}

        /// Creates an object from key-value pairs; a later duplicate key replaces the earlier value.
        public init(_ pairs: [(String, ModelValue)]) {
            keys.reserveCapacity(pairs.count)
            values.reserveCapacity(pairs.count)
            for (key, value) in pairs { self[key] = value }
        }

        public var startIndex: Int { 0 }
        public var endIndex: Int { keys.count }

        public subscript(position: Int) -> (key: String, value: ModelValue) {
            (keys[position], values[position])
        }

        /// The value for `key`; setting `nil` removes the key.
        ///
        /// - Complexity: O(1) on average for large objects, O(k) for objects of k < 12 keys.
        public subscript(key: String) -> ModelValue? {
            get { position(of: key).map { values[$0] } }
            set {
                if let position = position(of: key) {
                    if let newValue {
                        values[position] = newValue
                    } else {
                        keys.remove(at: position)
                        values.remove(at: position)
                        rebuildIndex()
                    }
                } else if let newValue {
                    keys.append(key)
                    values.append(newValue)
                    if index != nil {
                        index![key] = keys.count - 1
                    } else if keys.count > Self.indexThreshold {
                        rebuildIndex()
                    }
                }
            }
        }

        func position(of key: String) -> Int? {
            if let index { return index[key] }
            return keys.firstIndex(of: key)
        }

        private mutating func rebuildIndex() {
            guard keys.count > Self.indexThreshold else {
                index = nil
                return
            }
            var index = [String: Int](minimumCapacity: keys.count)
            for (position, key) in keys.enumerated() { index[key] = position }
            self.index = index
        }

        /// Objects are equal when they have the same keys with equal values, in any order.
        public static func == (lhs: Object, rhs: Object) -> Bool {
            guard lhs.keys.count == rhs.keys.count else { return false }
            for (position, key) in lhs.keys.enumerated() {
                guard let other = rhs[key], other == lhs.values[position] else { return false }
            }
            return true
        }
    }
}

extension ModelValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(arrayLiteral elements: ModelValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, ModelValue)...) { self = .object(Object(elements)) }
}
