import Foundation

/// Builds the bytes of a binary property list object by object, for tests that need a file no
/// writer would make (a damaged count, a shared object referenced many times).
///
/// References are 2 bytes and offsets 8, so a list may hold up to 65,536 objects.
struct PlistBuilder {
    private(set) var objects: [[UInt8]] = []
    static let referenceSize = 2

    /// Adds an object from its raw bytes (marker first) and returns its number.
    @discardableResult
    mutating func raw(_ bytes: [UInt8]) -> Int {
        objects.append(bytes)
        return objects.count - 1
    }

    /// The marker and count prefix of an object of `kind` (its high nibble) holding `count`.
    static func header(_ kind: UInt8, count: UInt64) -> [UInt8] {
        if count < 15 { return [kind << 4 | UInt8(count)] }
        return [kind << 4 | 0x0F, 0x13] + bigEndian(count, size: 8)
    }

    static func bigEndian(_ value: UInt64, size: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64(size - 1 - $0))) }
    }

    static func reference(_ object: Int) -> [UInt8] { bigEndian(UInt64(object), size: referenceSize) }

    mutating func string(_ text: String) -> Int {
        if text.utf8.allSatisfy({ $0 < 0x80 }) {
            return raw(Self.header(0x5, count: UInt64(text.utf8.count)) + Array(text.utf8))
        }
        let units = Array(text.utf16)
        return raw(Self.header(0x6, count: UInt64(units.count)) + units.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] })
    }

    mutating func integer(_ value: Int64) -> Int {
        raw([0x13] + Self.bigEndian(UInt64(bitPattern: value), size: 8))
    }

    mutating func real(_ value: Double) -> Int {
        raw([0x23] + Self.bigEndian(value.bitPattern, size: 8))
    }

    mutating func date(_ seconds: Double) -> Int {
        raw([0x33] + Self.bigEndian(seconds.bitPattern, size: 8))
    }

    /// An array of the objects numbered `elements`; `count` overrides the count written.
    mutating func array(_ elements: [Int], count: UInt64? = nil) -> Int {
        raw(Self.header(0xA, count: count ?? UInt64(elements.count)) + elements.flatMap(Self.reference))
    }

    /// A dictionary of `(key, value)` object numbers; `count` overrides the count written.
    mutating func dictionary(_ members: [(key: Int, value: Int)], count: UInt64? = nil) -> Int {
        raw(
            Self.header(0xD, count: count ?? UInt64(members.count)) + members.flatMap { Self.reference($0.key) }
                + members.flatMap { Self.reference($0.value) })
    }

    /// A dictionary with string keys.
    mutating func dictionary(_ members: KeyValuePairs<String, Int>) -> Int {
        let pairs = members.map { (key: string($0.key), value: $0.value) }
        return dictionary(pairs)
    }

    /// A bare model dictionary: `{"model": name, "modelId": id, "properties": properties}`.
    mutating func model(_ name: String, id: String, properties: Int) -> Int {
        let nameNode = string(name)
        let idNode = string(id)
        return dictionary(["model": nameNode, "modelId": idNode, "properties": properties])
    }

    /// The file, with `top` as the top object; `magic` replaces `bplist00`.
    func bytes(top: Int, magic: String = "bplist00") -> [UInt8] {
        var bytes = Array(magic.utf8)
        var offsets: [Int] = []
        for object in objects {
            offsets.append(bytes.count)
            bytes += object
        }
        let table = bytes.count
        for offset in offsets { bytes += Self.bigEndian(UInt64(offset), size: 8) }
        bytes += [0, 0, 0, 0, 0, 0, 8, UInt8(Self.referenceSize)]
        bytes += Self.bigEndian(UInt64(objects.count), size: 8)
        bytes += Self.bigEndian(UInt64(top), size: 8)
        bytes += Self.bigEndian(UInt64(table), size: 8)
        return bytes
    }

    func data(top: Int, magic: String = "bplist00") -> Data { Data(bytes(top: top, magic: magic)) }
}
