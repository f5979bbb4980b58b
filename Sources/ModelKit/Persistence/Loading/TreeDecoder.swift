import Foundation

// The Codable Decoder of every read: over a TreeDocument, it reads a model's properties straight
// from the input (a JSON tape, a binary property list, or a flattened value tree). Values missing
// from the data fall back to the property's default (the default instance's encoded value, read
// through a ModelValueDocument by this same decoder), and keys the type does not know are ignored.

/// References resolve themselves through the loader instead of decoding.
protocol TreeReference {
    /// `path` builds the coding path, for error messages only.
    static func decodeReference<D: TreeDocument>(from node: Int, decoder: TreeDecoder<D>, path: () -> [any CodingKey]) throws
        -> Self
}

extension TreeReference {
    /// Decodes the reference into `destination`, which the caller reads back as its own type:
    /// returning it as `any TreeReference` would box it (a reference holds a weak reference and an
    /// optional id, too big for an existential's inline buffer) and cast it back, copying the weak
    /// reference twice, for every pointer.
    static func decodeReference<D: TreeDocument>(
        from node: Int, decoder: TreeDecoder<D>, into destination: UnsafeMutableRawPointer, path: () -> [any CodingKey]
    ) throws {
        destination.initializeMemory(as: Self.self, to: try decodeReference(from: node, decoder: decoder, path: path))
    }
}

/// `[String].self`, whose metadata would otherwise be looked up for every value decoded.
private let stringArrayType = ObjectIdentifier([String].self)

extension TreeDecoder {
    /// Decodes the properties of a model of type `M` from the object `node`, with the type's
    /// defaults for missing keys and its renamed keys.
    static func decodeProperties<M: Model>(
        _ type: M.Type, at node: Int, in document: D, info: ModelTypeInfo, loader: GraphLoader
    ) throws -> M.Properties {
        let decoder = TreeDecoder(
            document: document, node: node, defaults: info.defaults, loader: loader,
            codingPath: [IndexKey(stringValue: "properties")], depth: 1, renames: info.renames)
        guard loader.checksUnknownKeys else { return try M.Properties(from: decoder) }
        // One array for every model of the load: taken from the loader (so that it is unique
        // and appends do not copy it), emptied, and handed back.
        var asked = loader.askedKeysBuffer
        loader.askedKeysBuffer = []
        asked.removeAll(keepingCapacity: true)
        decoder.askedKeys = asked
        let properties = try M.Properties(from: decoder)
        loader.unknownKeysOfLastDecode = try decoder.keysNotAskedFor()
        loader.askedKeysBuffer = decoder.askedKeys ?? []
        decoder.askedKeys = nil
        return properties
    }
}

final class TreeDecoder<D: TreeDocument>: Decoder {
    let document: D
    let node: Int
    /// The encoded default value at the same place, if known.
    let defaults: ModelValue?
    let loader: GraphLoader
    let codingPath: [any CodingKey]
    let depth: Int
    /// For a model's properties: current property name → the name older files use.
    let renames: [String: String]
    /// For a model's properties, when the load looks for unknown keys: the keys `init(from:)`
    /// asked for, in order (see `GraphLoader+UnknownKeys.swift`); `nil` when not noted.
    var askedKeys: [String]?
    /// Whether the decoding read the keys as a whole (`allKeys`, or not through a keyed
    /// container), so that no key is unknown to it.
    var readsEveryKey = false
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(
        document: D, node: Int, defaults: ModelValue?, loader: GraphLoader, codingPath: [any CodingKey], depth: Int,
        renames: [String: String] = [:]
    ) {
        self.document = document
        self.node = node
        self.defaults = defaults
        self.loader = loader
        self.codingPath = codingPath
        self.depth = depth
        self.renames = renames
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard document.kind(of: node) == .object else { throw mismatch("an object", node, codingPath) }
        do {
            try document.checkKeys(of: node)
        } catch let error as SerializationError {
            throw error.at(path: describe(codingPath))
        }
        var defaultObject: ModelValue.Object?
        if case .object(let object)? = defaults { defaultObject = object }
        return KeyedDecodingContainer(TreeKeyedContainer<Key, D>(decoder: self, object: node, defaults: defaultObject))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        if askedKeys != nil { readsEveryKey = true }
        guard document.kind(of: node) == .array else { throw mismatch("an array", node, codingPath) }
        let count = try document.count(of: node)
        try document.charge(elements: count, of: node)
        return TreeUnkeyedContainer(decoder: self, array: node, count: count)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        if askedKeys != nil { readsEveryKey = true }
        return TreeSingleValueContainer(decoder: self)
    }

