import Foundation

// A Decoder over a ModelValue tree. Every failure is a SerializationError carrying the coding path
// and what was expected; the graph reader adds the model index. Values missing from the data fall
// back to the property's default value (taken from a default instance), which is what lets a file
// written before a property was added still load.

/// Values that the graph reader resolves itself instead of asking them to decode: references.
protocol GraphDecodable {
    static func decodeReference(from value: ModelValue, reader: GraphReader, path: [any CodingKey]) throws -> Self
}

final class PropertyDecoder: Decoder {
    let value: ModelValue
    /// The encoded default value at the same place, if known.
    let defaults: ModelValue?
    let reader: GraphReader
    let codingPath: [any CodingKey]
    let depth: Int
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(value: ModelValue, defaults: ModelValue?, reader: GraphReader, codingPath: [any CodingKey], depth: Int) {
        self.value = value
        self.defaults = defaults
        self.reader = reader
        self.codingPath = codingPath
        self.depth = depth
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let object) = value else {
            throw Self.mismatch(expected: "an object", found: value, at: codingPath)
        }
        var defaultObject: ModelValue.Object?
        if case .object(let object)? = defaults { defaultObject = object }
        return KeyedDecodingContainer(
            KeyedContainer<Key>(decoder: self, object: object, defaults: defaultObject, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let array) = value else {
            throw Self.mismatch(expected: "an array", found: value, at: codingPath)
        }
        return UnkeyedContainer(decoder: self, array: array, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueContainer(decoder: self)
    }

    // MARK: Unboxing

    static func isNull(_ value: ModelValue) -> Bool {
        switch value {
        case .null: return true
        case .object(let object): return object.count == 1 && object["__type"] == "Null"
        default: return false
        }
    }

    static func mismatch(expected: String, found value: ModelValue, at path: @autoclosure () -> [any CodingKey])
        -> SerializationError
    {
        SerializationError(.typeMismatch, path: describe(path()), expected: expected, found: value.kindDescription)
    }

    func bool(_ value: ModelValue, at path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        switch value {
        case .bool(let flag): return flag
        // ModelKit for Objective-C wrote booleans as 0 and 1.
        case .int(0): return false
        case .int(1): return true
        default: throw Self.mismatch(expected: "Bool", found: value, at: path())
        }
    }

    func string(_ value: ModelValue, at path: @autoclosure () -> [any CodingKey]) throws -> String {
        guard case .string(let text) = value else { throw Self.mismatch(expected: "String", found: value, at: path()) }
        return text
    }

    func integer<I: FixedWidthInteger>(_ value: ModelValue, as type: I.Type, at path: @autoclosure () -> [any CodingKey]) throws
        -> I
    {
        func outOfRange(_ shown: String) -> SerializationError {
            SerializationError(
                .numberOutOfRange, path: describe(path()), expected: "\(I.self) (\(I.min)...\(I.max))", found: "number \(shown)")
        }
        switch value {
        case .int(let number):
            guard let result = I(exactly: number) else { throw outOfRange("\(number)") }
            return result
        case .uint(let number):
            guard let result = I(exactly: number) else { throw outOfRange("\(number)") }
            return result
        case .double(let number):
            if let result = NumberRange.integer(I.self, exactly: number) { return result }
            if number.isFinite, number == number.rounded() { throw outOfRange(NumberRange.describe(number)) }
            throw Self.mismatch(expected: "\(I.self) (a whole number)", found: value, at: path())
        default:
            throw Self.mismatch(expected: "\(I.self)", found: value, at: path())
        }
    }

    static func double(_ value: ModelValue, at path: @autoclosure () -> [any CodingKey]) throws -> Double {
        switch value {
        case .double(let number): return number
        case .int(let number): return Double(number)
        case .uint(let number): return Double(number)
        case .object(let object) where object["__type"] == "Double":
            switch object["value"] {
            case "nan": return .nan
            case "inf", "+inf": return .infinity
            case "-inf": return -.infinity
            default:
                throw SerializationError(
                    .invalidValue, path: describe(path()), expected: "\"nan\", \"inf\" or \"-inf\" in a Double object",
                    found: object["value"]?.kindDescription ?? "nothing")
            }
        default:
            throw Self.mismatch(expected: "Double", found: value, at: path())
        }
    }

    func float(_ value: ModelValue, at path: @autoclosure () -> [any CodingKey]) throws -> Float {
        let number = try Self.double(value, at: path())
        let result = Float(number)
        if number.isFinite, !result.isFinite {
            throw SerializationError(
                .numberOutOfRange, path: describe(path()), expected: "Float (magnitude up to \(Float.greatestFiniteMagnitude))",
                found: "number \(number)")
        }
        return result
    }

    static func date(_ value: ModelValue, at path: @autoclosure () -> [any CodingKey]) throws -> Date {
        switch value {
        case .date(let date):
            guard date.timeIntervalSinceReferenceDate.isFinite else {
                throw NumberRange.notADate(date.timeIntervalSinceReferenceDate, path: describe(path()))
            }
            return date
        case .string(let text):
            guard let date = ISODate.date(from: text) else {
                throw SerializationError(
                    .invalidValue, path: describe(path()), expected: "an ISO 8601 date", found: value.kindDescription)
            }
            return date
        case .object(let object) where object["__type"] == "Date":
            if let iso = object["iso"] { return try Self.date(iso, at: path()) }
            if let seconds = object["referenceSeconds"] {
                let value = try Self.double(seconds, at: path())
                guard let date = NumberRange.date(referenceSeconds: value) else {
                    throw NumberRange.notADate(value, path: describe(path()))
                }
                return date
            }
            throw SerializationError(
                .valueNotFound, path: describe(path()), expected: "\"iso\" in a Date object", found: "no \"iso\" key")
        default:
            throw Self.mismatch(expected: "a date", found: value, at: path())
        }
    }

    func data(_ value: ModelValue, at path: @autoclosure () -> [any CodingKey]) throws -> Data {
        switch value {
        case .data(let data): return data
        case .object(let object) where object["__type"] == "Bytes":
            guard case .string(let text)? = object["base64"] else {
                throw SerializationError(
                    .valueNotFound, path: describe(path()), expected: "a \"base64\" string in a Bytes object",
                    found: object["base64"]?.kindDescription ?? "no \"base64\" key")
            }
            guard let data = Data(base64Encoded: text) else {
                throw SerializationError(
                    .invalidValue, path: describe(path()), expected: "base64 text", found: value.kindDescription)
            }
            return data
        default:
            throw Self.mismatch(expected: "data", found: value, at: path())
        }
    }

    func url(_ value: ModelValue, at path: @autoclosure () -> [any CodingKey]) throws -> URL {
        let text = try string(value, at: path())
        guard let url = URL(string: text) else {
            throw SerializationError(.invalidValue, path: describe(path()), expected: "a URL", found: value.kindDescription)
        }
        return url
    }

    func geoPoint(_ value: ModelValue, at path: @autoclosure () -> [any CodingKey]) throws -> GeoPoint {
        guard case .object(let object) = value, let latitude = object["latitude"], let longitude = object["longitude"] else {
            throw Self.mismatch(expected: "a GeoPoint object with latitude and longitude", found: value, at: path())
        }
        return GeoPoint(
            latitude: try Self.double(latitude, at: path() + [IndexKey(stringValue: "latitude")]),
            longitude: try Self.double(longitude, at: path() + [IndexKey(stringValue: "longitude")]))
    }

    func unbox<T: Decodable>(_ value: ModelValue, defaults: ModelValue?, as type: T.Type, at path: [any CodingKey]) throws -> T {
        if T.self == Date.self { return try Self.date(value, at: path) as! T }
        if T.self == Data.self { return try data(value, at: path) as! T }
        if T.self == URL.self { return try url(value, at: path) as! T }
        if T.self == Double.self { return try Self.double(value, at: path) as! T }
        if T.self == Float.self { return try float(value, at: path) as! T }
        if T.self == GeoPoint.self { return try geoPoint(value, at: path) as! T }
        if T.self == [String].self { return try elements(value, at: path, string) as! T }
        if T.self == [Int].self { return try elements(value, at: path) { try integer($0, as: Int.self, at: $1()) } as! T }
        if T.self == [Double].self { return try elements(value, at: path, Self.double) as! T }
        if let reference = T.self as? any GraphDecodable.Type {
            return try reference.decodeReference(from: value, reader: reader, path: path) as! T
        }
        guard depth < SerializationError.maximumDepth else {
            throw SerializationError(
                .nestingTooDeep, path: describe(path),
                expected: "at most \(SerializationError.maximumDepth) levels of nested values",
                found: "deeper nesting")
        }
        let nested = PropertyDecoder(value: value, defaults: defaults, reader: reader, codingPath: path, depth: depth + 1)
        return try T(from: nested)
    }

    /// Decodes every element of an array value with `read`, without a nested decoder.
    private func elements<Element>(
        _ value: ModelValue, at path: [any CodingKey],
        _ read: (ModelValue, @autoclosure () -> [any CodingKey]) throws -> Element
    ) throws -> [Element] {
        guard case .array(let array) = value else { throw Self.mismatch(expected: "an array", found: value, at: path) }
        var result: [Element] = []
        result.reserveCapacity(array.count)
        for (index, element) in array.enumerated() {
            result.append(try read(element, path + [IndexKey(intValue: index)]))
        }
        return result
    }

    // MARK: Containers

    struct KeyedContainer<Key: CodingKey>: IntegerKeyedDecodingContainer {
        let decoder: PropertyDecoder
        let object: ModelValue.Object
        let defaults: ModelValue.Object?
        let codingPath: [any CodingKey]

        var allKeys: [Key] { object.keys.compactMap { Key(stringValue: $0) } }

        func contains(_ key: Key) -> Bool {
            object[key.stringValue] != nil || defaults?[key.stringValue] != nil
        }

        /// The value for `key`, or the default value when the data doesn't have the key.
        private func entry(_ key: Key) throws -> (value: ModelValue, defaults: ModelValue?) {
            let fallback = defaults?[key.stringValue]
            if let value = object[key.stringValue] { return (value, fallback) }
            if let fallback { return (fallback, fallback) }
            throw SerializationError(
                .valueNotFound, path: describe(codingPath + [key]), expected: "a value for \"\(key.stringValue)\"",
                found: "no such key")
        }

        private func path(_ key: Key) -> [any CodingKey] { codingPath + [key] }

        func decodeNil(forKey key: Key) throws -> Bool { PropertyDecoder.isNull(try entry(key).value) }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decoder.bool(entry(key).value, at: path(key)) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try decoder.string(entry(key).value, at: path(key)) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
            try PropertyDecoder.double(entry(key).value, at: path(key))
        }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decoder.float(entry(key).value, at: path(key)) }

