import Foundation

/// The text of XML property-list values: references, numbers, dates and base64 data. The scanner
/// checks values with these functions on its first pass, and the document converts them with the
/// same ones, so that what was checked is what reads.
enum XMLPlistValues {
    /// The character of the entity or character reference at `offset` (at its `&`), and the
    /// reference's length; `nil` when there is none there.
    static func reference(in bytes: UnsafeBufferPointer<UInt8>, at offset: Int) -> (Unicode.Scalar, Int)? {
        var end = offset + 1
        // The longest reference is `&#x10FFFF;` (or leading zeros, kept within reason).
        while end < bytes.count, end - offset < 16, bytes[end] != UInt8(ascii: ";") { end += 1 }
        guard end < bytes.count, bytes[end] == UInt8(ascii: ";") else { return nil }
        let name = UnsafeBufferPointer(rebasing: bytes[(offset + 1)..<end])
        let length = end + 1 - offset
        switch String(decoding: name, as: UTF8.self) {
        case "amp": return ("&", length)
        case "lt": return ("<", length)
        case "gt": return (">", length)
        case "quot": return ("\"", length)
        case "apos": return ("'", length)
        default: break
        }
        guard name.count >= 2, name[0] == UInt8(ascii: "#") else { return nil }
        let hex = name[1] == UInt8(ascii: "x")
        let digits = name.dropFirst(hex ? 2 : 1)
        guard !digits.isEmpty else { return nil }
        var value: UInt32 = 0
        for byte in digits {
            guard let digit = hexValue(byte), hex || digit < 10 else { return nil }
            value = value * (hex ? 16 : 10) + digit
            guard value <= 0x10FFFF else { return nil }
        }
        guard let scalar = Unicode.Scalar(value) else { return nil }
        return (scalar, length)
    }

    /// The characters of text that holds references or CDATA sections (checked by the scanner).
    static func decodeText(_ raw: UnsafeBufferPointer<UInt8>, offset: Int) throws -> String {
        var result: [UInt8] = []
        result.reserveCapacity(raw.count)
        var index = 0
        while index < raw.count {
            let byte = raw[index]
            if byte == UInt8(ascii: "&") {
                guard let (scalar, length) = reference(in: raw, at: index) else {
                    throw SerializationError(
                        .malformedInput, byteOffset: offset + index, expected: "an entity or a character reference",
                        found: "'&'")
                }
                result.append(contentsOf: String(Character(scalar)).utf8)
                index += length
            } else if byte == UInt8(ascii: "<"), raw.count - index >= 12 {
                // A CDATA section: its characters as they are.
                let start = index + 9
                var end = start
                while end + 3 <= raw.count, !(raw[end] == 0x5D && raw[end + 1] == 0x5D && raw[end + 2] == 0x3E) { end += 1 }
                result.append(contentsOf: raw[start..<min(end, raw.count)])
                index = end + 3
            } else {
                result.append(byte)
                index += 1
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// Fails unless the text of the scalar `entry` (an integer, real, date or data) converts.
    static func check(_ entry: XMLPlistTape.Entry, in bytes: UnsafeBufferPointer<UInt8>) throws {
        let text = UnsafeBufferPointer(rebasing: bytes[entry.contentStart..<entry.end])
        let valid: Bool
        let expected: String
        switch entry.kind {
        case .integer: (valid, expected) = (integer(text) != nil, "an integer of at most 64 bits")
        case .real: (valid, expected) = (real(text) != nil, "a real number")
        case .date: (valid, expected) = (date(text) != nil, "a date like 2001-01-01T00:00:00Z")
        case .data: (valid, expected) = (base64(text, decoding: false) != nil, "base64 data")
        default: return
        }
        guard valid else {
            let shown = String(decoding: text.prefix(40), as: UTF8.self)
            throw SerializationError(
                .malformedInput, byteOffset: entry.contentStart, expected: expected,
                found: entry.flag ? "a reference or CDATA section" : "\"\(shown)\"")
        }
    }

    /// The text without the XML whitespace around it.
    private static func trimmed(_ text: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }
        var start = 0
        var end = text.count
        while start < end, isSpace(text[start]) { start += 1 }
        while end > start, isSpace(text[end - 1]) { end -= 1 }
        return UnsafeBufferPointer(rebasing: text[start..<end])
    }

    /// An integer in decimal or `0x` hexadecimal, with an optional sign: 64 bits, signed or not.
    static func integer(_ raw: UnsafeBufferPointer<UInt8>) -> NodeNumber? {
        var text = trimmed(raw)[...]
        guard let first = text.first else { return nil }
        let negative = first == UInt8(ascii: "-")
        if negative || first == UInt8(ascii: "+") { text = text.dropFirst() }
        var radix: UInt64 = 10
        if text.count > 2, text.first == UInt8(ascii: "0"), text.dropFirst().first.map({ $0 | 0x20 }) == UInt8(ascii: "x") {
            radix = 16
            text = text.dropFirst(2)
        }
        guard !text.isEmpty else { return nil }
        var magnitude: UInt64 = 0
        for byte in text {
            guard let digit = hexValue(byte), UInt64(digit) < radix else { return nil }
            let (times, overflow) = magnitude.multipliedReportingOverflow(by: radix)
            let (sum, carry) = times.addingReportingOverflow(UInt64(digit))
            guard !overflow, !carry else { return nil }
            magnitude = sum
        }
        if !negative { return magnitude <= UInt64(Int64.max) ? .int(Int64(magnitude)) : .uint(magnitude) }
        guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
        return .int(Int64(truncatingIfNeeded: 0 &- magnitude))
    }

    /// A real number: decimal or exponent notation, or the `nan`, `+infinity` and `-infinity`
    /// Foundation writes (and `inf`, `infinity`).
    static func real(_ raw: UnsafeBufferPointer<UInt8>) -> Double? {
        let text = trimmed(raw)
        guard !text.isEmpty, text.count < 400 else { return nil }
        // Only the characters of numbers and of those words: no hexadecimal floats.
        for byte in text {
            switch byte | 0x20 {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "-"),
                UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "n"), UInt8(ascii: "a"), UInt8(ascii: "i"),
                UInt8(ascii: "f"), UInt8(ascii: "t"), UInt8(ascii: "y"):
                continue
            default:
                return nil
            }
        }
        return Double(String(decoding: text, as: UTF8.self))
    }

