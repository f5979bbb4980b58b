import Foundation

/// Models from JSON text: the envelope is walked as a stream, each model is parsed into the
/// reused tape on its own (so memory does not grow with the file), and properties are parsed
/// again from their byte offset when they are decoded.
final class JSONSource: ModelSource {
    let bytes: UnsafeBufferPointer<UInt8>
    private let tape: JSONTape
    @exclusivity(unchecked) private var infos = ModelTypeInfoCache()

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        tape = JSONTape(bytes: bytes)
    }

    func copyForWorker() -> any ModelSource { JSONSource(bytes: bytes) }

    /// The most entries this source's tape has held (see ``JSONTape/highWater``).
    var tapeHighWater: Int { tape.highWater }

    func readHeaders(into loader: GraphLoader) throws {
        // A model ModelKit writes takes a few hundred bytes at least. The id table, whose slots
        // are all written when it is made, is sized for one model per 512 bytes: it grows at most
        // a few times, and takes at most about a tenth of the file's size however large its
        // models are (growing it at a million models costs more than a table a little too
        // large). The arrays, whose unused capacity costs nothing, are sized for one per 256.
        // The blog's models take about 400 bytes each.
        loader.considerWorkers(forAbout: bytes.count / 400)
        loader.reserveOnceModelsAreRead(arrays: bytes.count / 256, ids: bytes.count / 512)
        var scanner = JSONScanner(bytes: bytes, position: 0)
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { scanner.position = 3 }
        scanner.skipWhitespace()
        let start = scanner.position
        guard start < bytes.count else { throw scanner.error(expected: "a JSON object or array") }
        switch bytes[start] {
        case UInt8(ascii: "["):
            // A bare array of models, as serialize() returns and ModelKit for Objective-C wrote.
            try models(&scanner, loader)
        case UInt8(ascii: "{"):
            if try !envelope(&scanner, loader) {
                // A single bare model dictionary.
                scanner.position = try tape.parse(at: start, skippingProperties: true, keptKeys: Self.headerKeys)
                try model(loader)
            }
        default:
            throw scanner.error(expected: "a JSON object or array")
        }
        scanner.skipWhitespace()
        guard scanner.position == bytes.count else { throw scanner.error(expected: "the end of the JSON text") }
    }

    /// Walks the members of the top-level object. Returns `false` when it is not an envelope
    /// (it has no `models` key).
    private func envelope(_ scanner: inout JSONScanner, _ loader: GraphLoader) throws -> Bool {
        let start = scanner.position
        scanner.position += 1
        var sawModels = false
        var format: String?
        var formatOffset = start
        var version: NodeNumber?
        var versionText = "no \"version\" key"
        var versionOffset = start
        var seen: Set<String> = []
        var tracking: TrackingMember?
        func once(_ key: String, at offset: Int) throws {
            guard seen.insert(key).inserted else {
                throw SerializationError(
                    .malformedInput, path: key, byteOffset: offset, expected: "\"\(key)\" once in the envelope",
                    found: "it again")
            }
        }
        if !scanner.take(UInt8(ascii: "}")) {
            repeat {
                scanner.skipWhitespace()
                guard scanner.position < bytes.count, bytes[scanner.position] == UInt8(ascii: "\"") else {
                    throw scanner.error(expected: "a key string")
                }
                // The key goes on the tape alone, to be read like any string.
                let keyOffset = scanner.position
                tape.entries.removeAll(keepingCapacity: true)
                tape.entries.append(try scanner.string())
                let document = JSONDocument(tape: tape)
                try scanner.expect(UInt8(ascii: ":"), "':' after the key")
                scanner.skipWhitespace()
                if try document.stringEquals(0, "models") {
                    try once("models", at: keyOffset)
                    guard scanner.position < bytes.count, bytes[scanner.position] == UInt8(ascii: "[") else {
                        throw scanner.error(expected: "an array of models")
                    }
                    sawModels = true
                    try models(&scanner, loader)
                } else if try document.stringEquals(0, "format") {
                    try once("format", at: keyOffset)
                    formatOffset = scanner.position
                    scanner.position = try tape.parse(at: scanner.position)
                    format = tape.entries[0].kind == .string ? try document.string(0) : nil
                } else if try document.stringEquals(0, "version") {
                    try once("version", at: keyOffset)
                    versionOffset = scanner.position
                    scanner.position = try tape.parse(at: scanner.position)
                    versionText = document.describeNode(0)
                    version = tape.entries[0].kind == .integer ? try document.number(0) : nil
                } else if try document.stringEquals(0, "tracking") {
                    try once("tracking", at: keyOffset)
                    scanner.position = try tape.parse(at: scanner.position)
                    tracking = try TrackingMember.read(0, in: document)
                } else {
                    // Checked as carefully as the rest, but not recorded: its size costs no memory.
                    try scanner.checkValue(depth: 0)
                }
            } while scanner.take(UInt8(ascii: ","))
            try scanner.expect(UInt8(ascii: "}"), "',' or '}'")
        }
        guard sawModels else { return false }
        loader.tracking = tracking
        guard format == Envelope.formatName else {
            throw SerializationError(
                .invalidValue, path: "format", byteOffset: formatOffset, expected: "\"\(Envelope.formatName)\"",
                found: format.map { "\"\($0)\"" } ?? "no \"format\" string")
        }
        guard case .int(let number)? = version, number >= 1 else {
            throw SerializationError(
                .invalidValue, path: "version", byteOffset: versionOffset, expected: "a format version number",
                found: versionText)
        }
        guard number <= Envelope.version else {
            throw SerializationError(
                .unsupportedVersion, path: "version", byteOffset: versionOffset,
                expected: "format version \(Envelope.version) or earlier (this file needs a newer ModelKit)",
                found: "version \(number)")
        }
        return true
    }

    /// Reads an array of model dictionaries, one at a time.
    private func models(_ scanner: inout JSONScanner, _ loader: GraphLoader) throws {
        scanner.position += 1
        if scanner.take(UInt8(ascii: "]")) { return }
        repeat {
            scanner.skipWhitespace()
            if let end = try canonicalHeader(at: scanner.position, loader) {
                scanner.position = end
            } else {
                scanner.position = try tape.parse(at: scanner.position, skippingProperties: true, keptKeys: Self.headerKeys)
                try model(loader)
            }
        } while scanner.take(UInt8(ascii: ","))
        try scanner.expect(UInt8(ascii: "]"), "',' or ']'")
    }

    /// The keys of a model dictionary that its header reads: members with other keys are
    /// checked, not recorded.
    private static let headerKeys = GraphLoader.headerKeyNames.map { Array($0.utf8) }

    /// The last model name read, and its bytes: names repeat from model to model.
    // Unchecked like the loader's state (see `GraphLoader`): touched for every model.
    @exclusivity(unchecked) private var lastName = ""
    @exclusivity(unchecked) private var lastNameBytes: [UInt8] = []

    /// Reads the header of a model written exactly as ModelKit writes it (the keys in its order,
    /// no whitespace or escapes, ISO dates), straight from the bytes, and returns the offset after
    /// the model. Returns `nil`, having read nothing, for anything else: the general path then
    /// reads the model, and reports what is wrong with it.
    private func canonicalHeader(at start: Int, _ loader: GraphLoader) throws -> Int? {
        var position = start
        let bytes = self.bytes
        func literal(_ text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard bytes.count - position >= count, bytesEqual(bytes.baseAddress! + position, text.utf8Start, count: count) else {
                return false
            }
            position += count
            return true
        }
        /// A string without escapes, control characters or non-ASCII bytes, ending at a quote.
        func plainString() -> UnsafeBufferPointer<UInt8>? {
            let from = position
            while position < bytes.count {
                let byte = bytes[position]
                if byte == UInt8(ascii: "\"") {
                    defer { position += 1 }
                    return UnsafeBufferPointer(rebasing: bytes[from..<position])
                }
                guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { return nil }
                position += 1
            }
            return nil
        }
        func date() -> Date? {
            guard literal(#"{"__type":"Date","iso":""#), let text = plainString(), literal("}") else { return nil }
            return loader.dateCache.parse(text)
        }
        guard literal(#"{"model":""#), let nameBytes = plainString(), literal(#","modelId":""#),
            let idBytes = plainString(), let id = ModelID.parse(idBytes)
        else { return nil }
        // Writers may leave out a null object id.
        var objectId: String?
        if literal(#","objectId":"#), !literal("null") {
            guard literal("\""), let text = plainString() else { return nil }
            objectId = String(decoding: text, as: UTF8.self)
        }
        guard literal(#","createdAt":"#), let createdAt = date(), literal(#","updatedAt":"#), let updatedAt = date(),
            literal(#","properties":"#), position < bytes.count, bytes[position] == UInt8(ascii: "{")
        else { return nil }
        let properties = position
        if !nameBytes.elementsEqual(lastNameBytes) {
            lastName = String(decoding: nameBytes, as: UTF8.self)
            lastNameBytes = Array(nameBytes)
        }
        let header = GraphLoader.Header(
            name: lastName, id: id, objectId: objectId, createdAt: createdAt, updatedAt: updatedAt,
            properties: properties)
        if loader.isStreaming {
            // Staged at once; decoding the properties found where they end. Anything after them
            // but the model's closing brace is for the general loader (the model is added now).
            if try loader.stageAdded(at: loader.add(header)), decodedObject.start == properties {
                position = decodedObject.end
            } else {
                try skipObject(at: &position)
            }
            guard literal("}") else { throw StreamingUnavailable() }
            return position
        }
        try skipObject(at: &position)
        guard literal("}") else { return nil }
        try loader.add(header)
        return position
    }

    private func skipObject(at position: inout Int) throws {
        var skipper = JSONScanner(bytes: bytes, position: position)
        try skipper.skipBrackets()
        position = skipper.position
    }

    /// The byte range of the properties object decoded last.
    @exclusivity(unchecked) private var decodedObject = (start: -1, end: -1)

    /// Reads the header of the model on the tape.
    private func model(_ loader: GraphLoader) throws {
        let tape = self.tape
        let header = try loader.header(in: JSONDocument(tape: tape), node: 0) { tape.entries[$0].start }
        let index = try loader.add(header)
        if loader.isStreaming { _ = try loader.stageAdded(at: index) }
    }

    func decodeProperties<M: Model>(of type: M.Type, handle: Int, loader: GraphLoader) throws -> M.Properties {
        // Only the members the type reads are recorded: one unknown member holding a large array
        // would otherwise take about 15 times its text in entries. A member asked for that the
        // tape left out is found in the text again, and kept for the type's next models.
        let info = infos.info(M.self)
        decodedObject = (handle, try tape.parse(at: handle, keptKeys: info.readKeys, recoveringDropped: true))
        defer { infos.learn(M.self, from: tape) }
        return try TreeDecoder.decodeProperties(M.self, at: 0, in: JSONDocument(tape: tape), info: info, loader: loader)
    }

    func fillProperties(_ plan: DirectPlan, at base: UnsafeMutableRawPointer, handle: Int, loader: GraphLoader) throws
        -> Bool
    {
        // The writer's own compact form is read straight from the text; anything else (and any
        // error) through the tape.
        if let end = plan.fillJSON(base, bytes: tape.bytes, at: handle, loader: loader) {
            decodedObject = (handle, end)
            return true
        }
        // The plan reads only its keys: whatever else the properties hold is checked, not kept.
        decodedObject = (handle, try tape.parse(at: handle, keptKeys: plan.jsonKeyList))
        // Members the tape dropped are unknown keys: the Codable path reports them.
        if tape.droppedMembers > 0, loader.checksUnknownKeys { return false }
        return try plan.fill(base, from: 0, in: JSONDocument(tape: tape), loader: loader)
    }
}

/// Models from a binary property list, read in place.
final class BinaryPlistSource: ModelSource {
    let document: BinaryPlistDocument
    /// What this source's thread decoded, against the limit all threads share.
    private let meter: DecodedSizeMeter
    @exclusivity(unchecked) private var infos = ModelTypeInfoCache()

    init(bytes: UnsafeBufferPointer<UInt8>) throws {
        meter = DecodedSizeMeter(limit: DecodedSizeLimit(inputSize: bytes.count))
        document = try BinaryPlistDocument(bytes: bytes, meter: meter)
    }

    private init(forAnotherThreadOf source: BinaryPlistSource) {
        meter = DecodedSizeMeter(limit: source.meter.limit)
        document = source.document.forAnotherThread(meter: meter)
    }

    func copyForWorker() -> any ModelSource { BinaryPlistSource(forAnotherThreadOf: self) }

    func readHeaders(into loader: GraphLoader) throws {
        // Each model is at least one object: a damaged count reserves no more than that.
        try loader.readTreeHeaders(in: document, top: document.topObject, modelLimit: document.objectCount)
    }

    func decodeProperties<M: Model>(of type: M.Type, handle: Int, loader: GraphLoader) throws -> M.Properties {
        try TreeDecoder.decodeProperties(M.self, at: handle, in: document, info: infos.info(M.self), loader: loader)
    }

    func fillProperties(_ plan: DirectPlan, at base: UnsafeMutableRawPointer, handle: Int, loader: GraphLoader) throws
        -> Bool
    {
        let key = ObjectIdentifier(plan)
        if key != lastPlan {
            if let lastPlan { keyNodes[lastPlan] = lastKeyNodes }
            lastKeyNodes = keyNodes[key] ?? Array(repeating: -1, count: plan.keys.count)
            lastPlan = key
        }
        return try plan.fillPlist(base, from: handle, in: document, loader: loader, keyNodes: &lastKeyNodes)
    }

    /// The key nodes of each plan's fields (see ``DirectPlan/fillPlist(_:from:in:loader:keyNodes:)``),
    /// those of the plan used last apart.
    @exclusivity(unchecked) private var keyNodes: [ObjectIdentifier: [Int]] = [:]
    @exclusivity(unchecked) private var lastPlan: ObjectIdentifier?
    @exclusivity(unchecked) private var lastKeyNodes: [Int] = []
}

/// Models from an XML property list, read with ModelKit's own scanner: the whole text is checked
/// once, headers are recorded as the loader asks for them, and each model's properties are read
/// again from their byte offset into a tape of their own. A member nobody reads is never recorded
/// (see ``XMLPlistTape``).
final class XMLPlistSource: ModelSource {
    let bytes: UnsafeBufferPointer<UInt8>
    /// The envelope and the model headers.
    private let headers: XMLPlistTape
    /// One model's properties at a time.
    private let properties: XMLPlistTape
    @exclusivity(unchecked) private var infos = ModelTypeInfoCache()

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        headers = XMLPlistTape(bytes: bytes)
        properties = XMLPlistTape(bytes: bytes)
    }

    func copyForWorker() -> any ModelSource { XMLPlistSource(bytes: bytes) }

    /// The most entries this source's tapes have held (see ``XMLPlistTape/highWater``).
    var tapeHighWater: Int { headers.highWater + properties.highWater }

    func readHeaders(into loader: GraphLoader) throws {
        let top = try headers.parseDocument()
        let tape = headers
        // A model takes at least `<dict></dict>`: a damaged count cannot reserve more than that.
        try loader.readTreeHeaders(in: XMLPlistDocument(tape: tape), top: top, modelLimit: bytes.count / 13) {
            tape.entries[$0].tagStart
        }
    }

    func decodeProperties<M: Model>(of type: M.Type, handle: Int, loader: GraphLoader) throws -> M.Properties {
        let root = try properties.parse(at: handle)
        return try TreeDecoder.decodeProperties(
            M.self, at: root, in: XMLPlistDocument(tape: properties), info: infos.info(M.self), loader: loader)
    }

    func fillProperties(_ plan: DirectPlan, at base: UnsafeMutableRawPointer, handle: Int, loader: GraphLoader) throws
        -> Bool
    {
        let root = try properties.parse(at: handle)
        return try plan.fill(base, from: root, in: XMLPlistDocument(tape: properties), loader: loader)
    }
}

/// Fails unless `prefix`, the first bytes of a file, can start a document ModelKit reads: a
/// binary property list (`bplist00`), or after an optional byte order mark and whitespace, `{`
/// or `[` (JSON) or `<` (an XML property list). Returns the offset of that first character.
///
/// Run on the first block of a file before the rest is read, and before any reader sizes
/// tables from the input's length: a file of zeros fails at byte 0 at once.
@discardableResult
func checkDocumentStart(_ prefix: UnsafeBufferPointer<UInt8>) throws -> Int {
    if prefix.count >= 6, memcmp(prefix.baseAddress!, "bplist", 6) == 0 {
        guard BinaryPlistDocument.isBinaryPlist(prefix) || prefix.count < 8 else {
            throw SerializationError(
                .unsupportedVersion, byteOffset: 6, expected: "a binary property list of version 00",
                found: "version \"\(String(decoding: prefix[6..<8], as: UTF8.self))\"")
        }
        return 0
    }
    var start = 0
    if prefix.count >= 3, prefix[0] == 0xEF, prefix[1] == 0xBB, prefix[2] == 0xBF { start = 3 }
    while start < prefix.count, [0x20, 0x0A, 0x0D, 0x09].contains(prefix[start]) { start += 1 }
    guard start < prefix.count else { return start }
    switch prefix[start] {
    case UInt8(ascii: "{"), UInt8(ascii: "["), UInt8(ascii: "<"): return start
    case let byte:
        throw SerializationError(
            .malformedInput, byteOffset: start,
            expected: "a JSON object or array, or a property list", found: "byte 0x\(String(byte, radix: 16))")
    }
}

/// Picks the reader for `data` from its first bytes and runs `body` with it while the bytes are
/// valid.
func withModelSource<Result>(for data: Data, _ body: (any ModelSource) throws -> Result) throws -> Result {
    try data.withUnsafeBytes { raw in
        let bytes = raw.bindMemory(to: UInt8.self)
        let start = try checkDocumentStart(bytes)
        switch PersistenceFormat.detected(in: bytes, start: start) {
        case .binaryPropertyList:
            return try body(BinaryPlistSource(bytes: bytes))
        case .xmlPropertyList:
            return try body(XMLPlistSource(bytes: bytes))
        case .json:
            return try body(JSONSource(bytes: bytes))
        }
    }
}

extension PersistenceFormat {
    /// The format of a document whose first character is at `start` (as ``checkDocumentStart(_:)``
    /// returns it): what ``withModelSource(for:_:)`` reads it as.
    static func detected(in bytes: UnsafeBufferPointer<UInt8>, start: Int) -> PersistenceFormat {
        if BinaryPlistDocument.isBinaryPlist(bytes) { return .binaryPropertyList }
        if start < bytes.count, bytes[start] == UInt8(ascii: "<") { return .xmlPropertyList }
        return .json
    }

    /// The format of a document's bytes, as a load reads them.
    static func detected(in data: Data) -> PersistenceFormat {
        data.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            return detected(in: bytes, start: (try? checkDocumentStart(bytes)) ?? 0)
        }
    }
}

/// XML property lists as ModelKit writes them: a binary one converted by Foundation. (Reading
/// XML goes through ``XMLPlistSource``.)
enum XMLPropertyList {
    static func xml(fromBinary data: Data) throws -> Data {
        let object = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        return try PropertyListSerialization.data(fromPropertyList: object, format: .xml, options: 0)
    }
}
