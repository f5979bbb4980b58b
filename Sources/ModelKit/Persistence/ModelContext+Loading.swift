import Foundation

extension ModelContext {
    /// A model created by a load, with the identity it was loaded with.
    struct LoadedModel {
        let model: any Model
        let type: ObjectIdentifier
        let id: ModelID
        let objectId: String?
    }

    /// Registers models created by a load, under one lock: the bulk counterpart of
    /// ``insert(_:)`` for models that have never been in a context, whose ids and object ids the
    /// loader already knows (reading them from each model would copy each model's storage).
    ///
    /// As with ``insert(_:)``, when the context already holds a model with the same id (or type
    /// and object id), that model stays and the loaded one is left out.
    ///
    /// - Returns: The models left out.
    func registerLoaded(_ loaded: [LoadedModel]) -> [any Model] {
        let generation = changeGeneration
        var accepted: [(model: any Model, countsAsInserted: Bool)] = []
        accepted.reserveCapacity(loaded.count)
        let rejected = registry.withLock { registry -> [any Model] in
            var rejected: [any Model] = []
            registry.models.reserveCapacity(registry.models.count + loaded.count)
            for entry in loaded {
                let objectKey = entry.objectId.map { ObjectKey(type: entry.type, objectId: $0) }
                if registry.models[entry.id] != nil || objectKey.map({ registry.objectIds[$0] != nil }) == true {
                    rejected.append(entry.model)
                    continue
                }
                registry.models[entry.id] = entry.model
                if let objectKey { registry.objectIds[objectKey] = entry.model }
                registry.addToTypeList(entry.model)
                accepted.append((entry.model, registry.log.inserted(entry.id)))
            }
            return rejected
        }
        // What insert(_:) does after registering a model: change tracking, indexes, observers.
        for (model, countsAsInserted) in accepted {
            didInsert(model, countsAsInserted: countsAsInserted, generation: generation)
        }
        return rejected
    }
}
