import Foundation

/// Where the streaming writer sends a document: a JSON text writer or a binary property-list
/// writer, both appending to an ``OutputBuffer``.
///
/// The calls describe the document in order, like a SAX writer: `beginObject()`, then `key(_:)`
/// and one value per member, `endObject()`. A writer turns each call into bytes right away, so no
/// tree of the document is ever built.
///
/// Used as an existential (`any GraphSink`), not as a generic constraint: the encoder's
/// containers are generic over coding keys, and making them generic over the sink too would make
/// the runtime look up generic metadata for every value written. A call costs one indirect jump,
/// and a sink that lacks a member does not compile.
protocol GraphSink: AnyObject {
    var buffer: OutputBuffer { get }

    /// Told how many models the document will hold, before the first is written; a writer with
    /// a table per object can reserve room for it.
    func expect(models count: Int)

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

    /// Starts a model dictionary: its header members (`model`, `modelId`, `objectId` unless it
    /// is nil, `createdAt`, `updatedAt`), then the `properties` key, whose value comes next.
    /// Readers take a missing object id, or null, as nil. Each sink writes the constant parts in
    /// one go.
    func beginModel(name: String, id: ModelID, objectId: String?, createdAt: Date, updatedAt: Date)

    /// A `ModelPointer` dictionary: `__type`, `model`, `modelId`, and `objectId` unless it is nil.
    func pointer(name: String, id: ModelID, objectId: String?)

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

extension GraphSink {
    func expect(models count: Int) {}

    /// ``beginModel(name:id:objectId:createdAt:updatedAt:)`` member by member, for sinks that
    /// build trees (the byte writers write the constant parts in one go).
    func beginModelMemberByMember(name: String, id: ModelID, objectId: String?, createdAt: Date, updatedAt: Date) {
        beginObject()
        key("model")
        string(name)
        key("modelId")
        modelId(id)
        if let objectId {
            key("objectId")
            string(objectId)
        }
        key("createdAt")
        date(createdAt)
        key("updatedAt")
        date(updatedAt)
        key("properties")
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