    // MARK: Values

    func mismatch(_ expected: String, _ node: Int, _ path: [any CodingKey]) -> SerializationError {
        SerializationError(
            .typeMismatch, path: describe(path), byteOffset: document.byteOffset(of: node), expected: expected,
            found: document.describeNode(node))
    }

    /// The number at `node`; a number the document cannot read (out of `Double`'s range) is
    /// reported at `path`.
    private func number(_ node: Int, _ path: () -> [any CodingKey]) throws -> NodeNumber {
        do {
            return try document.number(node)
        } catch let error as SerializationError {
            throw error.at(path: describe(path()))
        }
    }

    func bool(_ node: Int, _ path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        switch document.kind(of: node) {
        case .bool: return document.bool(node)
        case .integer:
            // ModelKit for Objective-C wrote booleans as 0 and 1.
            switch try number(node, path) {
            case .int(0): return false
            case .int(1): return true
            default: break
            }
        default: break
        }
        throw mismatch("Bool", node, path())
    }

    func string(_ node: Int, _ path: @autoclosure () -> [any CodingKey]) throws -> String {
        guard document.kind(of: node) == .string else { throw mismatch("String", node, path()) }
        return try document.string(node)
    }

    func integer<I: FixedWidthInteger>(_ node: Int, as type: I.Type, _ path: @autoclosure () -> [any CodingKey]) throws -> I {
        let kind = document.kind(of: node)
        guard kind == .integer || kind == .real else { throw mismatch("\(I.self)", node, path()) }
        func outOfRange(_ shown: String) -> SerializationError {
            SerializationError(
                .numberOutOfRange, path: describe(path()), byteOffset: document.byteOffset(of: node),
                expected: "\(I.self) (\(I.min)...\(I.max))", found: "number \(shown)")
        }
        switch try number(node, path) {
        case .int(let number):
            guard let result = I(exactly: number) else { throw outOfRange("\(number)") }
            return result
        case .uint(let number):
            guard let result = I(exactly: number) else { throw outOfRange("\(number)") }
            return result
        case .double(let number):
            if let result = NumberRange.integer(I.self, exactly: number) { return result }
            if number.isFinite, number == number.rounded() { throw outOfRange(NumberRange.describe(number)) }
            throw mismatch("\(I.self) (a whole number)", node, path())
        }
    }

    func double(_ node: Int, _ path: @autoclosure () -> [any CodingKey]) throws -> Double {
        switch document.kind(of: node) {
        case .integer, .real:
            switch try number(node, path) {
            case .int(let number): return Double(number)
            case .uint(let number): return Double(number)
            case .double(let number): return number
            }
        case .object:
            guard let tag = try document.typeTag(of: node), try document.stringEquals(tag, "Double") else { break }
            guard let value = try document.member(of: node, named: "value"), document.kind(of: value) == .string else {
                throw SerializationError(
                    .invalidValue, path: describe(path()), byteOffset: document.byteOffset(of: node),
                    expected: "\"nan\", \"inf\" or \"-inf\" in a Double object", found: "nothing")
            }
            switch try document.string(value) {
            case "nan": return .nan
            case "inf", "+inf": return .infinity
            case "-inf": return -.infinity
            case let text:
                throw SerializationError(
                    .invalidValue, path: describe(path()), byteOffset: document.byteOffset(of: value),
                    expected: "\"nan\", \"inf\" or \"-inf\" in a Double object", found: "\"\(text)\"")
            }
        default: break
        }
        throw mismatch("Double", node, path())
    }

