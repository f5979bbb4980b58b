import Foundation

/// Writes a document as a binary property list (`bplist00`), streaming.
///
/// A binary property list is a sequence of objects followed by a table of their offsets and a
/// trailer. A container refers to its members by object number, so members are written before
/// the container that holds them: scalars are written as soon as they come, and each open
/// container collects the numbers of its members until it is closed. Object references are a
/// fixed 4 bytes (up to 4 billion objects), so no object has to be rewritten once its size is
/// known; the offset table, written last, uses the smallest width that fits.
///
/// Keys and a few constant strings (`__type`, `Date`, model names) are written once and shared,
/// as Foundation's writer does. Property lists have no null: it is the dictionary
/// `{"__type": "Null"}`, written once.
final class BinaryPlistSink: GraphSink {
    // The stored properties are `@exclusivity(unchecked)`: they are touched for every value
    // written or read, one instance is used by one thread, and the dynamic checks cost more than
    // the work they guard.
    @exclusivity(unchecked) private var offsets = OffsetTable()
    @exclusivity(unchecked) private var frames: [Frame] = []
    @exclusivity(unchecked) private var depth = 0
    @exclusivity(unchecked) private var lastRef: UInt32 = 0
    @exclusivity(unchecked) private var interned = StringInterner()
    @exclusivity(unchecked) private var nullRef: UInt32?
    @exclusivity(unchecked) private var boolRefs: [UInt32?] = [nil, nil]

    private struct Frame {
        var isObject = false
        var keys: [UInt32] = []
        var values: [UInt32] = []
    }

    /// Whether dates are written as `{"__type": "Date", "iso": …}` dictionaries instead of native
    /// dates: for XML property lists, whose native dates keep only whole seconds.
    private let exactDates: Bool
    let buffer: OutputBuffer

    func expect(models count: Int) {
        // Generous: a model with a few strings, a date and pointers makes ten to twenty objects,
        // and capacity never written to costs address space, not memory (growing the table
        // copied it into newly faulted pages).
        offsets.reserveCapacity(min(count, Int.max / 24) * 24)
    }

    init(buffer: OutputBuffer, exactDates: Bool = false) {
        self.exactDates = exactDates
        self.buffer = buffer
        buffer.append("bplist00")
    }

    // MARK: Objects

    /// Starts a new object, returning its number.
    @inline(__always) private func startObject() -> UInt32 {
        let ref = UInt32(truncatingIfNeeded: offsets.count)
        offsets.append(buffer.position)
        return ref
    }

    /// Files the finished object `ref` as the next member of the innermost container.
    @inline(__always) private func place(_ ref: UInt32) {
        lastRef = ref
        guard depth > 0 else { return }
        frames[depth - 1].values.append(ref)
    }

    /// Writes a marker with a count: in its low nibble when under 15, else as a following integer.
    @inline(__always) private func marker(_ high: UInt8, count: Int) {
        if count < 15 {
            buffer.append(high | UInt8(count))
        } else {
            buffer.append(high | 0x0F)
            writeInteger(UInt64(count))
        }
    }

    private func writeInteger(_ value: UInt64) {
        buffer.reserve(9)
        if value <= 0xFF {
            buffer.appendUnchecked(0x10)
            buffer.appendUnchecked(UInt8(value))
        } else if value <= 0xFFFF {
            buffer.appendUnchecked(0x11)
            bigEndian(value, bytes: 2)
        } else if value <= 0xFFFF_FFFF {
            buffer.appendUnchecked(0x12)
            bigEndian(value, bytes: 4)
        } else {
            buffer.appendUnchecked(0x13)
            bigEndian(value, bytes: 8)
        }
    }

