import Foundation

/// A ``TreeDocument`` over a ``JSONTape``: nodes are tape indices.
struct JSONDocument: TreeDocument {
    let tape: JSONTape
    var bytes: UnsafeBufferPointer<UInt8> { tape.bytes }

    @inline(__always) private func entry(_ node: Int) -> JSONTape.Entry {
        tape.entries[node]
    }

    func kind(of node: Int) -> NodeKind { entry(node).kind }

    func byteOffset(of node: Int) -> Int {
        let entry = entry(node)
        return entry.kind == .string ? entry.start - 1 : entry.start
    }

    func count(of node: Int) throws -> Int { Int(entry(node).count) }

    func startCursor(of node: Int) -> Int { node + 1 }

    @inline(__always) private func skip(_ node: Int) -> Int {
        let entry = entry(node)
        return entry.kind == .object || entry.kind == .array ? entry.end : node + 1
    }

    func next(in node: Int, cursor: inout Int) throws -> (key: Int, value: Int) {
        if entry(node).kind == .object {
            let key = cursor
            cursor = skip(key + 1)
            return (key, key + 1)
        }
        let value = cursor
        cursor = skip(value)
        return (value, value)
    }

    static var nodesAreShared: Bool { false }

    func keysLeftOut(of node: Int) throws -> [String] {
        node == 0 ? try tape.droppedKeyNames() : []
    }

    func forEach(in node: Int, _ body: (_ key: Int, _ value: Int) throws -> Bool) throws {
        let container = entry(node)
        var cursor = node + 1
        if container.kind == .object {
            for _ in 0..<Int(container.count) {
                let key = cursor
                cursor = skip(key + 1)
                guard try body(key, key + 1) else { return }
            }
        } else {
            for _ in 0..<Int(container.count) {
                let value = cursor
                cursor = skip(value)
                guard try body(value, value) else { return }
            }
        }
    }

    func member(of object: Int, named key: String) throws -> Int? {
        var key = key
        return try key.withUTF8 { wanted -> Int? in
            // A member the parse dropped (checked, not kept) is read from the text when asked for.
            if tape.mayHaveDropped(wanted, from: object) { return try tape.recoverMember(named: wanted) }
            var cursor = object + 1
            let count = Int(entry(object).count)
            for _ in 0..<count {
                let keyNode = cursor
                let keyEntry = entry(keyNode)
                if keyEntry.flag {
                    if try string(keyNode).utf8.elementsEqual(wanted) { return keyNode + 1 }
                } else if keyEntry.end - keyEntry.start == wanted.count,
                    wanted.isEmpty || memcmp(bytes.baseAddress! + keyEntry.start, wanted.baseAddress!, wanted.count) == 0
                {
                    return keyNode + 1
                }
                cursor = skip(keyNode + 1)
            }
            return nil
        }
    }

    func allMembers(of object: Int) throws -> Int { try tape.allMembers(of: object) }

    func bool(_ node: Int) -> Bool { entry(node).flag }

    func number(_ node: Int) throws -> NodeNumber {
        let entry = entry(node)
        let digits = UnsafeBufferPointer(rebasing: bytes[entry.start..<entry.end])
        if entry.flag {
            // Integers: exact, with overflow into UInt64 and then Double.
            let negative = digits[0] == UInt8(ascii: "-")
            var magnitude: UInt64 = 0
            var overflow = false
            for byte in digits.dropFirst(negative ? 1 : 0) {
                let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times10.addingReportingOverflow(UInt64(byte &- UInt8(ascii: "0")))
                if o1 || o2 {
                    overflow = true
                    break
                }
                magnitude = sum
            }
            if !overflow {
                if !negative { return magnitude <= UInt64(Int64.max) ? .int(Int64(magnitude)) : .uint(magnitude) }
                if magnitude <= UInt64(Int64.max) + 1 { return .int(Int64(truncatingIfNeeded: 0 &- magnitude)) }
            }
        }
        let text = String(decoding: digits, as: UTF8.self)
        guard let value = Double(text) else {
            throw SerializationError(.malformedInput, byteOffset: entry.start, expected: "a number", found: "unreadable digits")
        }
        // Text has no infinity (ModelKit writes `{"__type": "Double", "value": "inf"}`): a number
        // that parses to one is beyond every type's range, not infinite.
        guard value.isFinite else { throw NumberRange.beyondDouble(text, byteOffset: entry.start) }
        return .double(value)
    }

