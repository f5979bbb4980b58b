import Foundation

// Probing a `Properties` type's layout (see `PropertyLayout`): decode it with unique values,
// find each value's bytes, flip each Bool, and keep only what the encoding confirms.

extension PropertyLayout {
    static func probe<M: Model>(_ type: M.Type) -> PropertyLayout {
        let none = PropertyLayout(fields: [:], references: [:])
        guard let template = DefaultValues.of(M.self) else { return none }
        let recorder = LayoutRecorder()
        func decode() -> M.Properties? {
            try? M.Properties(from: LayoutProbe(recorder: recorder, path: [], template: template))
        }
        // Only keys whose unique value the encoding gives back are trusted.
        guard var probed = decode(),
            case .object(let encoded)? = try? GraphStreamWriter.valueTree(of: probed)
        else { return none }
        var fields: [String: Field] = [:]
        var references: [String: Reference] = [:]
        let probedBytes = withUnsafeBytes(of: &probed) { Array($0) }
        probedBytes.withUnsafeBytes { bytes in
            for entry in recorder.entries {
                let offsets = stride(from: 0, through: bytes.count - entry.pattern.count, by: 8).filter { offset in
                    bytes[offset..<offset + entry.pattern.count].elementsEqual(entry.pattern)
                }
                guard offsets.count == 1, let base = bytes.baseAddress else { continue }
                let key = entry.path.joined(separator: ".")
                switch entry.kind {
                case .field(let kind):
                    guard encodedValue(encoded, entry.path) == entry.value else { continue }
                    fields[key] = Field(offset: offsets[0], kind: kind, optional: entry.optional)
                case .reference(let type, let holdsProbeId):
                    // A reference encodes only inside a context: it is checked by reading it back.
                    guard holdsProbeId(base + offsets[0]) else { continue }
                    references[key] = Reference(offset: offsets[0], type: type)
                }
            }
        }
        // A Bool can't hold a unique value. Each is found by decoding with Bools set four ways:
        // all false (the probe above), only it true, all but it true, all true. Its byte reads
        // 0, 1, 0, 1; padding between fields holds whatever memory held, so one flip alone
        // can't tell the Bool's byte from padding that happened to change.
        if !recorder.bools.isEmpty, let allTrue = decodedBytes(decode, recorder, { _ in true }) {
            for (path, optional) in recorder.bools {
                guard let onlyIt = decodedBytes(decode, recorder, { $0 == path }),
                    let allButIt = decodedBytes(decode, recorder, { $0 != path }),
                    encodedValue(encoded, path) == .bool(false), encodedValue(onlyIt.encoded, path) == .bool(true),
                    encodedValue(allButIt.encoded, path) == .bool(false)
                else { continue }
                let offsets = probedBytes.indices.filter { offset in
                    probedBytes[offset] == 0 && onlyIt.bytes[offset] == 1 && allButIt.bytes[offset] == 0
                        && allTrue.bytes[offset] == 1
                }
                guard offsets.count == 1 else { continue }
                fields[path.joined(separator: ".")] = Field(offset: offsets[0], kind: .bool, optional: optional)
            }
        }
        // The same offsets must read a default instance's values as its encoding gives them.
        if case .object(let defaults) = template {
            var instance = M.Properties()
            withUnsafeBytes(of: &instance) { bytes in
                guard let base = bytes.baseAddress else { return }
                for (key, field) in fields
                where encodedValue(defaults, key.split(separator: ".").map(String.init)) != field.read(base) {
                    fields[key] = nil
                }
            }
        }
        return PropertyLayout(fields: fields, references: references)
    }

