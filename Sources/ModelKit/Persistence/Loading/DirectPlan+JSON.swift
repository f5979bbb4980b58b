import Foundation

// Filling a new model's properties straight from JSON text, without a tape.
//
// The writer gives every model's properties one compact form: `{"key":value,…}` with the keys in
// the order `encode(to:)` writes them (the order a synthesized `init(from:)` reads them, which
// is the plan's), dates as `{"__type":"Date","iso":"…"}` and pointers as in
// `CompactJSON.pointer`. Reading that form needs no tokenizing: each key is matched by its
// bytes and each value read as the kind the plan expects. At the first byte that is anything
// else (whitespace, another key order, an escape, a number of another kind, an error), the fill
// stops and says so, and the caller reads the properties the general way, which also reports
// errors; what was filled so far is overwritten there.

extension DirectPlan {
    /// Fills the properties at `base` (a new model's, holding its defaults) from the properties
    /// object at byte `start`; returns the offset after the object, or `nil` when the text is not
    /// in the writer's compact form.
    func fillJSON(_ base: UnsafeMutableRawPointer, bytes: UnsafeBufferPointer<UInt8>, at start: Int, loader: GraphLoader)
        -> Int?
    {
        var reader = CompactJSON(bytes: bytes, position: start)
        guard reader.take(UInt8(ascii: "{")) else { return nil }
        let end = jsonKeys.withUnsafeBytes { keys in
            plainFields.withUnsafeBufferPointer { fields in
                fill(base, fields, keys, &reader, loader)
            }
        }
        guard end, reader.take(UInt8(ascii: "}")) else { return nil }
        return reader.position
    }

    /// The loop of ``fillJSON(_:bytes:at:loader:)``, over the fields' plain form.
    @inline(__always)
    private func fill(
        _ base: UnsafeMutableRawPointer, _ fields: UnsafeBufferPointer<PlainField>, _ keys: UnsafeRawBufferPointer,
        _ reader: inout CompactJSON, _ loader: GraphLoader
    ) -> Bool {
        for index in fields.indices {
            let field = fields[index]
            let key = UnsafeRawBufferPointer(rebasing: keys[field.keyStart..<(field.keyStart + field.keyCount)])
            guard index == 0 || reader.take(UInt8(ascii: ",")), reader.match(key) else { return false }
            let place = base + field.offset
            switch field.tag {
            case .string:
                guard let text = reader.string() else { return false }
                place.assumingMemoryBound(to: String.self).pointee = text
            case .int:
                guard let number = reader.integer() else { return false }
                place.assumingMemoryBound(to: Int.self).pointee = number
            case .double:
                guard let number = reader.double() else { return false }
                place.assumingMemoryBound(to: Double.self).pointee = number
            case .date:
                guard let date = reader.date(cache: &loader.dateCache) else { return false }
                place.assumingMemoryBound(to: Date.self).pointee = date
            case .strings:
                guard let strings = reader.strings() else { return false }
                place.assumingMemoryBound(to: [String].self).pointee = strings
            case .reference:
                guard let reference = references[index], reference.assignJSON(from: &reader, loader: loader, to: place)
                else { return false }
            }
        }
        return true
    }
}

/// A reader of the writer's compact JSON forms at a byte position. Every method either reads
/// what it expects and moves past it, or returns `nil`/`false` (the position is then of no use).
struct CompactJSON {
    let bytes: UnsafeBufferPointer<UInt8>
    var position: Int

    @inline(__always) mutating func take(_ byte: UInt8) -> Bool {
        guard position < bytes.count, bytes[position] == byte else { return false }
        position += 1
        return true
    }

    @inline(__always) mutating func match(_ text: UnsafeRawBufferPointer) -> Bool {
        guard position + text.count <= bytes.count,
            text.isEmpty || bytesEqual(bytes.baseAddress! + position, text.baseAddress!, count: text.count)
        else { return false }
        position += text.count
        return true
    }

    @inline(__always) mutating func match(_ text: StaticString) -> Bool {
        match(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// The bytes of a string without escapes or control characters, and whether all are ASCII.
    private mutating func rawString() -> (text: UnsafeBufferPointer<UInt8>, ascii: Bool)? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = position
        var ascii = true
        let count = bytes.count
        while true {
            while position + 8 <= count,
                !wordNeedsAttention(UnsafeRawPointer(bytes.baseAddress! + position).loadUnaligned(as: UInt64.self))
            {
                position += 8
            }
            guard position < count else { return nil }
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let text = UnsafeBufferPointer(rebasing: bytes[start..<position])
                position += 1
                return (text, ascii)
            }
            guard byte >= 0x20, byte != UInt8(ascii: "\\") else { return nil }
            if byte >= 0x80 { ascii = false }
            position += 1
        }
    }

    /// A string without escapes; non-ASCII text must be valid UTF-8.
    mutating func string() -> String? {
        guard let (text, ascii) = rawString() else { return nil }
        return ascii ? String(decoding: text, as: UTF8.self) : String(validating: text, as: UTF8.self)
    }

    /// The digits of a number, and whether they are an integer (no fraction, no exponent).
    private mutating func numberToken() -> (digits: UnsafeBufferPointer<UInt8>, integer: Bool)? {
        let start = position
        var integer = true
        while position < bytes.count {
            let byte = bytes[position]
            if byte &- UInt8(ascii: "0") < 10 || byte == UInt8(ascii: "-") {
                position += 1
            } else if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
                || byte == UInt8(ascii: "+")
            {
                integer = false
                position += 1
            } else {
                break
            }
        }
        guard position > start else { return nil }
        return (UnsafeBufferPointer(rebasing: bytes[start..<position]), integer)
    }

