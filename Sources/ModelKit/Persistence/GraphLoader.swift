import Foundation

/// Where the loader gets models from: one implementation per input format.
protocol ModelSource: AnyObject {
    /// Reads the envelope and every model's header, handing each to `loader.add(_:)`.
    func readHeaders(into loader: GraphLoader) throws
    /// Decodes the properties of the model whose header gave `handle`.
    func decodeProperties<M: Model>(of type: M.Type, handle: Int, loader: GraphLoader) throws -> M.Properties
    /// Fills the properties at `base` with `plan` from the properties `handle` gives (see
    /// ``DirectPlan/fill(_:from:in:loader:)``).
    func fillProperties(_ plan: DirectPlan, at base: UnsafeMutableRawPointer, handle: Int, loader: GraphLoader) throws
        -> Bool
}

/// Rebuilds models from a persisted file, all or nothing: the file counterpart of ``GraphReader``.
///
/// Loading happens in three steps. The source reads every model's header (name, id, dates, and
/// where its properties are) and the loader checks ids for duplicates. Staging then decodes each
/// model's properties straight from the input, wiring pointers to the instances being loaded;
/// new instances get their values at once (nobody else can see them yet), while updates of models
/// already in the context are queued. Only when everything succeeded does the commit apply the
/// queued updates and register the new models, which cannot fail: after an error, the context is
/// exactly as it was.
final class GraphLoader {
    // The stored properties are `@exclusivity(unchecked)`: they are touched for every value
    // written or read, one instance is used by one thread, and the dynamic checks cost more than
    // the work they guard.
    struct Header {
        let name: String
        let id: ModelID
        let objectId: String?
        let createdAt: Date?
        let updatedAt: Date?
        /// Where the source finds the properties (a byte offset or an object number).
        let properties: Int
    }

    let context: ModelContext
    let options: DeserializationOptions
    let source: any ModelSource
    @exclusivity(unchecked) private(set) var headers: [Header] = []
    @exclusivity(unchecked) private var positions = ModelIDTable()
    /// Whether the context held no model when the load started: then no model of the data can be
    /// in it (one another thread inserts meanwhile is turned away at commit), and instantiating
    /// needs no lookup under the context's lock.
    @exclusivity(unchecked) private var contextWasEmpty = false
    /// The context's change generation when the load started (see ``enlist(_:_:_:)``).
    @exclusivity(unchecked) private var stagedGeneration: UInt32 = 0
    /// The instance of each model, unretained: retaining and releasing a model (which has a
    /// side table) for each pointer to it cost more than the rest of resolving the pointer.
    /// The batches keep new models alive, `owned` the others.
    @exclusivity(unchecked) private var instances: [Unmanaged<AnyObject>?] = []
    /// The type each instance was made as; for a model whose type is not registered, the type of
    /// the first pointer to it.
    @exclusivity(unchecked) private var instanceTypes: [(any Model.Type)?] = []
    @exclusivity(unchecked) private var owned: [AnyObject] = []
    /// The types of instances, by their code in ``ModelIDTable``'s slots (code = position + 1).
    @exclusivity(unchecked) private var typeCodes: [ObjectIdentifier] = []
    /// Whether the instance at each index was already in the context (updated at commit) rather
    /// than created by this load (filled in at once).
    @exclusivity(unchecked) private var wasInContext: [Bool] = []
    @exclusivity(unchecked) private var placeholders: [ModelID: any Model] = [:]
    @exclusivity(unchecked) private var placeholderOrder: [any Model] = []
    @exclusivity(unchecked) private var updates: [() -> Void] = []
    /// The new models to register at commit, one batch per type.
    @exclusivity(unchecked) private var batches: [any LoadedModelBatch] = []
    @exclusivity(unchecked) private var batchIndex: [ObjectIdentifier: Int] = [:]
    /// The batch last appended to, and its type: models of one type mostly come together.
    @exclusivity(unchecked) private var lastBatchType: ObjectIdentifier?
    @exclusivity(unchecked) private var lastBatch: AnyObject?
    @exclusivity(unchecked) private var contextFree: [ObjectIdentifier: Bool] = [:]
    @exclusivity(unchecked) private var plans: [ObjectIdentifier: DirectPlan?] = [:]
    @exclusivity(unchecked) private var lastPlanType: ObjectIdentifier?
    @exclusivity(unchecked) private var lastPlan: DirectPlan?
    @exclusivity(unchecked) private var types: [String: any Model.Type] = [:]
    @exclusivity(unchecked) private var names: [ObjectIdentifier: String] = [:]
    /// Nodes of shared documents (see ``TreeDocument/nodesAreShared``) known to hold a pointer's
    /// keys, its "ModelPointer" tag, and a model name checked against a type.
    private struct PointerKeys {
        var modelId = -1
        var model = -1
        var type = -1
        var tagValue = -1
        var nameValue = -1
        var nameType: ObjectIdentifier?
    }
    @exclusivity(unchecked) private var pointerKeys = PointerKeys()
    /// The keys of a model's header, and the nodes of shared documents known to hold them.
    private static let headerKeyNames = ["properties", "modelId", "model", "objectId", "createdAt", "updatedAt"]
    @exclusivity(unchecked) private var headerKeys = [Int](repeating: -1, count: 6)
    /// In shared documents: the node of the last model name read, and of a null object id.
    @exclusivity(unchecked) private var headerName = (node: -1, name: "")
    @exclusivity(unchecked) private var headerNull = -1
    /// The last type `name(of:)` was asked about, and its name: pointers mostly repeat it.
    @exclusivity(unchecked) private var lastNamed: ObjectIdentifier?
    @exclusivity(unchecked) private var lastName = ""
    /// The last name `type(named:)` found a type for, and the type.
    @exclusivity(unchecked) private var lastTypeName = ""
    @exclusivity(unchecked) private var lastType: (any Model.Type)?
    /// Decodes default values (which never hold references) for keys missing from the data.
    private(set) lazy var defaultsReader = GraphReader(context: ModelContext(), options: options)