    func float(_ node: Int, _ path: @autoclosure () -> [any CodingKey]) throws -> Float {
        let number = try double(node, path())
        let result = Float(number)
        if number.isFinite, !result.isFinite {
            throw SerializationError(
                .numberOutOfRange, path: describe(path()), byteOffset: document.byteOffset(of: node),
                expected: "Float (magnitude up to \(Float.greatestFiniteMagnitude))", found: "number \(number)")
        }
        return result
    }

    func date(_ node: Int, _ path: @autoclosure () -> [any CodingKey]) throws -> Date {
        switch document.kind(of: node) {
        case .date:
            do {
                return Date(timeIntervalSinceReferenceDate: try document.date(node))
            } catch let error as SerializationError {
                throw error.at(path: describe(path()))
            }
        case .string:
            guard let date = try document.isoDate(node) else {
                throw SerializationError(
                    .invalidValue, path: describe(path()), byteOffset: document.byteOffset(of: node),
                    expected: "an ISO 8601 date", found: document.describeNode(node))
            }
            return date
        case .object:
            guard let tag = try document.typeTag(of: node), try document.stringEquals(tag, "Date") else { break }
            if let iso = try document.member(of: node, named: "iso") { return try date(iso, path()) }
            if let seconds = try document.member(of: node, named: "referenceSeconds") {
                let value = try double(seconds, path())
                guard let date = NumberRange.date(referenceSeconds: value) else {
                    throw NumberRange.notADate(value, path: describe(path()), byteOffset: document.byteOffset(of: seconds))
                }
                return date
            }
            throw SerializationError(
                .valueNotFound, path: describe(path()), byteOffset: document.byteOffset(of: node),
                expected: "\"iso\" in a Date object", found: "no \"iso\" key")
        default: break
        }
        throw mismatch("a date", node, path())
    }

    func data(_ node: Int, _ path: @autoclosure () -> [any CodingKey]) throws -> Data {
        switch document.kind(of: node) {
        case .data: return try document.data(node)
        case .object:
            guard let tag = try document.typeTag(of: node), try document.stringEquals(tag, "Bytes") else { break }
            guard let text = try document.member(of: node, named: "base64"), document.kind(of: text) == .string else {
                throw SerializationError(
                    .valueNotFound, path: describe(path()), byteOffset: document.byteOffset(of: node),
                    expected: "a \"base64\" string in a Bytes object", found: "no \"base64\" string")
            }
            guard let data = Data(base64Encoded: try document.string(text)) else {
                throw SerializationError(
                    .invalidValue, path: describe(path()), byteOffset: document.byteOffset(of: text), expected: "base64 text",
                    found: document.describeNode(text))
            }
            return data
        default: break
        }
        throw mismatch("data", node, path())
    }