    /// An integer that fits in `Int`, in the plain form the writer uses (`-` and digits, no
    /// leading zeros).
    private static func integer(_ digits: UnsafeBufferPointer<UInt8>) -> Int? {
        let negative = digits[0] == UInt8(ascii: "-")
        let body = UnsafeBufferPointer(rebasing: digits[(negative ? 1 : 0)...])
        guard !body.isEmpty, body.count == 1 || body[0] != UInt8(ascii: "0") else { return nil }
        var magnitude: UInt64 = 0
        for byte in body {
            let digit = byte &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt64(digit))
            guard !o1, !o2 else { return nil }
            magnitude = sum
        }
        if negative { return magnitude <= UInt64(Int.max) + 1 ? Int(truncatingIfNeeded: 0 &- magnitude) : nil }
        return magnitude <= UInt64(Int.max) ? Int(magnitude) : nil
    }

    mutating func integer() -> Int? {
        guard let (digits, integer) = numberToken(), integer else { return nil }
        return Self.integer(digits)
    }

    mutating func double() -> Double? {
        guard let (digits, integer) = numberToken() else { return nil }
        if integer, let number = Self.integer(digits) { return Double(number) }
        // Double's parser takes more than JSON's grammar does ("1.", "+1"): check it first.
        guard Self.isJSONNumber(digits), let value = Double(String(decoding: digits, as: UTF8.self)), value.isFinite
        else { return nil }
        return value
    }

    /// Whether `digits` is a number by JSON's grammar: `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`.
    private static func isJSONNumber(_ digits: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        func isDigit(_ at: Int) -> Bool { at < digits.count && digits[at] &- UInt8(ascii: "0") < 10 }
        func skipDigits() -> Bool {
            guard isDigit(index) else { return false }
            while isDigit(index) { index += 1 }
            return true
        }
        if index < digits.count, digits[index] == UInt8(ascii: "-") { index += 1 }
        if index < digits.count, digits[index] == UInt8(ascii: "0") {
            index += 1
        } else if !skipDigits() {
            return false
        }
        if index < digits.count, digits[index] == UInt8(ascii: ".") {
            index += 1
            guard skipDigits() else { return false }
        }
        if index < digits.count, digits[index] == UInt8(ascii: "e") || digits[index] == UInt8(ascii: "E") {
            index += 1
            if index < digits.count, digits[index] == UInt8(ascii: "+") || digits[index] == UInt8(ascii: "-") { index += 1 }
            guard skipDigits() else { return false }
        }
        return index == digits.count
    }

    /// A `{"__type":"Date","iso":"…"}` date whose text the fast ISO parser reads.
    mutating func date(cache: inout ISODateCache) -> Date? {
        guard match(#"{"__type":"Date","iso":"#), let (text, _) = rawString(), take(UInt8(ascii: "}")) else { return nil }
        return cache.parse(text)
    }

    mutating func strings() -> [String]? {
        guard take(UInt8(ascii: "[")) else { return nil }
        var strings: [String] = []
        if take(UInt8(ascii: "]")) { return strings }
        repeat {
            guard let text = string() else { return nil }
            // Room for a few at once: growing from one element allocates at one, two and four.
            if strings.isEmpty { strings.reserveCapacity(4) }
            strings.append(text)
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "]")) ? strings : nil
    }

    /// The target id of a pointer to `model` in the writer's form:
    /// `{"__type":"ModelPointer","model":"<model>","modelId":"<id>"}`, or with
    /// `,"objectId":null` before the brace as earlier versions wrote it.
    mutating func pointer(model: UnsafeRawBufferPointer) -> ModelID? {
        guard match(#"{"__type":"ModelPointer","model":""#), match(model), match(#"","modelId":""#),
            position + 36 <= bytes.count,
            let id = ModelID.parse(UnsafeBufferPointer(rebasing: bytes[position..<(position + 36)]))
        else { return nil }
        position += 36
        guard match(#""}"#) || match(#"","objectId":null}"#) else { return nil }
        return id
    }
}

extension DirectModelRef {
    func assignJSON(from reader: inout CompactJSON, loader: GraphLoader, to field: UnsafeMutableRawPointer) -> Bool {
        let slot = field.assumingMemoryBound(to: ModelRef<Target>.self)
        if reader.match("null") {
            slot.pointee = ModelRef()
            return true
        }
        guard let id = loader.withCompactName(of: Target.self, { reader.pointer(model: $0) }),
            let target = loader.resolvedTarget(id, as: Target.self)
        else { return false }
        _ = target
        slot.pointee = ModelRef<Target>(id: id)
        return true
    }
}

extension DirectModelArray {
    func assignJSON(from reader: inout CompactJSON, loader: GraphLoader, to field: UnsafeMutableRawPointer) -> Bool {
        guard reader.take(UInt8(ascii: "[")) else { return false }
        var references: [ModelRef<Element>] = []
        if !reader.take(UInt8(ascii: "]")) {
            repeat {
                guard let id = loader.withCompactName(of: Element.self, { reader.pointer(model: $0) }),
                    let target = loader.resolvedTarget(id, as: Element.self)
                else { return false }
                _ = target
                references.append(ModelRef<Element>(id: id))
            } while reader.take(UInt8(ascii: ","))
            guard reader.take(UInt8(ascii: "]")) else { return false }
        }
        var array = ModelArray<Element>()
        array.references = references
        field.assumingMemoryBound(to: ModelArray<Element>.self).pointee = array
        return true
    }
}
