import Foundation

/// Options for deserializing models.
public struct DeserializationOptions: Sendable {
    /// What to do with a `ModelPointer` whose target is not in the data.
    public enum DanglingPointerPolicy: Sendable, Hashable {
        /// Stop with ``SerializationError/Code/danglingPointer`` (the default).
        case fail
        /// Resolve to the model with that id already in the context or, if there is none, to a new
        /// placeholder with that id in state ``ModelState/needsData``: for partial graphs, such as
        /// a page of results from a backend.
        case placeholder
    }

    /// What to do with pointers to models that are not in the data.
    public var danglingPointers: DanglingPointerPolicy

    /// How loading spreads its work over threads (see `GraphLoader+Parallel.swift`); tests
    /// change it to run workers on small inputs.
    var parallelism = Parallelism()

    public init(danglingPointers: DanglingPointerPolicy = .fail) {
        self.danglingPointers = danglingPointers
    }
}

extension DeserializationOptions {
    struct Parallelism: Sendable {
        /// The fewest models worth filling on workers: below it, waking threads costs more than
        /// they save.
        var minimumModels = 2048
        /// The models a worker takes at a time: small enough for workers to finish together,
        /// large enough that taking the next chunk (one atomic add) costs nothing.
        var chunk = 256
        /// The number of workers, counting the loading thread; one per active processor (at
        /// most eight) when `nil`.
        var workers: Int?

        /// The number of workers for `models` models; 1 means no parallelism.
        func workers(for models: Int) -> Int {
            guard models >= minimumModels else { return 1 }
            return max(1, min(workers ?? Self.processors, models / max(chunk, 1)))
        }

        private static let processors = min(ProcessInfo.processInfo.activeProcessorCount, 8)
    }
}

/// Rebuilds models from the ModelPointer format, all or nothing.
///
/// Reading happens in two steps. Staging parses every model's header, creates (but does not
/// register) new instances, finds existing instances by id, and decodes every model's properties
/// into values, wiring pointers to the staged instances. Only when all of that succeeded does
/// committing assign the properties and register new models, which cannot fail; so after an
/// error the context is exactly as it was.
final class GraphReader {
    struct Header {
        let name: String
        let id: ModelID
        let objectId: String?
        let createdAt: Date?
        let updatedAt: Date?
        let properties: ModelValue
    }

    let context: ModelContext
    let options: DeserializationOptions
    private var headers: [Header] = []
    private var positions: [ModelID: Int] = [:]
    private var instances: [(any Model)?] = []
    private var placeholders: [ModelID: any Model] = [:]
    private var commits: [() -> Void] = []

    init(context: ModelContext, options: DeserializationOptions) {
        self.context = context
        self.options = options
    }

    /// Reads `value` (one model dictionary or an array of them) and returns the first model, which
    /// must be a `Root`.
    func read<Root: Model>(_ value: ModelValue, root: Root.Type) throws -> Root {
        let entries: [ModelValue]
        switch value {
        case .object: entries = [value]
        case .array(let array) where !array.isEmpty: entries = array
        case .array:
            throw SerializationError(.valueNotFound, expected: "at least one model", found: "an empty array")
        default:
            throw SerializationError(
                .typeMismatch, expected: "a model dictionary or an array of them", found: value.kindDescription)
        }
        headers.reserveCapacity(entries.count)
        for (index, entry) in entries.enumerated() {
            let header = try Self.header(entry, index: index)
            if let first = positions[header.id] {
                throw SerializationError(
                    .duplicateModelId, modelIndex: index, modelName: header.name, path: "modelId",
                    expected: "a model id not used by another model in the data",
                    found: "\(header.id), already used at model index \(first)")
            }
            positions[header.id] = index
            headers.append(header)
        }
        instances = Array(repeating: nil, count: headers.count)

        let rootInstance = try instantiate(Root.self, at: 0)
        try decodeAll()
        let objectIds = headers.indices.lazy.compactMap { index -> ObjectIdCheck.Entry? in
            let header = self.headers[index]
            guard let objectId = header.objectId, let instance = self.instances[index] else { return nil }
            return ObjectIdCheck.Entry(
                index: index, name: header.name, id: header.id, objectId: objectId, type: Swift.type(of: instance))
        }
        try ObjectIdCheck.check(objectIds, against: context) { positions[$0] != nil }
        for commit in commits { commit() }
        return rootInstance
    }

    /// Decodes every model's properties. A model whose type is not registered becomes decodable
    /// once a typed pointer to it has been read, so passes repeat while they make progress.
    private func decodeAll() throws {
        var decoded = [Bool](repeating: false, count: headers.count)
        var progress = true
        while progress {
            progress = false
            for index in headers.indices where !decoded[index] {
                let instance: any Model
                if let staged = instances[index] {
                    instance = staged
                } else if let type = ModelRegistry.type(named: headers[index].name) {
                    instance = try instantiate(type, at: index)
                } else {
                    continue
                }
                try stage(instance, at: index)
                decoded[index] = true
                progress = true
            }
        }
        if let index = decoded.firstIndex(of: false) {
            throw SerializationError(
                .unknownModel, modelIndex: index, modelName: headers[index].name, path: "model",
                expected: "the name of a registered model type (register it with ModelRegistry.register)",
                found: "\"\(headers[index].name)\"")
        }
    }