    @inline(__always) private func bigEndian(_ value: UInt64, bytes: Int) {
        buffer.reserve(bytes)
        var shift = (bytes - 1) * 8
        while shift >= 0 {
            buffer.appendUnchecked(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
            shift -= 8
        }
    }

    /// Writes a string object (ASCII or UTF-16) and returns its number.
    private func writeString(_ text: String) -> UInt32 {
        let ref = startObject()
        let original = text
        var text = text
        text.withUTF8 { utf8 in
            var ascii = true
            for byte in utf8 where byte >= 0x80 {
                ascii = false
                break
            }
            if ascii {
                marker(0x50, count: utf8.count)
                buffer.append(UnsafeRawBufferPointer(utf8))
            } else {
                let units = original.utf16.count
                marker(0x60, count: units)
                buffer.reserve(units * 2)
                for unit in original.utf16 {
                    buffer.appendUnchecked(UInt8(unit >> 8))
                    buffer.appendUnchecked(UInt8(unit & 0xFF))
                }
            }
        }
        return ref
    }

    /// The number of a shared string object, writing it the first time.
    private func sharedString(_ text: String) -> UInt32 {
        if let ref = interned.lookup(text) { return ref }
        let ref = writeString(text)
        interned.insert(text, ref)
        return ref
    }

    // MARK: GraphSink

    private func open(isObject: Bool) {
        if frames.count == depth { frames.append(Frame()) }
        frames[depth].isObject = isObject
        frames[depth].keys.removeAll(keepingCapacity: true)
        frames[depth].values.removeAll(keepingCapacity: true)
        depth += 1
    }

    private func close() {
        depth -= 1
        let ref = startObject()
        let count = frames[depth].values.count
        if frames[depth].isObject {
            marker(0xD0, count: count)
            writeRefs(frames[depth].keys)
        } else {
            marker(0xA0, count: count)
        }
        writeRefs(frames[depth].values)
        place(ref)
    }

    private func writeRefs(_ refs: [UInt32]) {
        buffer.reserve(refs.count * 4)
        let target = UnsafeMutableRawPointer(buffer.base + buffer.count)
        for (index, ref) in refs.enumerated() {
            target.storeBytes(of: ref.bigEndian, toByteOffset: index * 4, as: UInt32.self)
        }
        buffer.advance(by: refs.count * 4)
    }

    func beginObject() { open(isObject: true) }
    func endObject() { close() }
    func beginArray() { open(isObject: false) }
    func endArray() { close() }

    func key(_ key: String) {
        frames[depth - 1].keys.append(sharedString(key))
    }

    func null() {
        if let nullRef { return place(nullRef) }
        let type = sharedString("__type")
        let name = sharedString("Null")
        let ref = startObject()
        buffer.append(0xD1)
        writeRefs([type, name])
        nullRef = ref
        place(ref)
    }

    func bool(_ value: Bool) {
        let slot = value ? 1 : 0
        if let ref = boolRefs[slot] { return place(ref) }
        let ref = startObject()
        buffer.append(value ? 0x09 : 0x08)
        boolRefs[slot] = ref
        place(ref)
    }

    func int(_ value: Int64) {
        let ref = startObject()
        if value < 0 {
            buffer.append(0x13)
            bigEndian(UInt64(bitPattern: value), bytes: 8)
        } else {
            writeInteger(UInt64(value))
        }
        place(ref)
    }

    func uint(_ value: UInt64) {
        guard value > UInt64(Int64.max) else { return int(Int64(value)) }
        // Integers above Int64.max are 16-byte integers, as Foundation writes them.
        let ref = startObject()
        buffer.append(0x14)
        bigEndian(0, bytes: 8)
        bigEndian(value, bytes: 8)
        place(ref)
    }

    func double(_ value: Double) {
        let ref = startObject()
        buffer.append(0x23)
        bigEndian(value.bitPattern, bytes: 8)
        place(ref)
    }

    func string(_ value: String) {
        place(writeString(value))
    }

    /// A string likely to repeat (type tags, model names): shared.
    func sharedValue(_ value: String) {
        place(sharedString(value))
    }

    func date(_ value: Date) {
        if exactDates, let iso = ISODate.string(from: value) {
            beginObject()
            key("__type")
            sharedValue("Date")
            key("iso")
            string(iso)
            return endObject()
        }
        let ref = startObject()
        buffer.append(0x33)
        bigEndian(value.timeIntervalSinceReferenceDate.bitPattern, bytes: 8)
        place(ref)
    }

    func data(_ value: Data) {
        let ref = startObject()
        marker(0x40, count: value.count)
        value.withUnsafeBytes { buffer.append($0) }
        place(ref)
    }

    func modelId(_ value: ModelID) {
        let ref = startObject()
        // The marker (ASCII string, length follows), the length as a one-byte integer, 36 digits.
        buffer.reserve(3 + 36)
        buffer.appendUnchecked(0x5F)
        buffer.appendUnchecked(0x10)
        buffer.appendUnchecked(36)
        value.writeText(to: buffer.base + buffer.count)
        buffer.advance(by: 36)
        place(ref)
    }

    var usesJSONForms: Bool { false }

    /// Objects written after the checkpoint stay in the file, unreferenced (readers ignore them):
    /// only the open containers are restored.
    func checkpoint() -> Int {
        depth << 32 | (depth > 0 ? frames[depth - 1].values.count : 0)
    }

    func rollback(to checkpoint: Int) {
        depth = checkpoint >> 32
        if depth > 0 {
            frames[depth - 1].values.removeLast(frames[depth - 1].values.count - checkpoint & 0xFFFF_FFFF)
        }
    }

    /// Object numbers of the constant keys and tags of headers and pointers, looked up once.
    private lazy var constants: [UInt32] = [
        "model", "modelId", "objectId", "createdAt", "updatedAt", "properties", "__type", "ModelPointer",
    ].map(sharedString)
    /// The last model name written and its object number.
    @exclusivity(unchecked) private var lastName: (text: String, ref: UInt32)?

    private func nameRef(_ name: String) -> UInt32 {
        if let lastName, lastName.text == name { return lastName.ref }
        let ref = sharedString(name)
        lastName = (name, ref)
        return ref
    }

    @inline(__always) private func constantKey(_ index: Int) {
        frames[depth - 1].keys.append(constants[index])
    }

    func beginModel(name: String, id: ModelID, objectId: String?, createdAt: Date, updatedAt: Date) {
        let keys = constants
        beginObject()
        // A nil object id is left out, as ModelKit for Objective-C's dictionaries did.
        if objectId == nil {
            frames[depth - 1].keys.append(contentsOf: [keys[0], keys[1], keys[3], keys[4], keys[5]])
        } else {
            frames[depth - 1].keys.append(contentsOf: keys[0..<6])
        }
        place(nameRef(name))
        modelId(id)
        if let objectId { string(objectId) }
        date(createdAt)
        date(updatedAt)
        // The properties value comes next, matching the sixth key.
    }

    func pointer(name: String, id: ModelID, objectId: String?) {
        let keys = constants
        beginObject()
        frames[depth - 1].keys.append(keys[6])
        frames[depth - 1].keys.append(contentsOf: keys[0..<(objectId == nil ? 2 : 3)])
        place(keys[7])
        place(nameRef(name))
        modelId(id)
        if let objectId { string(objectId) }
        endObject()
    }

    func finish() throws {
        let tableOffset = buffer.position
        let largest = UInt64(tableOffset)
        let offsetSize = largest <= 0xFF ? 1 : largest <= 0xFFFF ? 2 : largest <= 0xFFFF_FFFF ? 4 : 8
        for index in 0..<offsets.count {
            bigEndian(UInt64(offsets[index]), bytes: offsetSize)
            if index & 0xFFFF == 0 { try buffer.flushIfNeeded() }
        }
        // Trailer: 5 unused bytes, sort version, offset size, reference size, object count,
        // top object, offset of the offset table.
        buffer.reserve(32)
        for _ in 0..<5 { buffer.appendUnchecked(0) }
        buffer.appendUnchecked(0)
        buffer.appendUnchecked(UInt8(offsetSize))
        buffer.appendUnchecked(4)
        bigEndian(UInt64(offsets.count), bytes: 8)
        bigEndian(UInt64(lastRef), bytes: 8)
        bigEndian(UInt64(tableOffset), bytes: 8)
    }
}

/// Object offsets, 4 bytes each until the output passes 4 GiB: a million models make some
/// fifteen million objects, and the table is the writer's largest structure.
struct OffsetTable {
    private var small: [UInt32] = []
    private var large: [Int]?