    init(context: ModelContext, options: DeserializationOptions, source: any ModelSource) {
        self.context = context
        self.options = options
        self.source = source
    }

    /// Makes room for `count` models, when the source knows how many there are (growing the id
    /// table rehashes every id in it).
    func reserveCapacity(_ count: Int) {
        headers.reserveCapacity(count)
        if positions.count == 0 { positions = ModelIDTable(minimumCapacity: count) }
    }

    /// Adds a model's header, checking that its id is new to the data.
    func add(_ header: Header) throws {
        let index = headers.count
        if let first = positions.insert(header.id, index: index) {
            throw SerializationError(
                .duplicateModelId, modelIndex: index, modelName: header.name, path: "modelId",
                expected: "a model id not used by another model in the data",
                found: "\(header.id), already used at model index \(first)")
        }
        headers.append(header)
    }

    /// Loads every model in the data into the context.
    func loadAll() throws {
        contextWasEmpty = context.isEmpty
        stagedGeneration = context.changeGeneration
        try source.readHeaders(into: self)
        instances = Array(repeating: nil, count: headers.count)
        instanceTypes = Array(repeating: nil, count: headers.count)
        wasInContext = Array(repeating: false, count: headers.count)
        try decodeAll()
        commit()
    }

    /// Loads every model and returns the first, which must be a `Root`.
    func load<Root: Model>(root: Root.Type) throws -> Root {
        contextWasEmpty = context.isEmpty
        stagedGeneration = context.changeGeneration
        try source.readHeaders(into: self)
        guard !headers.isEmpty else {
            throw SerializationError(.valueNotFound, expected: "at least one model", found: "no models")
        }
        instances = Array(repeating: nil, count: headers.count)
        instanceTypes = Array(repeating: nil, count: headers.count)
        wasInContext = Array(repeating: false, count: headers.count)
        let rootInstance = try instance(Root.self, at: 0).takeUnretainedValue()
        try decodeAll()
        commit()
        return rootInstance
    }

    private func commit() {
        for update in updates { update() }
        // New models were marked as members of the context when they were filled in; the few
        // the context turns away (another thread inserted the same id meanwhile) are unmarked.
        for model in context.registerLoaded(batches) { Self.detach(model) }
        for model in placeholderOrder { insert(model) }
    }

    private func insert<M: Model>(_ model: M) {
        guard !(model is any ContextFreeModel) else { return }
        context.insert(model)
    }

    private static func detach<M: Model>(_ model: M) {
        update(model.storage) { storage in
            storage.context = nil
            storage.metadata.membership = .unmanaged
        }
    }

    /// The model name of `type`, cached: the registry takes a lock.
    private func name<M: Model>(of type: M.Type) -> String {
        let key = ObjectIdentifier(type)
        if key == lastNamed { return lastName }
        let name = names[key] ?? ModelRegistry.name(of: type)
        names[key] = name
        (lastNamed, lastName) = (key, name)
        return name
    }

