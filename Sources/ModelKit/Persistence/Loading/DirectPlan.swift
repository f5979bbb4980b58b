import Foundation

/// Where each property of a model's `Properties` lives in memory and how to read it from a
/// document, so that a new model's properties can be filled in place instead of through
/// `Codable` (whose containers, existentials and per-key dispatch cost more than the reading).
///
/// Learned once per type, like ``PropertyLayout``: a probing decoder runs the type's
/// `init(from:)`, handing every key a value unique to it, and each value is then looked for in
/// the bytes of the result. There is a plan only when every key the initializer asks for is a
/// `String`, `Int`, `Double`, `Date`, `[String]`, ``ModelRef`` or ``ModelArray`` found at exactly
/// one place, when two probes with different values leave every other byte alike (nothing is
/// derived from the decoded values), and when the type renames no property. Two more probes hand
/// out awkward values (empty, negative, very large, non-ASCII) and check that each lands unchanged
/// where the plan would put it, so that an initializer that validates, clamps or normalizes the
/// common edge cases is seen to do so. Anything else (optionals, nested values, custom decoding
/// that changes values) keeps the `Codable` path.
final class DirectPlan: Sendable {
    enum Kind {
        case string, int, double, date, strings
        case reference(any DirectReference)
    }

    struct Field {
        let key: String
        let offset: Int
        let kind: Kind
    }

    /// The fields' keys, in the order the initializer asks for them, which is the order the
    /// writer writes them.
    let keys: [String]
    /// The keys as UTF-8, for a JSON tape to record only their members.
    let jsonKeyList: [[UInt8]]
    /// The fields as the fills read them, in the same order: plain values, so that reading one
    /// copies (and retains) nothing. Each key, as JSON text (`"key":`), is a run of ``jsonKeys``.
    let plainFields: [PlainField]
    let jsonKeys: [UInt8]
    /// The reference of each field that holds one.
    let references: [(any DirectReference)?]

    struct PlainField {
        enum Tag { case string, int, double, date, strings, reference }
        let tag: Tag
        let offset: Int
        let keyStart: Int
        let keyCount: Int
    }

    private init(fields: [Field]) {
        keys = fields.map(\.key)
        jsonKeyList = keys.map { Array($0.utf8) }
        var text: [UInt8] = []
        var plainFields: [PlainField] = []
        var references: [(any DirectReference)?] = []
        for field in fields {
            let start = text.count
            // Keys that need escaping never match, and the general path reads them.
            text += Array("\"\(field.key)\":".utf8)
            let tag: PlainField.Tag
            var reference: (any DirectReference)?
            switch field.kind {
            case .string: tag = .string
            case .int: tag = .int
            case .double: tag = .double
            case .date: tag = .date
            case .strings: tag = .strings
            case .reference(let held):
                tag = .reference
                reference = held
            }
            plainFields.append(PlainField(tag: tag, offset: field.offset, keyStart: start, keyCount: text.count - start))
            references.append(reference)
        }
        self.plainFields = plainFields
        jsonKeys = text
        self.references = references
    }

    private struct Entry: Sendable {
        let plan: DirectPlan?
    }

    private static let cache = Locked([ObjectIdentifier: Entry]())

    /// The plan for `M`, probed on first use; `nil` when its properties need `Codable`.
    static func of<M: Model>(_ type: M.Type) -> DirectPlan? {
        let key = ObjectIdentifier(M.self)
        if let known = cache.withLock({ $0[key] }) { return known.plan }
        let plan = probe(M.self)
        cache.withLock { $0[key] = Entry(plan: plan) }
        return plan
    }

    private static func probe<M: Model>(_ type: M.Type) -> DirectPlan? {
        if M.self is any PropertyRenaming.Type { return nil }
        guard let first = run(M.self, variant: 0), let second = run(M.self, variant: 1),
            first.entries.count == second.entries.count,
            first.entries.count <= 64
        else { return nil }
        var fields: [Field] = []
        var covered = [Bool](repeating: false, count: first.bytes.count)
        for (one, other) in zip(first.entries, second.entries) {
            guard one.key == other.key, fields.allSatisfy({ $0.key != one.key }),
                let offset = uniqueOffset(of: one.pattern, in: first.bytes),
                uniqueOffset(of: other.pattern, in: second.bytes) == offset
            else { return nil }
            for position in offset..<(offset + one.pattern.count) {
                guard !covered[position] else { return nil }
                covered[position] = true
            }
            fields.append(Field(key: one.key, offset: offset, kind: one.kind))
        }
        // Bytes no field covers must not depend on the decoded values.
        for position in covered.indices where !covered[position] {
            guard first.bytes[position] == second.bytes[position] else { return nil }
        }
        // Filling assigns a value of the field's type over the default instance's: the default
        // must be one (an initializer may decode a String into a `String?` that is nil by
        // default, whose bytes are no String), as its encoding shows.
        guard case .object(let defaults)? = DefaultValues.of(M.self) else { return nil }
        for field in fields {
            switch (field.kind, defaults[field.key]) {
            case (.string, .string?), (.int, .int?), (.double, .double?), (.double, .int?), (.date, .date?),
                (.strings, .array?):
                continue
            case (.reference(let reference), .array?) where reference.holdsArray: continue
            case (.reference(let reference), .null?) where !reference.holdsArray: continue
            default: return nil
            }
        }
        for variant in DirectProbeRecorder.edgeVariants {
            guard holdsValues(M.self, at: fields, variant: variant) else { return nil }
        }
        return DirectPlan(fields: fields)
    }

