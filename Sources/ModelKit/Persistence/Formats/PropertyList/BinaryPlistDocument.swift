import Foundation

/// A ``TreeDocument`` over the bytes of a binary property list (`bplist00`): nodes are object
/// numbers, read in place through the offset table. Reads what ``BinaryPlistSink`` writes and
/// what Foundation's `PropertyListSerialization` and `PropertyListEncoder` write.
///
/// Every offset, count and reference is checked against the input before it is used, so a
/// damaged file gives a ``SerializationError`` with the byte offset, never a crash.
struct BinaryPlistDocument: TreeDocument {
    let bytes: UnsafeBufferPointer<UInt8>
    let offsetSize: Int
    let referenceSize: Int
    let objectCount: Int
    let topObject: Int
    let tableOffset: Int
    /// Counts what decoding makes (see ``DecodedSizeLimit``); one per thread, owned by the
    /// source the document belongs to. Unretained: the document is copied into every decoder,
    /// and with a strong reference each copy would retain and release it.
    private(set) var meter: Unmanaged<DecodedSizeMeter>

    static func isBinaryPlist(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        // Version 00 only: `bplist01` and later are other formats, whose objects this reader
        // would misread.
        bytes.count >= 8 && memcmp(bytes.baseAddress!, "bplist00", 8) == 0
    }