    func string(_ node: Int) throws -> String {
        let entry = entry(node)
        let raw = UnsafeBufferPointer(rebasing: bytes[entry.start..<entry.end])
        guard entry.flag else { return String(decoding: raw, as: UTF8.self) }
        return try unescape(raw, offset: entry.start)
    }

    func stringEquals(_ node: Int, _ text: StaticString) throws -> Bool {
        let entry = entry(node)
        if entry.flag { return try string(node) == text.description }
        return ModelKit.bytes(bytes, from: entry.start, to: entry.end, equal: text)
    }

    func stringEquals(_ node: Int, _ text: String) throws -> Bool {
        let entry = entry(node)
        if entry.flag { return try string(node) == text }
        return ModelKit.bytes(bytes, from: entry.start, to: entry.end, equal: text)
    }

    /// Matches the writer's compact form of a pointer (see `CompactJSON.pointer(model:)`). The
    /// tape already checked the object's syntax.
    func compactPointerId(_ node: Int, model: UnsafeRawBufferPointer) -> ModelID? {
        let entry = entry(node)
        guard entry.kind == .object, entry.count == 3 || entry.count == 4 else { return nil }
        var reader = CompactJSON(bytes: bytes, position: entry.start)
        return reader.pointer(model: model)
    }

    func modelId(_ node: Int) throws -> ModelID? {
        let entry = entry(node)
        if entry.flag { return ModelID(try string(node)) }
        return ModelID.parse(UnsafeBufferPointer(rebasing: bytes[entry.start..<entry.end]))
    }

    func date(_ node: Int) throws -> Double {
        throw SerializationError(.typeMismatch, byteOffset: byteOffset(of: node), expected: "a date", found: describeNode(node))
    }

    func data(_ node: Int) throws -> Data {
        throw SerializationError(.typeMismatch, byteOffset: byteOffset(of: node), expected: "data", found: describeNode(node))
    }

    func isoDate(_ node: Int) throws -> Date? {
        let entry = entry(node)
        if !entry.flag, let date = FastISODate.parse(UnsafeBufferPointer(rebasing: bytes[entry.start..<entry.end])) {
            return date
        }
        return ISODate.date(from: try string(node))
    }

    /// Decodes the escapes of a string (validated by the scanner except for surrogate pairing).
    private func unescape(_ raw: UnsafeBufferPointer<UInt8>, offset: Int) throws -> String {
        var result: [UInt8] = []
        result.reserveCapacity(raw.count)
        var index = 0
        func hex4(_ at: Int) -> UInt32 {
            (0..<4).reduce(0) { $0 << 4 | (hexValue(raw[at + $1]) ?? 0) }
        }
        func invalid(_ at: Int) -> SerializationError {
            SerializationError(
                .malformedInput, byteOffset: offset + at, expected: "a valid \\u escape (paired surrogates)",
                found: "an unpaired surrogate")
        }
        while index < raw.count {
            let byte = raw[index]
            guard byte == UInt8(ascii: "\\") else {
                result.append(byte)
                index += 1
                continue
            }
            let escape = raw[index + 1]
            index += 2
            switch escape {
            case UInt8(ascii: "b"): result.append(0x08)
            case UInt8(ascii: "f"): result.append(0x0C)
            case UInt8(ascii: "n"): result.append(0x0A)
            case UInt8(ascii: "r"): result.append(0x0D)
            case UInt8(ascii: "t"): result.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = hex4(index)
                let start = index - 2
                index += 4
                if (0xD800...0xDBFF).contains(scalar) {
                    guard index + 6 <= raw.count, raw[index] == UInt8(ascii: "\\"), raw[index + 1] == UInt8(ascii: "u") else {
                        throw invalid(start)
                    }
                    let low = hex4(index + 2)
                    guard (0xDC00...0xDFFF).contains(low) else { throw invalid(start) }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    index += 6
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw invalid(start)
                }
                result.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
            default: result.append(escape)
            }
        }
        return String(decoding: result, as: UTF8.self)
    }
}