    var count: Int { large?.count ?? small.count }

    mutating func reserveCapacity(_ count: Int) {
        guard large == nil, count > 0 else { return }
        small.reserveCapacity(count)
    }

    @inline(__always) mutating func append(_ offset: Int) {
        if large == nil, offset <= Int(UInt32.max) {
            small.append(UInt32(truncatingIfNeeded: offset))
            return
        }
        if large == nil {
            large = small.map { Int($0) }
            small = []
        }
        large!.append(offset)
    }

    subscript(index: Int) -> Int {
        if let large { return large[index] }
        return Int(small[index])
    }
}

/// A small open-addressing table from short strings to object numbers, hashing the UTF-8 bytes
/// directly: looking keys up in a `[String: UInt32]` would hash through the generic String path
/// for each of millions of keys.
struct StringInterner {
    private var slots: [(hash: UInt64, text: String, ref: UInt32)?] = Array(repeating: nil, count: 256)
    private var used = 0

    private static func hash(_ text: String) -> UInt64 {
        var text = text
        return text.withUTF8 { utf8 in
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            return hash
        }
    }

    func lookup(_ text: String) -> UInt32? {
        let hash = Self.hash(text)
        var index = Int(truncatingIfNeeded: hash) & (slots.count - 1)
        while let slot = slots[index] {
            if slot.hash == hash, slot.text == text { return slot.ref }
            index = (index + 1) & (slots.count - 1)
        }
        return nil
    }

    mutating func insert(_ text: String, _ ref: UInt32) {
        // Only short strings are worth sharing; the table stays small (keys, tags, names).
        guard text.utf8.count <= 64, used < 4096 else { return }
        if (used + 1) * 2 > slots.count {
            let old = slots
            slots = Array(repeating: nil, count: slots.count * 2)
            used = 0
            for case let slot? in old { insert(slot.text, slot.ref) }
        }
        let hash = Self.hash(text)
        var index = Int(truncatingIfNeeded: hash) & (slots.count - 1)
        while slots[index] != nil { index = (index + 1) & (slots.count - 1) }
        slots[index] = (hash, text, ref)
        used += 1
    }
}