    private func type(named name: String) -> (any Model.Type)? {
        if let lastType, name == lastTypeName { return lastType }
        defer { (lastTypeName, lastType) = (name, types[name]) }
        if let known = types[name] { return known }
        let type = ModelRegistry.type(named: name)
        if let type { types[name] = type }
        return type
    }

    /// Decodes every model's properties. A model whose type is not registered becomes decodable
    /// once a typed pointer to it has been read, so passes repeat while they make progress.
    private func decodeAll() throws {
        var decoded = [Bool](repeating: false, count: headers.count)
        var remaining = headers.count
        var progress = true
        while progress && remaining > 0 {
            progress = false
            for index in headers.indices where !decoded[index] {
                let type: any Model.Type
                if let staged = instanceTypes[index] {
                    type = staged
                } else if let registered = self.type(named: headers[index].name) {
                    type = registered
                } else {
                    continue
                }
                try stage(type, at: index)
                decoded[index] = true
                remaining -= 1
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

    /// The instance for the model at `index`, unretained: the context's existing instance with
    /// that id, or a new, unregistered one. The loader keeps it alive until it is done.
    private func instance<M: Model>(_ type: M.Type, at index: Int) throws -> Unmanaged<M> {
        if let staged = instances[index] {
            guard let typed = Self.cast(staged, to: M.self) else { throw conflict(at: index, expected: M.self) }
            return typed
        }
        let name = name(of: M.self)
        guard headers[index].name == name else { throw conflict(at: index, expected: M.self) }
        if !contextWasEmpty, let existing = context.model(withId: headers[index].id) {
            guard let typed = ModelContext.cast(existing, to: M.self) else {
                throw SerializationError(
                    .modelTypeConflict, modelIndex: index, modelName: headers[index].name, path: "modelId",
                    expected: "model id \(headers[index].id) to belong to a \(name)",
                    found: "a \(Swift.type(of: existing).modelName) with that id in the context")
            }
            owned.append(typed)
            instances[index] = Unmanaged.passUnretained(typed)
            instanceTypes[index] = Swift.type(of: existing)
            wasInContext[index] = true
            return Unmanaged.passUnretained(typed)
        }
        let model = M()
        model.storage.metadata.modelId = headers[index].id
        // The batch that registers it at commit keeps it alive until then (retaining it now,
        // before any weak reference gives it a side table, takes the fast path).
        if isContextFree(M.self) {
            owned.append(model)
        } else {
            enlist(model, model.storage.box, headers[index])
        }
        instances[index] = Unmanaged.passUnretained(model)
        instanceTypes[index] = M.self
        positions.setInstance(
            Unmanaged.passUnretained(model).toOpaque(), typeCode: typeCode(of: M.self), for: headers[index].id)
        return Unmanaged.passUnretained(model)
    }

    /// A small number for each type the loader made instances of, for ``ModelIDTable``'s slots.
    private func typeCode<M: Model>(of type: M.Type) -> UInt32 {
        let key = ObjectIdentifier(M.self)
        if let position = typeCodes.firstIndex(of: key) { return UInt32(position + 1) }
        typeCodes.append(key)
        return UInt32(typeCodes.count)
    }

    /// `object as? M` for an unretained object, with a fast path for a final model class.
    @inline(__always)
    private static func cast<M: Model>(_ object: Unmanaged<AnyObject>, to type: M.Type) -> Unmanaged<M>? {
        let exact = object._withUnsafeGuaranteedRef { ObjectIdentifier(Swift.type(of: $0)) == ObjectIdentifier(M.self) }
        if exact { return Unmanaged<M>.fromOpaque(object.toOpaque()) }
        return object._withUnsafeGuaranteedRef { $0 as? M }.map { Unmanaged.passUnretained($0) }
    }

    private func isContextFree<M: Model>(_ type: M.Type) -> Bool {
        let key = ObjectIdentifier(M.self)
        if let known = contextFree[key] { return known }
        let isContextFree = M.self is any ContextFreeModel.Type
        contextFree[key] = isContextFree
        return isContextFree
    }

    /// The direct plan for `M`'s properties, cached (the plans' cache takes a lock).
    private func plan<M: Model>(for type: M.Type) -> DirectPlan? {
        let key = ObjectIdentifier(M.self)
        if key == lastPlanType { return lastPlan }
        let plan = plans[key] ?? DirectPlan.of(M.self)
        plans.updateValue(plan, forKey: key)
        (lastPlanType, lastPlan) = (key, plan)
        return plan
    }

    /// Adds a new model to its type's batch, registered at commit. Its type slot and inserted
    /// generation are set now, while its storage is at hand: registering then has nothing to
    /// write to it when the type's list was empty and nothing changed meanwhile (otherwise it
    /// sets them again).
    private func enlist<M: Model>(_ model: M, _ box: ModelBox<M.Properties>, _ header: Header) {
        let batch = batch(for: M.self)
        box.typeSlot = batch.count
        box.insertedGeneration = stagedGeneration
        batch.append(model, id: header.id, objectId: header.objectId)
    }

    /// The batch that registers the new models of type `M`.
    private func batch<M: Model>(for type: M.Type) -> ModelContext.LoadedModels<M> {
        let key = ObjectIdentifier(M.self)
        if key == lastBatchType, let lastBatch { return unsafeDowncast(lastBatch, to: ModelContext.LoadedModels<M>.self) }
        let batch: ModelContext.LoadedModels<M>
        if let position = batchIndex[key] {
            batch = unsafeDowncast(batches[position], to: ModelContext.LoadedModels<M>.self)
        } else {
            ModelRegistry.noteUse(of: M.self)
            batch = ModelContext.LoadedModels<M>(presetGeneration: stagedGeneration)
            batchIndex[key] = batches.count
            batches.append(batch)
        }
        (lastBatchType, lastBatch) = (key, batch)
        return batch
    }

    private func conflict<M: Model>(at index: Int, expected: M.Type) -> SerializationError {
        SerializationError(
            .modelTypeConflict, modelIndex: index, modelName: headers[index].name, path: "model",
            expected: "a \(ModelRegistry.name(of: M.self))", found: "\"\(headers[index].name)\"")
    }

    /// Decodes the properties of the model at `index`: applied at once to a new instance, queued
    /// for one already in the context.
    private func stage<M: Model>(_ type: M.Type, at index: Int) throws {
        let unmanaged = try instance(M.self, at: index)
        let header = headers[index]
        if !wasInContext[index], let plan = plan(for: M.self) {
            // A new model holds its type's default values: fill them in place. Anything the plan
            // cannot read (or an error) leaves it to the Codable path below, which decodes all
            // the values again, or throws the error it describes.
            let box = unmanaged._withUnsafeGuaranteedRef { $0.storage.box }
            let filled =
                (try? withUnsafeMutablePointer(to: &box.values) {
                    try source.fillProperties(plan, at: UnsafeMutableRawPointer($0), handle: header.properties, loader: self)
                }) ?? false
            if filled {
                Self.stamp(box, header, joining: isContextFree(M.self) ? nil : context)
                return
            }
        }
        let properties: M.Properties
        do {
            properties = try source.decodeProperties(of: M.self, handle: header.properties, loader: self)
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
        guard wasInContext[index] else {
            // Not visible to anyone yet: fill it in now, register it at commit.
            let isContextFree = isContextFree(M.self)
            // The values move into the storage: copying them would copy every string, array
            // and weak reference in them.
            let box = unmanaged._withUnsafeGuaranteedRef { $0.storage.box }
            Self.fill(box, with: properties, header, joining: isContextFree ? nil : context)
            return
        }
        let model = unmanaged.takeUnretainedValue()
        updates.append {
            let oldObjectId = model.storage.metadata.objectId
            // An existing model: loading is a reset of its changes, and observers and indexes
            // hear about what the load changed.
            model.replaceLoadedValues(properties)
            Self.apply(properties, header, to: model, valuesAssigned: true)
            context.objectIdChanged(model, from: oldObjectId)
        }
    }

    /// Assigns loaded values, in one access to the storage: each access through the protocol
    /// looks up the storage's generic type and copies or re-stores it.
    private static func apply<M: Model>(
        _ properties: M.Properties, _ header: Header, to model: M, joining context: ModelContext? = nil,
        valuesAssigned: Bool = false
    ) {
        update(model.storage) { storage in
            if !valuesAssigned { storage.values = properties }
            storage.metadata.objectId = header.objectId
            if let createdAt = header.createdAt { storage.metadata.createdAt = createdAt }
            if let updatedAt = header.updatedAt { storage.metadata.updatedAt = updatedAt }
            storage.metadata.state = .loaded
            if let context {
                // What ModelContext.insert does to a model it takes, done in the same access.
                storage.context = context
                storage.metadata.membership = .managed
            }
        }
    }

    /// Fills in a new model's storage: its values, identity and membership.
    private static func fill<Properties>(
        _ box: ModelBox<Properties>, with properties: consuming Properties, _ header: Header, joining context: ModelContext?
    ) {
        box.values = properties
        stamp(box, header, joining: context)
    }

    /// Gives a new model its identity and membership.
    private static func stamp<Properties>(_ box: ModelBox<Properties>, _ header: Header, joining context: ModelContext?) {
        box.metadata.objectId = header.objectId
        if let createdAt = header.createdAt { box.metadata.createdAt = createdAt }
        if let updatedAt = header.updatedAt { box.metadata.updatedAt = updatedAt }
        box.metadata.state = .loaded
        if let context {
            // What ModelContext.insert does to a model it takes, done in the same access.
            box.context = context
            box.metadata.membership = .managed
        }
    }

    private static func update<Properties>(
        _ storage: ModelStorage<Properties>, _ body: (ModelStorage<Properties>) -> Void
    ) {
        body(storage)
    }

    /// A reference to the model a pointer node refers to. Built from the pointer's id and the
    /// instance, without reading the instance's storage (as `ModelRef(target)` would).
    func reference<D: TreeDocument, T: Model>(
        to pointer: Int, in document: D, as type: T.Type, path: @autoclosure () -> [any CodingKey]
    ) throws
        -> ModelRef<T>
    {
        let (target, id) = try self.target(of: pointer, in: document, as: T.self, path: path())
        var reference = ModelRef<T>(id: id)
        target._withUnsafeGuaranteedRef { reference.cached = $0 }
        return reference
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
        guard let idNode, document.kind(of: idNode) == .string else {
            throw fail(.valueNotFound, ".modelId", "the model id of the pointer's target", "no \"modelId\" string")
        }
        guard let id = try document.modelId(idNode) else {
            throw fail(
                .invalidModelId, ".modelId", "a model id (8-4-4-4-12 hexadecimal digits)", document.describeNode(idNode))
        }
        if let slot = positions.lookup(id) {
            // Most targets were made by an earlier pointer of the same type, which checked the
            // model name: the slot has the instance, and neither the header nor the instance is
            // read (each is far apart in memory from one pointer to the next).
            if slot.typeCode != 0, slot.typeCode == typeCode(of: T.self), let instance = slot.instance {
                return (Unmanaged<T>.fromOpaque(instance), id)
            }
            let index = Int(slot.index)
            guard headers[index].name == expectedName else {
                throw fail(
                    .modelTypeConflict, "", "the pointer's target at model index \(index) to be a \(expectedName)",
                    "a \(headers[index].name)")
            }
            return (try instance(T.self, at: index), id)
        }
        switch options.danglingPointers {
        case .fail:
            throw fail(
                .danglingPointer, "", "a pointer to a model in the data",
                "a pointer to \(expectedName) \(id), which is not in the data")
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
        let model = T()
        model.storage.metadata.modelId = id
        model.storage.metadata.objectId = objectId
        model.storage.metadata.state = .needsData
        placeholders[id] = model
        placeholderOrder.append(model)
        return model
    }

    // MARK: Headers

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
            // The forms ModelKit writes, read directly; anything else (or null) as a property.
            if let date = try? DirectPlan.date(dateNode, document) { return date }
            guard try !document.isNull(dateNode) else { return nil }
            let dates = TreeDecoder(document: document, node: node, defaults: nil, loader: self, codingPath: [], depth: 1)
            do {
                return try dates.date(dateNode, [IndexKey(stringValue: key)])
            } catch let error as SerializationError {
                throw error.located(modelIndex: index, modelName: name)
            }
        }
        let createdAt = try date(createdNode, "createdAt")
        let updatedAt = try date(updatedNode, "updatedAt")
        guard let propertiesNode else {
            throw fail(.valueNotFound, "properties", "an object of properties", name, nil)
        }
        guard document.kind(of: propertiesNode) == .object else {
            throw fail(.typeMismatch, "properties", "an object of properties", name, propertiesNode)
        }
        return Header(
            name: name, id: id, objectId: objectId, createdAt: createdAt, updatedAt: updatedAt,
            properties: handle(propertiesNode))
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
