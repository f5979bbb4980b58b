import Foundation

// JSON text for ModelValue, written and parsed over bytes: no JSONSerialization, no NSNumber,
// so integers, doubles and booleans keep their exact kind and value.

extension ModelValue {
    /// Options for ``jsonData(options:)``.
    public struct JSONWritingOptions: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Newlines and two-space indentation.
        public static let prettyPrinted = JSONWritingOptions(rawValue: 1)
    }

    /// The value as UTF-8 JSON text.
    ///
    /// Dates, data and non-finite doubles are written in their `__type` forms
    /// (`{"__type": "Date", "iso": …}`, `{"__type": "Bytes", "base64": …}`,
    /// `{"__type": "Double", "value": "nan"}`), so the text reads back exactly.
    ///
    /// - Complexity: O(n) in the size of the output.
    public func jsonData(options: JSONWritingOptions = []) -> Data {
        var writer = JSONTextWriter(pretty: options.contains(.prettyPrinted))
        writer.write(self, indent: 0)
        return Data(writer.bytes)
    }

    /// The value as a JSON string. See ``jsonData(options:)``.
    public func jsonString(options: JSONWritingOptions = []) -> String {
        String(decoding: jsonData(options: options), as: UTF8.self)
    }

    /// Parses UTF-8 JSON text.
    ///
    /// - Throws: ``SerializationError`` with code ``SerializationError/Code/malformedInput`` and the
    ///   byte offset of the problem, or ``SerializationError/Code/nestingTooDeep`` beyond
    ///   ``SerializationError/maximumDepth`` levels.
    /// - Complexity: O(n) in the size of the input.
    public init(json data: Data) throws {
        self = try data.withUnsafeBytes { raw in
            var reader = JSONTextReader(bytes: raw.bindMemory(to: UInt8.self))
            return try reader.readDocument()
        }
    }

    /// The `__type` object used for a date in the JSON form.
    static func jsonDate(_ date: Date) -> ModelValue {
        if let iso = ISODate.string(from: date) {
            return .object(Object([("__type", "Date"), ("iso", .string(iso))]))
        }
        // Far outside any calendar (or not finite): keep the exact number of seconds instead.
        return .object(Object([("__type", "Date"), ("referenceSeconds", jsonNumber(date.timeIntervalSinceReferenceDate))]))
    }

    static func jsonBytes(_ data: Data) -> ModelValue {
        .object(Object([("__type", "Bytes"), ("base64", .string(data.base64EncodedString()))]))
    }

    /// A double as JSON can hold it: a number, or a `__type` object for NaN and infinities.
    static func jsonNumber(_ value: Double) -> ModelValue {
        if value.isFinite { return .double(value) }
        let text = value.isNaN ? "nan" : (value < 0 ? "-inf" : "inf")
        return .object(Object([("__type", "Double"), ("value", .string(text))]))
    }
}

struct JSONTextWriter {
    var bytes: [UInt8] = []
    let pretty: Bool

    init(pretty: Bool) {
        self.pretty = pretty
        bytes.reserveCapacity(4096)
    }

    mutating func write(_ value: ModelValue, indent: Int) {
        switch value {
        case .null: append("null")
        case .bool(let flag): append(flag ? "true" : "false")
        case .int(let number): append(String(number))
        case .uint(let number): append(String(number))
        case .double(let number):
            if number.isFinite {
                // Swift's description is the shortest text that reads back as the same Double.
                append(number.description)
            } else {
                write(ModelValue.jsonNumber(number), indent: indent)
            }
        case .string(let text): writeString(text)
        case .date(let date):
            // Written directly (the same text as the `__type` object) unless pretty-printing.
            if !pretty {
                let start = bytes.count
                bytes.append(contentsOf: #"{"__type":"Date","iso":""#.utf8)
                if ISODate.append(date, to: &bytes) {
                    bytes.append(contentsOf: #""}"#.utf8)
                    return
                }
                bytes.removeSubrange(start...)
            }
            write(ModelValue.jsonDate(date), indent: indent)
        case .data(let data): write(ModelValue.jsonBytes(data), indent: indent)
        case .array(let elements):
            guard !elements.isEmpty else { return append("[]") }
            bytes.append(UInt8(ascii: "["))
            for (position, element) in elements.enumerated() {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                newline(indent + 1)
                write(element, indent: indent + 1)
            }
            newline(indent)
            bytes.append(UInt8(ascii: "]"))
        case .object(let object):
            guard !object.isEmpty else { return append("{}") }
            bytes.append(UInt8(ascii: "{"))
            for (position, member) in object.enumerated() {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                newline(indent + 1)
                writeString(member.key)
                bytes.append(UInt8(ascii: ":"))
                if pretty { bytes.append(UInt8(ascii: " ")) }
                write(member.value, indent: indent + 1)
            }
            newline(indent)
            bytes.append(UInt8(ascii: "}"))
        }
    }

    private mutating func newline(_ indent: Int) {
        guard pretty else { return }
        bytes.append(UInt8(ascii: "\n"))
        bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent * 2))
    }

