import Foundation

// A Codable Encoder that writes a model's properties straight into a GraphSink, in the order the
// `encode(to:)` implementation calls it: no ModelValue tree, no [String: Any].
//
// Streaming needs containers to be used in nesting order (a nested container is finished before
// its parent is written to again), which is what synthesized and almost all hand-written
// conformances do. The writer keeps a stack of open containers; writing to a container closes
// every container opened inside it since. Writing to a container that was already closed cannot
// be streamed: the writer then reports the model as `invalidValue` rather than write wrong data.

/// Encodes one value of the model being written. Handed to `encode(to:)` implementations.
final class ValueEncoder: Encoder {
    let writer: GraphStreamWriter
    /// The nesting level of the container this value opens (1 for a model's properties).
    let level: Int
    /// How many values deep this one is (the nesting limit counts these).
    let depth: Int
    let codingPath: [any CodingKey]
    /// Whether this value has written anything (a container or a single value).
    @exclusivity(unchecked) var started = false
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(writer: GraphStreamWriter, level: Int, depth: Int, codingPath: [any CodingKey]) {
        self.writer = writer
        self.level = level
        self.depth = depth
        self.codingPath = codingPath
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        open(isObject: true)
        return KeyedEncodingContainer(
            StreamKeyedContainer<Key>(writer: writer, level: level, depth: depth, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        open(isObject: false)
        return StreamUnkeyedContainer(writer: writer, level: level, depth: depth, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        StreamSingleValueContainer(encoder: self)
    }

    private func open(isObject: Bool) {
        if started {
            // A second container request for the same value: fine while it is still open.
            if !writer.isOpen(level: level, isObject: isObject) { writer.noteMisuse(at: codingPath) }
            return
        }
        started = true
        guard writer.closeContainers(above: level - 1) else { return writer.noteMisuse(at: codingPath) }
        writer.openContainer(isObject: isObject)
    }
}

struct StreamKeyedContainer<Key: CodingKey>: NilAsNullKeyedContainer {
    let writer: GraphStreamWriter
    let level: Int
    let depth: Int
    let codingPath: [any CodingKey]

    @inline(__always) private func member(_ key: Key) throws -> any GraphSink {
        try writer.enter(level: level, at: codingPath)
        writer.sink.key(key.stringValue)
        return writer.sink
    }

    mutating func encodeNil(forKey key: Key) throws { try member(key).null() }
    mutating func encode(_ value: Bool, forKey key: Key) throws { try member(key).bool(value) }
    mutating func encode(_ value: String, forKey key: Key) throws { try member(key).string(value) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try member(key).double(value) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try member(key).double(floatAsDouble(value)) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try member(key).int(Int64(value)) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try member(key).int(Int64(value)) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try member(key).int(Int64(value)) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try member(key).int(Int64(value)) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try member(key).int(value) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try member(key).uint(UInt64(value)) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try member(key).int(Int64(value)) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try member(key).int(Int64(value)) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try member(key).int(Int64(value)) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try member(key).uint(value) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        _ = try member(key)
        try writer.box(value, level: level + 1, depth: depth + 1, path: { codingPath + [key] })
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let path = codingPath + [key]
        if (try? member(key)) != nil {
            writer.openContainer(isObject: true)
        } else {
            writer.noteMisuse(at: path)
        }
        return KeyedEncodingContainer(
            StreamKeyedContainer<NestedKey>(writer: writer, level: level + 1, depth: depth + 1, codingPath: path))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let path = codingPath + [key]
        if (try? member(key)) != nil {
            writer.openContainer(isObject: false)
        } else {
            writer.noteMisuse(at: path)
        }
        return StreamUnkeyedContainer(writer: writer, level: level + 1, depth: depth + 1, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder { superEncoder(named: IndexKey(stringValue: "super")) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(named: key) }

    /// Super encoders outlive the call that creates them, so they cannot stream: the model is
    /// reported (and a throwaway encoder keeps the caller going until then).
    private func superEncoder(named key: any CodingKey) -> any Encoder {
        writer.noteMisuse(at: codingPath + [key])
        return PropertyEncoder(
            writer: GraphStreamWriter(sink: ModelValueSink(usesJSONForms: true)), codingPath: codingPath + [key], depth: depth)
    }
}

struct StreamUnkeyedContainer: UnkeyedEncodingContainer {
    let writer: GraphStreamWriter
    let level: Int
    let depth: Int
    let codingPath: [any CodingKey]
    private(set) var count = 0

    init(writer: GraphStreamWriter, level: Int, depth: Int, codingPath: [any CodingKey]) {
        self.writer = writer
        self.level = level
        self.depth = depth
        self.codingPath = codingPath
    }

    @inline(__always) private mutating func element() throws -> any GraphSink {
        try writer.enter(level: level, at: codingPath)
        count += 1
        return writer.sink
    }

    mutating func encodeNil() throws { try element().null() }
    mutating func encode(_ value: Bool) throws { try element().bool(value) }
    mutating func encode(_ value: String) throws { try element().string(value) }
    mutating func encode(_ value: Double) throws { try element().double(value) }
    mutating func encode(_ value: Float) throws { try element().double(floatAsDouble(value)) }
    mutating func encode(_ value: Int) throws { try element().int(Int64(value)) }
    mutating func encode(_ value: Int8) throws { try element().int(Int64(value)) }
    mutating func encode(_ value: Int16) throws { try element().int(Int64(value)) }
    mutating func encode(_ value: Int32) throws { try element().int(Int64(value)) }
    mutating func encode(_ value: Int64) throws { try element().int(value) }
    mutating func encode(_ value: UInt) throws { try element().uint(UInt64(value)) }
    mutating func encode(_ value: UInt8) throws { try element().int(Int64(value)) }
    mutating func encode(_ value: UInt16) throws { try element().int(Int64(value)) }
    mutating func encode(_ value: UInt32) throws { try element().int(Int64(value)) }
    mutating func encode(_ value: UInt64) throws { try element().uint(value) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        let index = count
        _ = try element()
        let codingPath = codingPath
        try writer.box(value, level: level + 1, depth: depth + 1, path: { codingPath + [IndexKey(intValue: index)] })
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let path = codingPath + [IndexKey(intValue: count)]
        if (try? element()) != nil {
            writer.openContainer(isObject: true)
        } else {
            writer.noteMisuse(at: path)
        }
        return KeyedEncodingContainer(
            StreamKeyedContainer<NestedKey>(writer: writer, level: level + 1, depth: depth + 1, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = codingPath + [IndexKey(intValue: count)]
        if (try? element()) != nil {
            writer.openContainer(isObject: false)
        } else {
            writer.noteMisuse(at: path)
        }
        return StreamUnkeyedContainer(writer: writer, level: level + 1, depth: depth + 1, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let path = codingPath + [IndexKey(intValue: count)]
        writer.noteMisuse(at: path)
        return PropertyEncoder(
            writer: GraphStreamWriter(sink: ModelValueSink(usesJSONForms: true)), codingPath: path, depth: depth)
    }
}

struct StreamSingleValueContainer: SingleValueEncodingContainer {
    let encoder: ValueEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func value() throws -> any GraphSink {
        let writer = encoder.writer
        guard !encoder.started, writer.closeContainers(above: encoder.level - 1) else {
            writer.noteMisuse(at: codingPath)
            throw SerializationError(
                .invalidValue, path: describe(codingPath), expected: "one value per single-value container",
                found: "a second value, or a value after its container was closed")
        }
        encoder.started = true
        return writer.sink
    }

    mutating func encodeNil() throws { try value().null() }
    mutating func encode(_ value: Bool) throws { try self.value().bool(value) }
    mutating func encode(_ value: String) throws { try self.value().string(value) }
    mutating func encode(_ value: Double) throws { try self.value().double(value) }
    mutating func encode(_ value: Float) throws { try self.value().double(floatAsDouble(value)) }
    mutating func encode(_ value: Int) throws { try self.value().int(Int64(value)) }
    mutating func encode(_ value: Int8) throws { try self.value().int(Int64(value)) }
    mutating func encode(_ value: Int16) throws { try self.value().int(Int64(value)) }
    mutating func encode(_ value: Int32) throws { try self.value().int(Int64(value)) }
    mutating func encode(_ value: Int64) throws { try self.value().int(value) }
    mutating func encode(_ value: UInt) throws { try self.value().uint(UInt64(value)) }
    mutating func encode(_ value: UInt8) throws { try self.value().int(Int64(value)) }
    mutating func encode(_ value: UInt16) throws { try self.value().int(Int64(value)) }
    mutating func encode(_ value: UInt32) throws { try self.value().int(Int64(value)) }
    mutating func encode(_ value: UInt64) throws { try self.value().uint(value) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        _ = try self.value()
        let path = codingPath
        // The same level: a value encoding itself through a single-value container is one value.
        try encoder.writer.box(value, level: encoder.level, depth: encoder.depth + 1, path: { path })
    }
}

/// A Float as the Double nearest to its shortest decimal text (`0.1`, not `0.10000000149011612`),
/// as the tree serializer writes it.
@inline(__always) func floatAsDouble(_ value: Float) -> Double {
    guard value.isFinite, let double = Double(value.description) else { return Double(value) }
    return double
}