    /// Whether `init(from:)`, handed the awkward values of `variant`, asks for the same keys and
    /// stores each value unchanged at its field.
    private static func holdsValues<M: Model>(_ type: M.Type, at fields: [Field], variant: Int) -> Bool {
        let recorder = DirectProbeRecorder(variant: variant)
        guard let probed = try? M.Properties(from: DirectProbe(recorder: recorder)), !recorder.failed,
            recorder.entries.count == fields.count
        else { return false }
        return withUnsafeBytes(of: probed) { bytes in
            guard let base = bytes.baseAddress else { return fields.isEmpty }
            for (field, (entry, handed)) in zip(fields, zip(recorder.entries, recorder.handed)) {
                guard entry.key == field.key else { return false }
                let place = base + field.offset
                let same: Bool
                switch field.kind {
                case .string: same = place.load(as: String.self) == handed as? String
                case .int: same = place.load(as: Int.self) == handed as? Int
                case .double: same = place.load(as: Double.self).bitPattern == (handed as? Double)?.bitPattern
                case .date: same = place.load(as: Date.self) == handed as? Date
                case .strings: same = place.load(as: [String].self) == handed as? [String]
                case .reference(let reference): same = reference.holds(handed, at: place)
                }
                guard same else { return false }
            }
            return true
        }
    }

    private static func uniqueOffset(of pattern: [UInt8], in bytes: [UInt8]) -> Int? {
        guard pattern.count <= bytes.count else { return nil }
        let offsets = stride(from: 0, through: bytes.count - pattern.count, by: 8).filter {
            bytes[$0..<($0 + pattern.count)].elementsEqual(pattern)
        }
        return offsets.count == 1 ? offsets[0] : nil
    }

    /// One probe: the keys asked for with their values' bytes, and the bytes of the result
    /// (copied field by field into zeroed memory, so that padding reads as zero).
    private static func run<M: Model>(_ type: M.Type, variant: Int) -> (entries: [DirectProbeRecorder.Entry], bytes: [UInt8])? {
        let recorder = DirectProbeRecorder(variant: variant)
        guard let probed = try? M.Properties(from: DirectProbe(recorder: recorder)), !recorder.failed else { return nil }
        let size = MemoryLayout<M.Properties>.size
        let memory = UnsafeMutableRawPointer.allocate(
            byteCount: max(size, 1), alignment: MemoryLayout<M.Properties>.alignment)
        defer { memory.deallocate() }
        memory.initializeMemory(as: UInt8.self, repeating: 0, count: max(size, 1))
        let typed = memory.bindMemory(to: M.Properties.self, capacity: 1)
        // A copy of the value, not of `stride` bytes from its address: a stack temporary is
        // only `size` bytes long (AddressSanitizer caught the over-read).
        typed.initialize(to: probed)
        defer { typed.deinitialize(count: 1) }
        let bytes = Array(UnsafeRawBufferPointer(start: memory, count: size))
        withExtendedLifetime(recorder) {}
        return (recorder.entries, bytes)
    }
}

/// A property that holds references, filled from a pointer node (or an array of them).
protocol DirectReference: Sendable {
    /// Whether the property is a ``ModelArray`` (else a ``ModelRef``).
    var holdsArray: Bool { get }
    /// Whether the property at `field` holds the same references as `value`, a value of its type.
    func holds(_ value: Any, at field: UnsafeRawPointer) -> Bool
    /// Reads the property from JSON in the writer's compact form (see `DirectPlan.fillJSON`);
    /// `false` at anything else.
    func assignJSON(from reader: inout CompactJSON, loader: GraphLoader, to field: UnsafeMutableRawPointer) -> Bool
    /// Reads `node` and assigns the result to the property at `field`; `false` when the node is
    /// not what the `Codable` path reads without error.
    func assign<D: TreeDocument>(_ node: Int, in document: D, loader: GraphLoader, to field: UnsafeMutableRawPointer) throws
        -> Bool
    /// ``assign(_:in:loader:to:)`` for a binary property list (see `DirectPlan.fillPlist`).
    func assignPlist(_ node: Int, in document: BinaryPlistDocument, loader: GraphLoader, to field: UnsafeMutableRawPointer)
        throws -> Bool
}

