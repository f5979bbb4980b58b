import Foundation

// Property access through @dynamicMemberLookup. Plain assignments go through `set`, compound
// mutations (`+=`, `append`) through `_modify`, which mutates the stored value in place so that
// appending to an array property is O(1) rather than a copy per call.
//
// Every write first checks `storage.writesQuietly`: when it holds (the model has already been
// changed since its last reset and nobody wants to hear about each write) the write is a plain
// store. Otherwise it goes through `_willChange`/`_didChange` (Changes/ChangeTracker.swift), which
// save the values for change tracking, tell the Observation registrar and report the change.
// A model whose type declares relationships is quiet in its own way
// (`writesQuietlyKeepingInverses`): its plain writes take `_willChange`, which returns at once,
// and a quiet write of a reference still brings its inverse in line.
//
// The slow path hands the model to those functions as an `Unmanaged` retained inside the slow
// branch. Passing `self` itself would make the caller keep its own reference retained across the
// whole write, fast path included (the optimizer does not sink that retain into the branch that
// needs it), which was most of the cost of a write. The store itself goes through a pointer into
// the storage box taken before the branch, while `self` is still in use.
// Every read tells the Observation framework about the access (`_observeRead`).

extension Model {
    /// Reads or writes a persisted property: `author.name`.
    ///
    /// A write is a change: see ``changes`` and ``updatedAt``.
    ///
    /// - Complexity: O(1) beyond the cost of the value's own copy, when nobody observes the model.
    @inlinable
    public subscript<Value>(dynamicMember keyPath: WritableKeyPath<Properties, Value>) -> Value {
        get {
            _observeRead()
            return storage.values[keyPath: keyPath]
        }
        set {
            _checkIsolation()
            let storage = self.storage
            if _fastPath(storage.writesQuietly) {
                storage.values[keyPath: keyPath] = newValue
            } else {
                let model = Unmanaged.passRetained(self)
                let pending = Self._willChange(model)
                storage.values[keyPath: keyPath] = newValue
                Self._didChange(model, pending)
            }
        }
        _modify {
            _checkIsolation()
            let storage = self.storage
            if _fastPath(storage.writesQuietly) {
                yield &storage.values[keyPath: keyPath]
            } else {
                let model = Unmanaged.passRetained(self)
                let pending = Self._willChange(model)
                defer { Self._didChange(model, pending) }
                yield &storage.values[keyPath: keyPath]
            }
        }
    }

    /// Reads or writes an `Equatable` persisted property. Assigning the value the property already
    /// has is not a change: nothing is recorded or reported and ``updatedAt`` stays as it was.
    ///
    /// - Complexity: O(1) beyond the cost of comparing and copying the value.
    @inlinable
    public subscript<Value: Equatable>(dynamicMember keyPath: WritableKeyPath<Properties, Value>) -> Value {
        get {
            _observeRead()
            return storage.values[keyPath: keyPath]
        }
        set {
            _checkIsolation()
            let storage = self.storage
            guard storage.values[keyPath: keyPath] != newValue else { return }
            if _fastPath(storage.writesQuietly) {
                storage.values[keyPath: keyPath] = newValue
            } else {
                let model = Unmanaged.passRetained(self)
                let pending = Self._willChange(model)
                storage.values[keyPath: keyPath] = newValue
                Self._didChange(model, pending)
            }
        }
        _modify {
            _checkIsolation()
            let storage = self.storage
            if _fastPath(storage.writesQuietly) {
                yield &storage.values[keyPath: keyPath]
            } else {
                let model = Unmanaged.passRetained(self)
                let pending = Self._willChange(model)
                defer { Self._didChange(model, pending) }
                yield &storage.values[keyPath: keyPath]
            }
        }
    }

    /// Reads a read-only (`let`) persisted property.
    @inlinable
    public subscript<Value>(dynamicMember keyPath: KeyPath<Properties, Value>) -> Value {
        _observeRead()
        return storage.values[keyPath: keyPath]
    }

