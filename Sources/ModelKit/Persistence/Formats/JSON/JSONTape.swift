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

    @exclusivity(unchecked) var entries: [Entry] = []
    /// How many members the last ``parse(at:skippingProperties:keptKeys:keptKeysDepth:)`` left
    /// out for not being among `keptKeys`: keys the reader does not know.
    @exclusivity(unchecked) private(set) var droppedMembers = 0
    /// The key entries of those members, so that the keys can still be named (an unknown key is
    /// reported by name: see `GraphLoader+UnknownKeys.swift`).
    private(set) var droppedKeys: [Entry] = []
    let bytes: UnsafeBufferPointer<UInt8>
    /// The most entries the tape has held: what it costs in memory is this many entries, however
    /// large the input (tests check it).
    private(set) var highWater = 0
    /// When the last parse dropped members of the top-level object and may be asked for them
    /// (see ``parse(at:skippingProperties:keptKeys:keptKeysDepth:recoveringDropped:)``), the keys
    /// it kept.
    private(set) var droppedAllBut: [[UInt8]]?
    /// The keys of dropped members asked for since the last parse, for the caller to keep the
    /// next time.
    private(set) var recoveredKeys: [[UInt8]] = []
    /// Whether every member of the top-level object was asked for since the last parse.
    private(set) var recoveredAllMembers = false

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        entries.reserveCapacity(256)
    }

    /// Parses the value at `offset` into the tape (replacing what it held) and returns the offset
    /// after it.
    ///
    /// With `skippingProperties`, the value of a top-level `properties` key is skipped rather than
    /// parsed (its entry has no children): reading a model's header does not need it, and it is
    /// parsed, and checked, when the properties are decoded.
    ///
    /// With `keptKeys`, the members of the top-level object whose keys are not among them are
    /// checked as carefully but not recorded: a model's properties parsed for a decoder that reads
    /// only those keys take memory for what is read, not for what a file adds (one unknown
    /// property holding a 100 MB array would otherwise take gigabytes of entries). With
    /// `keptKeysDepth`, the objects so filtered are those nested that deep (0: the top level)
    /// instead.
    ///
    /// With `recoveringDropped` (and depth 0), a member dropped that way can still be asked for:
    /// ``recoverMember(named:)`` and ``allMembers(of:)`` find it in the text again and add it at
    /// the end of the tape. A decoder that asks for keys nobody can list in advance (a `Codable`
    /// type's optionals, a custom `init(from:)`) then reads what it asks for, and its caller
    /// learns to keep those keys from the next model on.
    func parse(
        at offset: Int, skippingProperties: Bool = false, keptKeys: [[UInt8]]? = nil, keptKeysDepth: Int = 0,
        recoveringDropped: Bool = false
    ) throws -> Int {
        entries.removeAll(keepingCapacity: true)
        droppedAllBut = nil
        if !recoveredKeys.isEmpty { recoveredKeys.removeAll() }
        recoveredAllMembers = false
        var scanner = JSONScanner(bytes: bytes, position: offset)
        scanner.skipsProperties = skippingProperties
        scanner.keptKeys = keptKeys
        scanner.keptKeysDepth = keptKeysDepth
        defer { highWater = max(highWater, entries.count) }
        droppedMembers = 0
        droppedKeys = []
        try scanner.value(into: &entries, depth: 0)
        droppedMembers = scanner.droppedMembers
        droppedKeys = scanner.droppedKeys
        if recoveringDropped, keptKeysDepth == 0, scanner.droppedMembers > 0 { droppedAllBut = keptKeys }
        return scanner.position
    }

    /// The keys of the members of the top-level object that the last parse left out.
    ///
    /// - Complexity: O(k) in the length of those keys.
    func droppedKeyNames() throws -> [String] {
        try droppedKeys.map { key in
            entries.append(key)
            defer { entries.removeLast() }
            return try JSONDocument(tape: self).string(entries.count - 1)
        }
    }

    /// Whether `key` names a member of `object` the last parse may have dropped, which only
    /// ``recoverMember(named:)`` can find.
    @inline(__always) func mayHaveDropped(_ key: UnsafeBufferPointer<UInt8>, from object: Int) -> Bool {
        guard object == 0, let kept = droppedAllBut else { return false }
        return !kept.contains { $0.elementsEqual(key) }
    }

    /// Finds the first member of the top-level object named `key` in the text (the parse
    /// dropped it, or it is not there), records its value at the end of the tape and returns its
    /// entry; `nil` when there is no such member.
    ///
    /// - Complexity: O(n) in the length of the object's text; the entries added are those of the
    ///   member's value.
    func recoverMember(named key: UnsafeBufferPointer<UInt8>) throws -> Int? {
        recoveredKeys.append(Array(key))
        defer { highWater = max(highWater, entries.count) }
        // The object was checked when it was parsed: this reads it again without errors.
        var scanner = JSONScanner(bytes: bytes, position: entries[0].start + 1)
        if scanner.take(UInt8(ascii: "}")) { return nil }
        repeat {
            let found = try scanner.memberKey()
            let matches: Bool
            if found.flag {
                entries.append(found)
                matches = try JSONDocument(tape: self).string(entries.count - 1).utf8.elementsEqual(key)
                entries.removeLast()
            } else {
                matches = UnsafeBufferPointer(rebasing: bytes[found.start..<found.end]).elementsEqual(key)
            }
            if matches {
                let node = entries.count
                try scanner.value(into: &entries, depth: 1)
                return node
            }
            try scanner.checkValue(depth: 1)
        } while scanner.take(UInt8(ascii: ","))
        return nil
    }

    /// `object` itself, or when the last parse dropped some of its members, the whole object
    /// parsed again at the end of the tape (for `allKeys`, which must list every member).
    func allMembers(of object: Int) throws -> Int {
        guard object == 0, droppedAllBut != nil else { return object }
        recoveredAllMembers = true
        defer { highWater = max(highWater, entries.count) }
        var scanner = JSONScanner(bytes: bytes, position: entries[0].start)
        let node = entries.count
        try scanner.value(into: &entries, depth: 0)
        return node
    }
}

