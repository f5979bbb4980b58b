import Foundation

// Headers: a model dictionary's name, id, object id and dates, and the envelope's format and
// version, read the same way from any document.

extension GraphLoader {
    /// Reads the header of the model dictionary at `node`.
    func header<D: TreeDocument>(in document: D, node: Int, properties handle: (Int) -> Int) throws -> Header {
        let index = headers.count
        guard document.kind(of: node) == .object else {
            throw SerializationError(
                .typeMismatch, modelIndex: index, byteOffset: document.byteOffset(of: node), expected: "a model dictionary",
                found: document.describeNode(node))
        }
        func fail(_ code: SerializationError.Code, _ key: String, _ expected: String, _ name: String?, _ found: Int?)
            -> SerializationError
        {
            SerializationError(
                code, modelIndex: index, modelName: name, path: key, byteOffset: document.byteOffset(of: found ?? node),
                expected: expected, found: found.map { document.describeNode($0) } ?? "no \"\(key)\" key")
        }
        // One pass over the members (the header keys, and the properties' key).
        var nameNode: Int?
        var idNode: Int?
        var objectNode: Int?
        var createdNode: Int?
        var updatedNode: Int?
        var propertiesNode: Int?
        var seen = 0
        try document.forEach(in: node) { key, value in
            // Property-list writers share the key strings: a key node seen before is known.
            var which = D.nodesAreShared ? headerKeys.firstIndex(of: key) ?? -1 : -1
            if which < 0 {
                guard document.kind(of: key) == .string else { return true }
                for (position, name) in Self.headerKeyNames.enumerated() where try document.stringEquals(key, name) {
                    which = position
                    if D.nodesAreShared { headerKeys[position] = key }
                    break
                }
            }
            if which >= 0 {
                // A repeated header key is an error: which one counts would be a guess (the
                // envelope's keys are checked the same way; in properties the first one counts).
                guard seen & (1 << which) == 0 else {
                    throw SerializationError(
                        .malformedInput, modelIndex: index, path: Self.headerKeyNames[which],
                        byteOffset: document.byteOffset(of: key),
                        expected: "\"\(Self.headerKeyNames[which])\" once in a model dictionary", found: "it again")
                }
                seen |= 1 << which
            }
            switch which {
            case 0: propertiesNode = value
            case 1: idNode = value
            case 2: nameNode = value
            case 3: objectNode = value
            case 4: createdNode = value
            case 5: updatedNode = value
            default: break
            }
            return true
        }
        guard let nameNode else {
            throw fail(.valueNotFound, "model", "the model name as a string", nil, nil)
        }
        let name: String
        if D.nodesAreShared, nameNode == headerName.node {
            name = headerName.name
        } else {
            guard document.kind(of: nameNode) == .string else {
                throw fail(.typeMismatch, "model", "the model name as a string", nil, nameNode)
            }
            name = try document.string(nameNode)
            if D.nodesAreShared { headerName = (nameNode, name) }
        }
        guard let idNode else {
            throw fail(.valueNotFound, "modelId", "the model id as a string", name, nil)
        }
        guard document.kind(of: idNode) == .string else {
            throw fail(.typeMismatch, "modelId", "the model id as a string", name, idNode)
        }
        guard let id = try document.modelId(idNode) else {
            throw fail(.invalidModelId, "modelId", "a model id (8-4-4-4-12 hexadecimal digits)", name, idNode)
        }
        var objectId: String?
        if let objectNode, !(D.nodesAreShared && objectNode == headerNull), try !document.isNull(objectNode) {
            guard document.kind(of: objectNode) == .string else {
                throw fail(.typeMismatch, "objectId", "the object id as a string or null", name, objectNode)
            }
            objectId = try document.string(objectNode)
        } else if D.nodesAreShared, let objectNode {
            headerNull = objectNode
        }
        func date(_ dateNode: Int?, _ key: String) throws -> Date? {
            guard let dateNode else { return nil }
            return try headerDate(dateNode, key: key, in: document, record: node, index: index, name: name)
        }
        let createdAt = try date(createdNode, "createdAt")
        let updatedAt = try date(updatedNode, "updatedAt")
        // No `properties` key: every property takes its default value, as for a key missing
        // inside them (ModelKit for Objective-C left the key out of models without properties).
        if let propertiesNode, document.kind(of: propertiesNode) != .object {
            throw fail(.typeMismatch, "properties", "an object of properties", name, propertiesNode)
        }
        return Header(
            name: name, id: id, objectId: objectId, createdAt: createdAt, updatedAt: updatedAt,
            properties: propertiesNode.map(handle) ?? Header.noProperties)
    }

