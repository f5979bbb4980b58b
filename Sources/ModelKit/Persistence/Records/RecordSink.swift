import Foundation

// Writing records (see RecordSource.swift for reading them): every model a save reaches, each
// as one flat record of JSON text, written straight from the models by the streaming writer that
// files use. A record holds `modelId`, `createdAt` and `updatedAt`, then the model's properties
// as members of its own; a pointer names its target by model name and object id. These are
// package entry points, not public API.

/// The records of the models reachable from a root, as one JSON text: the root first, then every
/// model it reaches once, as ``Model/serialize(as:)`` lists them.
package struct RecordTexts {
    /// One model's record.
    package struct Entry {
        package let model: any Model
        package let modelName: String
        /// The model's object id, or the one made for it here when it had none
        /// (``isNewObjectId``): pointers to it name that one.
        package let objectId: String
        package let isNewObjectId: Bool
        /// The record's JSON object in ``RecordTexts/text``.
        package let range: Range<Int>
        /// The entries its pointers name, in the order written (repeats included).
        package let targets: [Int]
        /// Why the record cannot be written, when it cannot: a property with a reserved name,
        /// or properties that do not encode as an object (the first reason found).
        package let refusal: Refusal?
    }

    /// Why a record cannot be written, in the words of an error: what was expected and found.
    package struct Refusal {
        package let expected: String
        package let found: String
    }

    /// UTF-8 JSON text: the records, separated by commas, inside brackets.
    package let text: Data
    package let entries: [Entry]
}

extension Model {
    /// Writes this model and every model it reaches as records.
    ///
    /// - Parameters:
    ///   - reserved: Names a property may not have (the header's and the backend's own fields).
    ///   - newObjectId: Makes an object id for a model that has none; each such model gets one,
    ///     used by its record and by every pointer to it.
    /// - Throws: ``SerializationError``, as ``serialize(as:)``. A record that cannot be written
    ///   (a reserved name) is not an error here: its entry's ``RecordTexts/Entry/refusal`` says
    ///   why, for the caller to decide (a save refuses only the records it writes).
    /// - Complexity: O(*n*) in the size of the records.
    package func recordTexts(reserved: Set<String>, newObjectId: () -> String) throws -> RecordTexts {
        try RecordTexts.make(reserved: reserved, newObjectId: newObjectId) { try $0.writeModels(root: self) }
    }
}

extension RecordTexts {
    /// Writes `models` of `context` as records, and no other: a reference to another model of
    /// the context is written as its pointer and not followed (what an offline sync pushes: the
    /// changed models, whose references name records the server has or gets in the same push).
    ///
    /// - Throws: ``SerializationError``, as ``Model/recordTexts(reserved:newObjectId:)``, and
    ///   ``SerializationError/Code/foreignReference`` for a reference to a model of another
    ///   context.
    /// - Complexity: O(*n*) in the size of the records.
    package static func of(
        _ models: [any Model], in context: ModelContext, reserved: Set<String>, newObjectId: () -> String
    ) throws -> RecordTexts {
        try make(reserved: reserved, newObjectId: newObjectId) { writer in
            writer.boundary = context
            try writer.writeModels(roots: models)
        }
    }

    fileprivate static func make(
        reserved: Set<String>, newObjectId: () -> String, write: (GraphStreamWriter) throws -> Void
    ) throws -> RecordTexts {
        let buffer = OutputBuffer(descriptor: nil)
        return try withoutActuallyEscaping(newObjectId) { newObjectId in
            let sink = RecordSink(buffer: buffer, reserved: reserved, newObjectId: newObjectId)
            let writer = GraphStreamWriter(sink: sink)
            try write(writer)
            let models = writer.queuedModels
            let entries = sink.records.indices.map { index in
                let record = sink.records[index]
                return RecordTexts.Entry(
                    model: models[index], modelName: record.name, objectId: record.objectId, isNewObjectId: record.isNew,
                    range: record.start..<record.end,
                    // Records are written in the walk's order: a model's position is its record's.
                    targets: record.targets.compactMap { writer.position(of: $0) },
                    refusal: record.refusal)
            }
            return RecordTexts(text: buffer.takeData(), entries: entries)
        }
    }
}

/// A ``GraphSink`` that writes records: it hands most calls to a ``JSONSink``, and writes each
/// model's header and its properties as the members of one object, and pointers by object id.
private final class RecordSink: GraphSink {
    struct Record {
        let name: String
        let objectId: String
        let isNew: Bool
        let start: Int
        var end = 0
        var targets: [ModelID] = []
        var refusal: RecordTexts.Refusal?
    }

