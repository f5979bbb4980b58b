import Foundation

// A Codable Encoder that writes a model's properties straight into a GraphSink, in the order the
// `encode(to:)` implementation calls it: no ModelValue tree, no [String: Any].
//
// Streaming needs containers to be used in nesting order (a nested container is finished before
// its parent is written to again), which is what synthesized and almost all hand-written
// conformances do. The writer keeps a stack of open containers; writing to a container closes
// every container opened inside it since. Writing to a container that was already closed cannot
// be streamed: the writer then writes the model's properties again, into a tree (an
// OpenTreeSink), where every container is a node that stays open and each use of a container
// focuses its node first; then the tree is written out. The same encoder does both.

/// Encodes one value of the model being written. Handed to `encode(to:)` implementations.
final class ValueEncoder: Encoder {
    let writer: GraphStreamWriter
    /// The nesting level of the container this value opens (1 for a model's properties).
    let level: Int
    /// How many values deep this one is (the nesting limit counts these).
    let depth: Int
    let codingPath: [any CodingKey]
    /// In an open tree, the node this value goes into (see ``OpenTreeSink/reserve()``); else -1.
    let node: Int
    /// Whether this value has written anything (a container or a single value).
    @exclusivity(unchecked) var started = false
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(writer: GraphStreamWriter, level: Int, depth: Int, codingPath: [any CodingKey], node: Int) {
        self.writer = writer
        self.level = level
        self.depth = depth
        self.codingPath = codingPath
        self.node = node
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        open(isObject: true)
        return KeyedEncodingContainer(
            StreamKeyedContainer<Key>(writer: writer, level: level, depth: depth, codingPath: codingPath, node: node))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        open(isObject: false)
        return StreamUnkeyedContainer(writer: writer, level: level, depth: depth, codingPath: codingPath, node: node)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        StreamSingleValueContainer(encoder: self)
    }

    private func open(isObject: Bool) {
        if let tree = writer.tree {
            // The reserved node becomes the container (the second request finds it made).
            tree.focus(node)
            if !started { _ = writer.openContainer(isObject: isObject) }
            started = true
            return
        }
        if started {
            // A second container request for the same value: fine while it is still open.
            if !writer.isOpen(level: level, isObject: isObject) { writer.noteMisuse(at: codingPath) }
            return
        }
        started = true
        guard writer.closeContainers(above: level - 1) else { return writer.noteMisuse(at: codingPath) }
        _ = writer.openContainer(isObject: isObject)
    }
}

struct StreamKeyedContainer<Key: CodingKey>: NilAsNullKeyedContainer {
    let writer: GraphStreamWriter
    let level: Int
    let depth: Int
    let codingPath: [any CodingKey]
    /// The container's node in a tree; else -1.
    let node: Int

    @inline(__always) private func member(_ key: Key) throws -> any GraphSink {
        try writer.enter(level: level, node: node, at: codingPath)
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
        var nested = -1
        if (try? member(key)) != nil {
            nested = writer.openContainer(isObject: true)
        } else {
            writer.noteMisuse(at: path)
        }
        return KeyedEncodingContainer(
            StreamKeyedContainer<NestedKey>(writer: writer, level: level + 1, depth: depth + 1, codingPath: path, node: nested))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let path = codingPath + [key]
        var nested = -1
        if (try? member(key)) != nil {
            nested = writer.openContainer(isObject: false)
        } else {
            writer.noteMisuse(at: path)
        }
        return StreamUnkeyedContainer(writer: writer, level: level + 1, depth: depth + 1, codingPath: path, node: nested)
    }

    mutating func superEncoder() -> any Encoder { superEncoder(named: IndexKey(stringValue: "super")) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(named: key) }

    /// Super encoders outlive the call that creates them, so they cannot stream: the model is
    /// written again as a tree, where the super encoder's value has a node of its own (and
    /// meanwhile a throwaway encoder keeps the caller going).
    private func superEncoder(named key: any CodingKey) -> any Encoder {
        let path = codingPath + [key]
        if let tree = writer.tree, (try? writer.enter(level: level, node: node, at: codingPath)) != nil {
            writer.sink.key(key.stringValue)
            return ValueEncoder(writer: writer, level: level + 1, depth: depth + 1, codingPath: path, node: tree.reserve())
        }
        writer.noteMisuse(at: path)
        return ValueEncoder.throwaway(codingPath: path, depth: depth)
    }
}

struct StreamUnkeyedContainer: UnkeyedEncodingContainer {
    let writer: GraphStreamWriter
    let level: Int
    let depth: Int
    let codingPath: [any CodingKey]
    /// The container's node in a tree; else -1.
    let node: Int
    private(set) var count = 0

    init(writer: GraphStreamWriter, level: Int, depth: Int, codingPath: [any CodingKey], node: Int) {
        self.writer = writer
        self.level = level
        self.depth = depth
        self.codingPath = codingPath
        self.node = node
    }

    @inline(__always) private mutating func element() throws -> any GraphSink {
        try writer.enter(level: level, node: node, at: codingPath)
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
        var nested = -1
        if (try? element()) != nil {
            nested = writer.openContainer(isObject: true)
        } else {
            writer.noteMisuse(at: path)
        }
        return KeyedEncodingContainer(
            StreamKeyedContainer<NestedKey>(writer: writer, level: level + 1, depth: depth + 1, codingPath: path, node: nested))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = codingPath + [IndexKey(intValue: count)]
        var nested = -1
        if (try? element()) != nil {
            nested = writer.openContainer(isObject: false)
        } else {
            writer.noteMisuse(at: path)
        }
        return StreamUnkeyedContainer(writer: writer, level: level + 1, depth: depth + 1, codingPath: path, node: nested)
    }

    mutating func superEncoder() -> any Encoder {
        let path = codingPath + [IndexKey(intValue: count)]
        if let tree = writer.tree, (try? element()) != nil {
            return ValueEncoder(writer: writer, level: level + 1, depth: depth + 1, codingPath: path, node: tree.reserve())
        }
        writer.noteMisuse(at: path)
        return ValueEncoder.throwaway(codingPath: path, depth: depth)
    }
}

extension ValueEncoder {
    /// An encoder whose output nobody reads, for a caller that must be kept going after its
    /// value was found not to stream (it is written again as a tree).
    static func throwaway(codingPath: [any CodingKey], depth: Int) -> ValueEncoder {
        ValueEncoder(
            writer: GraphStreamWriter(sink: OpenTreeSink(usesJSONForms: false)), level: 1, depth: depth,
            codingPath: codingPath, node: 0)
    }
}

struct StreamSingleValueContainer: SingleValueEncodingContainer {
    let encoder: ValueEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func value() throws -> any GraphSink {
        let writer = encoder.writer
        // In a tree, the value fills the encoder's reserved node.
        writer.tree?.focus(encoder.node)
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
