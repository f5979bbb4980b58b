import Foundation

// Records: models stored one per record by a backend (ModelKitServices), read by the loader that
// reads files. A record is flat: the model's properties next to header fields (`modelId`,
// `createdAt`, `updatedAt`) and the server's own (`id`, `last_modified`, …), and its pointers name
// their target by model name and object id (`{"__type": "ModelPointer", "model", "objectId"}`),
// not by ModelKit's model id. These are package entry points, not public API.

/// JSON text parsed once into a tape, kept for reading: a server's answer, whose records are
/// read where they lie (their fields, their pointers) and loaded as models without a
/// ``ModelValue`` tree in between.
// Unchecked: `storage` and `tape` hold unsafe pointers, which the compiler cannot prove safe to
// share; both are written only in `init` (the bytes, then the tape parsed from them) and only
// read afterwards, and the bytes live until `deinit`, so readers on any thread see the same
// immutable text.
package final class JSONRecordText: @unchecked Sendable {
    private let storage: UnsafeMutableBufferPointer<UInt8>
    let tape: JSONTape

    /// Parses `data`, which must be one JSON value (a UTF-8 byte order mark and whitespace
    /// around it are allowed).
    ///
    /// - Throws: ``SerializationError`` (``SerializationError/Code/malformedInput`` with the byte
    ///   offset, or ``SerializationError/Code/nestingTooDeep``), as ``ModelValue/init(json:)``.
    ///
    /// With `keptKeys`, the objects nested `depth` deep (0: the top-level value) keep only the
    /// members with those keys; the others are checked as carefully but not recorded. A reader
    /// that needs a few members of many large objects (a batch answer's echoed records) then
    /// spends little on the rest.
    package init(_ data: Data, keptKeys: (depth: Int, keys: [String])? = nil) throws {
        storage = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(data.count, 1))
        _ = storage.initialize(from: data)
        let bytes = UnsafeBufferPointer(rebasing: storage[0..<data.count])
        tape = JSONTape(bytes: bytes)
        // Every property is set: if parsing throws, deinit frees the storage.
        let start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        let end = try tape.parse(
            at: start, keptKeys: keptKeys.map { $0.keys.map { Array($0.utf8) } }, keptKeysDepth: keptKeys?.depth ?? 0)
        var scanner = JSONScanner(bytes: bytes, position: end)
        scanner.skipWhitespace()
        guard scanner.position == bytes.count else { throw scanner.error(expected: "the end of the JSON text") }
    }

    deinit {
        storage.deallocate()
    }

    var document: JSONDocument { JSONDocument(tape: tape) }

    /// The top-level value's node.
    package var root: Int { 0 }

    package func isObject(_ node: Int) -> Bool { tape.entries[node].kind == .object }

    /// The value of member `key` of the object `node` (the first, if repeated); nil when `node`
    /// is not an object or has no such member.
    package func member(_ node: Int, _ key: String) -> Int? {
        guard isObject(node) else { return nil }
        return try? document.member(of: node, named: key)
    }

    /// The elements of the array `node`; nil when it is not an array.
    package func elements(_ node: Int) -> [Int]? {
        guard tape.entries[node].kind == .array else { return nil }
        return try? document.elements(of: node)
    }

    /// The string `node` holds; nil when it is not a string.
    package func string(_ node: Int) -> String? {
        guard tape.entries[node].kind == .string else { return nil }
        return try? document.string(node)
    }

    /// The value at `node`, as a tree.
    package func value(_ node: Int) throws -> ModelValue {
        try ModelValue(node: node, in: document)
    }

    /// Calls `body` with each pointer (an object whose `__type` is `"ModelPointer"`) in the
    /// members of the object `record`, at any depth: in the members named in `fields` when
    /// given, and not in those named in `skipping`. A pointer's own members are not searched.
    package func forEachPointer(
        in record: Int, fields: Set<String>? = nil, skipping: Set<String> = [], _ body: (_ pointer: Int) throws -> Void
    ) rethrows {
        guard isObject(record) else { return }
        let document = self.document
        var cursor = record + 1
        for _ in 0..<Int(tape.entries[record].count) {
            let key = cursor
            let value = key + 1
            cursor = next(after: value)
            guard fields != nil || !skipping.isEmpty else {
                try pointers(in: value, document, body)
                continue
            }
            // The member's name is read only if it holds a pointer: most hold none.
            var included: Bool?
            try pointers(in: value, document) { pointer in
                if included == nil {
                    let name = string(key)
                    included = name.map { (fields?.contains($0) ?? true) && !skipping.contains($0) } ?? false
                }
                if included == true { try body(pointer) }
            }
        }
    }

    /// The node after `node` and its descendants.
    private func next(after node: Int) -> Int {
        let entry = tape.entries[node]
        return entry.kind == .object || entry.kind == .array ? entry.end : node + 1
    }

    private func pointers(in node: Int, _ document: JSONDocument, _ body: (Int) throws -> Void) rethrows {
        let entry = tape.entries[node]
        switch entry.kind {
        case .array:
            var cursor = node + 1
            for _ in 0..<Int(entry.count) {
                let element = cursor
                cursor = next(after: element)
                try pointers(in: element, document, body)
            }
        case .object:
            if let tag = try? document.member(of: node, named: "__type"), tape.entries[tag].kind == .string,
                (try? document.stringEquals(tag, "ModelPointer" as StaticString)) == true
            {
                return try body(node)
            }
            var cursor = node + 1
            for _ in 0..<Int(entry.count) {
                let value = cursor + 1
                cursor = next(after: value)
                try pointers(in: value, document, body)
            }
        default:
            break
        }
    }
}