    /// Reads the trailer and checks the offset table; `meter` must outlive the document.
    init(bytes: UnsafeBufferPointer<UInt8>, meter: DecodedSizeMeter) throws {
        self.bytes = bytes
        let count = bytes.count
        self.meter = Unmanaged.passUnretained(meter)
        guard count >= 40, Self.isBinaryPlist(bytes) else {
            throw SerializationError(
                .malformedInput, byteOffset: 0, expected: "a binary property list with a trailer",
                found: "\(count) bytes")
        }
        let trailer = count - 32
        offsetSize = Int(bytes[trailer + 6])
        referenceSize = Int(bytes[trailer + 7])
        func word(_ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 << 8 | UInt64(bytes[at + $1]) } }
        let objects = word(trailer + 8), top = word(trailer + 16), table = word(trailer + 24)
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize), objects >= 1, objects < UInt64(count),
            top < objects, table >= 8, table < UInt64(trailer),
            UInt64(trailer) - table >= objects * UInt64(offsetSize)
        else {
            throw SerializationError(
                .malformedInput, byteOffset: trailer, expected: "a consistent property-list trailer",
                found:
                    "offset size \(offsetSize), reference size \(referenceSize), \(objects) objects, top \(top), table at \(table)"
            )
        }
        objectCount = Int(objects)
        topObject = Int(top)
        tableOffset = Int(table)
        // Check every offset once, so that reading a marker later needs no check. The usual
        // widths are checked in one pass without a branch per offset (one by one, the check took
        // about 1% of the profile samples of loading a 100k-post file); only a table that fails
        // it is looked through for the first bad offset, to report it.
        guard !allOffsetsInRange() else { return }
        for object in 0..<objectCount {
            let offset = self.offset(of: object)
            guard offset >= 8, offset < tableOffset else {
                throw SerializationError(
                    .malformedInput, byteOffset: tableOffset + object * offsetSize,
                    expected: "an object offset inside the object area (8..<\(tableOffset))", found: "offset \(offset)")
            }
        }
    }

    /// Whether every offset lies in the object area (`8..<tableOffset`); `false` also for a width
    /// other than 1, 2, 4 or 8 bytes, whose offsets the caller checks one by one.
    private func allOffsetsInRange() -> Bool {
        let table = UnsafeRawPointer(bytes.baseAddress! + tableOffset)
        // Less 8, an offset below 8 wraps around to a large unsigned value: one comparison of
        // the largest against the area's size checks both ends.
        func scan<Offset: FixedWidthInteger & UnsignedInteger>(_ type: Offset.Type) -> Bool {
            var largest: UInt = 0
            for object in 0..<objectCount {
                let raw = table.loadUnaligned(fromByteOffset: object * MemoryLayout<Offset>.size, as: Offset.self)
                largest = max(largest, UInt(truncatingIfNeeded: Offset(bigEndian: raw)) &- 8)
            }
            return largest < UInt(tableOffset - 8)
        }
        switch offsetSize {
        case 1: return scan(UInt8.self)
        case 2: return scan(UInt16.self)
        case 4: return scan(UInt32.self)
        case 8: return scan(UInt64.self)
        default: return false
        }
    }

    /// The document for another thread: the same bytes, with `meter` (which must outlive it).
    func forAnotherThread(meter: DecodedSizeMeter) -> BinaryPlistDocument {
        var copy = self
        copy.meter = Unmanaged.passUnretained(meter)
        return copy
    }

    func charge(elements count: Int, of node: Int) throws {
        try charge(count &* DecodedSizeLimit.elementSize, at: offset(of: node))
    }

    @inline(__always) private func charge(_ amount: Int, at byteOffset: Int) throws {
        try meter._withUnsafeGuaranteedRef { try $0.charge(amount, at: byteOffset) }
    }

    @inline(__always) private func charge(storage count: Int, at byteOffset: Int) throws {
        try meter._withUnsafeGuaranteedRef { try $0.charge(storage: count, at: byteOffset) }
    }

    @inline(__always) private func readInt(at offset: Int, size: Int) -> Int {
        // One load for the usual sizes: every reference and offset is read this way.
        let raw = UnsafeRawPointer(bytes.baseAddress! + offset)
        switch size {
        case 1: return Int(raw.load(as: UInt8.self))
        case 2: return Int(UInt16(bigEndian: raw.loadUnaligned(as: UInt16.self)))
        case 4: return Int(UInt32(bigEndian: raw.loadUnaligned(as: UInt32.self)))
        case 8: return Int(truncatingIfNeeded: UInt64(bigEndian: raw.loadUnaligned(as: UInt64.self)))
        default:
            var value = 0
            for index in 0..<size { value = value << 8 | Int(bytes[offset + index]) }
            return value
        }
    }

    @inline(__always) func offset(of object: Int) -> Int {
        readInt(at: tableOffset + object * offsetSize, size: offsetSize)
    }

    private func malformed(_ offset: Int, _ expected: String, _ found: String) -> SerializationError {
        SerializationError(.malformedInput, byteOffset: offset, expected: expected, found: found)
    }

    /// Fails unless `length` bytes at `offset` lie in the object area.
    @inline(__always) private func check(_ offset: Int, _ length: Int) throws {
        guard length >= 0, offset <= tableOffset, length <= tableOffset - offset else {
            throw malformed(offset, "\(length) bytes of object data", "the end of the object area")
        }
    }

    func kind(of node: Int) -> NodeKind {
        let marker = bytes[offset(of: node)]
        switch marker >> 4 {
        case 0x0: return marker == 0x08 || marker == 0x09 ? .bool : .null
        case 0x1: return .integer
        case 0x2: return .real
        case 0x3: return .date
        case 0x4: return .data
        case 0x5, 0x6: return .string
        case 0xA: return .array
        case 0xD: return .object
        default: return .other
        }
    }

    func byteOffset(of node: Int) -> Int { offset(of: node) }

    /// The element count and the offset of the contents of a string, data or container object.
    ///
    /// The count is checked against the bytes that could hold it before anything uses it: a
    /// count read from the file drives loops and allocations, and a damaged one (2^62 members
    /// in a 200-byte file) must fail here, not after `count` steps.
    private func extent(_ node: Int) throws -> (count: Int, start: Int) {
        try extent(at: offset(of: node))
    }

    /// ``extent(_:)`` of the object at byte `offset`.
    private func extent(at offset: Int) throws -> (count: Int, start: Int) {
        let marker = bytes[offset]
        let low = Int(marker & 0x0F)
        var count = low
        var start = offset + 1
        if low == 0x0F {
            try check(offset + 1, 1)
            let countMarker = bytes[offset + 1]
            guard countMarker >> 4 == 0x1, countMarker & 0x0F <= 3 else {
                throw malformed(offset + 1, "an integer count", "marker 0x\(String(countMarker, radix: 16))")
            }
            let size = 1 << Int(countMarker & 0x0F)
            try check(offset + 2, size)
            count = readInt(at: offset + 2, size: size)
            guard count >= 0 else { throw malformed(offset + 2, "a count", "a negative count") }
            start = offset + 2 + size
        }
        let width = Self.elementWidth(marker: marker, referenceSize: referenceSize)
        let (length, overflow) = count.multipliedReportingOverflow(by: width)
        guard !overflow, start <= tableOffset, length <= tableOffset - start else {
            throw malformed(
                start,
                "\(count) elements of \(width) bytes inside the object area (\(tableOffset - min(start, tableOffset)) bytes left)",
                "the end of the object area")
        }
        return (count, start)
    }

    /// The bytes each element of an object with `marker` takes: a byte of ASCII or data, two of
    /// UTF-16, a reference per array or set element, two per dictionary member.
    private static func elementWidth(marker: UInt8, referenceSize: Int) -> Int {
        switch marker >> 4 {
        case 0x6: return 2
        case 0xA, 0xB, 0xC: return referenceSize
        case 0xD: return 2 * referenceSize
        default: return 1
        }
    }

    func count(of node: Int) throws -> Int { try extent(node).count }

    /// The element count and the offset of the references of `node` when its marker's high
    /// nibble is `kind` (0xA an array, 0xD a dictionary, whose key references come first),
    /// else `nil`: the kind check and the extent with one look at the offset table.
    @inline(__always) func container(_ node: Int, kind: UInt8) throws -> (count: Int, start: Int)? {
        let offset = offset(of: node)
        guard bytes[offset] >> 4 == kind else { return nil }
        return try extent(at: offset)
    }

    func startCursor(of node: Int) -> Int { 0 }

    /// The object number at byte `offset` (an element of a container), checked.
    @inline(__always) func reference(at offset: Int) throws -> Int {
        let object = readInt(at: offset, size: referenceSize)
        guard object >= 0, object < objectCount else {
            throw malformed(offset, "an object reference below \(objectCount)", "reference \(object)")
        }
        return object
    }

    func next(in node: Int, cursor: inout Int) throws -> (key: Int, value: Int) {
        let offset = offset(of: node)
        let (count, start) = try extent(at: offset)
        let isObject = bytes[offset] >> 4 == 0xD
        guard cursor < count else { throw malformed(start, "another element", "the end of the container") }
        let value = try reference(at: start + (isObject ? count + cursor : cursor) * referenceSize)
        let key = isObject ? try reference(at: start + cursor * referenceSize) : value
        cursor += 1
        return (key, value)
    }

    static var nodesAreShared: Bool { true }

    func forEach(in node: Int, _ body: (_ key: Int, _ value: Int) throws -> Bool) throws {
        let offset = offset(of: node)
        let (count, start) = try extent(at: offset)
        let isObject = bytes[offset] >> 4 == 0xD
        for index in 0..<count {
            let value = try reference(at: start + (isObject ? count + index : index) * referenceSize)
            let key = isObject ? try reference(at: start + index * referenceSize) : value
            guard try body(key, value) else { return }
        }
    }

    func member(of object: Int, named key: String) throws -> Int? {
        let (count, start) = try extent(object)
        for index in 0..<count {
            let keyNode = try reference(at: start + index * referenceSize)
            if try stringEquals(keyNode, key) { return try reference(at: start + (count + index) * referenceSize) }
        }
        return nil
    }

    func checkKeys(of object: Int) throws {
        // A keyed container's keys and values are what decoding it makes.
        try charge(elements: count(of: object), of: object)
        try forEach(in: object) { key, _ in
            guard kind(of: key) == .string else {
                throw SerializationError(
                    .typeMismatch, byteOffset: byteOffset(of: key), expected: "a string key", found: describeNode(key))
            }
            _ = try string(key)
            return true
        }
    }

    func pointerId(_ node: Int, matching known: GraphLoader.PointerKeys) -> ModelID? {
        let offset = offset(of: node)
        // A dictionary of three entries: the keys `__type`, `model`, `modelId`, then the values
        // `ModelPointer`, the model name and the id.
        guard bytes[offset] == 0xD3, 6 * referenceSize <= tableOffset - (offset + 1) else { return nil }
        let references = offset + 1
        @inline(__always) func reference(_ index: Int) -> Int {
            readInt(at: references + index * referenceSize, size: referenceSize)
        }
        guard reference(0) == known.type, reference(1) == known.model, reference(2) == known.modelId,
            reference(3) == known.tagValue, reference(4) == known.nameValue
        else { return nil }
        let id = reference(5)
        guard id >= 0, id < objectCount else { return nil }
        return (try? modelId(id)) ?? nil
    }

    func bool(_ node: Int) -> Bool { bytes[offset(of: node)] == 0x09 }

    func number(_ node: Int) throws -> NodeNumber {
        let offset = offset(of: node)
        let marker = bytes[offset]
        switch marker {
        case 0x10, 0x11, 0x12:
            let size = 1 << Int(marker & 0x0F)
            try check(offset + 1, size)
            return .int(Int64(readInt(at: offset + 1, size: size)))
        case 0x13:
            try check(offset + 1, 8)
            return .int(Int64(truncatingIfNeeded: UInt64(bitPattern: Int64(readInt(at: offset + 1, size: 8)))))
        case 0x14:
            try check(offset + 1, 16)
            let high = UInt64(bitPattern: Int64(readInt(at: offset + 1, size: 8)))
            let low = UInt64(bitPattern: Int64(readInt(at: offset + 9, size: 8)))
            if high == 0 { return low <= UInt64(Int64.max) ? .int(Int64(low)) : .uint(low) }
            if high == UInt64.max, low > UInt64(Int64.max) { return .int(Int64(bitPattern: low)) }
            throw SerializationError(
                .numberOutOfRange, byteOffset: offset, expected: "an integer within 64 bits", found: "a 128-bit integer")
        case 0x22:
            try check(offset + 1, 4)
            return .double(Double(Float(bitPattern: UInt32(readInt(at: offset + 1, size: 4)))))
        case 0x23:
            try check(offset + 1, 8)
            return .double(Double(bitPattern: UInt64(bitPattern: Int64(readInt(at: offset + 1, size: 8)))))
        default:
            throw malformed(offset, "a number", "marker 0x\(String(marker, radix: 16))")
        }
    }

    func string(_ node: Int) throws -> String {
        let offset = offset(of: node)
        let (count, start) = try extent(at: offset)
        // A long string is decoded once and shared by every use (a String is a reference to
        // its storage): a file that uses one many times costs its bytes once.
        guard count >= DecodedSizeMeter.sharedSize else { return try decodeString(at: offset, count, start) }
        if let shared = meter._withUnsafeGuaranteedRef({ $0.strings[node] }) { return shared }
        let text = try decodeString(at: offset, count, start)
        meter._withUnsafeGuaranteedRef { $0.strings[node] = text }
        return text
    }

    /// The string whose object is at byte `offset`, with its `extent`.
    private func decodeString(at offset: Int, _ count: Int, _ start: Int) throws -> String {
        let marker = bytes[offset]
        if marker >> 4 == 0x5 {
            try check(start, count)
            let raw = UnsafeBufferPointer(rebasing: bytes[start..<(start + count)])
            if !Self.isASCII(raw), let bad = raw.firstIndex(where: { $0 >= 0x80 }) {
                throw malformed(start + bad, "ASCII text in an ASCII string", "byte 0x\(String(raw[bad], radix: 16))")
            }
            try charge(storage: count, at: offset)
            return String(decoding: raw, as: UTF8.self)
        }
        // Never `describeNode` here: describing a string reads it, which would fail again.
        guard marker >> 4 == 0x6 else { throw malformed(offset, "a string", "marker 0x\(String(marker, radix: 16))") }
        // Up to three bytes of UTF-8 per UTF-16 unit.
        try charge(storage: count &* 3, at: offset)
        let units = (0..<count).lazy.map { UInt16(self.bytes[start + 2 * $0]) << 8 | UInt16(self.bytes[start + 2 * $0 + 1]) }
        guard let text = String(validating: units, as: UTF16.self) else {
            throw malformed(start, "valid UTF-16 text", "an unpaired surrogate")
        }
        return text
    }

    /// Whether every byte is below 0x80, eight bytes at a time: every string of the file is
    /// checked, and byte by byte the check took as long as making the string.
    private static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let raw = UnsafeRawPointer(base)
        var high: UInt64 = 0
        var index = 0
        while index + 8 <= bytes.count {
            high |= raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            index += 8
        }
        while index < bytes.count {
            high |= UInt64(bytes[index])
            index += 1
        }
        return high & 0x8080_8080_8080_8080 == 0
    }

    func stringEquals(_ node: Int, _ text: String) throws -> Bool {
        guard kind(of: node) == .string else { return false }
        let offset = offset(of: node)
        if bytes[offset] >> 4 == 0x5 {
            let (count, start) = try extent(at: offset)
            var text = text
            return try text.withUTF8 { wanted in
                guard wanted.count == count else { return false }
                try check(start, count)
                return count == 0 || memcmp(bytes.baseAddress! + start, wanted.baseAddress!, count) == 0
            }
        }
        return try string(node) == text
    }

    func stringEquals(_ node: Int, _ text: StaticString) throws -> Bool {
        // Keys and tags are ASCII strings: compare the bytes without making a String.
        let offset = offset(of: node)
        guard bytes[offset] >> 4 == 0x5 else { return try stringEquals(node, text.description) }
        let (count, start) = try extent(at: offset)
        guard count == text.utf8CodeUnitCount else { return false }
        try check(start, count)
        return count == 0 || memcmp(bytes.baseAddress! + start, text.utf8Start, count) == 0
    }

    func date(_ node: Int) throws -> Double {
        let offset = offset(of: node)
        guard bytes[offset] == 0x33 else { throw malformed(offset, "a date", describeNode(node)) }
        try check(offset + 1, 8)
        let seconds = Double(bitPattern: UInt64(bitPattern: Int64(readInt(at: offset + 1, size: 8))))
        guard seconds.isFinite else { throw NumberRange.notADate(seconds, byteOffset: offset) }
        return seconds
    }

    func data(_ node: Int) throws -> Data {
        let (count, start) = try extent(node)
        try check(start, count)
        // Shared like long strings (see `string`).
        guard count >= DecodedSizeMeter.sharedSize else {
            try charge(storage: count, at: offset(of: node))
            return Data(UnsafeBufferPointer(rebasing: bytes[start..<(start + count)]))
        }
        if let shared = meter._withUnsafeGuaranteedRef({ $0.data[node] }) { return shared }
        try charge(storage: count, at: offset(of: node))
        let data = Data(UnsafeBufferPointer(rebasing: bytes[start..<(start + count)]))
        meter._withUnsafeGuaranteedRef { $0.data[node] = data }
        return data
    }

    func isoDate(_ node: Int) throws -> Date? {
        ISODate.date(from: try string(node))
    }

    func modelId(_ node: Int) throws -> ModelID? {
        let offset = offset(of: node)
        if bytes[offset] >> 4 == 0x5 {
            let (count, start) = try extent(at: offset)
            try check(start, count)
            return ModelID.parse(UnsafeBufferPointer(rebasing: bytes[start..<(start + count)]))
        }
        return ModelID(try string(node))
    }
}
