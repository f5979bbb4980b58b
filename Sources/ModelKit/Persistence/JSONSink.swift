import Foundation

/// Writes a document as compact UTF-8 JSON text, in the same forms as ``ModelValue/jsonData(options:)``
/// (`__type` objects for dates, data and non-finite numbers), straight into an ``OutputBuffer``.
final class JSONSink: GraphSink {
    let buffer: OutputBuffer
    /// Whether the next member or element needs a comma before it. No stack is needed: opening
    /// a container clears it and closing one sets it.
    private var needsComma = false
    /// Reused for the ISO text of dates.
    private var scratch: [UInt8] = []

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
        buffer.reserve(38)
        buffer.appendUnchecked(UInt8(ascii: "\""))
        value.writeText(to: buffer.base + buffer.count)
        buffer.advance(by: 36)
        buffer.appendUnchecked(UInt8(ascii: "\""))
        needsComma = true
    }

    func finish() throws {}

    var usesJSONForms: Bool { true }

    func checkpoint() -> Int { buffer.position }

    func rollback(to checkpoint: Int) {
        buffer.truncate(to: checkpoint)
        needsComma = false
    }

    /// Appends `text` quoted and escaped. Runs that need no escaping (almost everything) are
    /// copied in one go.
    private func writeString(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            buffer.reserve(utf8.count + 2)
            buffer.appendUnchecked(UInt8(ascii: "\""))
            var runStart = 0
            var index = 0
            let count = utf8.count
            while index < count {
                let byte = utf8[index]
                if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                    buffer.append(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(utf8)[runStart..<index]))
                    escape(byte)
                    runStart = index + 1
                }
                index += 1
            }
            buffer.append(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(utf8)[runStart..<count]))
            buffer.append(UInt8(ascii: "\""))
        }
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