    /// Reads or writes a to-one reference: `post.author`.
    ///
    /// Reading looks the remembered id up in this model's context: it returns `nil` when the
    /// target was removed from the context or no longer exists, and, when a model with that id is
    /// in the context again, that model. Assigning a model that is in no context yet adds it to
    /// this model's context. A model in no context resolves its references among the models it
    /// was given (see ``ModelContext/insert(_:isolation:)``).
    ///
    /// - Complexity: O(1).
    public subscript<Target: Model>(dynamicMember keyPath: WritableKeyPath<Properties, ModelRef<Target>>) -> Target? {
        get {
            _observeRead()
            let storage = self.storage
            return storage.values[keyPath: keyPath].target(lookupIn: storage.context, held: storage.box.held)
        }
        set {
            _checkIsolation()
            let storage = self.storage
            let old = storage.values[keyPath: keyPath]
            guard old.id != newValue?.modelId || old.target(lookupIn: storage.context, held: storage.box.held) !== newValue
            else { return }
            if let newValue { adopt(newValue) }
            // Quiet writes of a type without relationships need not look for an inverse.
            if storage.writesQuietly {
                storage.values[keyPath: keyPath] = ModelRef(newValue)
                return
            }
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
            field?.propagate(owner: self, removed: old.id.map { [$0] } ?? [], added: newValue.map { [$0] } ?? [])
            undo?.endUndoGrouping()
        }
    }

    /// Reads or mutates a to-many reference: `author.posts.append(post)`.
    ///
    /// The array resolves its elements in this model's context; models appended to it that are in
    /// no context yet are added to this model's context.
    ///
    /// - Complexity: O(1) to read; mutations cost what the same mutation of an `Array` costs
    ///   (plus a copy of the array per mutation while someone observes each change of the model).
    public subscript<Element: Model>(dynamicMember keyPath: WritableKeyPath<Properties, ModelArray<Element>>) -> ModelArray<
        Element
    > {
        get {
            _observeRead()
            let storage = self.storage
            var array = storage.values[keyPath: keyPath]
            array.attach(context: storage.context, held: storage.box.held)
            return array
        }
        set {
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
        _modify {
            _checkIsolation()
            let storage = self.storage
            storage.values[keyPath: keyPath].attach(context: storage.context, held: storage.box.held)
            // What the mutation added and the context could not adopt, the owner holds.
            defer { storage.box.hold(storage.values[keyPath: keyPath].release(to: storage.context)) }
            let quiet = storage.box.writesQuietlyKeepingInverses
            if storage.writesQuietly {
                yield &storage.values[keyPath: keyPath]
            } else if let field = inverseField(keyPath) {
                // The array notes what the mutation removes and adds, for the inverse side.
                let undo = quiet ? nil : storage.context?.undoManager
                undo?.beginUndoGrouping()
                let pending = quiet ? nil : _willChange()
                // After `_willChange`, so that the values it may save (for observers, for undo)
                // don't hold the journal.
                let spare = ModelArrayJournal.open(for: &storage.values[keyPath: keyPath], in: storage.context)
                defer {
                    if let pending { _didChange(pending) }
                    // Releasing empties the array's `held`, the journal with it.
                    storage.box.hold(storage.values[keyPath: keyPath].release(to: storage.context))
                    let journal = spare.journal
                    field.propagate(owner: self, removed: journal.removed, added: journal.added)
                    ModelArrayJournal.close(spare, in: storage.context)
                    undo?.endUndoGrouping()
                }
                yield &storage.values[keyPath: keyPath]
            } else if quiet {
                yield &storage.values[keyPath: keyPath]
            } else {
                let pending = _willChange()
                defer { _didChange(pending) }
                yield &storage.values[keyPath: keyPath]
            }
        }
    }

    /// Makes sure this model can reach `target` and keeps it alive: this model's context adopts
    /// it when it has never been in one; a model in no context, or a target in another context,
    /// is held by this model (see ``ModelObject/held``).
    func adopt<Target: Model>(_ target: Target) {
        let context = storage.context
        if let context, context.adopt(target) { return }
        if !storage.box.held.contains(where: { $0 === target }) {
            storage.box.held.append(target)
        }
    }
}