/// The date and time (to the second) of the ISO text parsed last. Models made together carry
/// creation and update times within the same second, so a file of them repeats the same
/// `YYYY-MM-DDTHH:MM:SS` model after model: only the fractions need parsing.
struct ISODateCache {
    /// The first 19 bytes of the text parsed last (as 8 + 8 + 4 bytes from offsets 0, 8, 15).
    private var prefix: (UInt64, UInt64, UInt32) = (0, 0, 0)
    /// Its seconds since 2001, or -1 while there is none.
    private var whole: Int64 = -1

    /// ``FastISODate/parse(_:)``, reusing the seconds of the text parsed last when `text` starts
    /// with the same date and time.
    mutating func parse(_ text: UnsafeBufferPointer<UInt8>) -> Date? {
        guard text.count >= 20 else { return nil }
        let raw = UnsafeRawPointer(text.baseAddress!)
        let head = (raw.loadUnaligned(as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        let tail = raw.loadUnaligned(fromByteOffset: 15, as: UInt32.self)
        if whole >= 0, head == (prefix.0, prefix.1), tail == prefix.2 {
            return FastISODate.date(whole: whole, text: text)
        }
        guard let seconds = FastISODate.wholeSeconds(text) else { return nil }
        (prefix, whole) = ((head.0, head.1, tail), seconds)
        return FastISODate.date(whole: seconds, text: text)
    }
}

/// Parses the ISO text ModelKit writes (`2012-10-29T06:44:01.25Z`) straight from bytes. Anything
/// else returns `nil` and goes to ``ISODate/date(from:)``, which reads every ISO form.
enum FastISODate {
    static func parse(_ text: UnsafeBufferPointer<UInt8>) -> Date? {
        guard let whole = wholeSeconds(text) else { return nil }
        return date(whole: whole, text: text)
    }

    /// The seconds since 2001 of the date and time in the first 19 bytes, when the text has the
    /// form ModelKit writes and is not before 2001.
    static func wholeSeconds(_ text: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard text.count >= 20, text[4] == UInt8(ascii: "-"), text[7] == UInt8(ascii: "-"), text[10] == UInt8(ascii: "T"),
            text[13] == UInt8(ascii: ":"), text[16] == UInt8(ascii: ":"), text[text.count - 1] == UInt8(ascii: "Z")
        else { return nil }
        func number(_ from: Int, _ count: Int) -> Int64? {
            var value: Int64 = 0
            for index in from..<(from + count) {
                let digit = text[index] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int64(digit)
            }
            return value
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
            let minute = number(14, 2), let second = number(17, 2), (1...12).contains(month), (1...28).contains(day),
            hour < 24, minute < 60, second < 60
        else { return nil }
        let whole =
            ISODate.days(fromCivil: year, Int(month), Int(day)) * 86_400 + hour * 3600 + minute * 60 + second
            - ISODate.referenceOffset
        // Dates before 2001 need the ten's complement of the fraction: the general parser does it.
        guard whole >= 0 else { return nil }
        return whole
    }

    /// The date of the text whose first 19 bytes hold `whole` seconds since 2001, with its
    /// fraction, if the rest of the text has the form ModelKit writes.
    static func date(whole: Int64, text: UnsafeBufferPointer<UInt8>) -> Date? {
        guard text[text.count - 1] == UInt8(ascii: "Z") else { return nil }
        if text.count == 20 { return Date(timeIntervalSinceReferenceDate: Double(whole)) }
        guard text[19] == UInt8(ascii: "."), text.count > 21, text.count <= 28 else { return nil }
        // At most 7 fractional digits: whole * 10^k + fraction stays below 2^53, so the division
        // by the exact power of ten rounds once, exactly as parsing the decimal text would.
        var scaled = whole
        var scale: Int64 = 1
        for index in 20..<(text.count - 1) {
            let digit = text[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            scaled = scaled * 10 + Int64(digit)
            scale *= 10
        }
        guard scaled < 1 << 53 else { return nil }
        let seconds = Double(scaled) / Double(scale)
        return Date(timeIntervalSinceReferenceDate: seconds)
    }
}
