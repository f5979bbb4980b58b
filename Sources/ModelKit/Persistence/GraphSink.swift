import Foundation

/// Where the streaming writer sends a document: a JSON text writer or a binary property-list
/// writer, both appending to an ``OutputBuffer``.
///
/// The calls describe the document in order, like a SAX writer: `beginObject()`, then `key(_:)`
/// and one value per member, `endObject()`. A writer turns each call into bytes right away, so no
/// tree of the document is ever built.
///
/// A class rather than a protocol: the encoder's containers are generic over coding keys, and
/// making them generic over the sink too would make the runtime look up generic metadata for
/// every value written. A subclass call costs one indirect jump.
class GraphSink {
    let buffer: OutputBuffer

    init(buffer: OutputBuffer) {
        self.buffer = buffer
    }

    /// Told how many models the document will hold, before the first is written; a writer with
    /// a table per object can reserve room for it.
    func expect(models count: Int) {}

    func beginObject() { abstract() }
    func endObject() { abstract() }
    func beginArray() { abstract() }
    func endArray() { abstract() }
    /// The key of the next member of the innermost object.
    func key(_ key: String) { abstract() }

    func null() { abstract() }
    func bool(_ value: Bool) { abstract() }
    func int(_ value: Int64) { abstract() }
    func uint(_ value: UInt64) { abstract() }
    /// A double, including NaN and infinities (JSON writes those as `__type` objects).
    func double(_ value: Double) { abstract() }
    func string(_ value: String) { abstract() }
    /// A string likely to repeat, such as a model name or a `__type` tag (a property list
    /// writes it once and refers to it).
    func sharedValue(_ value: String) { abstract() }
    func date(_ value: Date) { abstract() }
    func data(_ value: Data) { abstract() }
    /// A model id as its 36-character text.
    func modelId(_ value: ModelID) { abstract() }

    /// Starts a model dictionary: its header members (`model`, `modelId`, `objectId` unless it
    /// is nil, `createdAt`, `updatedAt`), then the `properties` key, whose value comes next.
    /// Readers take a missing object id, or null, as nil. Each sink writes the constant parts in
    /// one go.
    func beginModel(name: String, id: ModelID, objectId: String?, createdAt: Date, updatedAt: Date) { abstract() }

    /// A `ModelPointer` dictionary: `__type`, `model`, `modelId`, and `objectId` unless it is nil.
    func pointer(name: String, id: ModelID, objectId: String?) { abstract() }

    /// Marks the current state, so that a value started after it can be abandoned.
    func checkpoint() -> Int { abstract() }
    /// Abandons everything written after `checkpoint` (which was taken inside the current model,
    /// so nothing since has been flushed).
    func rollback(to checkpoint: Int) { abstract() }
    /// Whether dates, data and non-finite numbers are written as `__type` objects.
    var usesJSONForms: Bool { abstract() }

    /// Ends the document (the property-list writer appends its offset table and trailer).
    func finish() throws { abstract() }

    private func abstract() -> Never {
        preconditionFailure("\(type(of: self)) must override this GraphSink method")
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
