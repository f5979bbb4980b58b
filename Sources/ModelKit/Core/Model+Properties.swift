import Foundation

// Property access through @dynamicMemberLookup. Plain assignments go through `set`, compound
// mutations (`+=`, `append`) through `_modify`, which mutates the stored value in place so that
// appending to an array property is O(1) rather than a copy per call.

extension Model {
    /// Reads or writes a persisted property: `author.name`.
    ///
    /// A write stamps ``updatedAt``.
    ///
    /// - Complexity: O(1) beyond the cost of the value's own copy.
    @inlinable
    public subscript<Value>(dynamicMember keyPath: WritableKeyPath<Properties, Value>) -> Value {
        get { storage.values[keyPath: keyPath] }
        set {
            storage.values[keyPath: keyPath] = newValue
            storage.touch()
        }
        _modify {
            yield &storage.values[keyPath: keyPath]
            storage.touch()
        }
    }

    /// Reads or writes an `Equatable` persisted property. Assigning the value the property already
    /// has is not a change: ``updatedAt`` stays as it was.
    ///
    /// - Complexity: O(1) beyond the cost of comparing and copying the value.
    @inlinable
    public subscript<Value: Equatable>(dynamicMember keyPath: WritableKeyPath<Properties, Value>) -> Value {
        get { storage.values[keyPath: keyPath] }
        set {
            guard storage.values[keyPath: keyPath] != newValue else { return }
            storage.values[keyPath: keyPath] = newValue
            storage.touch()
        }
        _modify {
            yield &storage.values[keyPath: keyPath]
            storage.touch()
        }
    }

    /// Reads a read-only (`let`) persisted property.
    @inlinable
    public subscript<Value>(dynamicMember keyPath: KeyPath<Properties, Value>) -> Value {
        storage.values[keyPath: keyPath]
    }

    /// Reads or writes a to-one reference: `post.author`.
    ///
    /// Reading returns `nil` when the target was removed from its context or no longer exists;
    /// when a model with the remembered id is in the context again, the reference resolves to it.
    /// Assigning a model that is in no context yet adds it to this model's context.
    ///
    /// - Complexity: O(1).
    public subscript<Target: Model>(dynamicMember keyPath: WritableKeyPath<Properties, ModelRef<Target>>) -> Target? {
        get { storage.values[keyPath: keyPath].target(lookupIn: storage.lookupContext) }
        set {
            let old = storage.values[keyPath: keyPath]
            guard old.id != newValue?.modelId || old.target(lookupIn: storage.lookupContext) !== newValue else { return }
            if let newValue { adopt(newValue) }
            storage.values[keyPath: keyPath] = ModelRef(newValue)
            storage.touch()
        }
    }

    /// Reads or mutates a to-many reference: `author.posts.append(post)`.
    ///
    /// The array resolves its elements in this model's context; models appended to it that are in
    /// no context yet are added to this model's context.
    ///
    /// - Complexity: O(1) to read; mutations cost what the same mutation of an `Array` costs.
    public subscript<Element: Model>(dynamicMember keyPath: WritableKeyPath<Properties, ModelArray<Element>>) -> ModelArray<
        Element
    > {
        get {
            var array = storage.values[keyPath: keyPath]
            array.attach(context: storage.context, detached: storage.lookupContext == nil)
            return array
        }
        set {
            var array = newValue
            array.attach(context: storage.context, detached: storage.lookupContext == nil)
            array.adoptAll()
            storage.values[keyPath: keyPath] = array
            storage.touch()
        }
        _modify {
            // Read these first: holding a copy of `storage` during the yield would retain the array
            // and turn every append into a copy.
            let context = storage.context
            let detached = storage.lookupContext == nil
            storage.values[keyPath: keyPath].attach(context: context, detached: detached)
            yield &storage.values[keyPath: keyPath]
            storage.touch()
        }
    }

    /// Adds `target` to this model's context when it has never been in one, so that a freshly
    /// created model assigned to a reference is kept alive by the context like its owner.
    func adopt<Target: Model>(_ target: Target) {
        guard let context = storage.context, target.storage.metadata.membership == .unmanaged,
            !(target is any ContextFreeModel)
        else { return }
        context.insert(target)
    }
}