/// The JSON syntax, over bytes. Errors carry the byte offset of the problem.
struct JSONScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var position: Int
    /// Whether to skip the value of a top-level `properties` key (see ``JSONTape/parse(at:skippingProperties:)``).
    var skipsProperties = false
    /// The keys of the objects at ``keptKeysDepth`` whose members are recorded; `nil`: all of
    /// them (see ``JSONTape/parse(at:skippingProperties:keptKeys:keptKeysDepth:)``).
    var keptKeys: [[UInt8]]?
    var keptKeysDepth = 0
    /// How many members were checked but not recorded for not being among ``keptKeys``.
    var droppedMembers = 0
    /// The keys of those members (their values are not recorded).
    var droppedKeys: [JSONTape.Entry] = []

    init(bytes: UnsafeBufferPointer<UInt8>, position: Int) {
        self.bytes = bytes
        self.position = position
    }

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
        try checkNesting(depth)
        let index = tape.count
        tape.append(JSONTape.Entry(kind: isObject ? .object : .array, flag: false, count: 0, start: position, end: 0))
        position += 1
        let close = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
        var count: UInt32 = 0
        if !take(close) {
            repeat {
                if isObject {
                    let key = try memberKey()
                    tape.append(key)
                    if depth == 0, skipsProperties, isPropertiesKey(key) {
                        try skipContainer(into: &tape)
                        count += 1
                        continue
                    }
                    if depth == keptKeysDepth, let keptKeys, !isKept(key, among: keptKeys) {
                        droppedKeys.append(tape.removeLast())
                        droppedMembers += 1
                        try checkValue(depth: depth + 1)
                        continue
                    }
                }
                try value(into: &tape, depth: depth + 1)
                count += 1
            } while take(UInt8(ascii: ","))
            try expect(close, isObject ? "',' or '}'" : "',' or ']'")
        }
        tape[index].count = count
        tape[index].end = tape.count
    }

    /// Fails when a container at `depth` would nest deeper than the limit.
    private func checkNesting(_ depth: Int) throws {
        guard depth < SerializationError.maximumDepth else {
            throw SerializationError(
                .nestingTooDeep, byteOffset: position,
                expected: "at most \(SerializationError.maximumDepth) nested arrays and objects", found: "deeper nesting")
        }
    }

    /// Reads an object member's key and the colon after it; returns the key.
    mutating func memberKey() throws -> JSONTape.Entry {
        skipWhitespace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw error(expected: "a key string") }
        let key = try string()
        try expect(UInt8(ascii: ":"), "':' after the key")
        return key
    }

    /// Whether `key` is one of `keys`. A key written with escapes counts as kept: it is
    /// compared after unescaping, by the reader.
    private func isKept(_ key: JSONTape.Entry, among keys: [[UInt8]]) -> Bool {
        if key.flag { return true }
        let length = key.end - key.start
        return keys.contains { candidate in
            candidate.count == length
                && candidate.withUnsafeBufferPointer { memcmp(bytes.baseAddress! + key.start, $0.baseAddress!, length) == 0 }
        }
    }

    /// Checks the value at `position` as ``value(into:depth:)`` does, with the same errors, and
    /// moves past it without recording anything.
    mutating func checkValue(depth: Int) throws {
        skipWhitespace()
        guard position < bytes.count else { throw error(expected: "a JSON value") }
        switch bytes[position] {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let isObject = bytes[position] == UInt8(ascii: "{")
            try checkNesting(depth)
            position += 1
            let close = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
            if !take(close) {
                repeat {
                    if isObject { _ = try memberKey() }
                    try checkValue(depth: depth + 1)
                } while take(UInt8(ascii: ","))
                try expect(close, isObject ? "',' or '}'" : "',' or ']'")
            }
        case UInt8(ascii: "\""): _ = try string()
        case UInt8(ascii: "t"): _ = try literal("true", .bool)
        case UInt8(ascii: "f"): _ = try literal("false", .bool)
        case UInt8(ascii: "n"): _ = try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): _ = try number()
        default: throw error(expected: "a JSON value")
        }
    }

    private func isPropertiesKey(_ key: JSONTape.Entry) -> Bool {
        let word: StaticString = "properties"
        return !key.flag && key.end - key.start == word.utf8CodeUnitCount
            && memcmp(bytes.baseAddress! + key.start, word.utf8Start, word.utf8CodeUnitCount) == 0
    }

    /// Records a container without its children and moves past it, matching brackets and
    /// skipping strings without checking them further.
    private mutating func skipContainer(into tape: inout [JSONTape.Entry]) throws {
        skipWhitespace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: "{") || bytes[position] == UInt8(ascii: "[") else {
            // Not a container: parse it normally (the header reader reports the wrong type).
            return try value(into: &tape, depth: 1)
        }
        let kind: NodeKind = bytes[position] == UInt8(ascii: "{") ? .object : .array
        tape.append(JSONTape.Entry(kind: kind, flag: false, count: 0, start: position, end: tape.count + 1))
        try skipBrackets()
    }

    /// Moves past the array or object at `position`, matching brackets and skipping strings
    /// without checking them further (the decoder parses, and checks, them later). A byte no
    /// JSON text can hold there (a control byte in a string; outside strings, anything but
    /// whitespace, brackets, separators and the letters of numbers and literals) fails at once:
    /// a file that turns to garbage after a valid start is not scanned to its end.
    mutating func skipBrackets() throws {
        var depth = 0
        let count = bytes.count
        repeat {
            guard position < count else { throw error(expected: "the end of the properties") }
            switch bytes[position] {
            case UInt8(ascii: "\""):
                position += 1
                while true {
                    while position + 8 <= count,
                        !wordNeedsAttention(UnsafeRawPointer(bytes.baseAddress! + position).loadUnaligned(as: UInt64.self))
                    {
                        position += 8
                    }
                    guard position < count else { break }
                    let byte = bytes[position]
                    if byte == UInt8(ascii: "\"") { break }
                    if byte < 0x20 { throw error(expected: "a control character to be escaped") }
                    position += byte == UInt8(ascii: "\\") ? 2 : 1
                }
                position += 1
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                position += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                position += 1
            case 0x20, 0x0A, 0x0D, 0x09, UInt8(ascii: ","), UInt8(ascii: ":"), UInt8(ascii: "-"), UInt8(ascii: "+"),
                UInt8(ascii: "."), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "e"), UInt8(ascii: "E"),
                UInt8(ascii: "t"), UInt8(ascii: "r"), UInt8(ascii: "u"), UInt8(ascii: "f"), UInt8(ascii: "a"),
                UInt8(ascii: "l"), UInt8(ascii: "s"), UInt8(ascii: "n"):
                position += 1
            default:
                throw error(expected: "a JSON value")
            }
        } while depth > 0
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
            // ASCII that needs no attention, eight bytes at a time: no byte below 0x20 or from
            // 0x80 up, no quote, no backslash.
            while position + 8 <= count {
                let word = UnsafeRawPointer(bytes.baseAddress! + position).loadUnaligned(as: UInt64.self)
                if wordNeedsAttention(word) { break }
                position += 8
            }
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

/// Whether an 8-byte word of string text holds a byte below 0x20, a byte from 0x80 up, a quote
/// or a backslash (each test flags a zero byte after the XOR, SWAR style).
@inline(__always) func wordNeedsAttention(_ word: UInt64) -> Bool {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highs: UInt64 = 0x8080_8080_8080_8080
    let quote = word ^ (ones &* 0x22)
    let backslash = word ^ (ones &* 0x5C)
    let found =
        (word &- ones &* 0x20) | (quote &- ones) & ~quote | (backslash &- ones) & ~backslash | word
    return found & highs != 0
}

@inline(__always) func hexValue(_ byte: UInt8) -> UInt32? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte &- UInt8(ascii: "0"))
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(byte &- UInt8(ascii: "a") &+ 10)
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(byte &- UInt8(ascii: "A") &+ 10)
    default: return nil
    }
}
