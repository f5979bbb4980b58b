import Foundation

// Conversions between ModelValue and Foundation property-list objects ([String: Any], [Any],
// String, NSNumber, Date, Data), for PropertyListSerialization and code that expects
// NSDictionary-style values. Property lists have no null: `.null` is written as
// {"__type": "Null"} and read back as `.null`.

extension ModelValue {
    /// The value as Foundation property-list objects.
    ///
    /// - Complexity: O(n).
    public var propertyListObject: Any {
        switch self {
        case .null: return ["__type": "Null"]
        case .bool(let flag): return flag
        case .int(let number): return Int(number)
        case .uint(let number): return number
        case .double(let number): return number
        case .string(let text): return text
        case .date(let date): return date
        case .data(let data): return data
        case .array(let elements): return elements.map(\.propertyListObject)
        case .object(let object):
            var dictionary: [String: Any] = [:]
            dictionary.reserveCapacity(object.count)
            for (key, value) in object { dictionary[key] = value.propertyListObject }
            return dictionary
        }
    }

    /// Converts Foundation property-list or JSON objects (as `PropertyListSerialization` and
    /// `JSONSerialization` return them) to a value.
    ///
    /// - Throws: ``SerializationError`` with code ``SerializationError/Code/typeMismatch`` for
    ///   anything that is not a property-list type, naming where it was found.
    /// - Complexity: O(n).
    public init(propertyList object: Any) throws {
        self = try Self.convert(object, path: "", depth: 0)
    }

    private static func convert(_ object: Any, path: String, depth: Int) throws -> ModelValue {
        guard depth <= SerializationError.maximumDepth else {
            throw SerializationError(
                .nestingTooDeep, path: path, expected: "at most \(SerializationError.maximumDepth) nested levels",
                found: "deeper nesting")
        }
        switch object {
        case is NSNull: return .null
        case let text as String: return .string(text)
        case let date as Date: return .date(date)
        case let data as Data: return .data(data)
        case let number as NSNumber: return numberValue(number)
        case let dictionary as [String: Any]:
            if dictionary.count == 1, dictionary["__type"] as? String == "Null" { return .null }
            var object = Object()
            for key in dictionary.keys.sorted() {
                object[key] = try convert(dictionary[key]!, path: path.isEmpty ? key : path + "." + key, depth: depth + 1)
            }
            return .object(object)
        case let array as [Any]:
            return .array(try array.enumerated().map { try convert($1, path: path + "[\($0)]", depth: depth + 1) })
        default:
            throw SerializationError(
                .typeMismatch, path: path, expected: "a property-list value (dictionary, array, string, number, date, data)",
                found: "\(type(of: object))")
        }
    }

    private static func numberValue(_ number: NSNumber) -> ModelValue {
        #if canImport(Darwin)
            if CFGetTypeID(number) == CFBooleanGetTypeID() { return .bool(number.boolValue) }
        #endif
        switch String(cString: number.objCType) {
        case "c", "B":
            #if canImport(Darwin)
                return .int(number.int64Value)
            #else
                return .bool(number.boolValue)
            #endif
        case "f", "d": return .double(number.doubleValue)
        case "Q", "L", "I", "S", "C":
            let value = number.uint64Value
            return value > UInt64(Int64.max) ? .uint(value) : .int(Int64(value))
        default: return .int(number.int64Value)
        }
    }
}
