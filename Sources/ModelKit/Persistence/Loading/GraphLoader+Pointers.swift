import Foundation

// Pointers: how the loader turns a pointer node into a reference to the instance it names.

extension GraphLoader {
    /// A reference to the model a pointer node refers to. Built from the pointer's id and the
    /// instance, without reading the instance's storage (as `ModelRef(target)` would).
    func reference<D: TreeDocument, T: Model>(
        to pointer: Int, in document: D, as type: T.Type, path: @autoclosure () -> [any CodingKey]
    ) throws
        -> ModelRef<T>
    {
        let (_, id) = try self.target(of: pointer, in: document, as: T.self, path: path())
        return ModelRef<T>(id: id)
    }

    /// The model a pointer node refers to, typed as the property that holds it, and its id.
    /// The path is only built for an error message.
    func target<D: TreeDocument, T: Model>(
        of pointer: Int, in document: D, as type: T.Type, path: @autoclosure () -> [any CodingKey]
    ) throws
        -> (Unmanaged<T>, ModelID)
    {
        func fail(_ code: SerializationError.Code, _ suffix: String, _ expected: String, _ found: String) -> SerializationError {
            SerializationError(
                code, path: describe(path()) + suffix, byteOffset: document.byteOffset(of: pointer), expected: expected,
                found: found)
        }
        let id: ModelID
        var objectNode: Int?
        if pointerIds != nil {
            // A record's pointer: by object id, whatever else it holds.
            (id, objectNode) = try readPointer(pointer, in: document, as: T.self, fail: fail)
        } else if let compact = compactPointerId(pointer, in: document, as: T.self) {
            id = compact
        } else if D.nodesAreShared, pointerKeys.nameType == ObjectIdentifier(T.self),
            let shared = document.pointerId(pointer, matching: pointerKeys)
        {
            // The same nodes as a pointer to a `T` read member by member before.
            id = shared
        } else {
            (id, objectNode) = try readPointer(pointer, in: document, as: T.self, fail: fail)
        }
        return try target(id: id, objectNode: objectNode, in: document, as: T.self, path: path(), fail: fail)
    }

    /// The pointer's target id if the pointer has the writer's compact form (the name it
    /// checks is `T`'s).
    @inline(__always)
    private func compactPointerId<D: TreeDocument, T: Model>(_ pointer: Int, in document: D, as type: T.Type) -> ModelID? {
        withCompactName(of: T.self) { document.compactPointerId(pointer, model: $0) }
    }

    /// Calls `body` with the bytes of `T`'s model name (remembered for the type used last).
    @inline(__always)
    func withCompactName<T: Model, Result>(of type: T.Type, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        if compactNameType != ObjectIdentifier(T.self) {
            compactNameType = ObjectIdentifier(T.self)
            compactName = Array(name(of: T.self).utf8)
        }
        return compactName.withUnsafeBytes(body)
    }

    /// The target id of a pointer in a binary property list made of the same nodes as the
    /// pointers to a `T` read before (see ``BinaryPlistDocument/pointerId(_:matching:)``), when
    /// its target resolves without question (see ``resolvedTarget(_:as:)``); else `nil`, and the
    /// general reading decides.
    @inline(__always)
    func sharedPointerId<T: Model>(_ pointer: Int, in document: BinaryPlistDocument, as type: T.Type) -> ModelID? {
        guard let id = unresolvedSharedPointerId(pointer, in: document, as: T.self), resolvedTarget(id, as: T.self) != nil
        else { return nil }
        return id
    }

    /// ``sharedPointerId(_:in:as:)`` without resolving the target.
    @inline(__always)
    func unresolvedSharedPointerId<T: Model>(_ pointer: Int, in document: BinaryPlistDocument, as type: T.Type) -> ModelID? {
        guard pointerKeys.nameType == ObjectIdentifier(T.self) else { return nil }
        return document.pointerId(pointer, matching: pointerKeys)
    }

    /// The instance for a pointer to `id` when it resolves without question: the id is in the
    /// data and belongs to a `T`. `nil` otherwise (the general path then says what is wrong).
    func resolvedTarget<T: Model>(_ id: ModelID, as type: T.Type) -> Unmanaged<T>? {
        // A pointer matched by object id holds an id that is not its target's.
        if !redirects.isEmpty, redirects[id] != nil { return nil }
        guard let slot = positions.lookup(id) else { return forwardInstance(T.self, id: id) }
        return try? targetInstance(at: slot, as: T.self) { _ in CancellationError() }
    }