    /// Decodes `node` as a `T`. `defaults` (the encoded default value at this place) is only
    /// evaluated for values decoded with a nested decoder: finding it costs a key lookup.
    /// Each special case checks `T.self` first, so the casts back to `T` are identities.
    func unbox<T: Decodable>(
        _ node: Int, defaults: @autoclosure () -> ModelValue?, as type: T.Type, at path: @autoclosure () -> [any CodingKey]
    )
        throws -> T
    {
        if T.self == String.self { return unsafeBitCast(try string(node, path()), to: T.self) }
        if T.self == Date.self { return unsafeBitCast(try date(node, path()), to: T.self) }
        if ObjectIdentifier(T.self) == stringArrayType {
            guard document.kind(of: node) == .array else { throw mismatch("an array", node, path()) }
            var result: [String] = []
            var cursor = document.startCursor(of: node)
            let count = try document.count(of: node)
            try document.charge(elements: count, of: node)
            result.reserveCapacity(count)
            for index in 0..<count {
                let element = try document.next(in: node, cursor: &cursor).value
                result.append(try string(element, path() + [IndexKey(intValue: index)]))
            }
            return unsafeBitCast(result, to: T.self)
        }
        if T.self == Int.self { return unsafeBitCast(try integer(node, as: Int.self, path()), to: T.self) }
        if T.self == Double.self { return unsafeBitCast(try double(node, path()), to: T.self) }
        if T.self == Data.self { return unsafeBitCast(try data(node, path()), to: T.self) }
        if T.self == URL.self {
            guard let url = URL(string: try string(node, path())) else {
                throw SerializationError(
                    .invalidValue, path: describe(path()), byteOffset: document.byteOffset(of: node), expected: "a URL",
                    found: document.describeNode(node))
            }
            return unsafeBitCast(url, to: T.self)
        }
        if T.self == Float.self { return unsafeBitCast(try float(node, path()), to: T.self) }
        if T.self == GeoPoint.self {
            guard document.kind(of: node) == .object, let latitude = try document.member(of: node, named: "latitude"),
                let longitude = try document.member(of: node, named: "longitude")
            else { throw mismatch("a GeoPoint object with latitude and longitude", node, path()) }
            let point = GeoPoint(
                latitude: try double(latitude, path() + [IndexKey(stringValue: "latitude")]),
                longitude: try double(longitude, path() + [IndexKey(stringValue: "longitude")]))
            return unsafeBitCast(point, to: T.self)
        }
        if let reference = T.self as? any TreeReference.Type {
            // `T` is the opened type: the memory is written and read as the same type.
            return try withUnsafeTemporaryAllocation(of: T.self, capacity: 1) { buffer in
                let slot = buffer.baseAddress!
                try reference.decodeReference(from: node, decoder: self, into: UnsafeMutableRawPointer(slot), path: { path() })
                return slot.move()
            }
        }
        guard depth < SerializationError.maximumDepth else {
            throw SerializationError(
                .nestingTooDeep, path: describe(path()), byteOffset: document.byteOffset(of: node),
                expected: "at most \(SerializationError.maximumDepth) levels of nested values", found: "deeper nesting")
        }
        let nested = TreeDecoder(
            document: document, node: node, defaults: defaults(), loader: loader, codingPath: path(), depth: depth + 1)
        return try T(from: nested)
    }

    /// Decodes a value missing from the data from the property's default.
    func fallback<T: Decodable>(_ value: ModelValue, as type: T.Type, at path: [any CodingKey]) throws -> T {
        let decoder = try TreeDecoder<ModelValueDocument>.over(
            value, loader: loader.defaultsLoader, codingPath: path, depth: depth + 1)
        return try decoder.unbox(0, defaults: value, as: T.self, at: path)
    }
}

struct TreeKeyedContainer<Key: CodingKey, D: TreeDocument>: IntegerKeyedDecodingContainer {
    let decoder: TreeDecoder<D>
    let object: Int
    let defaults: ModelValue.Object?
    var codingPath: [any CodingKey] { decoder.codingPath }
    private var document: D { decoder.document }

    init(decoder: TreeDecoder<D>, object: Int, defaults: ModelValue.Object?) {
        self.decoder = decoder
        self.object = object
        self.defaults = defaults
    }

    /// The keys the type knows. Every key was checked to be a readable string when the
    /// container was made (``TreeDecoder/container(keyedBy:)``), so none is dropped here.
    var allKeys: [Key] {
        if decoder.askedKeys != nil { decoder.readsEveryKey = true }
        var keys: [Key] = []
        // Members a reader left out are listed too (the object was checked: this cannot fail).
        let object = (try? document.allMembers(of: object)) ?? object
        try? document.forEach(in: object) { key, _ in
            if let text = try? document.string(key), let typed = Key(stringValue: text) { keys.append(typed) }
            return true
        }
        return keys
    }