    private mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    mutating func writeString(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            bytes.append(UInt8(ascii: "\""))
            // Copy runs of bytes that need no escaping in one go; escape the rest one by one.
            var runStart = 0
            for (index, byte) in utf8.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                appendEscaped(byte)
                runStart = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
            bytes.append(UInt8(ascii: "\""))
        }
    }

    private mutating func appendEscaped(_ byte: UInt8) {
        let hex: StaticString = "0123456789abcdef"
        switch byte {
        case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
        case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
        case UInt8(ascii: "\n"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
        case UInt8(ascii: "\r"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
        case UInt8(ascii: "\t"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
        default:
            bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
            bytes.append(hex.utf8Start[Int(byte >> 4)])
            bytes.append(hex.utf8Start[Int(byte & 0xF)])
        }
    }
}

struct JSONTextReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var position = 0
    var depth = 0

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    mutating func readDocument() throws -> ModelValue {
        // A UTF-8 byte order mark is allowed and skipped.
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { position = 3 }
        let value = try readValue()
        skipWhitespace()
        guard position == bytes.count else { throw error(expected: "the end of the JSON text") }
        return value
    }

    private func error(expected: String) -> SerializationError {
        let found: String
        if position >= bytes.count {
            found = "the end of the data"
        } else {
            let byte = bytes[position]
            found = (0x20..<0x7F).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
        }
        return SerializationError(.malformedInput, byteOffset: position, expected: expected, found: found)
    }

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): position += 1
            default: return
            }
        }
    }

    private mutating func readValue() throws -> ModelValue {
        skipWhitespace()
        guard position < bytes.count else { throw error(expected: "a JSON value") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try readObject()
        case UInt8(ascii: "["): return try readArray()
        case UInt8(ascii: "\""): return .string(try readString())
        case UInt8(ascii: "t"): return try readLiteral("true", .bool(true))
        case UInt8(ascii: "f"): return try readLiteral("false", .bool(false))
        case UInt8(ascii: "n"): return try readLiteral("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try readNumber()
        default: throw error(expected: "a JSON value")
        }
    }

    private mutating func enter() throws {
        depth += 1
        guard depth <= SerializationError.maximumDepth else {
            throw SerializationError(
                .nestingTooDeep, byteOffset: position,
                expected: "at most \(SerializationError.maximumDepth) nested arrays and objects",
                found: "deeper nesting")
        }
    }

    private mutating func readObject() throws -> ModelValue {
        try enter()
        defer { depth -= 1 }
        position += 1
        var object = ModelValue.Object()
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return .object(object)
        }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw error(expected: "a string key") }
            let key = try readString()
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw error(expected: "':'") }
            position += 1
            object[key] = try readValue()
            skipWhitespace()
            guard position < bytes.count else { throw error(expected: "',' or '}'") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
            } else if bytes[position] == UInt8(ascii: "}") {
                position += 1
                return .object(object)
            } else {
                throw error(expected: "',' or '}'")
            }
        }
    }

    private mutating func readArray() throws -> ModelValue {
        try enter()
        defer { depth -= 1 }
        position += 1
        var elements: [ModelValue] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return .array(elements)
        }
        while true {
            elements.append(try readValue())
            skipWhitespace()
            guard position < bytes.count else { throw error(expected: "',' or ']'") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
            } else if bytes[position] == UInt8(ascii: "]") {
                position += 1
                return .array(elements)
            } else {
                throw error(expected: "',' or ']'")
            }
        }
    }

    private mutating func readLiteral(_ word: StaticString, _ value: ModelValue) throws -> ModelValue {
        let count = word.utf8CodeUnitCount
        guard position + count <= bytes.count,
            UnsafeBufferPointer(rebasing: bytes[position..<position + count]).elementsEqual(
                UnsafeBufferPointer(start: word.utf8Start, count: count))
        else { throw error(expected: "\(word)") }
        position += count
        return value
    }

    private mutating func readNumber() throws -> ModelValue {
        let start = position
        var isInteger = true
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        guard position < bytes.count, isDigit(bytes[position]) else { throw error(expected: "a digit") }
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
            if position < bytes.count, isDigit(bytes[position]) { throw error(expected: "no leading zero") }
        } else {
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            guard position < bytes.count, isDigit(bytes[position]) else { throw error(expected: "a digit after '.'") }
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            isInteger = false
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard position < bytes.count, isDigit(bytes[position]) else { throw error(expected: "a digit in the exponent") }
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        if isInteger {
            if let value = Int64(text) { return .int(value) }
            if let value = UInt64(text) { return .uint(value) }
        }
        guard let value = Double(text) else {
            position = start
            throw error(expected: "a number")
        }
        guard value.isFinite else { throw NumberRange.beyondDouble(text, byteOffset: start) }
        return .double(value)
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private mutating func readString() throws -> String {
        position += 1
        let start = position
        // Fast path: no escapes.
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<position])
                // ASCII is always valid UTF-8: most keys, ids and dates skip validation.
                if slice.allSatisfy({ $0 < 0x80 }) {
                    position += 1
                    return String(decoding: slice, as: UTF8.self)
                }
                guard let text = String(validating: slice, as: UTF8.self) else {
                    position = start
                    throw invalidUTF8(in: slice)
                }
                position += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error(expected: "an escaped control character") }
            position += 1
        }
        var buffer = Array(UnsafeBufferPointer(rebasing: bytes[start..<position]))
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: buffer, as: UTF8.self) else {
                    position = start
                    throw error(expected: "valid UTF-8 in a string")
                }
                position += 1
                return text
            case UInt8(ascii: "\\"):
                position += 1
                guard position < bytes.count else { throw error(expected: "an escape sequence") }
                let escaped = bytes[position]
                position += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): buffer.append(escaped)
                case UInt8(ascii: "b"): buffer.append(0x08)
                case UInt8(ascii: "f"): buffer.append(0x0C)
                case UInt8(ascii: "n"): buffer.append(0x0A)
                case UInt8(ascii: "r"): buffer.append(0x0D)
                case UInt8(ascii: "t"): buffer.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try readHex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                            bytes[position + 1] == UInt8(ascii: "u")
                        else { throw error(expected: "a low surrogate \\u escape") }
                        position += 2
                        let low = try readHex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw error(expected: "a low surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(scalar) {
                        throw error(expected: "a high surrogate before a low surrogate")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw error(expected: "a Unicode scalar") }
                    buffer.append(contentsOf: String(Character(unicode)).utf8)
                default:
                    position -= 1
                    throw error(expected: "a valid escape character")
                }
            default:
                if byte < 0x20 { throw error(expected: "an escaped control character") }
                buffer.append(byte)
                position += 1
            }
        }
        throw error(expected: "'\"' closing the string")
    }

    private mutating func readHex4() throws -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard position < bytes.count else { throw error(expected: "4 hexadecimal digits") }
            let byte = bytes[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error(expected: "4 hexadecimal digits")
            }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }

    /// Points the error at the first byte that breaks UTF-8 in `slice`.
    private mutating func invalidUTF8(in slice: UnsafeBufferPointer<UInt8>) -> SerializationError {
        var decoder = UTF8()
        var iterator = slice.makeIterator()
        var offset = 0
        loop: while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): offset += UTF8.width(scalar)
            case .emptyInput: break loop
            case .error: break loop
            }
        }
        position += offset
        return SerializationError(
            .malformedInput, byteOffset: position, expected: "valid UTF-8 in a string",
            found: "byte 0x\(String(bytes[position], radix: 16))")
    }
}

extension ModelValue: CustomStringConvertible {
    /// The value as compact JSON text (dates and data in their `__type` forms).
    public var description: String { jsonString() }
}

extension ModelValue.Object: CustomStringConvertible {
    /// The object as compact JSON text, in its keys' order: `{"name":"Jon","age":40}`.
    public var description: String { ModelValue.object(self).jsonString() }
}
