import Foundation

/// Where the simple stored properties of a model's `Properties` live in memory, learned once per
/// type through `Codable`, so that string-key conditions read them directly instead of encoding
/// every model.
///
/// How, without reflection: a probing decoder builds a `Properties` value in which every `Int`,
/// `Double`, `String` and `Date` property (also optional, also in nested structs) holds a value
/// unique to its key, and notes the exact type each key was decoded as. Each unique value is then
/// looked for in the bytes of the result: found exactly once, its offset is the property's. The
/// result is checked by encoding it: every located key must encode to its unique value. Keys that
/// don't pass (custom coding, enums, classes, anything else) are simply read by encoding.
struct PropertyLayout: @unchecked Sendable {
    enum Kind {
        case int, double, string, date
        /// `[String]`.
        case strings
    }

    struct Field {
        let offset: Int
        let kind: Kind
        let optional: Bool

        /// The value at this field of the properties at `base`, as a condition compares it.
        @inline(__always)
        func read(_ base: UnsafeRawPointer) -> ModelValue {
            switch (kind, optional) {
            case (.int, false): return .int(Int64(base.load(fromByteOffset: offset, as: Int.self)))
            case (.double, false): return .double(base.load(fromByteOffset: offset, as: Double.self))
            case (.string, false): return .string(base.load(fromByteOffset: offset, as: String.self))
            case (.date, false): return .date(base.load(fromByteOffset: offset, as: Date.self))
            case (.int, true): return base.load(fromByteOffset: offset, as: Int?.self).map { .int(Int64($0)) } ?? .null
            case (.double, true): return base.load(fromByteOffset: offset, as: Double?.self).map(ModelValue.double) ?? .null
            case (.string, true): return base.load(fromByteOffset: offset, as: String?.self).map(ModelValue.string) ?? .null
            case (.date, true): return base.load(fromByteOffset: offset, as: Date?.self).map(ModelValue.date) ?? .null
            case (.strings, false): return .array(base.load(fromByteOffset: offset, as: [String].self).map(ModelValue.string))
            case (.strings, true):
                return base.load(fromByteOffset: offset, as: [String]?.self).map { .array($0.map(ModelValue.string)) } ?? .null
            }
        }
    }

    /// The located fields by dotted key.
    let fields: [String: Field]

    private static let cache = Locked([ObjectIdentifier: PropertyLayout]())

    /// The layout of `M.Properties`, probed on first use.
    static func of<M: Model>(_ type: M.Type) -> PropertyLayout {
        let key = ObjectIdentifier(M.self)
        if let known = cache.withLock({ $0[key] }) { return known }
        let layout = probe(M.self)
        cache.withLock { $0[key] = layout }
        return layout
    }

    private static func probe<M: Model>(_ type: M.Type) -> PropertyLayout {
        guard let template = DefaultValues.of(M.self) else { return PropertyLayout(fields: [:]) }
        let recorder = LayoutRecorder(template: template)
        guard var probed = try? M.Properties(from: LayoutProbe(recorder: recorder, path: [], template: template)) else {
            return PropertyLayout(fields: [:])
        }
        // Only keys whose unique value the encoding gives back are trusted.
        guard case .object(let encoded)? = try? GraphWriter(format: .propertyList).encodeProperties(probed) else {
            return PropertyLayout(fields: [:])
        }
        var fields: [String: Field] = [:]
        withUnsafeBytes(of: &probed) { bytes in
            for entry in recorder.entries {
                guard encodedValue(encoded, entry.path) == entry.value else { continue }
                let offsets = stride(from: 0, through: bytes.count - entry.pattern.count, by: 8).filter { offset in
                    bytes[offset..<offset + entry.pattern.count].elementsEqual(entry.pattern)
                }
                guard offsets.count == 1 else { continue }
                fields[entry.path.joined(separator: ".")] = Field(offset: offsets[0], kind: entry.kind, optional: entry.optional)
            }
        }
        // The same offsets must read a default instance's values as its encoding gives them.
        if case .object(let defaults) = template {
            var instance = M().storage.values
            withUnsafeBytes(of: &instance) { bytes in
                guard let base = bytes.baseAddress else { return }
                for (key, field) in fields
                where encodedValue(defaults, key.split(separator: ".").map(String.init)) != field.read(base) {
                    fields[key] = nil
                }
            }
        }
        return PropertyLayout(fields: fields)
    }

    private static func encodedValue(_ object: ModelValue.Object, _ path: [String]) -> ModelValue? {
        var value = ModelValue.object(object)
        for key in path {
            guard case .object(let object) = value, let next = object[key] else { return nil }
            value = next
        }
        return value
    }
}

/// The unique values the probe handed out, by key.
final class LayoutRecorder {
    struct Entry {
        let path: [String]
        let kind: PropertyLayout.Kind
        let optional: Bool
        /// The value as the encoding gives it.
        let value: ModelValue
        /// The bytes the value occupies in memory.
        let pattern: [UInt8]
    }

    let template: ModelValue
    private(set) var entries: [Entry] = []
    private var counter: UInt64 = 0
    /// Strings handed out, kept alive so that their storage (and so their bytes) stay unique.
    private var strings: [String] = []
    private var stringArrays: [[String]] = []

