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

    init(high: UInt64, low: UInt64) {
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
    /// Parses the `8-4-4-4-12` hexadecimal form (either case). Returns `nil` for anything else.
    ///
    /// - Complexity: O(1) (the input is at most 36 characters).
    public init?(_ description: String) {
        var text = description
        guard let parsed = text.withUTF8({ Self.parse($0) }) else { return nil }
        self = parsed
    }

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> ModelID? {
        // The loader parses an id for every model and every pointer: fixed positions, no
        // per-character switch, one check for all digits at the end.
        guard bytes.count == 36, let base = bytes.baseAddress else { return nil }
        let dash = UInt8(ascii: "-")
        guard base[8] == dash, base[13] == dash, base[18] == dash, base[23] == dash else { return nil }
        var bad = false
        @inline(__always) func digits(_ from: Int, _ count: Int, into word: inout UInt64) {
            for offset in from..<(from + count) {
                let byte = base[offset]
                let digit = byte &- UInt8(ascii: "0")
                let letter = (byte | 0x20) &- UInt8(ascii: "a")
                let nibble: UInt8
                if digit < 10 {
                    nibble = digit
                } else if letter < 6 {
                    nibble = letter &+ 10
                } else {
                    bad = true
                    nibble = 0
                }
                word = word << 4 | UInt64(nibble)
            }
        }
        var high: UInt64 = 0
        var low: UInt64 = 0
        digits(0, 8, into: &high)
        digits(9, 4, into: &high)
        digits(14, 4, into: &high)
        digits(19, 4, into: &low)
        digits(24, 12, into: &low)
        return bad ? nil : ModelID(high: high, low: low)
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