    let json: JSONSink
    var buffer: OutputBuffer { json.buffer }
    var usesJSONForms: Bool { true }
    let reserved: Set<String>
    /// The lengths of the reserved names: a key of another length is not looked up.
    let reservedLengths: Set<Int>
    let newObjectId: () -> String
    private(set) var records: [Record] = []
    /// Object ids made for models that had none, also for those reached only by pointers so far.
    private var madeObjectIds: [ModelID: String] = [:]
    /// Whether a model's record is being written (the records are inside an array).
    private var inModel = false
    /// Containers open inside the current model's properties; the properties' own object is not
    /// written (its members join the header's), so it is level 1, and level 0 is the model's.
    private var level = 0

    init(buffer: OutputBuffer, reserved: Set<String>, newObjectId: @escaping () -> String) {
        json = JSONSink(buffer: buffer)
        self.reserved = reserved
        reservedLengths = Set(reserved.map(\.utf8.count))
        self.newObjectId = newObjectId
    }

    private func objectId(of id: ModelID, given: String?) -> (String, isNew: Bool) {
        if let given { return (given, false) }
        if let made = madeObjectIds[id] { return (made, true) }
        let made = newObjectId()
        madeObjectIds[id] = made
        return (made, true)
    }

    func beginModel(name: String, id: ModelID, objectId given: String?, createdAt: Date, updatedAt: Date) {
        json.beginObject()
        let (objectId, isNew) = objectId(of: id, given: given)
        records.append(Record(name: name, objectId: objectId, isNew: isNew, start: buffer.position - 1))
        json.key("modelId")
        json.modelId(id)
        json.key("createdAt")
        json.date(createdAt)
        json.key("updatedAt")
        json.date(updatedAt)
        inModel = true
        level = 0
    }

    func beginObject() {
        guard inModel else { return json.beginObject() }
        level += 1
        // The properties' object: its members follow the header's.
        if level == 1 { return }
        json.beginObject()
    }

    func endObject() {
        guard inModel else { return json.endObject() }
        if level == 1 {
            level = 0
            return
        }
        if level == 0 {
            // The model's own object.
            json.endObject()
            records[records.count - 1].end = buffer.position
            inModel = false
            return
        }
        level -= 1
        json.endObject()
    }

    func beginArray() {
        guard inModel else { return json.beginArray() }
        if level == 0 { refuse("properties that encode as an object (a record's fields)", found: "an array") }
        level += 1
        json.beginArray()
    }

    func endArray() {
        guard inModel else { return json.endArray() }
        level -= 1
        json.endArray()
    }

    func key(_ key: String) {
        if level == 1, reservedLengths.contains(key.utf8.count), reserved.contains(key) {
            refuse("property names the server does not reserve", found: "a property '\(key)'")
        }
        json.key(key)
    }

    func pointer(name: String, id: ModelID, objectId given: String?) {
        checkInside()
        let (objectId, _) = objectId(of: id, given: given)
        json.beginObject()
        json.key("__type")
        json.string("ModelPointer")
        json.key("model")
        json.string(name)
        json.key("objectId")
        json.string(objectId)
        json.endObject()
        records[records.count - 1].targets.append(id)
    }

    private func refuse(_ expected: String, found: String) {
        guard records[records.count - 1].refusal == nil else { return }
        records[records.count - 1].refusal = RecordTexts.Refusal(expected: expected, found: found)
    }

    func checkpoint() -> Int { json.checkpoint() }

    func rollback(to checkpoint: Int) {
        // Taken at the start of a model's properties: what it wrote since is dropped, pointers
        // and refusals included (they are found again as the properties are written again),
        // and the header's members still need a comma after them.
        json.rollback(to: checkpoint)
        json.continueAfterMember()
        records[records.count - 1].targets.removeAll()
        records[records.count - 1].refusal = nil
        level = 0
    }

    /// Refuses a value written as the whole of a model's properties: a record's fields are the
    /// members of an object.
    @inline(__always) private func checkInside() {
        if inModel, level == 0 { refuse("properties that encode as an object (a record's fields)", found: "a single value") }
    }

    func null() {
        checkInside()
        json.null()
    }
    func bool(_ value: Bool) {
        checkInside()
        json.bool(value)
    }
    func int(_ value: Int64) {
        checkInside()
        json.int(value)
    }
    func uint(_ value: UInt64) {
        checkInside()
        json.uint(value)
    }
    func double(_ value: Double) {
        checkInside()
        json.double(value)
    }
    func string(_ value: String) {
        checkInside()
        json.string(value)
    }
    func sharedValue(_ value: String) {
        checkInside()
        json.sharedValue(value)
    }
    func date(_ value: Date) {
        checkInside()
        json.date(value)
    }
    func data(_ value: Data) {
        checkInside()
        json.data(value)
    }
    func modelId(_ value: ModelID) {
        checkInside()
        json.modelId(value)
    }
    func finish() throws { try json.finish() }
}