/// One record to load as a model: where it is, and the identity it gets.
package struct LoadableRecord {
    package let text: JSONRecordText
    /// The record's object in `text`.
    package let node: Int
    package let modelName: String
    package let modelId: ModelID
    package let objectId: String

    package init(text: JSONRecordText, node: Int, modelName: String, modelId: ModelID, objectId: String) {
        self.text = text
        self.node = node
        self.modelName = modelName
        self.modelId = modelId
        self.objectId = objectId
    }
}

/// The creation date of a model loaded from a record without one (1970-01-01): the same on every
/// device. The time of the load would differ between devices, and each would write its own back
/// with its next update, so the date could no longer tell the record's model from another made
/// later under the same object id (what a sync's deletes rely on).
package let unknownCreationDate = Date(timeIntervalSince1970: 0)

extension Model {
    /// Loads `records` into `context`, all or nothing, as ``instance(from:in:options:isolation:)`` loads a
    /// tree of model dictionaries, and returns the model of the first, which must be a `Self`.
    ///
    /// Each record's fields but those named in `hiding` are its model's properties (the header
    /// fields `createdAt` and `updatedAt` give its dates; a record without `createdAt`, made by
    /// another client, gets `unknownCreationDate`); a pointer's target is
    /// `pointerIds(model name, object id)`: a model of the records, of the context, or else a
    /// placeholder (with that object id).
    ///
    /// - Throws: ``SerializationError`` with the index of the record that failed; the context is
    ///   then unchanged.
    package static func load(
        records: [LoadableRecord], in context: ModelContext, hiding: Set<String>,
        pointerIds: @escaping (String, String) -> ModelID
    ) throws -> Self {
        // A record's extra fields are the server's or other clients' business, not a file's
        // forgotten rename: they are not reported.
        var options = DeserializationOptions(danglingPointers: .placeholder, unknownKeys: .ignore)
        // One thread: the pointer table belongs to the caller's.
        options.parallelism.workers = 1
        let source = RecordSource(records, hiding: hiding.map { Array($0.utf8) })
        let loader = GraphLoader(context: context, options: options, source: source)
        loader.pointerIds = pointerIds
        do {
            return try loader.load(root: Self.self)
        } catch let error as SerializationError {
            throw error.withoutByteOffset()
        }
    }
}

/// The records of ``Model/load(records:in:pointerIds:)``: each record's object is both its
/// header (the dates) and its properties.
final class RecordSource: ModelSource {
    let records: [LoadableRecord]
    /// The UTF-8 of the fields that are not properties.
    let hidden: [[UInt8]]
    @exclusivity(unchecked) private var infos = ModelTypeInfoCache()

    init(_ records: [LoadableRecord], hiding hidden: [[UInt8]]) {
        self.records = records
        self.hidden = hidden
    }

    func copyForWorker() -> any ModelSource { RecordSource(records, hiding: hidden) }

    /// The properties of record `handle`: its object without the hidden fields.
    private func properties(_ handle: Int) -> (RecordDocument, Int) {
        let record = records[handle]
        return (RecordDocument(base: record.text.document, record: record.node, hidden: hidden), record.node)
    }