    /// The instance for the model at `index`: the context's existing instance with that id, or a
    /// new, unregistered one.
    private func instantiate<M: Model>(_ type: M.Type, at index: Int) throws -> M {
        if let staged = instances[index] {
            guard let typed = staged as? M else { throw conflict(at: index, expected: M.self) }
            return typed
        }
        let header = headers[index]
        let name = ModelRegistry.name(of: M.self)
        guard header.name == name else { throw conflict(at: index, expected: M.self) }
        if let existing = context.model(withId: header.id) {
            guard let typed = existing as? M else {
                throw SerializationError(
                    .modelTypeConflict, modelIndex: index, modelName: header.name, path: "modelId",
                    expected: "model id \(header.id) to belong to a \(name)",
                    found: "a \(Swift.type(of: existing).modelName) with that id in the context")
            }
            instances[index] = typed
            return typed
        }
        let model = M()
        model.storage.metadata.modelId = header.id
        instances[index] = model
        return model
    }

    private func conflict<M: Model>(at index: Int, expected: M.Type) -> SerializationError {
        SerializationError(
            .modelTypeConflict, modelIndex: index, modelName: headers[index].name, path: "model",
            expected: "a \(ModelRegistry.name(of: M.self))", found: "\"\(headers[index].name)\"")
    }

    /// Decodes the properties of the model at `index` and queues their assignment.
    private func stage<M: Model>(_ model: M, at index: Int) throws {
        let header = headers[index]
        let properties: M.Properties
        do {
            let decoder = PropertyDecoder(
                value: header.properties, defaults: DefaultValues.of(M.self), reader: self,
                codingPath: [IndexKey(stringValue: "properties")], depth: 1)
            properties = try M.Properties(from: decoder)
        } catch let error as SerializationError {
            throw error.located(modelIndex: index, modelName: header.name)
        } catch let error as DecodingError {
            throw SerializationError(decodingError: error, modelIndex: index, modelName: header.name)
        } catch {
            throw SerializationError(
                .invalidValue, modelIndex: index, modelName: header.name, path: "properties",
                expected: "properties that decode", found: "error \(error)")
        }
        let context = self.context
        commits.append {
            model.replaceLoadedValues(properties)
            let oldObjectId = model.storage.metadata.objectId
            model.storage.metadata.objectId = header.objectId
            model.storage.metadata.createdAt = header.createdAt ?? model.storage.metadata.createdAt
            model.storage.metadata.updatedAt = header.updatedAt ?? model.storage.metadata.updatedAt
            model.storage.metadata.state = .loaded
            if model.storage.context === context {
                context.objectIdChanged(model, from: oldObjectId)
            } else if !(model is any ContextFreeModel) {
                context.insert(model)
            }
        }
    }

    /// The model a pointer refers to, typed as the property that holds it.
    func target<T: Model>(of pointer: ModelValue, as type: T.Type, path: [any CodingKey]) throws -> T {
        guard case .object(let object) = pointer, object["__type"] == "ModelPointer" else {
            throw SerializationError(
                .typeMismatch, path: describe(path), expected: "a ModelPointer to a \(T.modelName)",
                found: pointer.kindDescription)
        }
        guard case .string(let name)? = object["model"] else {
            throw SerializationError(
                .valueNotFound, path: describe(path) + ".model", expected: "the model name of the pointer's target",
                found: object["model"]?.kindDescription ?? "no \"model\" key")
        }
        let expectedName = ModelRegistry.name(of: T.self)
        guard name == expectedName else {
            throw SerializationError(
                .modelTypeConflict, path: describe(path), expected: "a pointer to a \(expectedName)",
                found: "a pointer to a \(name)")
        }
        guard case .string(let idText)? = object["modelId"] else {
            throw SerializationError(
                .valueNotFound, path: describe(path) + ".modelId", expected: "the model id of the pointer's target",
                found: object["modelId"]?.kindDescription ?? "no \"modelId\" key")
        }
        guard let id = ModelID(idText) else {
            throw SerializationError(
                .invalidModelId, path: describe(path) + ".modelId", expected: "a model id (8-4-4-4-12 hexadecimal digits)",
                found: "\"\(idText)\"")
        }
        if let index = positions[id] {
            guard headers[index].name == expectedName else {
                throw SerializationError(
                    .modelTypeConflict, path: describe(path),
                    expected: "the pointer's target at model index \(index) to be a \(expectedName)",
                    found: "a \(headers[index].name)")
            }
            return try instantiate(T.self, at: index)
        }
        switch options.danglingPointers {
        case .fail:
            throw SerializationError(
                .danglingPointer, path: describe(path), expected: "a pointer to a model in the data",
                found: "a pointer to \(expectedName) \(id), which is not in the data")
        case .placeholder:
            return try placeholder(T.self, id: id, objectId: object["objectId"]?.stringValue, path: path)
        }
    }