/// Reference types that can hand the probe a value of their own, unique to one key.
protocol DirectProbed {
    static func probeValue(_ recorder: DirectProbeRecorder) -> (value: Self, field: any DirectReference)
}

struct DirectModelRef<Target: Model>: DirectReference {
    var holdsArray: Bool { false }

    func holds(_ value: Any, at field: UnsafeRawPointer) -> Bool {
        field.load(as: ModelRef<Target>.self).id == (value as? ModelRef<Target>)?.id
    }

    func assign<D: TreeDocument>(_ node: Int, in document: D, loader: GraphLoader, to field: UnsafeMutableRawPointer) throws
        -> Bool
    {
        let slot = field.assumingMemoryBound(to: ModelRef<Target>.self)
        if try document.isNull(node) {
            slot.pointee = ModelRef()
        } else {
            slot.pointee = try loader.reference(to: node, in: document, as: Target.self, path: [])
        }
        return true
    }
}

struct DirectModelArray<Element: Model>: DirectReference {
    var holdsArray: Bool { true }

    func holds(_ value: Any, at field: UnsafeRawPointer) -> Bool {
        guard let value = value as? ModelArray<Element> else { return false }
        return field.load(as: ModelArray<Element>.self).references.map(\.id) == value.references.map(\.id)
    }

    func assign<D: TreeDocument>(_ node: Int, in document: D, loader: GraphLoader, to field: UnsafeMutableRawPointer) throws
        -> Bool
    {
        guard document.kind(of: node) == .array else { return false }
        let count = try document.count(of: node)
        try document.charge(elements: count, of: node)
        var references: [ModelRef<Element>] = []
        references.reserveCapacity(count)
        try document.forEach(in: node) { _, pointer in
            references.append(try loader.reference(to: pointer, in: document, as: Element.self, path: []))
            return true
        }
        var array = ModelArray<Element>()
        array.references = references
        field.assumingMemoryBound(to: ModelArray<Element>.self).pointee = array
        return true
    }
}

extension ModelRef: DirectProbed {
    static func probeValue(_ recorder: DirectProbeRecorder) -> (value: ModelRef, field: any DirectReference) {
        (recorder.isEmptyVariant ? ModelRef() : ModelRef(id: recorder.uniqueID()), DirectModelRef<Target>())
    }
}

extension ModelArray: DirectProbed {
    static func probeValue(_ recorder: DirectProbeRecorder) -> (value: ModelArray, field: any DirectReference) {
        // A one-element array: its buffer, and so the array's bytes, are unique.
        var array = ModelArray()
        let count = recorder.isEmptyVariant ? 0 : (recorder.isLargeVariant ? 1_000 : 1)
        array.references = (0..<count).map { _ in ModelRef(id: recorder.uniqueID()) }
        return (array, DirectModelArray<Element>())
    }
}

/// The values the probe handed out, by key.
final class DirectProbeRecorder {
    struct Entry {
        let key: String
        let kind: DirectPlan.Kind
        let pattern: [UInt8]
    }

    private(set) var entries: [Entry] = []
    /// Set when the initializer asked for something the plan cannot fill.
    var failed = false
    private var counter: UInt64 = 0
    private let salt = UInt64.random(in: 0 ... .max)
    /// The second probe's values differ from the first's in every respect a derived value
    /// could depend on: text and length of strings, element counts, numbers. The edge variants
    /// hand out awkward values instead of unique ones.
    private let variant: Int

    /// The variants with awkward values: empty and negative, then large and non-ASCII.
    static let edgeVariants = [2, 3]
    var isEmptyVariant: Bool { variant == 2 }
    var isLargeVariant: Bool { variant == 3 }

    init(variant: Int) {
        self.variant = variant
    }
    /// The values handed out, in order, kept alive so that their buffers (and so their bytes)
    /// stay unique.
    private(set) var handed: [Any] = []

    func uniqueID() -> ModelID {
        counter += 1
        return ModelID(high: salt, low: 0xD1EC_7000_0000_0000 | counter)
    }