    /// The bytes and the encoding of `M.Properties` decoded with each Bool at `path` set to
    /// `bool(path)`.
    private static func decodedBytes<P: Encodable>(
        _ decode: () -> P?, _ recorder: LayoutRecorder, _ bool: @escaping ([String]) -> Bool
    ) -> (bytes: [UInt8], encoded: ModelValue.Object)? {
        recorder.boolValue = bool
        defer { recorder.boolValue = { _ in false } }
        guard var value = decode(), case .object(let encoded)? = try? GraphStreamWriter.valueTree(of: value)
        else { return nil }
        return (withUnsafeBytes(of: &value) { Array($0) }, encoded)
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

/// The values the probe handed out, by key. Every value is handed out again, identical, when the
/// type is decoded a second time (so that flipping one Bool changes only its byte).
final class LayoutRecorder {
    enum EntryKind {
        case field(PropertyLayout.Kind)
        /// A reference, and a check that the reference at an address holds the probe's id.
        case reference(any LayoutReference.Type, (UnsafeRawPointer) -> Bool)
    }

    struct Entry {
        let path: [String]
        let kind: EntryKind
        let optional: Bool
        /// The value as the encoding gives it.
        let value: ModelValue
        /// The bytes the value occupies in memory.
        let pattern: [UInt8]
    }

    private(set) var entries: [Entry] = []
    /// The Bool keys met, and whether each is optional.
    private(set) var bools: [(path: [String], optional: Bool)] = []
    /// The value each Bool key decodes as in this pass.
    var boolValue: ([String]) -> Bool = { _ in false }
    private var counter: UInt64 = 0
    /// Values handed out by key, kept alive so that their storage (and so their bytes) stay unique,
    /// and handed out again by later passes.
    private var handedOut: [[String]: Any] = [:]

    /// The value for `path`: the one handed out before, or `make()`'s, recorded.
    func value<T>(_ path: [String], _ make: () throws -> T) rethrows -> T {
        if let known = handedOut[path] as? T { return known }
        let value = try make()
        handedOut[path] = value
        return value
    }

    private func next() -> UInt64 {
        counter += 1
        return counter
    }

    func int(_ path: [String], optional: Bool) -> Int {
        value(path) {
            let value = Int(bitPattern: 0x5EED_0000_0000_0000 | UInt(next()))
            record(path, .int, optional, .int(Int64(value)), value)
            return value
        }
    }

    func uint(_ path: [String], optional: Bool) -> UInt64 {
        value(path) {
            let value = 0x5EED_0000_0000_0000 | next()
            record(path, .uint, optional, .int(Int64(value)), value)
            return value
        }
    }

    func double(_ path: [String], optional: Bool) -> Double {
        value(path) {
            let value = 1e15 + Double(next()) + 0.5
            record(path, .double, optional, .double(value), value)
            return value
        }
    }

    func date(_ path: [String], optional: Bool) -> Date {
        value(path) {
            let value = Date(timeIntervalSinceReferenceDate: 9e8 + Double(next()) + 0.25)
            record(path, .date, optional, .date(value), value)
            return value
        }
    }

    func geoPoint(_ path: [String], optional: Bool) -> GeoPoint {
        value(path) {
            let value = GeoPoint(latitude: 1e15 + Double(next()) + 0.5, longitude: 1e15 + Double(next()) + 0.5)
            record(path, .geoPoint, optional, PropertyLayout.Field.point(value), value)
            return value
        }
    }

    func strings(_ path: [String]) -> [String] {
        value(path) {
            // A one-element array: its buffer, and so the array's bytes, are unique.
            let element = uniqueString()
            let value = [element]
            record(path, .strings, false, .array([.string(element)]), value)
            return value
        }
    }

    func string(_ path: [String], optional: Bool) -> String {
        value(path) {
            let value = uniqueString()
            record(path, .string, optional, .string(value), value)
            return value
        }
    }

    /// Longer than 15 bytes, so it lives in its own buffer and its bytes are unique.
    private func uniqueString() -> String {
        "modelkit-layout-probe-\(next())-\(UInt64.random(in: 0 ... .max))"
    }

    func bool(_ path: [String], optional: Bool) -> Bool {
        if handedOut[path] == nil {
            handedOut[path] = false
            bools.append((path, optional))
        }
        return boolValue(path)
    }

    func reference<R: LayoutReference>(_ type: R.Type, _ path: [String]) -> R {
        value(path) {
            let value = R.probeValue()
            let pattern = withUnsafeBytes(of: value) { Array($0) }
            let check = { (base: UnsafeRawPointer) in R.holdsProbeId(of: value, at: base) }
            entries.append(Entry(path: path, kind: .reference(R.self, check), optional: false, value: .null, pattern: pattern))
            return value
        }
    }

    private func record<T>(_ path: [String], _ kind: PropertyLayout.Kind, _ optional: Bool, _ encoded: ModelValue, _ value: T) {
        let pattern = withUnsafeBytes(of: value) { Array($0) }
        entries.append(Entry(path: path, kind: .field(kind), optional: optional, value: encoded, pattern: pattern))
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
    func fallback() throws -> any Decoder {
        try templateDecoder(template)
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let probe: LayoutProbe
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { [] }
        private var recorder: LayoutRecorder { probe.recorder }

        init(probe: LayoutProbe) {
            self.probe = probe
        }

        private func path(_ key: Key) -> [String] { probe.path + [key.stringValue] }
        private func template(_ key: Key) -> ModelValue? {
            if case .object(let object)? = probe.template { return object[key.stringValue] }
            return nil
        }

        func contains(_ key: Key) -> Bool { true }
        func decodeNil(forKey key: Key) throws -> Bool { false }

        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { recorder.int(path(key), optional: false) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { Int64(recorder.int(path(key), optional: false)) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { UInt(recorder.uint(path(key), optional: false)) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { recorder.uint(path(key), optional: false) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { recorder.double(path(key), optional: false) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { recorder.string(path(key), optional: false) }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { recorder.bool(path(key), optional: false) }

        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { recorder.int(path(key), optional: true) }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
            Int64(recorder.int(path(key), optional: true))
        }
        func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? {
            UInt(recorder.uint(path(key), optional: true))
        }
        func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? {
            recorder.uint(path(key), optional: true)
        }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
            recorder.double(path(key), optional: true)
        }
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
            recorder.string(path(key), optional: true)
        }
        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { recorder.bool(path(key), optional: true) }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            if T.self == Date.self { return recorder.date(path(key), optional: false) as! T }
            if T.self == [String].self { return recorder.strings(path(key)) as! T }
            if T.self == GeoPoint.self { return recorder.geoPoint(path(key), optional: false) as! T }
            if let reference = T.self as? any LayoutReference.Type { return recorder.reference(reference, path(key)) as! T }
            // A nested struct is probed anew each pass (its values are handed out again, its Bools
            // flip); anything else takes the default instance's value, the same one each pass.
            let nested = LayoutProbe(recorder: recorder, path: path(key), template: template(key))
            if let value = try? T(from: nested) { return value }
            return try fallback(type, key)
        }

        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            if T.self == Date.self { return (recorder.date(path(key), optional: true) as! T) }
            if T.self == GeoPoint.self { return (recorder.geoPoint(path(key), optional: true) as! T) }
            // Not into optional structs: their fields' bytes mean nothing when the value is nil.
            return try fallbackIfPresent(type, key)
        }

        // Everything else takes the default instance's value.
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try fallback(type, key) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try fallback(type, key) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try fallback(type, key) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try fallback(type, key) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try fallback(type, key) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try fallback(type, key) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try fallback(type, key) }
        func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try fallbackIfPresent(type, key) }
        func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try fallbackIfPresent(type, key) }
        func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try fallbackIfPresent(type, key) }
        func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try fallbackIfPresent(type, key) }
        func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try fallbackIfPresent(type, key) }
        func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try fallbackIfPresent(type, key) }
        func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try fallbackIfPresent(type, key) }

        private func fallback<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T {
            try recorder.value(path(key)) { try T(from: templateDecoder(template(key))) }
        }

        /// The default instance's value, nil when the default is nil: an optional of a type the
        /// probe doesn't locate must not stop the other keys from being located.
        private func fallbackIfPresent<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T? {
            guard let template = template(key), !template.isNullForm else { return nil }
            return try recorder.value(path(key)) { try T(from: templateDecoder(template)) }
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            KeyedDecodingContainer(
                LayoutProbe.Keyed<NestedKey>(
                    probe: LayoutProbe(recorder: recorder, path: path(key), template: template(key))))
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try templateDecoder(template(key)).unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder { try probe.fallback() }
        func superDecoder(forKey key: Key) throws -> any Decoder { try templateDecoder(template(key)) }
    }
}

/// A decoder over a default instance's encoded value (`null` when unknown).
private func templateDecoder(_ value: ModelValue?) throws -> any Decoder {
    try TreeDecoder<ModelValueDocument>.over(
        value ?? .null, defaults: value, loader: .detached(), codingPath: [], depth: 1)
}