        func decodeInteger<I: FixedWidthInteger & Decodable>(_ type: I.Type, forKey key: Key) throws -> I {
            try decoder.integer(entry(key).value, as: I.self, at: path(key))
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            let (value, defaults) = try entry(key)
            return try decoder.unbox(value, defaults: defaults, as: T.self, at: path(key))
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            let (value, defaults) = try entry(key)
            let nested = PropertyDecoder(
                value: value, defaults: defaults, reader: decoder.reader, codingPath: path(key), depth: decoder.depth + 1)
            return try nested.container(keyedBy: NestedKey.self)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            let (value, defaults) = try entry(key)
            let nested = PropertyDecoder(
                value: value, defaults: defaults, reader: decoder.reader, codingPath: path(key), depth: decoder.depth + 1)
            return try nested.unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder {
            superDecoder(named: IndexKey(stringValue: "super"))
        }

        func superDecoder(forKey key: Key) throws -> any Decoder { superDecoder(named: key) }

        private func superDecoder(named key: any CodingKey) -> any Decoder {
            let value = object[key.stringValue] ?? .null
            return PropertyDecoder(
                value: value, defaults: defaults?[key.stringValue], reader: decoder.reader, codingPath: codingPath + [key],
                depth: decoder.depth + 1)
        }
    }

