import Foundation

/// Flattens a graph of models into the ModelPointer format: every reachable model once, in the
/// order first reached (breadth-first from the root), references written as pointers.
///
/// The walk uses a queue instead of recursion, so a chain of a million models needs no deeper
/// stack than a single model; only values nested inside one model's properties recurse, and that
/// nesting is bounded by ``SerializationError/maximumDepth``.
final class GraphWriter {
    let format: SerializationFormat
    private(set) var queue: [any Model] = []
    private var positions: [ModelID: (index: Int, object: ObjectIdentifier)] = [:]
    private(set) var sawReference = false
    /// The context of the model being encoded: its references resolve there.
    weak var ownerContext: ModelContext?
    /// What the model being encoded holds while it is in no context (see ``ModelObject/held``).
    var ownerHeld: [AnyObject] = []
    /// Whether references are resolved, to write their targets too (a graph); otherwise a
    /// reference is written as the pointer its id makes (one model's values).
    var resolvesReferences = false

    init(format: SerializationFormat) {
        self.format = format
    }

    /// Encodes `roots` and everything they reach.
    func serialize(_ roots: [any Model]) throws -> [ModelValue] {
        resolvesReferences = true
        for root in roots { try enqueue(root) }
        var output: [ModelValue] = []
        output.reserveCapacity(queue.count)
        var next = 0
        while next < queue.count {
            let model = queue[next]
            output.append(try encode(model, index: next))
            next += 1
        }
        return output
    }

    @discardableResult
    private func enqueue(_ model: some Model) throws -> Int {
        let id = model.modelId
        let object = ObjectIdentifier(model)
        if let known = positions[id] {
            guard known.object == object else {
                throw SerializationError(
                    .duplicateModelId, modelIndex: queue.count, modelName: type(of: model).modelName,
                    expected: "one instance per model id in a graph",
                    found: "two different instances with model id \(id)")
            }
            return known.index
        }
        positions[id] = (queue.count, object)
        queue.append(model)
        return queue.count - 1
    }

    /// The pointer to `model`, queuing it for encoding if it is new to this graph.
    func pointer<M: Model>(to model: M) throws -> ModelValue {
        sawReference = true
        try enqueue(model)
        return Self.pointer(name: ModelRegistry.name(of: M.self), id: model.modelId, objectId: model.objectId)
    }

    /// A pointer value. A nil object id is left out, as ModelKit for Objective-C's dictionaries
    /// could not hold it.
    static func pointer(name: String, id: ModelID, objectId: String?) -> ModelValue {
        var pointer = ModelValue.Object()
        pointer["__type"] = "ModelPointer"
        pointer["model"] = .string(name)
        pointer["modelId"] = .string(id.description)
        if let objectId { pointer["objectId"] = .string(objectId) }
        return .object(pointer)
    }

    /// Notes that a reference property was seen, even an empty one: such models serialize as an
    /// array, like ModelKit for Objective-C did for models with model properties.
    func noteReference() {
        sawReference = true
    }

    private func encode(_ model: some Model, index: Int) throws -> ModelValue {
        let name = ModelRegistry.name(of: type(of: model))
        ownerContext = model.storage.lookupContext
        ownerHeld = model.storage.box.held
        let properties: ModelValue
        do {
            properties = try encodeProperties(model.storage.values)
        } catch {
            throw SerializationError(encoding: error, modelIndex: index, modelName: name)
        }
        _ = model.storage.resolveUpdatedAt()  // a write marks the stamp as due without reading the clock
        let metadata = model.storage.metadata
        var object = ModelValue.Object()
        object["model"] = .string(name)
        object["modelId"] = .string(metadata.modelId.description)
        if let objectId = metadata.objectId { object["objectId"] = .string(objectId) }
        object["createdAt"] = date(metadata.createdAt)
        object["updatedAt"] = date(metadata.updatedAt)
        object["properties"] = properties
        return .object(object)
    }

    func encodeProperties<P: Encodable>(_ properties: P) throws -> ModelValue {
        let encoder = PropertyEncoder(writer: self, codingPath: [IndexKey(stringValue: "properties")], depth: 1)
        try properties.encode(to: encoder)
        return (encoder.slot ?? .value(.object(ModelValue.Object()))).finish()
    }

    private func date(_ date: Date) -> ModelValue {
        format == .json ? ModelValue.jsonDate(date) : .date(date)
    }
}

extension SerializationError {
    /// `error`, thrown while encoding the properties of the model at `modelIndex`, as a
    /// serialization error that says where.
    init(encoding error: any Error, modelIndex: Int, modelName: String) {
        if let error = error as? SerializationError {
            self = error.located(modelIndex: modelIndex, modelName: modelName)
        } else if let error = error as? EncodingError {
            self.init(encodingError: error, modelIndex: modelIndex, modelName: modelName)
        } else {
            self.init(
                .invalidValue, modelIndex: modelIndex, modelName: modelName, path: "properties",
                expected: "properties that encode", found: "error \(error)")
        }
    }

    init(encodingError: EncodingError, modelIndex: Int, modelName: String) {
        switch encodingError {
        case .invalidValue(let value, let context):
            self.init(
                .invalidValue, modelIndex: modelIndex, modelName: modelName, path: describe(context.codingPath),
                expected: "a value that can be encoded", found: "\(type(of: value)): \(context.debugDescription)")
        @unknown default:
            self.init(
                .invalidValue, modelIndex: modelIndex, modelName: modelName, expected: "a value that can be encoded",
                found: "\(encodingError)")
        }
    }
}

extension ModelRef: GraphEncodable {
    func encodePointers(with writer: GraphWriter) throws -> ModelValue {
        writer.noteReference()
        guard writer.resolvesReferences else {
            return id.map { GraphWriter.pointer(name: ModelRegistry.name(of: Target.self), id: $0, objectId: nil) } ?? .null
        }
        guard let target = target(lookupIn: writer.ownerContext, held: writer.ownerHeld) else { return .null }
        return try writer.pointer(to: target)
    }
}

extension ModelArray: GraphEncodable {
    func encodePointers(with writer: GraphWriter) throws -> ModelValue {
        writer.noteReference()
        var pointers: [ModelValue] = []
        pointers.reserveCapacity(references.count)
        for raw in references.indices {
            if writer.resolvesReferences {
                guard let target = references[raw].target(lookupIn: writer.ownerContext, held: writer.ownerHeld) else { continue }
                pointers.append(try writer.pointer(to: target))
            } else if let id = references[raw].id {
                pointers.append(GraphWriter.pointer(name: ModelRegistry.name(of: Element.self), id: id, objectId: nil))
            }
        }
        return .array(pointers)
    }
}
