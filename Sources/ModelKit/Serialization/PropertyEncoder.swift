import Foundation

// The streaming writer's encoder for values it cannot stream: a Codable Encoder that builds a
// ModelValue tree whose containers are reference-type boxes, so that containers handed out
// earlier (super encoders, containers used out of nesting order) can still be filled in; the
// boxes are flattened into values once the model is encoded. References go through the writer
// (`GraphStreamWriter.pointerValue(to:)`), which queues their targets as for streamed values.

/// A value being built by the encoder.
enum EncodedSlot {
    case value(ModelValue)
    case object(EncodedObject)
    case array(EncodedArray)
    /// A super encoder handed out to user code: whatever it ends up holding.
    case encoder(PropertyEncoder)

    func finish() -> ModelValue {
        switch self {
        case .value(let value): return value
        case .object(let box):
            var object = ModelValue.Object()
            for (key, slot) in zip(box.keys, box.slots) { object[key] = slot.finish() }
            return .object(object)
        case .array(let box): return .array(box.slots.map { $0.finish() })
        case .encoder(let encoder): return (encoder.slot ?? .value(.object(ModelValue.Object()))).finish()
        }
    }
}

final class EncodedObject {
    var keys: [String] = []
    var slots: [EncodedSlot] = []

    func set(_ slot: EncodedSlot, for key: String) {
        keys.append(key)
        slots.append(slot)
    }
}

final class EncodedArray {
    var slots: [EncodedSlot] = []
}

/// A coding key for array positions and for paths built by ModelKit itself.
struct IndexKey: CodingKey {
    let stringValue: String
    let intValue: Int?
    init(stringValue: String) {
        self.stringValue = stringValue
        intValue = nil
    }
    init(intValue: Int) {
        stringValue = "\(intValue)"
        self.intValue = intValue
    }
}

/// Renders a coding path as `properties.tags[2].name`. Very long paths (from runaway nesting) keep
/// their first and last components around a count of the ones left out.
func describe(_ path: [any CodingKey]) -> String {
    if path.count > 24 {
        return describe(Array(path.prefix(12))) + ".…(\(path.count - 18) more)…." + describe(Array(path.suffix(6)))
    }
    var text = ""
    for key in path {
        if let index = key.intValue, key is IndexKey {
            text += "[\(index)]"
        } else {
            if !text.isEmpty { text += "." }
            text += key.stringValue
        }
    }
    return text
}

/// Values that the graph serializer writes itself instead of asking them to encode: references.
protocol GraphEncodable {
    func encodePointers(with writer: GraphStreamWriter) throws -> ModelValue
}