    struct UnkeyedContainer: IntegerUnkeyedDecodingContainer {
        let decoder: PropertyDecoder
        let array: [ModelValue]
        let codingPath: [any CodingKey]
        private(set) var currentIndex = 0

        init(decoder: PropertyDecoder, array: [ModelValue], codingPath: [any CodingKey]) {
            self.decoder = decoder
            self.array = array
            self.codingPath = codingPath
        }

        var count: Int? { array.count }
        var isAtEnd: Bool { currentIndex >= array.count }
        private var path: [any CodingKey] { codingPath + [IndexKey(intValue: currentIndex)] }

        private mutating func next() throws -> ModelValue {
            guard !isAtEnd else {
                throw SerializationError(
                    .valueNotFound, path: describe(path), expected: "another array element", found: "the end of the array")
            }
            return array[currentIndex]
        }

        private mutating func advance<T>(_ read: (ModelValue, [any CodingKey]) throws -> T) throws -> T {
            let value = try next()
            let result = try read(value, path)
            currentIndex += 1
            return result
        }

        mutating func decodeNil() throws -> Bool {
            guard try PropertyDecoder.isNull(next()) else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode(_ type: Bool.Type) throws -> Bool {
            let decoder = decoder; return try advance { try decoder.bool($0, at: $1) }
        }
        mutating func decode(_ type: String.Type) throws -> String {
            let decoder = decoder; return try advance { try decoder.string($0, at: $1) }
        }
        mutating func decode(_ type: Double.Type) throws -> Double {
            try advance { try PropertyDecoder.double($0, at: $1) }
        }
        mutating func decode(_ type: Float.Type) throws -> Float {
            let decoder = decoder; return try advance { try decoder.float($0, at: $1) }
        }

        mutating func decodeInteger<I: FixedWidthInteger & Decodable>(_ type: I.Type) throws -> I {
            let decoder = decoder
            return try advance { try decoder.integer($0, as: I.self, at: $1) }
        }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let decoder = decoder
            return try advance { try decoder.unbox($0, defaults: nil, as: T.self, at: $1) }
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<
            NestedKey
        > {
            let decoder = decoder
            return try advance { value, path in
                try PropertyDecoder(
                    value: value, defaults: nil, reader: decoder.reader, codingPath: path, depth: decoder.depth + 1
                )
                .container(keyedBy: NestedKey.self)
            }
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let decoder = decoder
            return try advance { value, path in
                try PropertyDecoder(
                    value: value, defaults: nil, reader: decoder.reader, codingPath: path, depth: decoder.depth + 1
                )
                .unkeyedContainer()
            }
        }

        mutating func superDecoder() throws -> any Decoder {
            let decoder = decoder
            return try advance { value, path in
                PropertyDecoder(value: value, defaults: nil, reader: decoder.reader, codingPath: path, depth: decoder.depth + 1)
            }
        }
    }

    struct SingleValueContainer: IntegerSingleValueDecodingContainer {
        let decoder: PropertyDecoder
        var codingPath: [any CodingKey] { decoder.codingPath }
        private var value: ModelValue { decoder.value }

        func decodeNil() -> Bool { PropertyDecoder.isNull(value) }
        func decode(_ type: Bool.Type) throws -> Bool { try decoder.bool(value, at: codingPath) }
        func decode(_ type: String.Type) throws -> String { try decoder.string(value, at: codingPath) }
        func decode(_ type: Double.Type) throws -> Double { try PropertyDecoder.double(value, at: codingPath) }
        func decode(_ type: Float.Type) throws -> Float { try decoder.float(value, at: codingPath) }
        func decodeInteger<I: FixedWidthInteger & Decodable>(_ type: I.Type) throws -> I {
            try decoder.integer(value, as: I.self, at: codingPath)
        }
        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try decoder.unbox(value, defaults: decoder.defaults, as: T.self, at: codingPath)
        }
    }
}
