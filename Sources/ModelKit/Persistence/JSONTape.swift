import Foundation

/// A JSON value parsed into a flat list of entries ("tape") that point into the input bytes.
///
/// Parsing validates the syntax and the UTF-8 of the text once and records, for each value, its
/// kind and byte range; strings and numbers are converted only when the decoder reads them.
/// Containers record where their last descendant ends, so skipping a member is O(1). One tape
/// holds one model at a time and is reused, so its size does not grow with the file.
final class JSONTape {
    struct Entry {
        var kind: NodeKind
        /// Strings: whether they contain escapes. Numbers: whether they are integers.
        var flag: Bool
        /// Containers: the number of members or elements.
        var count: UInt32
        /// Containers: the offset of `{` or `[`. Strings: the first byte after the quote. Others:
        /// the first byte.
        var start: Int
        /// Containers: the index of the entry after the last descendant. Strings: the offset of
        /// the closing quote. Numbers: the offset after the last digit.
        var end: Int
    }

    var entries: [Entry] = []
    let bytes: UnsafeBufferPointer<UInt8>

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        entries.reserveCapacity(256)
    }

    /// Parses the value at `offset` into the tape (replacing what it held) and returns the offset
    /// after it.
    func parse(at offset: Int) throws -> Int {
        entries.removeAll(keepingCapacity: true)
        var scanner = JSONScanner(bytes: bytes, position: offset)
        try scanner.value(into: &entries, depth: 0)
        return scanner.position
    }
}