    func record<T>(_ key: String, _ kind: DirectPlan.Kind, _ value: T) -> T {
        handed.append(value)
        entries.append(Entry(key: key, kind: kind, pattern: withUnsafeBytes(of: value) { Array($0) }))
        return value
    }

    func string(_ key: String) -> String {
        counter += 1
        if isEmptyVariant { return record(key, .string, "") }
        if isLargeVariant { return record(key, .string, String(repeating: "é🙂\u{0}\"\\ ", count: 2_000) + "\(counter)") }
        // Longer than 15 bytes, so it lives in its own buffer and its bytes are unique.
        return record(key, .string, "modelkit-direct-probe-\(counter)-\(salt)" + (variant == 0 ? "" : "-second"))
    }

    func int(_ key: String) -> Int {
        counter += 1
        if isEmptyVariant { return record(key, .int, -1) }
        if isLargeVariant { return record(key, .int, Int.max - Int(counter)) }
        return record(
            key, .int, Int(bitPattern: UInt(0x5EED_D000_0000_0000 | (salt & 0xFFFF_0000) | counter << 1 | UInt64(variant))))
    }

    func double(_ key: String) -> Double {
        counter += 1
        if isEmptyVariant { return record(key, .double, -1.5) }
        if isLargeVariant { return record(key, .double, 1e300 + Double(counter) * 1e285) }
        return record(key, .double, 1e15 + Double(counter) + Double(salt % 1000) * 1e6 + 0.25 + Double(variant) * 0.5)
    }

    func date(_ key: String) -> Date {
        counter += 1
        if isEmptyVariant { return record(key, .date, Date(timeIntervalSinceReferenceDate: -1e9 - 0.5)) }
        if isLargeVariant { return record(key, .date, Date(timeIntervalSinceReferenceDate: 1e11 + Double(counter))) }
        let seconds = 9e8 + Double(salt % 100_000) * 10 + Double(counter) + 0.25 + Double(variant) * 0.5
        return record(key, .date, Date(timeIntervalSinceReferenceDate: seconds))
    }

    func strings(_ key: String) -> [String] {
        counter += 1
        if isEmptyVariant { return record(key, .strings, []) }
        if isLargeVariant { return record(key, .strings, (0..<1_000).map { "é🙂 \($0)" }) }
        // Its buffer, and so the array's bytes, are unique.
        let element = "modelkit-direct-probe-\(counter)-\(salt)"
        return record(key, .strings, variant == 0 ? [element] : [element, element + "-second"])
    }
}

private struct DirectProbeFailure: Error {}

/// The probing decoder: unique values for the keys the plan can fill, a failure for anything
/// else.
private struct DirectProbe: Decoder {
    let recorder: DirectProbeRecorder
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Keyed<Key>(recorder: recorder))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw DirectProbeFailure() }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { throw DirectProbeFailure() }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let recorder: DirectProbeRecorder
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] {
            recorder.failed = true
            return []
        }

        func contains(_ key: Key) -> Bool {
            recorder.failed = true
            return true
        }

        func decodeNil(forKey key: Key) throws -> Bool { throw DirectProbeFailure() }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { recorder.string(key.stringValue) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { recorder.int(key.stringValue) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { recorder.double(key.stringValue) }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            if T.self == String.self { return recorder.string(key.stringValue) as! T }
            if T.self == Int.self { return recorder.int(key.stringValue) as! T }
            if T.self == Double.self { return recorder.double(key.stringValue) as! T }
            if T.self == Date.self { return recorder.date(key.stringValue) as! T }
            if T.self == [String].self { return recorder.strings(key.stringValue) as! T }
            if let probed = T.self as? any DirectProbed.Type {
                let (value, field) = probed.probeValue(recorder)
                return recorder.record(key.stringValue, .reference(field), value as! T)
            }
            throw DirectProbeFailure()
        }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { throw DirectProbeFailure() }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { throw DirectProbeFailure() }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { throw DirectProbeFailure() }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { throw DirectProbeFailure() }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { throw DirectProbeFailure() }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { throw DirectProbeFailure() }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { throw DirectProbeFailure() }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { throw DirectProbeFailure() }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { throw DirectProbeFailure() }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { throw DirectProbeFailure() }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { throw DirectProbeFailure() }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            throw DirectProbeFailure()
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { throw DirectProbeFailure() }
        func superDecoder() throws -> any Decoder { throw DirectProbeFailure() }
        func superDecoder(forKey key: Key) throws -> any Decoder { throw DirectProbeFailure() }
    }
}