    /// The node for `key`, trying the name older files used if the property was renamed.
    private func node(_ key: Key) throws -> Int? {
        // `decodeIfPresent` and `contains` ask for a key more than once: noted once.
        if let asked = decoder.askedKeys, asked.last != key.stringValue { decoder.askedKeys!.append(key.stringValue) }
        if let node = try document.member(of: object, named: key.stringValue) { return node }
        guard let old = decoder.renames[key.stringValue] else { return nil }
        return try document.member(of: object, named: old)
    }

    func contains(_ key: Key) -> Bool {
        ((try? node(key)) ?? nil) != nil || defaults?[key.stringValue] != nil
    }

    private func path(_ key: Key) -> [any CodingKey] { codingPath + [key] }

    private func missing(_ key: Key) -> SerializationError {
        SerializationError(
            .valueNotFound, path: describe(path(key)), expected: "a value for \"\(key.stringValue)\"", found: "no such key")
    }

    /// Reads the value for `key` with `read`, or decodes the default when the data lacks it.
    @inline(__always) private func value<T: Decodable>(_ key: Key, _ read: (Int) throws -> T) throws -> T {
        if let node = try node(key) { return try read(node) }
        guard let fallback = defaults?[key.stringValue] else { throw missing(key) }
        return try decoder.fallback(fallback, as: T.self, at: path(key))
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        if let node = try node(key) { return try document.isNull(node) }
        guard let fallback = defaults?[key.stringValue] else { throw missing(key) }
        return fallback.isNullForm
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try value(key) { try decoder.bool($0, path(key)) } }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try value(key) { try decoder.string($0, path(key)) } }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try value(key) { try decoder.double($0, path(key)) } }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try value(key) { try decoder.float($0, path(key)) } }

    func decodeInteger<I: FixedWidthInteger & Decodable>(_ type: I.Type, forKey key: Key) throws -> I {
        try value(key) { try decoder.integer($0, as: I.self, path(key)) }
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        if let node = try node(key) {
            return try decoder.unbox(node, defaults: defaults?[key.stringValue], as: T.self, at: path(key))
        }
        guard let fallback = defaults?[key.stringValue] else { throw missing(key) }
        return try decoder.fallback(fallback, as: T.self, at: path(key))
    }

    private func nestedDecoder(_ key: Key) throws -> any Decoder {
        let fallback = defaults?[key.stringValue]
        if let node = try node(key) {
            guard decoder.depth < SerializationError.maximumDepth else {
                throw SerializationError(
                    .nestingTooDeep, path: describe(path(key)), expected: "at most \(SerializationError.maximumDepth) levels",
                    found: "deeper nesting")
            }
            return TreeDecoder(
                document: document, node: node, defaults: fallback, loader: decoder.loader, codingPath: path(key),
                depth: decoder.depth + 1)
        }
        guard let fallback else { throw missing(key) }
        return try TreeDecoder<ModelValueDocument>.over(
            fallback, loader: decoder.loader.defaultsLoader, codingPath: path(key), depth: decoder.depth + 1)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try nestedDecoder(key).container(keyedBy: NestedKey.self)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try nestedDecoder(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        try superDecoder(named: IndexKey(stringValue: "super"))
    }

    func superDecoder(forKey key: Key) throws -> any Decoder { try superDecoder(named: key) }

    private func superDecoder(named key: any CodingKey) throws -> any Decoder {
        decoder.askedKeys?.append(key.stringValue)
        if let node = try document.member(of: object, named: key.stringValue) {
            return TreeDecoder(
                document: document, node: node, defaults: defaults?[key.stringValue], loader: decoder.loader,
                codingPath: codingPath + [key], depth: decoder.depth + 1)
        }
        return try TreeDecoder<ModelValueDocument>.over(
            .null, defaults: defaults?[key.stringValue], loader: decoder.loader.defaultsLoader, codingPath: codingPath + [key],
            depth: decoder.depth + 1)
    }
}

