import Foundation

// The out-of-line parts of the reference accessors (`post.author`, `author.posts`), which are
// inlined into the app's code (Model+Properties.swift). Inlined, a key path is a literal and the
// accessor is specialized for the app's types, so its common path (a model that has already
// been changed and that nobody listens to) needs no run-time look-up of generic types. What is
// rare or long stays here: resolving a reference, writes that keep an inverse in line, undo.

extension Model {
    /// The model with `id` for a reference of this model: in its context, else among the models
    /// it holds (see ``ModelObject/held``); `nil` for the empty id.
    @usableFromInline
    func _target<Target: Model>(_ type: Target.Type, id: ModelID) -> Target? {
        guard !id.isZero else { return nil }
        if let context, let found = context.model(Target.self, modelId: id) { return found }
        let held = storage.box.held
        return held.isEmpty ? nil : ModelRef<Target>.live(id, among: held)
    }

    /// Whether setting a reference that holds `oldId` to `newValue` changes it; when it does,
    /// makes sure this model can reach `newValue` (see ``adopt(_:)``).
    @usableFromInline
    func _referenceWillChange<Target: Model>(from oldId: ModelID, to newValue: Target?) -> Bool {
        guard let newValue else { return !oldId.isZero }
        // The same id may name another instance (the old target was removed and this is a new
        // model with its id): that is a change.
        if oldId == newValue.metadata.modelId, _target(Target.self, id: oldId) === newValue { return false }
        adopt(newValue)
        return true
    }

    /// A write of a to-one reference that is not quiet: it is recorded and reported, and a
    /// reference with an inverse brings the other side in line, in one undo group.
    @usableFromInline @inline(never)
    func _writeReference<Target: Model>(
        _ newValue: Target?, replacing oldId: ModelID, at keyPath: WritableKeyPath<Properties, ModelRef<Target>>
    ) {
        let storage = self.storage
        let quiet = storage.box.writesQuietlyKeepingInverses
        let field = inverseField(keyPath)
        // Both sides' changes in one undo group (no undo manager listens while quiet).
        let undo = field == nil || quiet ? nil : storage.context?.undoManager
        undo?.beginUndoGrouping()
        if quiet {
            storage.values[keyPath: keyPath] = ModelRef(newValue)
        } else {
            let pending = _willChange()
            storage.values[keyPath: keyPath] = ModelRef(newValue)
            _didChange(pending)
        }
        field?.propagate(owner: self, removed: oldId.isZero ? [] : [oldId], added: newValue.map { [$0] } ?? [])
        undo?.endUndoGrouping()
    }

    /// Assigns a whole to-many reference (`author.posts = …`): its new models join this model's
    /// context (or this model holds them), and a reference with an inverse brings the other side
    /// in line.
    @usableFromInline @inline(never)
    func _writeArray<Element: Model>(
        _ newValue: ModelArray<Element>, at keyPath: WritableKeyPath<Properties, ModelArray<Element>>
    ) {
        _checkIsolation()
        let storage = self.storage
        var array = newValue
        array.context = storage.context
        storage.box.hold(array.release(to: storage.context))
        if storage.writesQuietly {
            storage.values[keyPath: keyPath] = array
            return
        }
        let quiet = storage.box.writesQuietlyKeepingInverses
        let field = inverseField(keyPath)
        let before = field == nil ? [] : storage.values[keyPath: keyPath].ids
        let undo = field == nil || quiet ? nil : storage.context?.undoManager
        undo?.beginUndoGrouping()
        if quiet {
            storage.values[keyPath: keyPath] = array
        } else {
            let pending = _willChange()
            storage.values[keyPath: keyPath] = array
            _didChange(pending)
        }
        if let field {
            let after = array.ids
            let (old, new) = (Set(before), Set(after))
            let added = Set(after.filter { !old.contains($0) }).compactMap { field.side.resolve($0, from: self) }
            field.propagate(owner: self, removed: before.filter { !new.contains($0) }, added: added)
        }
        undo?.endUndoGrouping()
    }

    /// Starts a mutation of a to-many reference in place that is not quiet (see
    /// ``_endArrayMutation(_:at:)``): saves what change tracking needs, and for a reference with an
    /// inverse opens a journal of what the mutation removes and adds, in one undo group.
    @usableFromInline @inline(never)
    func _beginArrayMutation<Element: Model>(at keyPath: WritableKeyPath<Properties, ModelArray<Element>>)
        -> _ArrayMutation<Properties>
    {
        let storage = self.storage
        storage.values[keyPath: keyPath].attach(context: storage.context, held: storage.box.held)
        var mutation = _ArrayMutation<Properties>()
        let quiet = storage.box.writesQuietlyKeepingInverses
        if let field = inverseField(keyPath) {
            mutation.field = field
            mutation.undo = quiet ? nil : storage.context?.undoManager
            mutation.undo?.beginUndoGrouping()
            mutation.pending = quiet ? nil : _willChange()
            // After `_willChange`, so that the values it may save (for observers, for undo)
            // don't hold the journal.
            mutation.spare = ModelArrayJournal.open(for: &storage.values[keyPath: keyPath], in: storage.context)
        } else if !quiet {
            mutation.pending = _willChange()
        }
        return mutation
    }

    /// Ends a mutation started by ``_beginArrayMutation(at:)``: reports the change, has the
    /// context adopt what was added (this model holds what it can't), and brings the inverse in
    /// line.
    @usableFromInline @inline(never)
    func _endArrayMutation<Element: Model>(
        _ mutation: _ArrayMutation<Properties>, at keyPath: WritableKeyPath<Properties, ModelArray<Element>>
    ) {
        let storage = self.storage
        if let pending = mutation.pending { _didChange(pending) }
        // Releasing empties the array's `held`, the journal with it.
        storage.box.hold(storage.values[keyPath: keyPath].release(to: storage.context))
        if let field = mutation.field, let spare = mutation.spare {
            let journal = spare.journal
            field.propagate(owner: self, removed: journal.removed, added: journal.added)
            ModelArrayJournal.close(spare, in: storage.context)
            mutation.undo?.endUndoGrouping()
        }
    }
}

/// What a mutation of a to-many reference that is not quiet carries from its start to its end:
/// the change being recorded, and for a reference with an inverse, its journal and undo group.
/// A struct: a class would cost an allocation per `append` on an array with an inverse.
@usableFromInline struct _ArrayMutation<Properties: ModelProperties> {
    var pending: PendingChange<Properties>?
    var field: RelationshipTable.Field?
    var spare: ModelArrayJournal.Spare?
    var undo: (any UndoRegistering)?

    @usableFromInline init() {}
}