    private func placeholder<T: Model>(_ type: T.Type, id: ModelID, objectId: String?, path: [any CodingKey]) throws -> T {
        if let staged = placeholders[id] ?? context.model(withId: id) {
            guard let typed = staged as? T else {
                throw SerializationError(
                    .modelTypeConflict, path: describe(path), expected: "model id \(id) to belong to a \(T.modelName)",
                    found: "a \(Swift.type(of: staged).modelName) with that id in the context")
            }
            return typed
        }
        let model = T.placeholder(id: id, objectId: objectId)
        placeholders[id] = model
        let context = self.context
        if !(model is any ContextFreeModel) {
            commits.append { context.insert(model) }
        }
        return model
    }

    private static func header(_ entry: ModelValue, index: Int) throws -> Header {
        guard case .object(let object) = entry else {
            throw SerializationError(
                .typeMismatch, modelIndex: index, expected: "a model dictionary", found: entry.kindDescription)
        }
        func fail(_ code: SerializationError.Code, _ key: String, _ expected: String, _ name: String?) -> SerializationError {
            SerializationError(
                code, modelIndex: index, modelName: name, path: key, expected: expected,
                found: object[key]?.kindDescription ?? "no \"\(key)\" key")
        }
        guard case .string(let name)? = object["model"] else {
            throw fail(object["model"] == nil ? .valueNotFound : .typeMismatch, "model", "the model name as a string", nil)
        }
        guard case .string(let idText)? = object["modelId"] else {
            throw fail(object["modelId"] == nil ? .valueNotFound : .typeMismatch, "modelId", "the model id as a string", name)
        }
        guard let id = ModelID(idText) else {
            throw fail(.invalidModelId, "modelId", "a model id (8-4-4-4-12 hexadecimal digits)", name)
        }
        var objectId: String?
        switch object["objectId"] {
        case nil, .null?: objectId = nil
        case .string(let text)?: objectId = text
        default: throw fail(.typeMismatch, "objectId", "the object id as a string or null", name)
        }
        func date(_ key: String) throws -> Date? {
            guard let value = object[key], !PropertyDecoder.isNull(value) else { return nil }
            do {
                return try PropertyDecoder.date(value, at: [IndexKey(stringValue: key)])
            } catch let error as SerializationError {
                throw error.located(modelIndex: index, modelName: name)
            }
        }
        let properties = object["properties"] ?? .object(ModelValue.Object())
        guard case .object = properties else {
            throw fail(.typeMismatch, "properties", "an object of properties", name)
        }
        return Header(
            name: name, id: id, objectId: objectId, createdAt: try date("createdAt"), updatedAt: try date("updatedAt"),
            properties: properties)
    }
}

extension SerializationError {
    init(decodingError: DecodingError, modelIndex: Int, modelName: String) {
        switch decodingError {
        case .typeMismatch(let type, let context):
            self.init(
                .typeMismatch, modelIndex: modelIndex, modelName: modelName, path: describe(context.codingPath),
                expected: "\(type)", found: context.debugDescription)
        case .valueNotFound(let type, let context):
            self.init(
                .valueNotFound, modelIndex: modelIndex, modelName: modelName, path: describe(context.codingPath),
                expected: "a value of type \(type)", found: context.debugDescription)
        case .keyNotFound(let key, let context):
            self.init(
                .valueNotFound, modelIndex: modelIndex, modelName: modelName,
                path: describe(context.codingPath + [key]), expected: "a value for \"\(key.stringValue)\"",
                found: context.debugDescription)
        case .dataCorrupted(let context):
            self.init(
                .invalidValue, modelIndex: modelIndex, modelName: modelName, path: describe(context.codingPath),
                expected: "valid data", found: context.debugDescription)
        @unknown default:
            self.init(
                .invalidValue, modelIndex: modelIndex, modelName: modelName, expected: "valid data", found: "\(decodingError)")
        }
    }
}

extension ModelRef: GraphDecodable {
    static func decodeReference(from value: ModelValue, reader: GraphReader, path: [any CodingKey]) throws -> ModelRef {
        if PropertyDecoder.isNull(value) { return ModelRef() }
        return ModelRef(try reader.target(of: value, as: Target.self, path: path))
    }
}

extension ModelArray: GraphDecodable {
    static func decodeReference(from value: ModelValue, reader: GraphReader, path: [any CodingKey]) throws -> ModelArray {
        guard case .array(let pointers) = value else {
            throw SerializationError(
                .typeMismatch, path: describe(path), expected: "an array of ModelPointers to \(Element.modelName)",
                found: value.kindDescription)
        }
        var array = ModelArray()
        array.references.reserveCapacity(pointers.count)
        for (position, pointer) in pointers.enumerated() {
            let target = try reader.target(of: pointer, as: Element.self, path: path + [IndexKey(intValue: position)])
            array.references.append(ModelRef(target))
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