    /// The date at `node`, the value of header key `key` of the model dictionary (or record)
    /// `record`, the model at `index`; nil for null.
    func headerDate<D: TreeDocument>(_ node: Int, key: String, in document: D, record: Int, index: Int, name: String) throws
        -> Date?
    {
        // The forms ModelKit writes, read directly; anything else (or null) as a property.
        if let date = try? DirectPlan.date(node, document) { return date }
        guard try !document.isNull(node) else { return nil }
        let dates = TreeDecoder(document: document, node: record, defaults: nil, loader: self, codingPath: [], depth: 1)
        do {
            return try dates.date(node, [IndexKey(stringValue: key)])
        } catch let error as SerializationError {
            throw error.located(modelIndex: index, modelName: name)
        }
    }

    /// Checks the envelope's format name and version.
    static func checkEnvelope<D: TreeDocument>(in document: D, format: Int?, version: Int?, fallbackNode: Int) throws {
        guard let format, document.kind(of: format) == .string, try document.stringEquals(format, "ModelKit") else {
            throw SerializationError(
                .invalidValue, path: "format", byteOffset: document.byteOffset(of: format ?? fallbackNode),
                expected: "\"\(Envelope.formatName)\"", found: format.map { document.describeNode($0) } ?? "no \"format\" key")
        }
        guard let version, document.kind(of: version) == .integer, case .int(let number) = try document.number(version),
            number >= 1
        else {
            throw SerializationError(
                .invalidValue, path: "version", byteOffset: document.byteOffset(of: version ?? fallbackNode),
                expected: "a format version number", found: version.map { document.describeNode($0) } ?? "no \"version\" key")
        }
        guard number <= Envelope.version else {
            throw SerializationError(
                .unsupportedVersion, path: "version", byteOffset: document.byteOffset(of: version),
                expected: "format version \(Envelope.version) or earlier (this file needs a newer ModelKit)",
                found: "version \(number)")
        }
    }
}

extension GraphLoader {
    /// Reads the envelope and every model's header from a document whose nodes can be visited in
    /// any order (a property list or a value tree), staging each model when streaming: a bare
    /// array of models, one bare model dictionary, or the envelope around the array.
    ///
    /// - Parameter modelLimit: The most models the document can hold, which bounds what a damaged
    ///   count reserves.
    /// - Parameter handle: The handle ``ModelSource/decodeProperties(of:handle:loader:)`` gets for
    ///   a model's properties node (the node itself by default).
    func readTreeHeaders<D: TreeDocument>(
        in document: D, top: Int, modelLimit: Int, properties handle: (Int) -> Int = { $0 }
    ) throws {
        var models = top
        switch document.kind(of: top) {
        case .array:
            break
        case .object:
            guard let array = try document.member(of: top, named: "models") else {
                // A single bare model dictionary.
                return try addTreeModel(top, in: document, handle: handle)
            }
            // Each envelope key once, as in JSON.
            var seen: Set<String> = []
            try document.forEach(in: top) { key, _ in
                for name in ["models", "format", "version", "tracking"] where try document.stringEquals(key, name) {
                    guard seen.insert(name).inserted else {
                        throw SerializationError(
                            .malformedInput, path: name, byteOffset: document.byteOffset(of: key),
                            expected: "\"\(name)\" once in the envelope", found: "it again")
                    }
                }
                return true
            }
            try Self.checkEnvelope(
                in: document, format: try document.member(of: top, named: "format"),
                version: try document.member(of: top, named: "version"), fallbackNode: top)
            guard document.kind(of: array) == .array else {
                throw SerializationError(
                    .typeMismatch, path: "models", byteOffset: document.byteOffset(of: array), expected: "an array of models",
                    found: document.describeNode(array))
            }
            models = array
            if let member = try document.member(of: top, named: "tracking") {
                tracking = try TrackingMember.read(member, in: document)
            }
        default:
            throw SerializationError(
                .typeMismatch, byteOffset: document.byteOffset(of: top), expected: "a dictionary or an array of models",
                found: document.describeNode(top))
        }
        let count = min(try document.count(of: models), modelLimit)
        considerWorkers(forAbout: count)
        reserveCapacity(count)
        try document.forEach(in: models) { _, node in
            try addTreeModel(node, in: document, handle: handle)
            return true
        }
    }

    /// Adds the header of the model at `node`, and stages the model when streaming.
    private func addTreeModel<D: TreeDocument>(_ node: Int, in document: D, handle: (Int) -> Int) throws {
        let index = try add(header(in: document, node: node, properties: handle))
        if isStreaming { _ = try stageAdded(at: index) }
    }
}
