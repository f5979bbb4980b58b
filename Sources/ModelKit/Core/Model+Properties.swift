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
//
// The accessors are always inlined: the key path is then a literal at the call site and the
// optimizer turns `values[keyPath: \.name]` into a plain field access. Only specialized but
// called, they project the key path at run time, which looks up its generic types each time
// (measured: a third of the cost of setting a model's properties).

extension Model {
    /// Reads or writes a persisted property: `author.name`.
    ///
    /// A write is a change: see ``changes`` and ``updatedAt``.
    ///
    /// - Complexity: O(1) beyond the cost of the value's own copy, when nobody observes the model.
    @inlinable @inline(__always)
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
    @inlinable @inline(__always)
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
    @inlinable @inline(__always)
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
    @inlinable @inline(__always)
    public subscript<Target: Model>(dynamicMember keyPath: WritableKeyPath<Properties, ModelRef<Target>>) -> Target? {
        get {
            _observeRead()
            return _target(Target.self, id: storage.values[keyPath: keyPath].storedId)
        }
        set {
            _checkIsolation()
            let storage = self.storage
            let old = storage.values[keyPath: keyPath].storedId
            guard _referenceWillChange(from: old, to: newValue) else { return }
            // Quiet writes of a type without relationships need not look for an inverse.
            if _fastPath(storage.writesQuietly) {
                storage.values[keyPath: keyPath] = ModelRef(newValue)
            } else {
                _writeReference(newValue, replacing: old, at: keyPath)
            }
        }
    }

    /// Reads or mutates a to-many reference: `author.posts.append(post)`.
    ///
    /// The array resolves its elements in this model's context; models appended to it that are in
    /// no context yet are added to this model's context.
    ///
    /// - Complexity: O(1) to read; mutations cost what the same mutation of an `Array` costs
    ///   (plus a copy of the array per mutation while someone observes each change of the model).
    @inlinable @inline(__always)
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
            _writeArray(newValue, at: keyPath)
        }
        _modify {
            _checkIsolation()
            let storage = self.storage
            if _fastPath(storage.writesQuietly) {
                storage.values[keyPath: keyPath].attach(context: storage.context, held: storage.box.held)
                // What the mutation added and the context could not adopt, the owner holds.
                defer { storage.box.hold(storage.values[keyPath: keyPath].release(to: storage.context)) }
                yield &storage.values[keyPath: keyPath]
            } else {
                let mutation = _beginArrayMutation(at: keyPath)
                defer { _endArrayMutation(mutation, at: keyPath) }
                yield &storage.values[keyPath: keyPath]
            }
        }
    }

    /// Makes sure this model can reach `target` and keeps it alive: this model's context adopts
    /// it when it has never been in one; a model in no context, or a target in another context,
    /// is held by this model (see ``ModelObject/held``).
    func adopt<Target: Model>(_ target: Target) {
        // `context` is the base class's: reading it through `storage` would look up the typed
        // storage's generic metadata (this code is not specialized).
        if let context, context.adopt(target) { return }
        if !storage.box.held.contains(where: { $0 === target }) {
            storage.box.held.append(target)
        }
    }
}
