import Foundation

// Creating, finding and registering models: `instanceWithObjectId:` and friends.

extension Model {
    /// Creates a new model and adds it to `context`, unless the type is a ``ContextFreeModel``.
    /// Its state is ``ModelState/new``.
    ///
    /// ```swift
    /// let author = Author.instance(in: context)
    /// author.name = "Jon"
    /// ```
    ///
    /// - Parameters:
    ///   - context: Where the model is registered.
    ///   - isolation: The caller's domain; leave it to the default. A context made outside any
    ///     actor becomes its own (see ``ModelContext/init(isolation:)``).
    /// - Complexity: O(1).
    public static func instance(in context: ModelContext, isolation: (any Actor)? = #isolation) -> Self {
        context.claim(for: isolation)
        let model = Self()
        guard !context.isContextFree(model) else { return model }
        return context.insert(model)
    }

    /// Creates a new model in the main actor's ``ModelContext/current`` context. See
    /// ``instance(in:isolation:)``.
    ///
    /// - Complexity: O(1).
    @MainActor public static func instance() -> Self {
        instance(in: .current)
    }

    /// Returns the model with `objectId` from `context`; when the context has none, creates a
    /// placeholder with that object id (state ``ModelState/needsData``), registers it in
    /// `context` (unless the type is a ``ContextFreeModel``) and returns it.
    ///
    /// Two calls with the same object id return the same instance. To find a model without
    /// creating one, use ``ModelContext/model(_:objectId:)``, which returns `nil` instead.
    ///
    /// A placeholder is an ordinary member of the context until it is removed: it counts as
    /// inserted in ``ModelContext/changes``, and ``ModelContext/write(to:format:)`` saves it with
    /// its properties' default values. Loaded back, it is a ``ModelState/loaded`` model like any
    /// other, so call ``removeFromContext()`` on a placeholder whose data never arrives.
    ///
    /// - Parameters:
    ///   - objectId: The object id to find, or to give the placeholder.
    ///   - context: Where the model is looked up and registered.
    ///   - isolation: The caller's domain; leave it to the default. A context made outside any
    ///     actor becomes its own (see ``ModelContext/init(isolation:)``).
    /// - Complexity: O(1).
    public static func instance(objectId: String, in context: ModelContext, isolation: (any Actor)? = #isolation) -> Self {
        context.claim(for: isolation)
        return context.model(Self.self, objectId: objectId)
            ?? placeholder(in: context) { $0.storage.metadata.objectId = objectId }
    }

    /// ``instance(objectId:in:isolation:)`` in the main actor's ``ModelContext/current`` context: the model
    /// with `objectId`, or a new placeholder registered there, which a write of the context saves.
    ///
    /// - Complexity: O(1).
    @MainActor public static func instance(objectId: String) -> Self {
        instance(objectId: objectId, in: .current)
    }

    /// Returns the model with `modelId` from `context`; when the context has none, creates a
    /// placeholder with that id (state ``ModelState/needsData``), registers it in `context` and
    /// returns it.
    ///
    /// To find a model without creating one, use ``ModelContext/model(_:modelId:)``. A placeholder
    /// is saved with the context, as ``instance(objectId:in:isolation:)`` describes.
    ///
    /// - Parameters:
    ///   - modelId: The model id to find, or to give the placeholder.
    ///   - context: Where the model is looked up and registered.
    ///   - isolation: The caller's domain; leave it to the default. A context made outside any
    ///     actor becomes its own (see ``ModelContext/init(isolation:)``).
    /// - Complexity: O(1).
    public static func instance(modelId: ModelID, in context: ModelContext, isolation: (any Actor)? = #isolation) -> Self {
        context.claim(for: isolation)
        return context.model(Self.self, modelId: modelId)
            ?? placeholder(in: context) { $0.storage.metadata.modelId = modelId }
    }

    /// ``instance(modelId:in:isolation:)`` in the main actor's ``ModelContext/current`` context: the model
    /// with `modelId`, or a new placeholder registered there, which a write of the context saves.
    ///
    /// - Complexity: O(1).
    @MainActor public static func instance(modelId: ModelID) -> Self {
        instance(modelId: modelId, in: .current)
    }

    /// A new model in state ``ModelState/needsData``, given its id by `identify`, and registered in
    /// `context` unless the type is context-free.
    private static func placeholder(in context: ModelContext, identify: (Self) -> Void) -> Self {
        let model = Self()
        identify(model)
        model.storage.metadata.state = .needsData
        guard !context.isContextFree(model) else { return model }
        return context.insert(model)
    }

    /// Adds the model to `context`; this also works for ``ContextFreeModel`` types. A model
    /// removed earlier becomes live again, and references to it resolve again.
    ///
    /// If the context already has another instance with this model's id, that one stays and this
    /// model is not added.
    ///
    /// - Parameters:
    ///   - context: The context to add the model to.
    ///   - isolation: The caller's domain; leave it to the default. A context made outside any
    ///     actor becomes its own (see ``ModelContext/init(isolation:)``).
    /// - Complexity: O(1).
    public func addToContext(_ context: ModelContext, isolation: (any Actor)? = #isolation) {
        context.insert(self, isolation: isolation)
    }

    /// Adds the model to the main actor's ``ModelContext/current`` context. See
    /// ``addToContext(_:isolation:)``.
    ///
    /// - Complexity: O(1).
    @MainActor public func addToContext() {
        ModelContext.current.insert(self)
    }

    /// Removes the model from its context: the context releases it, and references to it read as
    /// `nil` (to-one) or skip it (arrays).
    ///
    /// - Complexity: O(1).
    public func removeFromContext() {
        storage.context?.remove(self)
    }

    /// The context the model belongs to, or `nil`.
    public var modelContext: ModelContext? { storage.context }
}

extension Model {
    /// The framework-assigned id: unique, and stable across saving and loading.
    public var modelId: ModelID { storage.metadata.modelId }

    /// An application-defined id, such as a backend's object id. ``ModelContext/model(_:objectId:)``
    /// finds the model by it, as does ``instance(objectId:in:isolation:)``, which creates a placeholder when
    /// it finds none.
    ///
    /// Changing it re-indexes the model in its context; if another instance of the same type in
    /// that context has the same object id, lookups find the one that was assigned last.
    public var objectId: String? {
        get { storage.metadata.objectId }
        set {
            let old = storage.metadata.objectId
            guard old != newValue else { return }
            storage.metadata.objectId = newValue
            storage.context?.objectIdChanged(self, from: old)
        }
    }

    /// When the model was created.
    public var createdAt: Date { storage.metadata.createdAt }

    /// When a persisted property last changed (or when the model was created or loaded, if never).
    ///
    /// To keep writes cheap, a write does not read the clock: it marks the stamp as due, and the
    /// time is taken when `updatedAt` is next read, the model is serialized, or the change is
    /// reported to observers (at once for observed writes, at ``endChanges()`` for a batch). So
    /// `updatedAt` is never earlier than the change it records and never later than the first
    /// moment anyone could see it. Assigning a property the value it has is not a change.
    public var updatedAt: Date { storage.resolveUpdatedAt() }

    /// Whether the model was created by the app, is a placeholder, or was loaded.
    public var modelState: ModelState { storage.metadata.state }
}