    init(template: ModelValue) {
        self.template = template
    }

    func int(_ path: [String], optional: Bool) -> Int {
        counter += 1
        let value = Int(bitPattern: 0x5EED_0000_0000_0000 | UInt(counter))
        record(path, .int, optional, .int(Int64(value)), value)
        return value
    }

    func double(_ path: [String], optional: Bool) -> Double {
        counter += 1
        let value = 1e15 + Double(counter) + 0.5
        record(path, .double, optional, .double(value), value)
        return value
    }

    func date(_ path: [String], optional: Bool) -> Date {
        counter += 1
        let value = Date(timeIntervalSinceReferenceDate: 9e8 + Double(counter) + 0.25)
        record(path, .date, optional, .date(value), value)
        return value
    }

    func strings(_ path: [String]) -> [String] {
        counter += 1
        // A one-element array: its buffer, and so the array's bytes, are unique.
        let element = "modelkit-layout-probe-\(counter)-\(UInt64.random(in: 0 ... .max))"
        let value = [element]
        stringArrays.append(value)
        record(path, .strings, false, .array([.string(element)]), value)
        return value
    }

    func string(_ path: [String], optional: Bool) -> String {
        counter += 1
        // Longer than 15 bytes, so it lives in its own buffer and its bytes are unique.
        let value = "modelkit-layout-probe-\(counter)-\(UInt64.random(in: 0 ... .max))"
        strings.append(value)
        record(path, .string, optional, .string(value), value)
        return value
    }

    private func record<T>(_ path: [String], _ kind: PropertyLayout.Kind, _ optional: Bool, _ encoded: ModelValue, _ value: T) {
        let pattern = withUnsafeBytes(of: value) { Array($0) }
        entries.append(Entry(path: path, kind: kind, optional: optional, value: encoded, pattern: pattern))
    }
}

/// The probing decoder: unique values for simple properties, the default instance's values for
/// everything else.
struct LayoutProbe: Decoder {
    let recorder: LayoutRecorder
    let path: [String]
    /// The encoded default value at `path`.
    let template: ModelValue?
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Keyed<Key>(probe: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try fallback().unkeyedContainer()
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        try fallback().singleValueContainer()
    }

    /// A real decoder over the default instance's encoded value here.
    func fallback() -> PropertyDecoder {
        PropertyDecoder.forTemplate(template)
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let probe: LayoutProbe
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { [] }

        private func path(_ key: Key) -> [String] { probe.path + [key.stringValue] }
        private func template(_ key: Key) -> ModelValue? {
            if case .object(let object)? = probe.template { return object[key.stringValue] }
            return nil
        }

        func contains(_ key: Key) -> Bool { true }
        func decodeNil(forKey key: Key) throws -> Bool { false }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { probe.recorder.int(path(key), optional: false) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
            probe.recorder.double(path(key), optional: false)
        }
        func decode(_ type: String.Type, forKey key: Key) throws -> String {
            probe.recorder.string(path(key), optional: false)
        }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
            probe.recorder.int(path(key), optional: true)
        }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
            probe.recorder.double(path(key), optional: true)
        }
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
            probe.recorder.string(path(key), optional: true)
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            if T.self == Date.self { return probe.recorder.date(path(key), optional: false) as! T }
            if T.self == [String].self { return probe.recorder.strings(path(key)) as! T }
            let nested = LayoutProbe(recorder: probe.recorder, path: path(key), template: template(key))
            if let value = try? T(from: nested) { return value }
            return try T(from: PropertyDecoder.forTemplate(template(key)))
        }

        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            if T.self == Date.self { return (probe.recorder.date(path(key), optional: true) as! T) }
            // Not into optional structs: their fields' bytes mean nothing when the value is nil.
            guard let template = template(key), !PropertyDecoder.isNull(template) else { return nil }
            return try T(from: PropertyDecoder.forTemplate(template))
        }

        // Everything else takes the default instance's value.
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try fallback(type, key) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try fallback(type, key) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try fallback(type, key) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try fallback(type, key) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try fallback(type, key) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try fallback(type, key) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try fallback(type, key) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try fallback(type, key) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try fallback(type, key) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try fallback(type, key) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try fallback(type, key) }

        private func fallback<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T {
            try T(from: PropertyDecoder.forTemplate(template(key)))
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            KeyedDecodingContainer(
                LayoutProbe.Keyed<NestedKey>(
                    probe: LayoutProbe(recorder: probe.recorder, path: path(key), template: template(key))))
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try PropertyDecoder.forTemplate(template(key)).unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder { probe.fallback() }
        func superDecoder(forKey key: Key) throws -> any Decoder { PropertyDecoder.forTemplate(template(key)) }
    }
}

extension PropertyDecoder {
    /// A decoder over a default instance's encoded value (`null` when unknown).
    static func forTemplate(_ value: ModelValue?) -> PropertyDecoder {
        PropertyDecoder(
            value: value ?? .null, defaults: value,
            reader: GraphReader(context: ModelContext(), options: DeserializationOptions()), codingPath: [], depth: 1)
    }
}
