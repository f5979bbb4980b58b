import Foundation

/// Writes a document as compact UTF-8 JSON text, in the same forms as ``ModelValue/jsonData(options:)``
/// (`__type` objects for dates, data and non-finite numbers), straight into an ``OutputBuffer``.
final class JSONSink: GraphSink {
    // The stored properties are `@exclusivity(unchecked)`: they are touched for every value
    // written or read, one instance is used by one thread, and the dynamic checks cost more than
    // the work they guard.
    /// Whether the next member or element needs a comma before it. No stack is needed: opening
    /// a container clears it and closing one sets it.
    @exclusivity(unchecked) private var needsComma = false
    /// Reused for the ISO text of dates.
    @exclusivity(unchecked) private var scratch: [UInt8] = []

    let buffer: OutputBuffer

    init(buffer: OutputBuffer) {
        self.buffer = buffer
        scratch.reserveCapacity(48)
    }

    @inline(__always) private func separate() {
        if needsComma { buffer.append(UInt8(ascii: ",")) }
    }

    func beginObject() {
        separate()
        buffer.append(UInt8(ascii: "{"))
        needsComma = false
    }

    func endObject() {
        buffer.append(UInt8(ascii: "}"))
        needsComma = true
    }

    func beginArray() {
        separate()
        buffer.append(UInt8(ascii: "["))
        needsComma = false
    }

    func endArray() {
        buffer.append(UInt8(ascii: "]"))
        needsComma = true
    }