    /// The seconds since 2001 of a date in the form property lists write it,
    /// `2001-01-01T00:00:00Z` (the year may be longer, or negative).
    static func date(_ raw: UnsafeBufferPointer<UInt8>) -> Double? {
        let text = trimmed(raw)
        var index = 0
        func number(_ digits: Int, then separator: UInt8?) -> Int64? {
            var value: Int64 = 0
            let start = index
            while index < text.count, let digit = hexValue(text[index]), digit < 10, index - start < 12 {
                value = value * 10 + Int64(digit)
                index += 1
            }
            guard digits == 0 ? index - start >= 4 : index - start == digits else { return nil }
            if let separator {
                guard index < text.count, text[index] == separator else { return nil }
                index += 1
            }
            return value
        }
        let negative = !text.isEmpty && text[0] == UInt8(ascii: "-")
        if negative { index = 1 }
        guard let year = number(0, then: UInt8(ascii: "-")), let month = number(2, then: UInt8(ascii: "-")),
            let day = number(2, then: UInt8(ascii: "T")), let hour = number(2, then: UInt8(ascii: ":")),
            let minute = number(2, then: UInt8(ascii: ":")), let second = number(2, then: UInt8(ascii: "Z")),
            index == text.count, (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60
        else { return nil }
        let days = ISODate.days(fromCivil: negative ? -year : year, Int(month), Int(day))
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - ISODate.referenceOffset
        return Double(seconds)
    }

    /// Base64 text, whitespace allowed anywhere and padding optional: the bytes when `decoding`,
    /// else empty data when the text is valid; `nil` when it is not.
    static func base64(_ text: UnsafeBufferPointer<UInt8>, decoding: Bool) -> Data? {
        var output: [UInt8] = []
        if decoding { output.reserveCapacity(text.count / 4 * 3 + 3) }
        var bits: UInt32 = 0
        var bitCount = 0
        var padded = false
        for byte in text {
            let value: UInt32
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(byte - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(byte - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(byte - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "/"): value = 63
            case UInt8(ascii: "="):
                padded = true
                continue
            case 0x20, 0x0A, 0x0D, 0x09:
                continue
            default:
                return nil
            }
            // Nothing but padding and whitespace after padding.
            guard !padded else { return nil }
            bits = (bits << 6 | value) & 0xFFFF
            bitCount += 6
            if bitCount >= 8 {
                bitCount -= 8
                if decoding { output.append(UInt8(truncatingIfNeeded: bits >> UInt32(bitCount))) }
            }
        }
        return Data(output)
    }
}