struct TreeUnkeyedContainer<D: TreeDocument>: IntegerUnkeyedDecodingContainer {
    let decoder: TreeDecoder<D>
    let array: Int
    let total: Int
    private var cursor: Int
    private(set) var currentIndex = 0
    var codingPath: [any CodingKey] { decoder.codingPath }

    init(decoder: TreeDecoder<D>, array: Int, count: Int) {
        self.decoder = decoder
        self.array = array
        total = count
        cursor = decoder.document.startCursor(of: array)
    }

    var count: Int? { total }
    var isAtEnd: Bool { currentIndex >= total }
    private var path: [any CodingKey] { codingPath + [IndexKey(intValue: currentIndex)] }

    private func peek() throws -> Int {
        guard !isAtEnd else {
            throw SerializationError(
                .valueNotFound, path: describe(path), expected: "another array element", found: "the end of the array")
        }
        var copy = cursor
        return try decoder.document.next(in: array, cursor: &copy).value
    }

    private mutating func advance<T>(_ read: (Int, [any CodingKey]) throws -> T) throws -> T {
        let node = try peek()
        let result = try read(node, path)
        _ = try decoder.document.next(in: array, cursor: &cursor)
        currentIndex += 1
        return result
    }

    mutating func decodeNil() throws -> Bool {
        guard try decoder.document.isNull(peek()) else { return false }
        _ = try decoder.document.next(in: array, cursor: &cursor)
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool {
        let decoder = decoder
        return try advance { try decoder.bool($0, $1) }
    }
    mutating func decode(_ type: String.Type) throws -> String {
        let decoder = decoder
        return try advance { try decoder.string($0, $1) }
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        let decoder = decoder
        return try advance { try decoder.double($0, $1) }
    }
    mutating func decode(_ type: Float.Type) throws -> Float {
        let decoder = decoder
        return try advance { try decoder.float($0, $1) }
    }

    mutating func decodeInteger<I: FixedWidthInteger & Decodable>(_ type: I.Type) throws -> I {
        let decoder = decoder
        return try advance { try decoder.integer($0, as: I.self, $1) }
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let decoder = decoder
        return try advance { try decoder.unbox($0, defaults: nil, as: T.self, at: $1) }
    }

    private mutating func nested() throws -> TreeDecoder<D> {
        let decoder = decoder
        guard decoder.depth < SerializationError.maximumDepth else {
            throw SerializationError(
                .nestingTooDeep, path: describe(path), expected: "at most \(SerializationError.maximumDepth) levels",
                found: "deeper nesting")
        }
        return try advance { node, path in
            TreeDecoder(
                document: decoder.document, node: node, defaults: nil, loader: decoder.loader, codingPath: path,
                depth: decoder.depth + 1)
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try nested().container(keyedBy: NestedKey.self)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try nested().unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        try nested()
    }
}

struct TreeSingleValueContainer<D: TreeDocument>: IntegerSingleValueDecodingContainer {
    let decoder: TreeDecoder<D>
    var codingPath: [any CodingKey] { decoder.codingPath }
    private var node: Int { decoder.node }

    func decodeNil() -> Bool { (try? decoder.document.isNull(node)) ?? false }
    func decode(_ type: Bool.Type) throws -> Bool { try decoder.bool(node, codingPath) }
    func decode(_ type: String.Type) throws -> String { try decoder.string(node, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try decoder.double(node, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try decoder.float(node, codingPath) }
    func decodeInteger<I: FixedWidthInteger & Decodable>(_ type: I.Type) throws -> I {
        try decoder.integer(node, as: I.self, codingPath)
    }
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try decoder.unbox(node, defaults: decoder.defaults, as: T.self, at: codingPath)
    }
}
