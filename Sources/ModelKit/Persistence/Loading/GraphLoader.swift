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
    /// A source over the same input with state of its own, for a worker thread that fills
    /// properties while this one does too (see `GraphLoader+Parallel.swift`).
    func copyForWorker() -> any ModelSource
}

/// Rebuilds models from a persisted file, all or nothing: for files and value trees alike.
///
/// Loading happens in three steps. The source reads every model's header (name, id, dates, and
/// where its properties are) and the loader checks ids for duplicates. Staging then decodes each
/// model's properties straight from the input, wiring pointers to the instances being loaded;
/// new instances get their values at once (nobody else can see them yet), while updates of models
/// already in the context are queued. Only when everything succeeded does the commit apply the
/// queued updates and register the new models, which cannot fail: after an error, the context is
/// exactly as it was.
///
/// Into an empty context, a small input is instead staged model by model as the source reads it
/// (see `GraphLoader+Streaming.swift`), and a large one has its new models made and filled by
/// workers before staging takes what they left (see `GraphLoader+Parallel.swift`).
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
        /// Where the source finds the properties (a byte offset or an object number), or
        /// ``noProperties``.
        let properties: Int

        /// The model has no `properties` key: its properties are its type's defaults.
        static let noProperties = -1
    }

    let context: ModelContext
    /// `context`, which the loader keeps alive, unretained.
    private let unownedContext: Unmanaged<ModelContext>
    let options: DeserializationOptions
    let source: any ModelSource
    /// Set here, and by object-id matching (see `GraphLoader+ObjectIds.swift`).
    @exclusivity(unchecked) var headers: [Header] = []
    /// The envelope's `tracking` member, put back into the context at commit.
    @exclusivity(unchecked) var tracking: TrackingMember?
    @exclusivity(unchecked) var positions = ModelIDTable()
    /// Whether the context held no model when the load started: then no model of the data can be
    /// in it (one another thread inserts meanwhile is turned away at commit), and instantiating
    /// needs no lookup under the context's lock.
    @exclusivity(unchecked) private(set) var contextWasEmpty = false
    /// The context's change generation when the load started (see ``enlist(_:_:_:)``).
    @exclusivity(unchecked) private var stagedGeneration: UInt32 = 0
    /// The instance of each model, unretained: retaining and releasing a model (which has a
    /// side table) for each pointer to it cost more than the rest of resolving the pointer.
    /// The batches keep new models alive, `owned` the others.
    @exclusivity(unchecked) var instances: [Unmanaged<AnyObject>?] = []
    /// The type each instance was made as; for a model whose type is not registered, the type of
    /// the first pointer to it.
    @exclusivity(unchecked) var instanceTypes: [(any Model.Type)?] = []
    @exclusivity(unchecked) var owned: [AnyObject] = []
    /// The types of instances, by their code in ``ModelIDTable``'s slots (code = position + 1).
    @exclusivity(unchecked) private(set) var typeCodes: [any Model.Type] = []
    /// Whether the instance at each index was already in the context (updated at commit) rather
    /// than created by this load (filled in at once).
    @exclusivity(unchecked) private var wasInContext: [Bool] = []
    /// Whether the properties of the model at each index have been decoded.
    @exclusivity(unchecked) var decoded: [Bool] = []
    /// Whether models are staged as the source reads them, in one pass (see
    /// `GraphLoader+Streaming.swift`).
    @exclusivity(unchecked) private(set) var isStreaming: Bool
    /// Whether the loader fills models on a worker thread, as a copy of the loader or as the
    /// loader itself while workers run (see `GraphLoader+Parallel.swift`): it makes no instance
    /// and no placeholder, and throws instead.
    @exclusivity(unchecked) var isWorker: Bool
    /// The number of models workers filled (see `GraphLoader+Parallel.swift`).
    @exclusivity(unchecked) var filledInParallel = 0
    /// The number of models made for pointers whose model the source has not read yet.
    @exclusivity(unchecked) var pendingCount = 0
    @exclusivity(unchecked) var placeholders: [ModelID: any Model] = [:]
    @exclusivity(unchecked) var placeholderOrder: [any Model] = []
    @exclusivity(unchecked) private var updates: [() -> Void] = []
    /// What the updates of models with relationships do to the other sides of their inverses,
    /// run at commit once the new models are registered.
    @exclusivity(unchecked) private var propagations: [() -> Void] = []
    /// The new models to register at commit, one batch per type.
    @exclusivity(unchecked) private var batches: [any LoadedModelBatch] = []
    @exclusivity(unchecked) private var batchIndex: [ObjectIdentifier: Int] = [:]
    /// The batch last appended to, and its type: models of one type mostly come together.
    @exclusivity(unchecked) private var lastBatchType: ObjectIdentifier?
    @exclusivity(unchecked) private var lastBatch: AnyObject?
    @exclusivity(unchecked) private var contextFree: [ObjectIdentifier: Bool] = [:]
    /// The type `isContextFree` was asked about last, and the answer: models of a type mostly
    /// come together.
    @exclusivity(unchecked) private var lastContextFree: (type: ObjectIdentifier?, answer: Bool) = (nil, false)
    @exclusivity(unchecked) private var plans: [ObjectIdentifier: DirectPlan?] = [:]
    @exclusivity(unchecked) private var lastPlanType: ObjectIdentifier?
    @exclusivity(unchecked) private var lastPlan: DirectPlan?
    @exclusivity(unchecked) private var types: [String: any Model.Type] = [:]
    @exclusivity(unchecked) private var names: [ObjectIdentifier: String] = [:]
    /// Nodes of shared documents (see ``TreeDocument/nodesAreShared``) known to hold a pointer's
    /// keys, its "ModelPointer" tag, and a model name checked against a type.
    struct PointerKeys {
        var modelId = -1
        var model = -1
        var type = -1
        var tagValue = -1
        var nameValue = -1
        var nameType: ObjectIdentifier?
    }
    @exclusivity(unchecked) var pointerKeys = PointerKeys()
    /// The ISO date text read last (JSON), and its date.
    @exclusivity(unchecked) var dateCache = ISODateCache()
    /// The type whose pointers were matched in their compact form last, and its name's bytes.
    @exclusivity(unchecked) var compactNameType: ObjectIdentifier?
    @exclusivity(unchecked) var compactName: [UInt8] = []
    /// The keys of a model's header, and the nodes of shared documents known to hold them.
    static let headerKeyNames = ["properties", "modelId", "model", "objectId", "createdAt", "updatedAt"]
    @exclusivity(unchecked) var headerKeys = [Int](repeating: -1, count: 6)
    /// In shared documents: the node of the last model name read, and of a null object id.
    @exclusivity(unchecked) var headerName = (node: -1, name: "")
    @exclusivity(unchecked) var headerNull = -1
    /// The last type `name(of:)` was asked about, and its name: pointers mostly repeat it.
    @exclusivity(unchecked) private var lastNamed: ObjectIdentifier?
    @exclusivity(unchecked) private var lastName = ""
    /// The last name `type(named:)` found a type for, and the type.
    @exclusivity(unchecked) private var lastTypeName = ""
    @exclusivity(unchecked) private var lastType: (any Model.Type)?
    /// For records (see `RecordSource.swift`): the model id of a pointer's target from its model
    /// name and object id, which records' pointers give instead of a model id.
    @exclusivity(unchecked) var pointerIds: ((String, String) -> ModelID)?
    /// For a merge: the ids of models of the data matched to models of the context by object id,
    /// and those models' ids (see `GraphLoader+ObjectIds.swift`).
    @exclusivity(unchecked) var redirects: [ModelID: ModelID] = [:]
    /// Decodes default values (which never hold references) for keys missing from the data.
    private(set) lazy var defaultsLoader = GraphLoader.detached()
    /// The stored keys the last Codable decoding of properties did not ask for (see
    /// `GraphLoader+UnknownKeys.swift`).
    @exclusivity(unchecked) var unknownKeysOfLastDecode: [String] = []
    /// The array the Codable path notes asked keys in, kept from model to model.
    @exclusivity(unchecked) var askedKeysBuffer: [String] = []
    /// The model types and keys warned about in this load, and the warnings shown at commit.
    @exclusivity(unchecked) var warnedUnknownKeys: Set<UnknownKey> = []
    @exclusivity(unchecked) var pendingWarnings: [String] = []

    /// Creates a loader; with `streaming`, one that stages each model as the source reads it,
    /// which only works on input that loads without errors (see `GraphLoader+Streaming.swift`).
    init(context: ModelContext, options: DeserializationOptions, source: any ModelSource, streaming: Bool = false) {
        self.context = context
        unownedContext = Unmanaged.passUnretained(context)
        self.options = options
        self.source = source
        isStreaming = streaming
        isWorker = false
    }

    /// A copy of `main`, once it has read every header and made every instance, that fills
    /// models on another thread with `source` and caches of its own. It shares `main`'s arrays
    /// and id table, which nobody writes to while workers run.
    init(workerOf main: GraphLoader, source: any ModelSource) {
        context = main.context
        unownedContext = main.unownedContext
        options = main.options
        self.source = source
        isStreaming = false
        isWorker = true
        headers = main.headers
        positions = main.positions
        contextWasEmpty = main.contextWasEmpty
        stagedGeneration = main.stagedGeneration
        instances = main.instances
        instanceTypes = main.instanceTypes
        typeCodes = main.typeCodes
        wasInContext = main.wasInContext
    }

    /// Makes room for `count` models, when the source knows how many there are (growing the id
    /// table rehashes every id in it).
    func reserveCapacity(_ count: Int) {
        reserveArrays(count)
        reserveIdCapacity(count)
    }

    /// Makes room in the arrays kept per model for `count` models. An estimate may be generous:
    /// capacity never written to costs address space, not memory, while growing copies each
    /// array into newly touched pages (at a million models, most of the time spent on faulting
    /// in zeroed pages went there).
    func reserveArrays(_ count: Int) {
        headers.reserveCapacity(count)
        instances.reserveCapacity(count)
        instanceTypes.reserveCapacity(count)
        wasInContext.reserveCapacity(count)
        decoded.reserveCapacity(count)
    }

    /// Told by a source, before it adds any header, about how many models it has: a streaming
    /// loader stops streaming when workers would fill that many, since workers need every
    /// header read first (see `GraphLoader+Parallel.swift`). It is then a general loader, whose
    /// errors are final.
    ///
    /// Workers win even for JSON, which the general loader scans twice: at 10,000 posts and
    /// above, loading with two workers took about 22% less time than streaming on one thread.
    func considerWorkers(forAbout count: Int) {
        if isStreaming, headers.isEmpty, options.parallelism.workers(for: count) > 1 { isStreaming = false }
    }

    /// Sizes the id table for `count` models, when the source can only estimate how many there are.
    func reserveIdCapacity(_ count: Int) {
        positions.reserveCapacity(count)
    }

    /// Reserves room for about `count` models once ``deferredReservationModels`` models have been
    /// read: a source that can only estimate the count from its size (JSON) would otherwise size
    /// tables from a file that may fail at its first byte (a 4 GB file took 532 MiB that way).
    func reserveOnceModelsAreRead(arrays: Int, ids: Int) {
        reserveArrays(min(arrays, Self.deferredReservationModels))
        reserveIdCapacity(min(ids, Self.deferredReservationModels))
        if arrays > Self.deferredReservationModels || ids > Self.deferredReservationModels {
            deferredReservation = (arrays, ids)
        }
    }

    /// How many models a source's input must yield before it is trusted with tables sized from
    /// its length.
    static let deferredReservationModels = 1024
    @exclusivity(unchecked) private var deferredReservation: (arrays: Int, ids: Int)?

    /// Adds a model's header, checking that its id is new to the data; returns its index.
    @discardableResult
    func add(_ header: Header) throws -> Int {
        let index = headers.count
        guard index < ModelIDTable.pending else {
            throw SerializationError(
                .malformedInput, modelIndex: index, expected: "fewer than \(ModelIDTable.pending) models",
                found: "more")
        }
        var made: ModelIDTable.Slot?
        if let first = positions.insert(header.id, index: index) {
            guard first == ModelIDTable.pending, let slot = positions.claim(header.id, index: index) else {
                throw SerializationError(
                    .duplicateModelId, modelIndex: index, modelName: header.name, path: "modelId",
                    expected: "a model id not used by another model in the data",
                    found: "\(header.id), already used at model index \(first)")
            }
            made = slot
        }
        if index == Self.deferredReservationModels, let reservation = deferredReservation {
            deferredReservation = nil
            reserveArrays(reservation.arrays)
            reserveIdCapacity(reservation.ids)
        }
        headers.append(header)
        instances.append(nil)
        instanceTypes.append(nil)
        wasInContext.append(false)
        decoded.append(false)
        if let made { try adopt(made, at: index) }
        return index
    }

    /// Loads every model in the data into the context.
    func loadAll() throws {
        contextWasEmpty = context.isEmpty
        stagedGeneration = context.changeGeneration
        guard !isStreaming || contextWasEmpty else { throw StreamingUnavailable() }
        try source.readHeaders(into: self)
        if isStreaming, pendingCount > 0 { throw StreamingUnavailable() }
        if options.matchesObjectIds, !contextWasEmpty { try matchObjectIds() }
        decodeInParallel()
        try decodeAll()
        try checkObjectIds()
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
        let rootInstance = try instance(Root.self, at: 0).takeUnretainedValue()
        decodeInParallel()
        try decodeAll()
        try checkObjectIds()
        commit()
        return rootInstance
    }

    /// Fails when a model's object id clashes with another's (see ``ObjectIdCheck``).
    private func checkObjectIds() throws {
        let entries = headers.indices.lazy.compactMap { index -> ObjectIdCheck.Entry? in
            let header = self.headers[index]
            guard let objectId = header.objectId, let type = self.instanceTypes[index] ?? self.type(named: header.name)
            else { return nil }
            return ObjectIdCheck.Entry(index: index, name: header.name, id: header.id, objectId: objectId, type: type)
        }
        try ObjectIdCheck.check(entries, against: contextWasEmpty ? nil : context) { positions.index(of: $0) != nil }
    }

    private func commit() {
        // One batch: live result sets update once for the whole load.
        context.batchChanges { commitInBatch() }
    }

    private func commitInBatch() {
        for update in updates { update() }
        // New models were marked as members of the context when they were filled in; the few
        // the context turns away (another thread inserted the same id meanwhile) are unmarked.
        for model in context.registerLoaded(batches) { Self.detach(model) }
        for model in placeholderOrder { insert(model) }
        for propagation in propagations { propagation() }
        // A file whose two sides of an inverse disagree (written by hand, or by an older
        // version) is repaired once every model is in place. Types without inverses skip it.
        for batch in batches { batch.repairInverses() }
        tracking?.apply(to: context) { positions.index(of: $0) != nil }
        flushWarnings()
    }

    private func insert<M: Model>(_ model: M) {
        guard !context.isContextFree(model) else { return }
        context.insert(model)
    }

    private static func detach<M: Model>(_ model: M) {
        let box = model.storage.box
        box.context = nil
        box.metadata.membership = .unmanaged
    }

    /// The model name of `type`, cached: the registry takes a lock.
    func name<M: Model>(of type: M.Type) -> String {
        let key = ObjectIdentifier(type)
        if key == lastNamed { return lastName }
        let name: String
        if let known = names[key] {
            name = known
        } else {
            name = ModelRegistry.name(of: type)
            names[key] = name
        }
        (lastNamed, lastName) = (key, name)
        return name
    }

    func type(named name: String) -> (any Model.Type)? {
        if let lastType, name == lastTypeName { return lastType }
        defer { (lastTypeName, lastType) = (name, types[name]) }
        if let known = types[name] { return known }
        let type = ModelRegistry.type(named: name)
        if let type { types[name] = type }
        return type
    }

    /// Decodes the properties of every model not decoded yet. A model whose type is not
    /// registered becomes decodable once a typed pointer to it has been read, so passes repeat
    /// while they make progress.
    private func decodeAll() throws {
        var remaining = decoded.reduce(0) { $0 + ($1 ? 0 : 1) }
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
    func instance<M: Model>(_ type: M.Type, at index: Int) throws -> Unmanaged<M> {
        if let staged = instances[index] {
            guard let typed = Self.cast(staged, to: M.self) else { throw conflict(at: index, expected: M.self) }
            return typed
        }
        // Workers only use the instances made before they started.
        if isWorker { throw StreamingUnavailable() }
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
        keep(model, at: index)
        return Unmanaged.passUnretained(model)
    }

    /// Keeps `model`, new and given the id of the model at `index`, as that model's instance.
    func keep<M: Model>(_ model: consuming M, at index: Int) {
        let instance = Unmanaged.passUnretained(model)
        instances[index] = Unmanaged<AnyObject>.fromOpaque(instance.toOpaque())
        instanceTypes[index] = M.self
        positions.setInstance(instance.toOpaque(), typeCode: typeCode(of: M.self), for: headers[index].id)
        // The batch that registers it at commit keeps it alive until then (retaining it now,
        // before any weak reference gives it a side table, takes the fast path; an instance a
        // worker made and retained moves in without a retain).
        if isContextFree(M.self) {
            owned.append(model)
        } else {
            enlist(model, model.storage.box, id: headers[index].id, objectId: headers[index].objectId)
        }
    }

    /// A small number for each type the loader made instances of, for ``ModelIDTable``'s slots.
    func typeCode<M: Model>(of type: M.Type) -> UInt32 {
        let key = ObjectIdentifier(M.self)
        if let position = typeCodes.firstIndex(where: { ObjectIdentifier($0) == key }) { return UInt32(position + 1) }
        typeCodes.append(M.self)
        return UInt32(typeCodes.count)
    }

    /// `object as? M` for an unretained object, with a fast path for a final model class.
    @inline(__always)
    private static func cast<M: Model>(_ object: Unmanaged<AnyObject>, to type: M.Type) -> Unmanaged<M>? {
        let exact = object._withUnsafeGuaranteedRef { ObjectIdentifier(Swift.type(of: $0)) == ObjectIdentifier(M.self) }
        if exact { return Unmanaged<M>.fromOpaque(object.toOpaque()) }
        return object._withUnsafeGuaranteedRef { $0 as? M }.map { Unmanaged.passUnretained($0) }
    }

    func isContextFree<M: Model>(_ type: M.Type) -> Bool {
        let key = ObjectIdentifier(M.self)
        if key == lastContextFree.type { return lastContextFree.answer }
        let isContextFree: Bool
        if let known = contextFree[key] {
            isContextFree = known
        } else {
            isContextFree = M.self is any ContextFreeModel.Type
            contextFree[key] = isContextFree
        }
        lastContextFree = (key, isContextFree)
        return isContextFree
    }

    /// The direct plan for `M`'s properties, cached (the plans' cache takes a lock).
    private func plan<M: Model>(for type: M.Type) -> DirectPlan? {
        let key = ObjectIdentifier(M.self)
        if key == lastPlanType { return lastPlan }
        let plan: DirectPlan?
        if let known = plans[key] {
            plan = known
        } else {
            plan = DirectPlan.of(M.self)
            plans[key] = .some(plan)
        }
        (lastPlanType, lastPlan) = (key, plan)
        return plan
    }

    /// Adds a new model to its type's batch, registered at commit. Its type slot and inserted
    /// generation are set now, while its storage is at hand: registering then has nothing to
    /// write to it when the type's list was empty and nothing changed meanwhile (otherwise it
    /// sets them again).
    func enlist<M: Model>(_ model: consuming M, _ box: ModelObject<M.Properties>, id: ModelID, objectId: String?) {
        let batch = batch(for: M.self)
        box.typeSlot = batch.count
        box.insertedGeneration = stagedGeneration
        batch.append(model, id: id, objectId: objectId)
    }

    /// The batch that registers the new models of type `M`.
    func batch<M: Model>(for type: M.Type) -> ModelContext.LoadedModels<M> {
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
    func stage<M: Model>(_ type: M.Type, at index: Int) throws {
        decoded[index] = true
        let unmanaged = try instance(M.self, at: index)
        let header = headers[index]
        // Anything the plan cannot read (or an error) leaves it to the Codable path below, which
        // decodes all the values again, or throws the error it describes.
        if !wasInContext[index], fillDirectly(unmanaged, at: index) { return }
        let properties: M.Properties
        do {
            if wasInContext[index], let filled = filledProperties(of: M.self, at: index) {
                // An update (a merge, a store's journal): the plan reads the values as it reads a
                // new model's, into fresh defaults, and the commit replaces the model's values.
                properties = filled
            } else {
                properties =
                    header.properties == Header.noProperties
                    ? M.Properties() : try source.decodeProperties(of: M.self, handle: header.properties, loader: self)
            }
        } catch let error as SerializationError {
            throw error.located(modelIndex: index, modelName: header.name)
        } catch let error as DecodingError {
            throw SerializationError(decodingError: error, modelIndex: index, modelName: header.name)
        } catch {
            throw SerializationError(
                .invalidValue, modelIndex: index, modelName: header.name, path: "properties",
                expected: "properties that decode", found: "error \(error)")
        }
        if !unknownKeysOfLastDecode.isEmpty { try reportUnknownKeys(of: M.self, at: index) }
        guard wasInContext[index] else {
            // Not visible to anyone yet: fill it in now, register it at commit.
            let box = unmanaged._withUnsafeGuaranteedRef { $0.storage.box }
            Self.fill(box, with: properties, header, joining: isContextFree(M.self) ? nil : unownedContext)
            return
        }
        let model = unmanaged.takeUnretainedValue()
        let context = self.context
        let hasRelationships = model.relationshipTable != nil
        updates.append { [unowned self] in
            let oldObjectId = model.storage.metadata.objectId
            let before = hasRelationships ? model.storage.values : nil
            // An existing model: loading is a reset of its changes, and observers and indexes
            // hear about what the load changed.
            model.replaceLoadedValues(properties)
            Self.stamp(model.storage.box, header, joining: nil)
            context.objectIdChanged(model, from: oldObjectId)
            // The models its relationships left or joined follow, once every model is in place.
            if let before { self.propagations.append { model.propagateReplacement(from: before) } }
        }
    }

    /// Fills in the new model at `index` with its type's direct plan, if it has one, and stamps
    /// it; `false` when the plan cannot read the data (or it has an error), with the values
    /// partly filled. A new model holds its type's default values, so they are filled in place.
    func fillDirectly<M: Model>(_ model: Unmanaged<M>, at index: Int) -> Bool {
        guard let plan = plan(for: M.self) else { return false }
        let header = headers[index]
        let box = model._withUnsafeGuaranteedRef { $0.storage.box }
        // A new model already holds its defaults, which is all a model without properties has.
        let filled =
            header.properties == Header.noProperties
            || (try? withUnsafeMutablePointer(to: &box.values) {
                try source.fillProperties(plan, at: UnsafeMutableRawPointer($0), handle: header.properties, loader: self)
            }) ?? false
        if filled { Self.stamp(box, header, joining: isContextFree(M.self) ? nil : unownedContext) }
        return filled
    }

    /// The values of the model at `index` read with its type's direct plan into a type's
    /// defaults, for a model already in the context; `nil` when the plan cannot read them.
    func filledProperties<M: Model>(of type: M.Type, at index: Int) -> M.Properties? {
        guard let plan = plan(for: M.self) else { return nil }
        var values = M.Properties()
        let handle = headers[index].properties
        if handle == Header.noProperties { return values }
        let filled =
            (try? withUnsafeMutablePointer(to: &values) {
                try source.fillProperties(plan, at: UnsafeMutableRawPointer($0), handle: handle, loader: self)
            }) ?? false
        return filled ? values : nil
    }

    /// Fills in a new model's storage: its values, identity and membership.
    private static func fill<Properties>(
        _ box: ModelObject<Properties>, with properties: consuming Properties, _ header: Header,
        joining context: Unmanaged<ModelContext>?
    ) {
        // The values move into the storage: copying them would retain every string and array in
        // them (and each to-many reference's context link).
        box.values = properties
        stamp(box, header, joining: context)
    }

    /// Gives a model its loaded identity, and a new model its membership of `context`.
    private static func stamp<Properties>(
        _ box: ModelObject<Properties>, _ header: Header, joining context: Unmanaged<ModelContext>?
    ) {
        box.metadata.objectId = header.objectId
        if let createdAt = header.createdAt { box.metadata.createdAt = createdAt }
        if let updatedAt = header.updatedAt { box.metadata.updatedAt = updatedAt }
        box.metadata.state = .loaded
        box.baseline = .saved  // a load is a reset
        if let context {
            // What ModelContext.insert does to a model it takes, done in the same access. The
            // context is passed unretained: it has a side table, so retaining it for each model
            // takes the slow path.
            context._withUnsafeGuaranteedRef { box.context = $0 }
            box.metadata.membership = .managed
        }
    }
}