/// The JSON syntax, over bytes. Errors carry the byte offset of the problem.
struct JSONScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var position: Int

    func error(expected: String, at offset: Int? = nil) -> SerializationError {
        let where_ = offset ?? position
        let found: String
        if where_ >= bytes.count {
            found = "the end of the data"
        } else {
            let byte = bytes[where_]
            found = (0x20..<0x7F).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
        }
        return SerializationError(.malformedInput, byteOffset: where_, expected: expected, found: found)
    }

    @inline(__always) mutating func skipWhitespace() {
        while position < bytes.count {
            let byte = bytes[position]
            guard byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return }
            position += 1
        }
    }

    /// Skips whitespace and consumes `byte`, or fails.
    @inline(__always) mutating func expect(_ byte: UInt8, _ description: String) throws {
        skipWhitespace()
        guard position < bytes.count, bytes[position] == byte else { throw error(expected: description) }
        position += 1
    }

    /// Skips whitespace and consumes `byte` if it is next.
    @inline(__always) mutating func take(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard position < bytes.count, bytes[position] == byte else { return false }
        position += 1
        return true
    }

    mutating func value(into tape: inout [JSONTape.Entry], depth: Int) throws {
        skipWhitespace()
        guard position < bytes.count else { throw error(expected: "a JSON value") }
        switch bytes[position] {
        case UInt8(ascii: "{"): try container(into: &tape, depth: depth, isObject: true)
        case UInt8(ascii: "["): try container(into: &tape, depth: depth, isObject: false)
        case UInt8(ascii: "\""): tape.append(try string())
        case UInt8(ascii: "t"): tape.append(try literal("true", .bool))
        case UInt8(ascii: "f"): tape.append(try literal("false", .bool))
        case UInt8(ascii: "n"): tape.append(try literal("null", .null))
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): tape.append(try number())
        default: throw error(expected: "a JSON value")
        }
    }

    private mutating func container(into tape: inout [JSONTape.Entry], depth: Int, isObject: Bool) throws {
        guard depth < SerializationError.maximumDepth else {
            throw SerializationError(
                .nestingTooDeep, byteOffset: position,
                expected: "at most \(SerializationError.maximumDepth) nested arrays and objects", found: "deeper nesting")
        }
        let index = tape.count
        tape.append(JSONTape.Entry(kind: isObject ? .object : .array, flag: false, count: 0, start: position, end: 0))
        position += 1
        let close = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
        var count: UInt32 = 0
        if !take(close) {
            repeat {
                if isObject {
                    skipWhitespace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                        throw error(expected: "a key string")
                    }
                    tape.append(try string())
                    try expect(UInt8(ascii: ":"), "':' after the key")
                }
                try value(into: &tape, depth: depth + 1)
                count += 1
            } while take(UInt8(ascii: ","))
            try expect(close, isObject ? "',' or '}'" : "',' or ']'")
        }
        tape[index].count = count
        tape[index].end = tape.count
    }

    private mutating func literal(_ word: StaticString, _ kind: NodeKind) throws -> JSONTape.Entry {
        let start = position
        let count = word.utf8CodeUnitCount
        guard bytes.count - position >= count, memcmp(bytes.baseAddress! + position, word.utf8Start, count) == 0 else {
            throw error(expected: "a JSON value")
        }
        position += count
        return JSONTape.Entry(kind: kind, flag: bytes[start] == UInt8(ascii: "t"), count: 0, start: start, end: position)
    }

    private mutating func number() throws -> JSONTape.Entry {
        let start = position
        var integer = true
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        guard position < bytes.count, isDigit(bytes[position]) else { throw error(expected: "a digit") }
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
        } else {
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            integer = false
            position += 1
            guard position < bytes.count, isDigit(bytes[position]) else { throw error(expected: "a digit after '.'") }
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        if position < bytes.count, bytes[position] | 0x20 == UInt8(ascii: "e") {
            integer = false
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard position < bytes.count, isDigit(bytes[position]) else { throw error(expected: "a digit in the exponent") }
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        return JSONTape.Entry(kind: integer ? .integer : .real, flag: integer, count: 0, start: start, end: position)
    }

    @inline(__always) private func isDigit(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10
    }

    /// Scans a string, checking escapes and UTF-8.
    mutating func string() throws -> JSONTape.Entry {
        position += 1
        let start = position
        var escaped = false
        let count = bytes.count
        while true {
            // ASCII that needs no attention: the common case, one comparison chain per byte.
            while position < count {
                let byte = bytes[position]
                guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") else { break }
                position += 1
            }
            guard position < count else { throw error(expected: "the closing '\"' of the string") }
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let end = position
                position += 1
                return JSONTape.Entry(kind: .string, flag: escaped, count: 0, start: start, end: end)
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
                position += 1
                guard position < count else { throw error(expected: "an escape character") }
                switch bytes[position] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    position += 1
                case UInt8(ascii: "u"):
                    position += 1
                    for _ in 0..<4 {
                        guard position < count, hexValue(bytes[position]) != nil else {
                            throw error(expected: "four hexadecimal digits after \\u")
                        }
                        position += 1
                    }
                default:
                    throw error(expected: "a valid escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u)")
                }
            } else if byte < 0x20 {
                throw error(expected: "a control character to be escaped")
            } else {
                position = try validateUTF8Sequence(at: position)
            }
        }
    }

    /// Checks the multi-byte UTF-8 sequence at `offset` and returns the offset after it.
    private func validateUTF8Sequence(at offset: Int) throws -> Int {
        let lead = bytes[offset]
        let length: Int
        let minimum: UInt32
        var scalar: UInt32
        switch lead {
        case 0xC2...0xDF: length = 2; minimum = 0x80; scalar = UInt32(lead & 0x1F)
        case 0xE0...0xEF: length = 3; minimum = 0x800; scalar = UInt32(lead & 0x0F)
        case 0xF0...0xF4: length = 4; minimum = 0x10000; scalar = UInt32(lead & 0x07)
        default: throw error(expected: "valid UTF-8", at: offset)
        }
        guard offset + length <= bytes.count else { throw error(expected: "valid UTF-8", at: offset) }
        for index in 1..<length {
            let byte = bytes[offset + index]
            guard byte & 0xC0 == 0x80 else { throw error(expected: "valid UTF-8", at: offset) }
            scalar = scalar << 6 | UInt32(byte & 0x3F)
        }
        guard scalar >= minimum, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar) else {
            throw error(expected: "valid UTF-8", at: offset)
        }
        return offset + length
    }
}

@inline(__always) func hexValue(_ byte: UInt8) -> UInt32? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte &- UInt8(ascii: "0"))
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(byte &- UInt8(ascii: "a") &+ 10)
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(byte &- UInt8(ascii: "A") &+ 10)
    default: return nil
    }
}
