// Walking from a root in a context: the context's models are positioned by their type slot
// (see `TypeSlotPositions`), and their references are resolved in the context and positioned
// there, instead of through the walk's table by id.

extension GraphStreamWriter {
    /// The position the walk gave the model with `id`, if it gave it one: by id, or by type slot
    /// for a model of ``slotContext``.
    func position(of id: ModelID) -> Int? {
        positions.index(of: id) ?? (slotPositions == nil ? nil : slottedPosition(of: id))
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