    /// The instance for a pointer to the model of the data in `slot`, typed as the property that
    /// holds it; `conflict` makes the error for a model of another type (given its index).
    ///
    /// Most targets were made by an earlier pointer of the same type, which checked the model
    /// name: the slot has the instance, and neither the header nor the instance is read (each is
    /// far apart in memory from one pointer to the next).
    @inline(__always)
    private func targetInstance<T: Model>(
        at slot: ModelIDTable.Slot, as type: T.Type, conflict: (Int) -> any Error
    ) throws -> Unmanaged<T> {
        if slot.typeCode != 0, slot.typeCode == typeCode(of: T.self), let instance = slot.instance {
            return Unmanaged<T>.fromOpaque(instance)
        }
        // A pending model (see `forwardInstance`) was made by a pointer of another type.
        guard slot.index != ModelIDTable.pending else { throw StreamingUnavailable() }
        let index = Int(slot.index)
        guard headers[index].name == name(of: T.self) else { throw conflict(index) }
        return try instance(T.self, at: index)
    }

    /// Reads a pointer member by member, checking its tag and model name; returns the target id
    /// and the object id's node.
    private func readPointer<D: TreeDocument, T: Model>(
        _ pointer: Int, in document: D, as type: T.Type,
        fail: (SerializationError.Code, String, String, String) -> SerializationError
    ) throws -> (ModelID, Int?) {
        // One pass over the pointer's members rather than a search per key; the first of
        // duplicate keys wins, as with `member(of:named:)`.
        var tag: Int?
        var nameNode: Int?
        var idNode: Int?
        var objectNode: Int?
        if document.kind(of: pointer) == .object {
            try document.forEach(in: pointer) { key, value in
                // Property-list writers share the key strings: a key node seen before is known.
                let shared = D.nodesAreShared
                if shared, key == pointerKeys.modelId {
                    if idNode == nil { idNode = value }
                    return true
                } else if shared, key == pointerKeys.model {
                    if nameNode == nil { nameNode = value }
                    return true
                } else if shared, key == pointerKeys.type {
                    if tag == nil { tag = value }
                    return true
                }
                guard document.kind(of: key) == .string else { return true }
                if try document.stringEquals(key, "modelId") {
                    if idNode == nil { idNode = value }
                    if shared { pointerKeys.modelId = key }
                } else if try document.stringEquals(key, "model") {
                    if nameNode == nil { nameNode = value }
                    if shared { pointerKeys.model = key }
                } else if try document.stringEquals(key, "__type") {
                    if tag == nil { tag = value }
                    if shared { pointerKeys.type = key }
                } else if try document.stringEquals(key, "objectId") {
                    if objectNode == nil { objectNode = value }
                }
                return true
            }
        }
        if !D.nodesAreShared || tag == nil || tag != pointerKeys.tagValue {
            guard let tag, document.kind(of: tag) == .string, try document.stringEquals(tag, "ModelPointer") else {
                throw fail(.typeMismatch, "", "a ModelPointer to a \(T.modelName)", document.describeNode(pointer))
            }
            if D.nodesAreShared { pointerKeys.tagValue = tag }
        }
        let expectedName = name(of: T.self)
        if !D.nodesAreShared || nameNode == nil || nameNode != pointerKeys.nameValue
            || pointerKeys.nameType != ObjectIdentifier(T.self)
        {
            guard let nameNode, document.kind(of: nameNode) == .string else {
                throw fail(.valueNotFound, ".model", "the model name of the pointer's target", "no \"model\" string")
            }
            guard try document.stringEquals(nameNode, expectedName) else {
                throw fail(
                    .modelTypeConflict, "", "a pointer to a \(expectedName)", "a pointer to a \(try document.string(nameNode))")
            }
            if D.nodesAreShared { (pointerKeys.nameValue, pointerKeys.nameType) = (nameNode, ObjectIdentifier(T.self)) }
        }
        if let pointerIds {
            guard let objectNode, document.kind(of: objectNode) == .string else {
                throw fail(.valueNotFound, ".objectId", "the object id of the pointer's target", "no \"objectId\" string")
            }
            return (pointerIds(expectedName, try document.string(objectNode)), objectNode)
        }
        guard let idNode, document.kind(of: idNode) == .string else {
            throw fail(.valueNotFound, ".modelId", "the model id of the pointer's target", "no \"modelId\" string")
        }
        guard let id = try document.modelId(idNode) else {
            throw fail(
                .invalidModelId, ".modelId", "a model id (8-4-4-4-12 hexadecimal digits)", document.describeNode(idNode))
        }
        return (id, objectNode)
    }

