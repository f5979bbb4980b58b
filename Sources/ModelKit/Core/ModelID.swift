import Foundation
import Synchronization

/// The framework-assigned identity of a model.
///
/// Every model gets a `ModelID` when it is created. The id never changes, is written with the model
/// when it is serialized and is restored when the model is loaded, so it identifies the same model
/// across launches. Within a context there is at most one instance per id.
///
/// Its text form is the familiar UUID layout (`8-4-4-4-12` hexadecimal digits), so ids in files
/// are easy to read and to search for:
///
/// ```swift
/// let id = author.modelId
/// print(id)                                  // "5F0C61A2-93D4-4E1B-0000-00000000002A"
/// let same = ModelID(id.description)         // parses it back
/// ```
///
/// Ids are made of a random 64-bit prefix chosen once per process and a 64-bit counter, so that
/// creating an id costs an atomic increment rather than a call into the system's random source,
/// while ids made by different processes still do not collide in practice.
public struct ModelID: Hashable, Comparable, Sendable {
    @usableFromInline let high: UInt64
    @usableFromInline let low: UInt64

    @usableFromInline init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Creates the id with the same 128 bits as `uuid`.
    public init(_ uuid: UUID) {
        let b = uuid.uuid
        high = [b.0, b.1, b.2, b.3, b.4, b.5, b.6, b.7].reduce(0) { $0 << 8 | UInt64($1) }
        low = [b.8, b.9, b.10, b.11, b.12, b.13, b.14, b.15].reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// The id as a Foundation `UUID` with the same 128 bits.
    public var uuid: UUID {
        func byte(_ word: UInt64, _ index: Int) -> UInt8 { UInt8(truncatingIfNeeded: word >> (56 - 8 * index)) }
        let h = high, l = low
        return UUID(
            uuid: (
                byte(h, 0), byte(h, 1), byte(h, 2), byte(h, 3), byte(h, 4), byte(h, 5), byte(h, 6), byte(h, 7),
                byte(l, 0), byte(l, 1), byte(l, 2), byte(l, 3), byte(l, 4), byte(l, 5), byte(l, 6), byte(l, 7)
            ))
    }

    /// The nil id (all 128 bits zero), which no model has: the empty state of a ``ModelRef``.
    /// It is never made (the counter starts at 1), and text and files that spell it are not
    /// read as a model id.
    @inlinable static var zero: ModelID { ModelID(high: 0, low: 0) }

    /// Whether this is ``zero``.
    @inlinable var isZero: Bool { high | low == 0 }

    /// Returns a new id, distinct from every other id this process has made.
    ///
    /// - Complexity: O(1); one atomic increment.
    static func generate() -> ModelID {
        ModelID(high: processPrefix, low: counter.wrappingAdd(1, ordering: .relaxed).newValue)
    }

    private static let processPrefix: UInt64 = {
        var generator = SystemRandomNumberGenerator()
        return generator.next()
    }()
    private static let counter = Atomic<UInt64>(0)

    public static func < (lhs: ModelID, rhs: ModelID) -> Bool {
        (lhs.high, lhs.low) < (rhs.high, rhs.low)
    }
}

extension ModelID: LosslessStringConvertible, CustomStringConvertible {
    /// Parses the `8-4-4-4-12` hexadecimal form (either case). Returns `nil` for anything else,
    /// and for the nil UUID (all zeros), which is no model's id.
    ///
    /// - Complexity: O(1) (the input is at most 36 characters).
    public init?(_ description: String) {
        var text = description
        guard let parsed = text.withUTF8({ Self.parse($0) }) else { return nil }
        self = parsed
    }

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> ModelID? {
        // The loader parses an id for every model and every pointer: eight digits at a time in
        // one 64-bit word, with no branch per digit (digits and letters alternate at random).
        guard bytes.count == 36, let base = bytes.baseAddress else { return nil }
        let dash = UInt8(ascii: "-")
        guard base[8] == dash, base[13] == dash, base[18] == dash, base[23] == dash else { return nil }
        let raw = UnsafeRawPointer(base)
        @inline(__always) func eight(_ offset: Int) -> UInt64 {
            UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        }
        @inline(__always) func four(_ offset: Int) -> UInt64 {
            UInt64(UInt32(bigEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        }
        var valid = true
        let high = hexDigits(eight(0), &valid) << 32 | hexDigits(four(9) << 32 | four(14), &valid)
        let low = hexDigits(four(19) << 32 | four(24), &valid) << 32 | hexDigits(eight(28), &valid)
        // The nil UUID is no model's id (see `zero`).
        return valid && (high | low) != 0 ? ModelID(high: high, low: low) : nil
    }

    /// The 32-bit value of eight hexadecimal digits, one per byte of `text` with the first in the
    /// top byte; `valid` becomes false unless all eight are digits (either case).
    @inline(__always) private static func hexDigits(_ text: UInt64, _ valid: inout Bool) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let top: UInt64 = 0x8080_8080_8080_8080
        // The top bit of each byte of the result: whether that byte of `x` is at least `bound`.
        // With every byte below 0x80, adding 0x80 - bound carries into no other byte.
        @inline(__always) func atLeast(_ x: UInt64, _ bound: UInt8) -> UInt64 {
            (x &+ UInt64(0x80 &- bound) &* ones) & top
        }
        let folded = text | 0x2020_2020_2020_2020  // 'A'-'F' to 'a'-'f'; digits keep their bit
        let digits = atLeast(text, 0x30) & ~atLeast(text, 0x3A)
        let letters = atLeast(folded, 0x61) & ~atLeast(folded, 0x67)
        valid = valid && text & top == 0 && digits | letters == top
        // A digit's low four bits are its value; a letter's (bit 6 set) are its value minus 9.
        var value = (text & 0x0F0F_0F0F_0F0F_0F0F) &+ ((text >> 6) & ones) &* 9
        value = (value | value >> 4) & 0x00FF_00FF_00FF_00FF
        value = (value | value >> 8) & 0x0000_FFFF_0000_FFFF
        return (value | value >> 16) & 0x0000_0000_FFFF_FFFF
    }

    /// The `8-4-4-4-12` uppercase hexadecimal form, as `UUID.uuidString` writes it.
    public var description: String {
        String(unsafeUninitializedCapacity: 36) { buffer in
            guard let base = buffer.baseAddress else { return 0 }
            writeText(to: base)
            return 36
        }
    }
}

extension ModelID {
    /// Writes the 36-character uppercase text form into `target`, which has room for it.
    @inline(__always) func writeText(to target: UnsafeMutablePointer<UInt8>) {
        let hex: StaticString = "0123456789ABCDEF"
        let digits = hex.utf8Start
        var position = 0
        // Two hex digits per byte, with dashes before bytes 4, 6, 8 and 10.
        for byte in 0..<16 {
            if byte == 4 || byte == 6 || byte == 8 || byte == 10 {
                target[position] = UInt8(ascii: "-")
                position += 1
            }
            let word = byte < 8 ? high : low
            let value = Int(truncatingIfNeeded: word >> UInt64(56 - 8 * (byte & 7))) & 0xFF
            target[position] = digits[value >> 4]
            target[position + 1] = digits[value & 0xF]
            position += 2
        }
    }
}

extension ModelID: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let id = ModelID(text) else {
            throw DecodingError.dataCorruptedError(
                in: container,
                debugDescription: "Expected a model id (8-4-4-4-12 hexadecimal digits) but found \"\(text)\" instead.")
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
