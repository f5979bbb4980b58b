import Foundation

/// The XML property-list syntax over bytes: `plist`, `dict`, `key`, `array`, `string`,
/// `integer`, `real`, `true`, `false`, `date` and `data` elements, the five predefined entities
/// and numeric character references, CDATA sections in text, and comments, processing
/// instructions and the DOCTYPE (skipped). Errors carry the byte offset of the problem.
///
/// A value is read into one ``XMLPlistTape/Entry``: containers are walked to their end tag, but
/// only counted, so skipping a member costs memory for its nesting, not its size. The first pass
/// over a document checks everything (`validates`); later passes over text it checked only find
/// where values end.
struct XMLPlistScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var position: Int
    /// Whether to check nesting and the text of every value (see the type's summary).
    let validates: Bool

    /// The most nested dictionaries and arrays: the limit of every reader, inside the envelope,
    /// the array of models, a model and its properties.
    static let maximumNesting = SerializationError.maximumDepth + 4

    /// The elements of a property list.
    enum Tag: CaseIterable {
        case plist, dict, key, array, string, integer, real, `true`, `false`, date, data

        var name: StaticString {
            switch self {
            case .plist: "plist"
            case .dict: "dict"
            case .key: "key"
            case .array: "array"
            case .string: "string"
            case .integer: "integer"
            case .real: "real"
            case .true: "true"
            case .false: "false"
            case .date: "date"
            case .data: "data"
            }
        }
    }

    // MARK: Documents

    /// Reads a whole document (prolog, an optional `plist` element around one value, trailing
    /// comments) and returns the entry of its value.
    mutating func document() throws -> XMLPlistTape.Entry {
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { position = 3 }
        while true {
            try skipMisc()
            guard starts(with: "<!DOCTYPE") else { break }
            try skipDoctype()
        }
        let value: XMLPlistTape.Entry
        if starts(with: "<plist") {
            let (tag, empty) = try startTag()
            guard tag == .plist, !empty else { throw error(expected: "a property-list value in <plist>") }
            value = try self.value(depth: 0)
            try skipMisc()
            try endTag(.plist)
        } else {
            value = try self.value(depth: 0)
        }
        try skipMisc()
        guard position == bytes.count else { throw error(expected: "the end of the property list") }
        return value
    }

    /// Skips a DOCTYPE declaration, its internal subset included.
    private mutating func skipDoctype() throws {
        let start = position
        var quote: UInt8?
        var brackets = 0
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if byte == UInt8(ascii: "[") {
                brackets += 1
            } else if byte == UInt8(ascii: "]") {
                brackets -= 1
            } else if byte == UInt8(ascii: ">"), brackets <= 0 {
                return
            }
        }
        throw error(expected: "'>' at the end of the DOCTYPE", at: start)
    }

    /// Skips whitespace, comments and processing instructions.
    mutating func skipMisc() throws {
        while position < bytes.count {
            let byte = bytes[position]
            if byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
                position += 1
            } else if starts(with: "<!--") {
                try skip(past: "-->", from: position + 4, expected: "'-->' at the end of the comment")
            } else if starts(with: "<?") {
                try skip(past: "?>", from: position + 2, expected: "'?>' at the end of the processing instruction")
            } else {
                return
            }
        }
    }

    /// Moves past the first `terminator` at or after `from`, or fails at the current position.
    private mutating func skip(past terminator: StaticString, from: Int, expected: String) throws {
        let count = terminator.utf8CodeUnitCount
        var index = from
        while index + count <= bytes.count {
            if bytes[index] == terminator.utf8Start[0], memcmp(bytes.baseAddress! + index, terminator.utf8Start, count) == 0 {
                position = index + count
                return
            }
            index += 1
        }
        throw error(expected: expected)
    }

    @inline(__always) func starts(with text: StaticString, at offset: Int? = nil) -> Bool {
        let at = offset ?? position
        let count = text.utf8CodeUnitCount
        return bytes.count - at >= count && memcmp(bytes.baseAddress! + at, text.utf8Start, count) == 0
    }

    // MARK: Elements

    /// Reads the value element at the current position (after whitespace and comments) and
    /// returns its entry. `depth` counts the dictionaries and arrays around it.
    mutating func value(depth: Int) throws -> XMLPlistTape.Entry {
        try skipMisc()
        let tagStart = position
        guard position < bytes.count, bytes[position] == UInt8(ascii: "<"), !starts(with: "</") else {
            throw error(expected: "a property-list value")
        }
        let (tag, empty) = try startTag()
        var entry = XMLPlistTape.Entry(
            kind: .string, flag: false, count: 0, tagStart: tagStart, contentStart: position, end: position, children: -1)
        switch tag {
        case .dict, .array:
            entry.kind = tag == .dict ? .object : .array
            if validates, depth >= Self.maximumNesting {
                throw SerializationError(
                    .nestingTooDeep, byteOffset: tagStart,
                    expected: "at most \(Self.maximumNesting) nested dictionaries and arrays", found: "deeper nesting")
            }
            if !empty { entry.count = try children(of: tag, depth: depth) }
            entry.end = position
        case .true, .false:
            entry.kind = .bool
            entry.flag = tag == .true
            if !empty { try endTag(tag) }
        case .string:
            if !empty { (entry.end, entry.flag) = try text(of: tag) }
        case .integer, .real, .date, .data:
            entry.kind = tag == .integer ? .integer : tag == .real ? .real : tag == .date ? .date : .data
            if !empty { (entry.end, entry.flag) = try text(of: tag) }
            if validates { try XMLPlistValues.check(entry, in: bytes) }
        case .key, .plist:
            throw error(expected: "a property-list value", at: tagStart)
        }
        return entry
    }

    /// Reads a `<key>` element and returns its entry (a string).
    mutating func key() throws -> XMLPlistTape.Entry {
        try skipMisc()
        let tagStart = position
        guard starts(with: "<key"), let (tag, empty) = try? startTag(), tag == .key else {
            position = tagStart
            throw error(expected: "a <key> or </dict>")
        }
        var entry = XMLPlistTape.Entry(
            kind: .string, flag: false, count: 0, tagStart: tagStart, contentStart: position, end: position, children: -1)
        if !empty { (entry.end, entry.flag) = try text(of: .key) }
        return entry
    }

    /// Walks the members of a dictionary or the elements of an array up to its end tag, and
    /// returns how many there are.
    private mutating func children(of tag: Tag, depth: Int) throws -> UInt32 {
        var count: UInt32 = 0
        while true {
            try skipMisc()
            if starts(with: "</") {
                try endTag(tag)
                return count
            }
            if tag == .dict { _ = try key() }
            _ = try value(depth: depth + 1)
            guard count < .max else { throw error(expected: "fewer members") }
            count += 1
        }
    }

    /// Appends the entries of the `count` members (key, then value) or elements of the container
    /// whose content starts at the current position.
    mutating func children(isDictionary: Bool, count: Int, into entries: inout [XMLPlistTape.Entry]) throws {
        for _ in 0..<count {
            if isDictionary { entries.append(try key()) }
            entries.append(try value(depth: 0))
        }
    }

    /// Reads a start tag at the current position (its attributes are skipped) and returns its
    /// element, and whether it closes itself (`<string/>`).
    private mutating func startTag() throws -> (tag: Tag, empty: Bool) {
        let tagStart = position
        position += 1
        let nameStart = position
        while position < bytes.count, isNameByte(bytes[position]) { position += 1 }
        guard let tag = Tag.allCases.first(where: { matches($0.name, nameStart..<position) }) else {
            throw error(expected: "a property-list value", at: tagStart)
        }
        while true {
            skipWhitespace()
            guard position < bytes.count else { throw error(expected: "'>' at the end of <\(tag.name)>") }
            if bytes[position] == UInt8(ascii: ">") {
                position += 1
                return (tag, false)
            }
            if starts(with: "/>") {
                position += 2
                return (tag, true)
            }
            // An attribute, as `version="1.0"` on <plist>.
            let attribute = position
            while position < bytes.count, isNameByte(bytes[position]) { position += 1 }
            skipWhitespace()
            guard position > attribute, position < bytes.count, bytes[position] == UInt8(ascii: "=") else {
                throw error(expected: "'>' or an attribute in <\(tag.name)>")
            }
            position += 1
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") || bytes[position] == UInt8(ascii: "'")
            else { throw error(expected: "a quoted attribute value") }
            let quote = bytes[position]
            let valueStart = position
            position += 1
            while position < bytes.count, bytes[position] != quote, bytes[position] != UInt8(ascii: "<") { position += 1 }
            guard position < bytes.count, bytes[position] == quote else {
                throw error(expected: "the end of the attribute value", at: valueStart)
            }
            position += 1
        }
    }

    /// Reads the end tag of `tag` at the current position.
    private mutating func endTag(_ tag: Tag) throws {
        let start = position
        guard starts(with: "</") else { throw error(expected: "</\(tag.name)>") }
        position += 2
        let nameStart = position
        while position < bytes.count, isNameByte(bytes[position]) { position += 1 }
        let named = matches(tag.name, nameStart..<position)
        skipWhitespace()
        guard named, position < bytes.count, bytes[position] == UInt8(ascii: ">") else {
            throw error(expected: "</\(tag.name)>", at: start)
        }
        position += 1
    }

    /// Reads text up to the end tag of `tag` (consumed) and returns where the text ends, and
    /// whether it holds references or CDATA sections (its bytes are not its characters).
    private mutating func text(of tag: Tag) throws -> (end: Int, escaped: Bool) {
        var escaped = false
        while true {
            guard position < bytes.count else { throw error(expected: "</\(tag.name)>") }
            let byte = bytes[position]
            if byte == UInt8(ascii: "<") {
                if starts(with: "<![CDATA[") {
                    escaped = true
                    try skip(past: "]]>", from: position + 9, expected: "']]>' at the end of the CDATA section")
                    continue
                }
                let end = position
                try endTag(tag)
                return (end, escaped)
            }
            if byte == UInt8(ascii: "&") {
                escaped = true
                guard validates else {
                    position += 1
                    continue
                }
                guard let (_, length) = XMLPlistValues.reference(in: bytes, at: position) else {
                    throw error(expected: "an entity (&amp; &lt; &gt; &quot; &apos;) or a character reference")
                }
                position += length
            } else if byte >= 0x80, validates {
                position = try validateUTF8Sequence(at: position)
            } else {
                position += 1
            }
        }
    }

    // MARK: Bytes

    @inline(__always) private func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "."):
            return true
        default:
            return false
        }
    }

    private func matches(_ name: StaticString, _ range: Range<Int>) -> Bool {
        range.count == name.utf8CodeUnitCount && memcmp(bytes.baseAddress! + range.lowerBound, name.utf8Start, range.count) == 0
    }

    @inline(__always) private mutating func skipWhitespace() {
        while position < bytes.count {
            let byte = bytes[position]
            guard byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return }
            position += 1
        }
    }

    /// Checks the multi-byte UTF-8 sequence at `offset` and returns the offset after it.
    private func validateUTF8Sequence(at offset: Int) throws -> Int {
        let lead = bytes[offset]
        let length: Int
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0...0xEF: length = 3
        case 0xF0...0xF4: length = 4
        default: throw error(expected: "valid UTF-8", at: offset)
        }
        guard offset + length <= bytes.count else { throw error(expected: "valid UTF-8", at: offset) }
        for index in (offset + 1)..<(offset + length) where bytes[index] & 0xC0 != 0x80 {
            throw error(expected: "valid UTF-8", at: offset)
        }
        // Overlong forms, surrogates and scalars beyond U+10FFFF.
        let second = bytes[offset + 1]
        if (lead == 0xE0 && second < 0xA0) || (lead == 0xED && second > 0x9F) || (lead == 0xF0 && second < 0x90)
            || (lead == 0xF4 && second > 0x8F)
        {
            throw error(expected: "valid UTF-8", at: offset)
        }
        return offset + length
    }

    /// An error at `offset` (the current position by default), naming the tag or byte there.
    func error(expected: String, at offset: Int? = nil) -> SerializationError {
        let at = offset ?? position
        return SerializationError(.malformedInput, byteOffset: at, expected: expected, found: describe(at))
    }

    /// What is at `offset`, for error messages: a tag's name, a character or a byte.
    private func describe(_ offset: Int) -> String {
        guard offset < bytes.count else { return "the end of the data" }
        let byte = bytes[offset]
        if byte == UInt8(ascii: "<") {
            var end = offset + 1
            if end < bytes.count, bytes[end] == UInt8(ascii: "/") { end += 1 }
            while end < bytes.count, end - offset < 40, isNameByte(bytes[end]) { end += 1 }
            if end - offset > 1 { return "<\(String(decoding: bytes[(offset + 1)..<end], as: UTF8.self))>" }
        }
        return (0x20..<0x7F).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
    }
}
