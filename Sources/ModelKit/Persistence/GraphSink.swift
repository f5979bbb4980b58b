import Foundation

/// Where the streaming writer sends a document: a JSON text writer or a binary property-list
/// writer, both appending to an ``OutputBuffer``.
///
/// The calls describe the document in order, like a SAX writer: `beginObject()`, then `key(_:)`
/// and one value per member, `endObject()`. A writer turns each call into bytes right away, so no
/// tree of the document is ever built.
protocol GraphSink: AnyObject {
    var buffer: OutputBuffer { get }

    func beginObject()
    func endObject()
    func beginArray()
    func endArray()
    /// The key of the next member of the innermost object.
    func key(_ key: String)

    func null()
    func bool(_ value: Bool)
    func int(_ value: Int64)
    func uint(_ value: UInt64)
    /// A double, including NaN and infinities (JSON writes those as `__type` objects).
    func double(_ value: Double)
    func string(_ value: String)
    /// A string likely to repeat, such as a model name or a `__type` tag (a property list
    /// writes it once and refers to it).
    func sharedValue(_ value: String)
    func date(_ value: Date)
    func data(_ value: Data)
    /// A model id as its 36-character text.
    func modelId(_ value: ModelID)

    /// Marks the current state, so that a value started after it can be abandoned.
    func checkpoint() -> Int
    /// Abandons everything written after `checkpoint` (which was taken inside the current model,
    /// so nothing since has been flushed).
    func rollback(to checkpoint: Int)
    /// Whether dates, data and non-finite numbers are written as `__type` objects.
    var usesJSONForms: Bool { get }

    /// Ends the document (the property-list writer appends its offset table and trailer).
    func finish() throws
}

extension ModelID {
    /// Writes the 36-character uppercase text form into `target`, which has room for it.
    @inline(__always) func writeText(to target: UnsafeMutablePointer<UInt8>) {
        let hex: StaticString = "0123456789ABCDEF"
        let digits = hex.utf8Start
        var position = 0
        for digit in 0..<32 {
            if digit == 8 || digit == 12 || digit == 16 || digit == 20 {
                target[position] = UInt8(ascii: "-")
                position += 1
            }
            let word = digit < 16 ? high : low
            let shift = UInt64(60 - 4 * (digit & 15))
            target[position] = digits[Int((word >> shift) & 0xF)]
            position += 1
        }
    }
}

/// Writes the decimal digits of `value` to `buffer`.
@inline(__always) func appendDecimal(_ value: UInt64, negative: Bool, to buffer: OutputBuffer) {
    buffer.reserve(21)
    if negative { buffer.appendUnchecked(UInt8(ascii: "-")) }
    if value < 10 {
        buffer.appendUnchecked(UInt8(ascii: "0") + UInt8(value))
        return
    }
    var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
    withUnsafeMutableBytes(of: &digits) { scratch in
        var rest = value
        var index = 24
        while rest > 0 {
            index -= 1
            scratch[index] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
        buffer.append(UnsafeRawBufferPointer(rebasing: scratch[index..<24]))
    }
}
