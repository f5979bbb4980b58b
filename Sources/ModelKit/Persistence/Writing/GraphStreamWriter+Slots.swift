// Walking from a root in a context: the context's models are positioned by their type slot
// (see `TypeSlotPositions`), and their references are resolved in the context and positioned
// there, instead of through the walk's table by id.

extension GraphStreamWriter {
    /// The position the walk gave the model with `id`, if it gave it one: by id, or by type slot
    /// for a model of ``slotContext``.
    func position(of id: ModelID) -> Int? {
        if let known = positions.index(of: id) { return known }
        guard slotPositions != nil else { return nil }
        if dropSlotsIfMoved() { return positions.index(of: id) }
        return slottedPosition(of: id)
    }

    /// Stops positioning models by type slot, when a model has left ``slotContext``'s lists
    /// since the walk began: removing one moves the last model of its list into its slot, so a
    /// slot no longer says which model a position belongs to. Every position the walk gave by
    /// slot goes into its table by id (the path of models outside the context), and the walk
    /// goes on by id alone, so that each model is still written once. Returns whether it did.
    ///
    /// Until then the slots are right for every model still at its slot in the kept list (the
    /// pages are indexed by that list, which does not change), and a reference to a model that
    /// left reads nil, as it does by id: so this is called only where a model that moved
    /// could mislead the walk, a model of the context not at its slot in the kept list and a
    /// position asked by id. There, a walk whose models stay put pays one integer compare;
    /// on the path of a model at its slot, nothing.
    ///
    /// From then on every reference to a queued model is looked up in its owner's context
    /// (``looksUpQueuedTargets``): a queued model may have left it, and its references then
    /// read nil, as before the switch.
    ///
    /// - Complexity: O(1) without a removal; O(*n*) in the models queued once, with one.
    @discardableResult
    func dropSlotsIfMoved() -> Bool {
        guard let contextIdentity = slotContextIdentity, unretainedSlots != nil else { return false }
        // Read without retaining the context (`slotContext` keeps it alive): a context is
        // weakly referenced, which makes each retain and release slow.
        let context = Unmanaged<ModelContext>.fromOpaque(
            UnsafeRawPointer(bitPattern: UInt(bitPattern: contextIdentity)).unsafelyUnwrapped)
        guard context._withUnsafeGuaranteedRef({ $0.removalCount }) != slotRemovals else { return false }
        retiredSlots = slotPositions
        slotContext = nil
        slotPositions = nil
        looksUpQueuedTargets = true
        positions.reserveCapacity(Swift.max(2 * (queueBase + queued.count), Swift.min(8 * queued.count, expectedModels)))
        for offset in queued.indices where queued[offset].context == contextIdentity {
            // (Its id, read from the model: a model positioned by id is there already.)
            positions.insert(queued[offset].model.modelId, index: queueBase + offset)
        }
        return true
    }

    /// Writes the pointer for the reference at `reference` when the owner is in ``slotContext``
    /// and the target is its model of class `M` exactly, queuing the target when it is new;
    /// returns `false` otherwise. The target is found in the context and positioned by its type
    /// slot, and neither is retained unless it is queued.
    @inline(__always)
    func pointerBySlot<M: Model>(_ reference: UnsafePointer<ModelRef<M>>) throws -> Bool {
        guard let id = reference.pointee.id, let owner = unretainedOwnerContext, let slots = unretainedSlots,
            let found = owner._withUnsafeGuaranteedRef({ $0.unretainedModel(M.self, modelId: id) })
        else { return false }
        return try found._withUnsafeGuaranteedRef { object in
            let slot = object.typeSlot
            if slot >= 0 {
                let (known, isKept) = slots._withUnsafeGuaranteedRef { slots in
                    let table = slots.table(for: ObjectIdentifier(M.self))
                    return (
                        slots.position(table: table, slot: slot),
                        slots.keepsAlive(ObjectIdentifier(object), table: table, slot: slot)
                    )
                }
                // (See `enqueueModel`: a model in the kept list at its slot is the one positioned there.)
                if isKept, known >= 0 {
                    writePointer(name: name(of: M.self), id: id, objectId: objectIds.isEmpty ? nil : objectIds[known])
                    return true
                }
                if isKept, boundary == nil, positions.count == 0 {
                    // New, and no model outside the context can have its id: queued here without
                    // copying its metadata out of it (as `pointer(to:)` does) or finding its
                    // slot again (as `enqueueModel` does).
                    let next = queueBase + queued.count
                    slots._withUnsafeGuaranteedRef { slots in
                        slots.setPosition(next, table: slots.table(for: ObjectIdentifier(M.self)), slot: slot)
                    }
                    if queued.count == queued.capacity { makeQueueRoom() }
                    queued.append(
                        QueuedModel(
                            identity: ObjectIdentifier(object), type: ObjectIdentifier(M.self), context: ownerContextIdentity,
                            modelType: M.self))
                    let objectId = object.metadata.objectId
                    if let objectId { objectIds[next] = objectId }
                    writePointer(name: name(of: M.self), id: id, objectId: objectId)
                    return true
                }
            }
            try pointer(to: unsafeDowncast(object, to: M.self), inOwnersContext: true)
            return true
        }
    }

    /// Keeps ``slotContext``'s list of `M`'s models for the walk (see ``TypeSlotPositions``).
    func keepList<M: Model>(of type: M.Type, table: Int) {
        let models = slotContext?.withRegistry { registry in
            registry.byType[ObjectIdentifier(M.self)].flatMap { ($0 as? ModelContext.TypeList<M>)?.models }
        }
        slotPositions?.keep(models ?? [], table: table)
    }

    /// The position of `slotContext`'s model with `id`, when the walk gave it one by type slot:
    /// for a model outside the context that has its id (rare, so it goes through the registry).
    func slottedPosition(of id: ModelID) -> Int? {
        guard let slots = slotPositions, let found = slotContext?.withRegistry({ $0.models[id] }) else { return nil }
        let object = unsafeDowncast(found as AnyObject, to: AnyModelObject.self)
        guard object.typeSlot >= 0 else { return nil }
        let known = slots.position(table: slots.table(for: ObjectIdentifier(Swift.type(of: found))), slot: object.typeSlot)
        guard known >= 0, queued[known - queueBase].identity == ObjectIdentifier(object) else { return nil }
        return known
    }

    /// Makes room in `queued` when models are positioned by type slot (`positions` does not
    /// grow then), as ``makeRoom()`` does. (`queue` then holds few models, if any.)
    func makeQueueRoom() {
        let count = queued.count
        queued.reserveCapacity(Swift.max(2 * count, Swift.min(8 * count, expectedModels), 16))
    }
}
