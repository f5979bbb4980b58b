import Foundation

// Streaming: loading in one pass over the input.
//
// The general loader reads every model's header before it decodes any properties, so that a
// pointer always finds the header of its target. For JSON that means scanning the whole text
// twice: once to find where each model's properties end, once to read them. A streaming loader
// instead stages each model as soon as the source has read its header. A pointer to a model the
// source has not reached yet makes the instance from the pointer's type and marks its id
// ``ModelIDTable/pending``; the model's header, when it comes, adopts that instance.
//
// Streaming only covers input that loads cleanly into an empty context. Anything else (an error,
// a pointer to a model the data lacks, a model whose name disagrees with a pointer to it) makes
// it throw, having changed nothing, and the caller loads again with the general loader, which
// reports errors exactly and handles every case. A bad file therefore costs up to two attempts
// (a large one, loaded by workers instead of streaming, one).

/// Thrown by a streaming loader for input it leaves to the general loader.
struct StreamingUnavailable: Error {}

extension GraphLoader {
    /// Stages the model the source has just added at `index`, if its type is known (a model
    /// whose type is not registered waits for a typed pointer, as in the general loader).
    ///
    /// - Returns: Whether the model's properties were decoded.
    func stageAdded(at index: Int) throws -> Bool {
        guard let type = instanceTypes[index] ?? type(named: headers[index].name) else { return false }
        try stage(type, at: index)
        return true
    }

    /// The instance for a pointer to `id`, which the source has not read yet: a new `T`, whose
    /// header must name `T` when it comes. `nil` when not streaming.
    func forwardInstance<T: Model>(_ type: T.Type, id: ModelID) -> Unmanaged<T>? {
        guard isStreaming else { return nil }
        let model = T()
        model.storage.metadata.modelId = id
        if isContextFree(T.self) {
            owned.append(model)
        } else {
            // The object id comes with the header (see `adopt`).
            enlist(model, model.storage.box, id: id, objectId: nil)
        }
        let unmanaged = Unmanaged.passUnretained(model)
        positions.insert(
            id, index: Int(ModelIDTable.pending), instance: unmanaged.toOpaque(), typeCode: typeCode(of: T.self))
        pendingCount += 1
        return unmanaged
    }

    /// Gives the model just added at `index` the instance a pointer made for it (`slot` holds it).
    func adopt(_ slot: ModelIDTable.Slot, at index: Int) throws {
        guard let instance = slot.instance, slot.typeCode > 0 else { throw StreamingUnavailable() }
        let type: any Model.Type = typeCodes[Int(slot.typeCode) - 1]
        try adopt(type, instance, at: index)
    }

    private func adopt<M: Model>(_ type: M.Type, _ instance: UnsafeMutableRawPointer, at index: Int) throws {
        // The general loader says what is wrong with a model whose name is not its pointer's.
        guard headers[index].name == name(of: M.self) else { throw StreamingUnavailable() }
        let model = Unmanaged<M>.fromOpaque(instance)
        instances[index] = Unmanaged<AnyObject>.fromOpaque(instance)
        instanceTypes[index] = M.self
        pendingCount -= 1
        if let objectId = headers[index].objectId, !isContextFree(M.self) {
            let slot = model._withUnsafeGuaranteedRef { $0.storage.box.typeSlot }
            batch(for: M.self).setObjectId(objectId, at: slot)
        }
    }
}