    func readHeaders(into loader: GraphLoader) throws {
        loader.reserveCapacity(records.count)
        for (index, record) in records.enumerated() {
            let document = record.text.document
            guard document.kind(of: record.node) == .object else {
                throw SerializationError(
                    .typeMismatch, modelIndex: index, expected: "a record object", found: document.describeNode(record.node))
            }
            func date(_ key: String) throws -> Date? {
                guard let node = try document.member(of: record.node, named: key) else { return nil }
                return try loader.headerDate(
                    node, key: key, in: document, record: record.node, index: index, name: record.modelName)
            }
            let header = GraphLoader.Header(
                name: record.modelName, id: record.modelId, objectId: record.objectId,
                createdAt: try date("createdAt") ?? unknownCreationDate, updatedAt: try date("updatedAt"),
                properties: index)
            try loader.add(header)
        }
    }

    func decodeProperties<M: Model>(of type: M.Type, handle: Int, loader: GraphLoader) throws -> M.Properties {
        let (document, node) = properties(handle)
        return try TreeDecoder.decodeProperties(M.self, at: node, in: document, info: infos.info(M.self), loader: loader)
    }

    func fillProperties(_ plan: DirectPlan, at base: UnsafeMutableRawPointer, handle: Int, loader: GraphLoader) throws
        -> Bool
    {
        let (document, node) = properties(handle)
        return try plan.fill(base, from: node, in: document, loader: loader)
    }
}

/// A record's text as its model's properties: the record's object (`record`) without its
/// `hidden` members (the header's fields and the server's), every other node as it is.
struct RecordDocument: TreeDocument {
    let base: JSONDocument
    let record: Int
    let hidden: [[UInt8]]

    private func isHidden(_ key: Int) -> Bool {
        let entry = base.tape.entries[key]
        guard !entry.flag else {
            guard let text = try? base.string(key) else { return false }
            return hidden.contains { $0.elementsEqual(text.utf8) }
        }
        let count = entry.end - entry.start
        return hidden.contains { name in
            name.count == count
                && name.withUnsafeBytes { memcmp(base.bytes.baseAddress! + entry.start, $0.baseAddress!, count) == 0 }
        }
    }

    func kind(of node: Int) -> NodeKind { base.kind(of: node) }
    func byteOffset(of node: Int) -> Int { base.byteOffset(of: node) }

    func count(of node: Int) throws -> Int {
        guard node == record else { return try base.count(of: node) }
        var count = 0
        try base.forEach(in: node) { key, _ in
            if !isHidden(key) { count += 1 }
            return true
        }
        return count
    }

    func startCursor(of node: Int) -> Int { base.startCursor(of: node) }

    func next(in node: Int, cursor: inout Int) throws -> (key: Int, value: Int) {
        guard node == record else { return try base.next(in: node, cursor: &cursor) }
        // Callers ask for at most `count(of:)` members: a visible one is always ahead.
        while true {
            let member = try base.next(in: node, cursor: &cursor)
            if !isHidden(member.key) { return member }
        }
    }

    func member(of object: Int, named key: String) throws -> Int? {
        if object == record, hidden.contains(where: { $0.elementsEqual(key.utf8) }) { return nil }
        return try base.member(of: object, named: key)
    }

    func forEach(in node: Int, _ body: (_ key: Int, _ value: Int) throws -> Bool) throws {
        guard node == record else { return try base.forEach(in: node, body) }
        try base.forEach(in: node) { key, value in isHidden(key) ? true : try body(key, value) }
    }

    func bool(_ node: Int) -> Bool { base.bool(node) }
    func number(_ node: Int) throws -> NodeNumber { try base.number(node) }
    func string(_ node: Int) throws -> String { try base.string(node) }
    func stringEquals(_ node: Int, _ text: StaticString) throws -> Bool { try base.stringEquals(node, text) }
    func stringEquals(_ node: Int, _ text: String) throws -> Bool { try base.stringEquals(node, text) }
    func modelId(_ node: Int) throws -> ModelID? { try base.modelId(node) }
    func date(_ node: Int) throws -> Double { try base.date(node) }
    func data(_ node: Int) throws -> Data { try base.data(node) }
    func isoDate(_ node: Int) throws -> Date? { try base.isoDate(node) }
    static var nodesAreShared: Bool { false }
    func compactPointerId(_ node: Int, model: UnsafeRawBufferPointer) -> ModelID? { base.compactPointerId(node, model: model) }
}