    func key(_ key: String) {
        separate()
        writeString(key)
        buffer.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// A key known to need no escaping.
    @inline(__always) private func plainKey(_ key: StaticString) {
        separate()
        buffer.append(UInt8(ascii: "\""))
        buffer.append(key)
        buffer.append(StaticString("\":"))
        needsComma = false
    }

    func null() {
        separate()
        buffer.append("null")
        needsComma = true
    }

    func bool(_ value: Bool) {
        separate()
        buffer.append(value ? "true" : "false")
        needsComma = true
    }

    func int(_ value: Int64) {
        separate()
        appendDecimal(value.magnitude, negative: value < 0, to: buffer)
        needsComma = true
    }

    func uint(_ value: UInt64) {
        separate()
        appendDecimal(value, negative: false, to: buffer)
        needsComma = true
    }

    func double(_ value: Double) {
        guard value.isFinite else {
            beginObject()
            plainKey("__type")
            string("Double")
            plainKey("value")
            string(value.isNaN ? "nan" : (value < 0 ? "-inf" : "inf"))
            endObject()
            return
        }
        separate()
        // The shortest text that reads back as the same Double (as the tree writer does).
        var text = value.description
        text.withUTF8 { buffer.append(UnsafeRawBufferPointer($0)) }
        needsComma = true
    }

    func string(_ value: String) {
        separate()
        writeString(value)
        needsComma = true
    }

    func sharedValue(_ value: String) {
        string(value)
    }

    func date(_ value: Date) {
        if appendFastDate(value) { return }
        scratch.removeAll(keepingCapacity: true)
        guard ISODate.append(value, to: &scratch) else {
            // Far outside any calendar: the exact seconds, as ModelValue.jsonDate does.
            beginObject()
            plainKey("__type")
            string("Date")
            plainKey("referenceSeconds")
            double(value.timeIntervalSinceReferenceDate)
            endObject()
            return
        }
        separate()
        buffer.append(#"{"__type":"Date","iso":""#)
        buffer.append(scratch)
        buffer.append(#""}"#)
        needsComma = true
    }

    /// The whole seconds of the last date written and its `YYYY-MM-DDTHH:MM:SS` text: a model's
    /// dates are often in the same second.
    @exclusivity(unchecked) private var lastWholeSeconds: Int64 = -1
    @exclusivity(unchecked) private var lastPrefix: [UInt8] = Array(repeating: 0, count: 19)

    /// Writes a date between 2001 and 5138 the way ``ISODate/append(_:to:)`` does (whole seconds
    /// from the calendar, then the fractional digits of the shortest decimal that reads back as the
    /// same seconds), without building strings. Returns `false` for other dates.
    private func appendFastDate(_ value: Date) -> Bool {
        let seconds = value.timeIntervalSinceReferenceDate
        guard seconds >= 0, seconds < 1e11 else { return false }
        let whole = Int64(seconds)
        // The fewest fractional digits k such that n / 10^k reads back as `seconds`: for a fixed
        // whole part that is the shortest round-trip decimal. Dividing by an exact power of ten
        // rounds once, as parsing the decimal text does. Past 10^7 (or 2^53) the general path
        // (Double.description) decides.
        var digits = 0
        var fraction: Int64 = 0
        if Double(whole) != seconds {
            var scale = 1.0
            var found = false
            for count in 1...7 {
                scale *= 10
                let scaled = (seconds * scale).rounded()
                guard scaled < 9.0e15 else { break }
                if scaled / scale == seconds {
                    let total = Int64(scaled)
                    fraction = total - whole * Int64(scale)
                    digits = count
                    found = fraction > 0 && fraction < Int64(scale)
                    break
                }
            }
            guard found else { return false }
        }
        if whole != lastWholeSeconds {
            let since1970 = whole + ISODate.referenceOffset
            let days = since1970 / 86_400
            let secondOfDay = since1970 - days * 86_400
            let (year, month, day) = ISODate.civil(fromDays: days)
            guard year <= 9999 else { return false }
            lastPrefix.withUnsafeMutableBufferPointer { prefix in
                func two(_ value: Int, at offset: Int) {
                    prefix[offset] = UInt8(ascii: "0") &+ UInt8(value / 10)
                    prefix[offset + 1] = UInt8(ascii: "0") &+ UInt8(value % 10)
                }
                two(Int(year / 100), at: 0)
                two(Int(year % 100), at: 2)
                prefix[4] = UInt8(ascii: "-")
                two(month, at: 5)
                prefix[7] = UInt8(ascii: "-")
                two(day, at: 8)
                prefix[10] = UInt8(ascii: "T")
                two(Int(secondOfDay / 3600), at: 11)
                prefix[13] = UInt8(ascii: ":")
                two(Int(secondOfDay / 60 % 60), at: 14)
                prefix[16] = UInt8(ascii: ":")
                two(Int(secondOfDay % 60), at: 17)
            }
            lastWholeSeconds = whole
        }
        separate()
        buffer.append(#"{"__type":"Date","iso":""#)
        buffer.append(lastPrefix)
        if digits > 0 {
            // The k digits, with leading zeros, without trailing ones (k is minimal, so the last
            // digit is not a zero).
            buffer.reserve(8)
            buffer.appendUnchecked(UInt8(ascii: "."))
            var divisor: Int64 = 1
            for _ in 1..<digits { divisor *= 10 }
            var rest = fraction
            while divisor > 0 {
                buffer.appendUnchecked(UInt8(ascii: "0") &+ UInt8(rest / divisor))
                rest %= divisor
                divisor /= 10
            }
        }
        buffer.append(#"Z"}"#)
        needsComma = true
        return true
    }

    func data(_ value: Data) {
        beginObject()
        plainKey("__type")
        string("Bytes")
        plainKey("base64")
        string(value.base64EncodedString())
        endObject()
    }

    func modelId(_ value: ModelID) {
        separate()
        writeModelId(value)
        needsComma = true
    }

    private func writeModelId(_ value: ModelID) {
        buffer.reserve(38)
        buffer.appendUnchecked(UInt8(ascii: "\""))
        value.writeText(to: buffer.base + buffer.count)
        buffer.advance(by: 36)
        buffer.appendUnchecked(UInt8(ascii: "\""))
    }

    func beginModel(name: String, id: ModelID, objectId: String?, createdAt: Date, updatedAt: Date) {
        separate()
        buffer.append(#"{"model":"#)
        writeString(name)
        buffer.append(#","modelId":"#)
        writeModelId(id)
        if let objectId {
            buffer.append(#","objectId":"#)
            writeString(objectId)
        }
        buffer.append(#","createdAt":"#)
        needsComma = false
        date(createdAt)
        buffer.append(#","updatedAt":"#)
        needsComma = false
        date(updatedAt)
        buffer.append(#","properties":"#)
        needsComma = false
    }

    func pointer(name: String, id: ModelID, objectId: String?) {
        separate()
        buffer.append(#"{"__type":"ModelPointer","model":"#)
        writeString(name)
        buffer.append(#","modelId":"#)
        writeModelId(id)
        if let objectId {
            buffer.append(#","objectId":"#)
            writeString(objectId)
        }
        buffer.append(UInt8(ascii: "}"))
        needsComma = true
    }

    func finish() throws {}

    var usesJSONForms: Bool { true }

    /// Puts a comma before the next member or element: for a writer that goes on with members
    /// of an object whose members it wrote before a rollback (a record's header).
    func continueAfterMember() { needsComma = true }

    func checkpoint() -> Int { buffer.position }

    func rollback(to checkpoint: Int) {
        buffer.truncate(to: checkpoint)
        needsComma = false
    }

    /// Appends `text` quoted and escaped. Strings that need no escaping (almost all of them) are
    /// copied in one go after one scan.
    private func writeString(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            let count = utf8.count
            guard let start = utf8.baseAddress else {
                buffer.append(StaticString("\"\""))
                return
            }
            var index = needsEscapeFrom(start, count)
            buffer.reserve(count + 2)
            buffer.appendUnchecked(UInt8(ascii: "\""))
            if index == count {
                buffer.append(UnsafeRawBufferPointer(utf8))
            } else {
                var runStart = 0
                while index < count {
                    let byte = start[index]
                    if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                        buffer.append(UnsafeRawBufferPointer(start: start + runStart, count: index - runStart))
                        escape(byte)
                        runStart = index + 1
                    }
                    index += 1
                }
                buffer.append(UnsafeRawBufferPointer(start: start + runStart, count: count - runStart))
            }
            buffer.append(UInt8(ascii: "\""))
        }
    }

    /// The index of the first byte of `bytes` that needs escaping, or `count`. Checks eight bytes
    /// at a time (for a byte below 0x20, a quote or a backslash in a 64-bit word at once).
    @inline(__always) private func needsEscapeFrom(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        var index = 0
        while index + 8 <= count {
            let word = UnsafeRawPointer(bytes + index).loadUnaligned(as: UInt64.self)
            let control = (word &- ones &* 0x20) & ~word & highs
            let quote = (word ^ (ones &* 0x22)) &- ones & ~(word ^ (ones &* 0x22)) & highs
            let backslash = (word ^ (ones &* 0x5C)) &- ones & ~(word ^ (ones &* 0x5C)) & highs
            if control | quote | backslash != 0 { break }
            index += 8
        }
        while index < count {
            let byte = bytes[index]
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return index }
            index += 1
        }
        return count
    }

    private func escape(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): buffer.append(#"\""#)
        case UInt8(ascii: "\\"): buffer.append(#"\\"#)
        case UInt8(ascii: "\n"): buffer.append(#"\n"#)
        case UInt8(ascii: "\r"): buffer.append(#"\r"#)
        case UInt8(ascii: "\t"): buffer.append(#"\t"#)
        default:
            let hex: StaticString = "0123456789abcdef"
            buffer.append(#"\u00"#)
            buffer.append(hex.utf8Start[Int(byte >> 4)])
            buffer.append(hex.utf8Start[Int(byte & 0xF)])
        }
    }
}
