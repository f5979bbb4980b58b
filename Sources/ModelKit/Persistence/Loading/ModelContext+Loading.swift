import Foundation

/// The new models of one type a load created, registered together at its commit.
///
/// Typed per model type, so that registering them neither opens an existential nor retains and
/// releases each model on the way (every model has a side table, so each retain takes the slow
/// path): the type list takes the batch's array as it is.
protocol LoadedModelBatch: AnyObject {
    var count: Int { get }
    /// Registers the batch's models under the context's lock. With `checkIds` false the context
    /// held no model when registration started, so only object ids can clash.
    func register(in registry: inout ModelContext.Registry, checkIds: Bool, rejected: inout [any Model])
    /// What `ModelContext.insert` does after registering a model, for the accepted ones.
    func didRegister(in context: ModelContext, generation: UInt32)
    /// Makes both sides of the loaded models' inverses agree (see `RelationshipTable.repair`).
    func repairInverses()
}

extension ModelContext {
    final class LoadedModels<M: Model>: LoadedModelBatch {
        // Unchecked: appended to for every model a load makes, by the one loading thread; the
        // context reads them at commit, on that thread too.
        @exclusivity(unchecked) private(set) var models: [M] = []
        @exclusivity(unchecked) private var ids: [ModelID] = []
        @exclusivity(unchecked) private var objectIds: [String?] = []
        /// Per model after registration: 0 turned away, 1 counts as inserted, 2 registered but
        /// counts as updated (it was removed since the last reset).
        private var outcomes: [UInt8] = []
        /// The inserted generation the loader gave every model, with type slots counting from 0.
        private let presetGeneration: UInt32
        /// Whether registering kept the preset slots and every model counts as inserted.
        private var presetsHold = false

        init(presetGeneration: UInt32) {
            self.presetGeneration = presetGeneration
        }

        var count: Int { models.count }

        /// Makes room for `count` more models.
        func reserveCapacity(adding count: Int) {
            models.reserveCapacity(models.count + count)
            ids.reserveCapacity(ids.count + count)
            objectIds.reserveCapacity(objectIds.count + count)
        }

        func append(_ model: consuming M, id: ModelID, objectId: String?) {
            models.append(model)
            ids.append(id)
            objectIds.append(objectId)
        }

        /// Sets the object id of the model at `position`, appended before its header was read.
        func setObjectId(_ objectId: String, at position: Int) {
            objectIds[position] = objectId
        }

        func register(in registry: inout Registry, checkIds: Bool, rejected: inout [any Model]) {
            let type = ObjectIdentifier(M.self)
            outcomes = Array(repeating: 1, count: models.count)
            var anyRejected = false
            var allInserted = true
            models.withUnsafeBufferPointer { models in
                for position in models.indices {
                    // The map's slots are far apart: a few ids ahead, their reads overlap.
                    let ahead = position + ModelIDHashing.prefetchDistance
                    if ahead < models.count { registry.models.prefetch(ids[ahead]) }
                    let id = ids[position]
                    let objectKey = objectIds[position].map { ObjectKey(type: type, objectId: $0) }
                    if (checkIds && registry.models[id] != nil) || objectKey.map({ registry.objectIds[$0] != nil }) == true {
                        rejected.append(models[position])
                        outcomes[position] = 0
                        anyRejected = true
                        continue
                    }
                    registry.models.insert(Unmanaged.passUnretained(models[position]), for: id)
                    if let objectKey { registry.objectIds[objectKey] = models[position] }
                    if !registry.log.inserted(id) {
                        outcomes[position] = 2
                        allInserted = false
                    }
                }
            }
            if anyRejected {
                let accepted = models.indices.filter { outcomes[$0] != 0 }.map { models[$0] }
                registry.addToTypeList(contentsOf: accepted)
            } else {
                presetsHold = registry.addToTypeList(contentsOf: models, slotsPreset: true) && allInserted
            }
        }

        func didRegister(in context: ModelContext, generation: UInt32) {
            let quiet = context.indexRegistry.isEmpty && context.changeObservers.isEmpty
            // New models' quiet epochs are still 0; their slots and generations already right.
            if quiet && presetsHold && generation == presetGeneration { return }
            models.withUnsafeBufferPointer { models in
                for position in models.indices where outcomes[position] != 0 {
                    if quiet {
                        // All didInsert does with no index and no observer, without passing
                        // each model to it (a generic call copies, so retains, each model).
                        let box = models[position].storage.box
                        box.quietEpoch = 0
                        box.insertedGeneration = outcomes[position] == 1 ? generation : 0
                    } else {
                        context.didInsert(models[position], countsAsInserted: outcomes[position] == 1, generation: generation)
                    }
                }
            }
        }
    }

    /// Registers models created by a load, under one lock: the bulk counterpart of
    /// ``insert(_:isolation:)`` for models that have never been in a context, whose ids and object ids the
    /// loader already knows (reading them from each model would copy each model's storage).
    ///
    /// As with ``insert(_:isolation:)``, when the context already holds a model with the same id (or type
    /// and object id), that model stays and the loaded one is left out. Models are registered one
    /// type after another (in the order the types first appeared), each type in the order the loader
    /// made its models.
    ///
    /// - Returns: The models left out.
    func registerLoaded(_ batches: [any LoadedModelBatch]) -> [any Model] {
        let generation = changeGeneration
        let rejected = withRegistry { registry -> [any Model] in
            var rejected: [any Model] = []
            let total = batches.reduce(0) { $0 + $1.count }
            registry.models.reserveCapacity(registry.models.count + total)
            // The loader made sure the ids it loads are distinct: in an empty context none clash.
            let checkIds = !registry.models.isEmpty
            for batch in batches { batch.register(in: &registry, checkIds: checkIds, rejected: &rejected) }
            return rejected
        }
        for batch in batches { batch.didRegister(in: self, generation: generation) }
        return rejected
    }
}

extension ModelContext.Registry {
    /// Appends `models`, never in a context before, to their type's list; an empty list takes
    /// the array itself. With `slotsPreset`, the models' type slots already count from 0, and
    /// are only set again if the list was not empty.
    ///
    /// - Returns: Whether the preset slots were kept.
    @discardableResult
    mutating func addToTypeList<M: Model>(contentsOf models: [M], slotsPreset: Bool = false) -> Bool {
        let key = ObjectIdentifier(M.self)
        let list: ModelContext.TypeList<M>
        if let existing = byType[key] {
            list = unsafeDowncast(existing, to: ModelContext.TypeList<M>.self)
        } else {
            list = ModelContext.TypeList<M>()
            byType[key] = list
        }
        if slotsPreset && list.models.isEmpty {
            list.models = models
            return true
        }
        var slot = list.models.count
        models.withUnsafeBufferPointer { models in
            // By index: iterating would copy, so retain and release, each model.
            for position in models.indices {
                models[position].storage.box.typeSlot = slot
                slot += 1
            }
        }
        if list.models.isEmpty {
            list.models = models
        } else {
            list.models.append(contentsOf: models)
        }
        return false
    }
}