    /// The instance for a pointer to `id`, typed as the property that holds it.
    private func target<D: TreeDocument, T: Model>(
        id: ModelID, objectNode: Int?, in document: D, as type: T.Type, path: @autoclosure () -> [any CodingKey],
        fail: (SerializationError.Code, String, String, String) -> SerializationError
    ) throws -> (Unmanaged<T>, ModelID) {
        let id = redirected(id)
        if let slot = positions.lookup(id) {
            let target = try targetInstance(at: slot, as: T.self) { index in
                fail(
                    .modelTypeConflict, "", "the pointer's target at model index \(index) to be a \(self.name(of: T.self))",
                    "a \(self.headers[index].name)")
            }
            return (target, id)
        }
        if let made = forwardInstance(T.self, id: id) { return (made, id) }
        // A worker leaves a dangling pointer, and its placeholder, to the loader's own pass.
        if isWorker { throw StreamingUnavailable() }
        switch options.danglingPointers {
        case .fail:
            throw fail(
                .danglingPointer, "", "a pointer to a model in the data",
                "a pointer to \(name(of: T.self)) \(id), which is not in the data")
        case .placeholder:
            var objectId: String?
            if let objectNode, document.kind(of: objectNode) == .string { objectId = try document.string(objectNode) }
            // Kept alive by `placeholders`.
            return (Unmanaged.passUnretained(try placeholder(T.self, id: id, objectId: objectId, path: path())), id)
        }
    }

    private func placeholder<T: Model>(_ type: T.Type, id: ModelID, objectId: String?, path: [any CodingKey]) throws -> T {
        if let staged = placeholders[id] ?? context.model(withId: id) {
            guard let typed = ModelContext.cast(staged, to: T.self) else {
                throw SerializationError(
                    .modelTypeConflict, path: describe(path), expected: "model id \(id) to belong to a \(T.modelName)",
                    found: "a \(Swift.type(of: staged).modelName) with that id in the context")
            }
            // Pointers hold it unretained: keep it alive should another thread remove it.
            if placeholders[id] == nil { owned.append(typed) }
            return typed
        }
        let model = T.placeholder(id: id, objectId: objectId)
        placeholders[id] = model
        placeholderOrder.append(model)
        return model
    }
}

extension ModelRef: TreeReference {
    static func decodeReference<D: TreeDocument>(from node: Int, decoder: TreeDecoder<D>, path: () -> [any CodingKey]) throws
        -> ModelRef
    {
        if try decoder.document.isNull(node) { return ModelRef() }
        return try decoder.loader.reference(to: node, in: decoder.document, as: Target.self, path: path())
    }
}

extension ModelArray: TreeReference {
    static func decodeReference<D: TreeDocument>(from node: Int, decoder: TreeDecoder<D>, path: () -> [any CodingKey]) throws
        -> ModelArray
    {
        let document = decoder.document
        guard document.kind(of: node) == .array else {
            throw decoder.mismatch("an array of ModelPointers to \(Element.modelName)", node, path())
        }
        let count = try document.count(of: node)
        try document.charge(elements: count, of: node)
        var array = ModelArray()
        array.references.reserveCapacity(count)
        var cursor = document.startCursor(of: node)
        for position in 0..<count {
            let pointer = try document.next(in: node, cursor: &cursor).value
            array.references.append(
                try decoder.loader.reference(
                    to: pointer, in: document, as: Element.self, path: path() + [IndexKey(intValue: position)]))
        }
        return array
    }
}

extension Model {
    /// A new instance standing for the model `id` that a pointer names but the data does not
    /// hold: it has the pointer's identity and no data yet (``ModelState/needsData``).
    static func placeholder(id: ModelID, objectId: String?) -> Self {
        let model = Self()
        model.storage.metadata.modelId = id
        model.storage.metadata.objectId = objectId
        model.storage.metadata.state = .needsData
        return model
    }
}