final class PropertyEncoder: Encoder {
    let writer: GraphStreamWriter
    let codingPath: [any CodingKey]
    let depth: Int
    var slot: EncodedSlot?
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(writer: GraphStreamWriter, codingPath: [any CodingKey], depth: Int) {
        self.writer = writer
        self.codingPath = codingPath
        self.depth = depth
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let object: EncodedObject
        if case .object(let existing)? = slot {
            object = existing
        } else {
            object = EncodedObject()
            slot = .object(object)
        }
        return KeyedEncodingContainer(KeyedContainer<Key>(encoder: self, object: object, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let array: EncodedArray
        if case .array(let existing)? = slot {
            array = existing
        } else {
            array = EncodedArray()
            slot = .array(array)
        }
        return UnkeyedContainer(encoder: self, array: array, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueContainer(encoder: self)
    }

    /// Encodes one value at `path`, special-casing the types ModelKit writes in its own forms.
    func box<T: Encodable>(_ value: T, at path: [any CodingKey]) throws -> EncodedSlot {
        if T.self == Date.self {
            let date = value as! Date
            return .value(writer.sink.usesJSONForms ? ModelValue.jsonDate(date) : .date(date))
        }
        if T.self == Data.self {
            let data = value as! Data
            return .value(writer.sink.usesJSONForms ? ModelValue.jsonBytes(data) : .data(data))
        }
        if T.self == URL.self { return .value(.string((value as! URL).absoluteString)) }
        if T.self == Double.self { return .value(number(value as! Double)) }
        if T.self == Float.self { return .value(number(value as! Float)) }
        if T.self == GeoPoint.self {
            let point = value as! GeoPoint
            return .value(
                .object(
                    ModelValue.Object([
                        ("__type", "GeoPoint"), ("latitude", number(point.latitude)), ("longitude", number(point.longitude)),
                    ])))
        }
        // Arrays of strings and numbers are common (tags, scores): write them without a nested encoder.
        if T.self == [String].self { return .value(.array((value as! [String]).map(ModelValue.string))) }
        if T.self == [Int].self { return .value(.array((value as! [Int]).map { .int(Int64($0)) })) }
        if T.self == [Double].self { return .value(.array((value as! [Double]).map(number))) }
        if let reference = value as? any GraphEncodable {
            do {
                return .value(try reference.encodePointers(with: writer))
            } catch let error as SerializationError where error.path.isEmpty {
                throw SerializationError(error.code, path: describe(path), expected: error.expected, found: error.found)
            }
        }
        // Sets and dictionaries in a stable order, so that equal models give equal values.
        if let unordered = value as? any StableOrderEncodable { return try box(unordered.inStableOrder(), at: path) }
        guard depth < SerializationError.maximumDepth else {
            throw SerializationError(
                .nestingTooDeep, path: describe(path),
                expected: "at most \(SerializationError.maximumDepth) levels of nested values",
                found: "deeper nesting (a cycle among objects that are not models?)")
        }
        let nested = PropertyEncoder(writer: writer, codingPath: path, depth: depth + 1)
        try value.encode(to: nested)
        return nested.slot ?? .value(.object(ModelValue.Object()))
    }

    func number(_ value: Double) -> ModelValue {
        writer.sink.usesJSONForms ? ModelValue.jsonNumber(value) : .double(value)
    }

    /// A Float is stored as the Double nearest to its shortest decimal text, so that JSON shows
    /// `0.1` rather than `0.10000000149011612`; reading that Double back as a Float gives the same
    /// Float (double rounding from 53 to 24 bits is innocuous).
    func number(_ value: Float) -> ModelValue {
        guard value.isFinite, let double = Double(value.description) else { return number(Double(value)) }
        return .double(double)
    }

    func integer<I: FixedWidthInteger>(_ value: I) -> ModelValue {
        if let small = Int64(exactly: value) { return .int(small) }
        return .uint(UInt64(value))
    }

    struct KeyedContainer<Key: CodingKey>: NilAsNullKeyedContainer {
        let encoder: PropertyEncoder
        let object: EncodedObject
        let codingPath: [any CodingKey]

        private func put(_ value: ModelValue, _ key: Key) { object.set(.value(value), for: key.stringValue) }

        mutating func encodeNil(forKey key: Key) throws { put(.null, key) }
        mutating func encode(_ value: Bool, forKey key: Key) throws { put(.bool(value), key) }
        mutating func encode(_ value: String, forKey key: Key) throws { put(.string(value), key) }
        mutating func encode(_ value: Double, forKey key: Key) throws { put(encoder.number(value), key) }
        mutating func encode(_ value: Float, forKey key: Key) throws { put(encoder.number(value), key) }
        mutating func encode(_ value: Int, forKey key: Key) throws { put(.int(Int64(value)), key) }
        mutating func encode(_ value: Int8, forKey key: Key) throws { put(.int(Int64(value)), key) }
        mutating func encode(_ value: Int16, forKey key: Key) throws { put(.int(Int64(value)), key) }
        mutating func encode(_ value: Int32, forKey key: Key) throws { put(.int(Int64(value)), key) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { put(.int(value), key) }
        mutating func encode(_ value: UInt, forKey key: Key) throws { put(encoder.integer(value), key) }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { put(.int(Int64(value)), key) }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { put(.int(Int64(value)), key) }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { put(.int(Int64(value)), key) }
        mutating func encode(_ value: UInt64, forKey key: Key) throws { put(encoder.integer(value), key) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            object.set(try encoder.box(value, at: codingPath + [key]), for: key.stringValue)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
            -> KeyedEncodingContainer<NestedKey>
        {
            let nested = EncodedObject()
            object.set(.object(nested), for: key.stringValue)
            return KeyedEncodingContainer(
                KeyedContainer<NestedKey>(encoder: encoder, object: nested, codingPath: codingPath + [key]))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            let nested = EncodedArray()
            object.set(.array(nested), for: key.stringValue)
            return UnkeyedContainer(encoder: encoder, array: nested, codingPath: codingPath + [key])
        }

        // The key is a plain "super" string: the type's own CodingKeys need not have such a case.
        mutating func superEncoder() -> any Encoder { superEncoder(named: IndexKey(stringValue: "super")) }

        mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(named: key) }

        private mutating func superEncoder(named key: any CodingKey) -> any Encoder {
            let nested = PropertyEncoder(writer: encoder.writer, codingPath: codingPath + [key], depth: encoder.depth + 1)
            object.set(.encoder(nested), for: key.stringValue)
            return nested
        }
    }

    struct UnkeyedContainer: UnkeyedEncodingContainer {
        let encoder: PropertyEncoder
        let array: EncodedArray
        let codingPath: [any CodingKey]
        var count: Int { array.slots.count }

        private func put(_ value: ModelValue) { array.slots.append(.value(value)) }
        private var nextPath: [any CodingKey] { codingPath + [IndexKey(intValue: count)] }

        mutating func encodeNil() throws { put(.null) }
        mutating func encode(_ value: Bool) throws { put(.bool(value)) }
        mutating func encode(_ value: String) throws { put(.string(value)) }
        mutating func encode(_ value: Double) throws { put(encoder.number(value)) }
        mutating func encode(_ value: Float) throws { put(encoder.number(value)) }
        mutating func encode(_ value: Int) throws { put(.int(Int64(value))) }
        mutating func encode(_ value: Int8) throws { put(.int(Int64(value))) }
        mutating func encode(_ value: Int16) throws { put(.int(Int64(value))) }
        mutating func encode(_ value: Int32) throws { put(.int(Int64(value))) }
        mutating func encode(_ value: Int64) throws { put(.int(value)) }
        mutating func encode(_ value: UInt) throws { put(encoder.integer(value)) }
        mutating func encode(_ value: UInt8) throws { put(.int(Int64(value))) }
        mutating func encode(_ value: UInt16) throws { put(.int(Int64(value))) }
        mutating func encode(_ value: UInt32) throws { put(.int(Int64(value))) }
        mutating func encode(_ value: UInt64) throws { put(encoder.integer(value)) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            array.slots.append(try encoder.box(value, at: nextPath))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey>
        {
            let nested = EncodedObject()
            let path = nextPath
            array.slots.append(.object(nested))
            return KeyedEncodingContainer(KeyedContainer<NestedKey>(encoder: encoder, object: nested, codingPath: path))
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let nested = EncodedArray()
            let path = nextPath
            array.slots.append(.array(nested))
            return UnkeyedContainer(encoder: encoder, array: nested, codingPath: path)
        }

        mutating func superEncoder() -> any Encoder {
            let nested = PropertyEncoder(writer: encoder.writer, codingPath: nextPath, depth: encoder.depth + 1)
            array.slots.append(.encoder(nested))
            return nested
        }
    }

    struct SingleValueContainer: SingleValueEncodingContainer {
        let encoder: PropertyEncoder
        var codingPath: [any CodingKey] { encoder.codingPath }

        private func put(_ value: ModelValue) { encoder.slot = .value(value) }

        mutating func encodeNil() throws { put(.null) }
        mutating func encode(_ value: Bool) throws { put(.bool(value)) }
        mutating func encode(_ value: String) throws { put(.string(value)) }
        mutating func encode(_ value: Double) throws { put(encoder.number(value)) }
        mutating func encode(_ value: Float) throws { put(encoder.number(value)) }
        mutating func encode(_ value: Int) throws { put(.int(Int64(value))) }
        mutating func encode(_ value: Int8) throws { put(.int(Int64(value))) }
        mutating func encode(_ value: Int16) throws { put(.int(Int64(value))) }
        mutating func encode(_ value: Int32) throws { put(.int(Int64(value))) }
        mutating func encode(_ value: Int64) throws { put(.int(value)) }
        mutating func encode(_ value: UInt) throws { put(encoder.integer(value)) }
        mutating func encode(_ value: UInt8) throws { put(.int(Int64(value))) }
        mutating func encode(_ value: UInt16) throws { put(.int(Int64(value))) }
        mutating func encode(_ value: UInt32) throws { put(.int(Int64(value))) }
        mutating func encode(_ value: UInt64) throws { put(encoder.integer(value)) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            encoder.slot = try encoder.box(value, at: codingPath)
        }
    }
}

/// A keyed container of ModelKit's encoders, which write a nil optional as null: the standard
/// library's `encodeIfPresent` leaves the key out, and then a missing key could no longer mean
/// "not in the data" and take the property's default when the model is read.
protocol NilAsNullKeyedContainer: KeyedEncodingContainerProtocol {}

extension NilAsNullKeyedContainer {
    private mutating func encodeOrNull<T: Encodable>(_ value: T?, forKey key: Key) throws {
        guard let value else { return try encodeNil(forKey: key) }
        try encode(value, forKey: key)
    }

    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        try encodeOrNull(value, forKey: key)
    }
}

extension ModelRef: GraphEncodable {
    func encodePointers(with writer: GraphStreamWriter) throws -> ModelValue {
        writer.sawReference = true
        guard writer.followsReferences else {
            return id.map { ModelValue.pointer(name: ModelRegistry.name(of: Target.self), id: $0, objectId: nil) } ?? .null
        }
        guard let target = target(lookupIn: writer.ownerContext, held: writer.ownerHeld) else { return .null }
        return try writer.pointerValue(to: target)
    }
}

extension ModelArray: GraphEncodable {
    func encodePointers(with writer: GraphStreamWriter) throws -> ModelValue {
        writer.sawReference = true
        var pointers: [ModelValue] = []
        pointers.reserveCapacity(references.count)
        for raw in references.indices {
            if writer.followsReferences {
                guard let target = references[raw].target(lookupIn: writer.ownerContext, held: writer.ownerHeld) else { continue }
                pointers.append(try writer.pointerValue(to: target))
            } else if let id = references[raw].id {
                pointers.append(ModelValue.pointer(name: ModelRegistry.name(of: Element.self), id: id, objectId: nil))
            }
        }
        return .array(pointers)
    }
}
