import Foundation

// Undo registration. Off unless the context has an undo manager: then every write of a model
// takes the path that saves its values before the write (as for a model someone listens to),
// and the undo of a write puts those values back as a whole. The other side of an inverse
// registers its own write, so restoring needs no inverse keeping; an insertion's undo removes
// the model and a removal's undo inserts it again (its references are in its values, which a
// removal leaves alone). What one action does is one undo group.

extension ModelContext {
    /// Runs `body` as one undo step when the context has an undo manager, and as one batch of
    /// changes (see ``batchChanges(_:)``, which opens the undo group).
    func undoGroup<Result>(_ body: () throws -> Result) rethrows -> Result {
        try batchChanges(body)
    }

    /// Registers the undo of inserting `model`.
    func registerUndoOfInsert<M: Model>(_ model: M) {
        registerContextUndo { [weak self] in self?.remove(model, typeSlot: nil) }
    }

    /// Registers the undo of removing `model`.
    func registerUndoOfRemove<M: Model>(_ model: M) {
        registerContextUndo { [weak self] in self?.insert(model) }
    }
}

extension Model {
    /// Registers, with the context's undo manager, putting back `values` (what the properties
    /// were before a write).
    func registerUndo(restoring values: Properties) {
        guard let context = storage.context, context.undoManager != nil else { return }
        context.registerContextUndo { [self] in
            let pending = _willChange()
            storage.values = values
            _didChange(pending)
        }
    }
}
