import Foundation

/// A model's persisted properties together with its framework state (id, dates, context).
///
/// Every model declares exactly one: `var storage = ModelStorage(Properties())`. Its contents are
/// managed by ModelKit; read them through the model (``Model/modelId``, `author.name`, …).
///
/// Keeping the properties in one struct is what lets ModelKit replace all of them at once when a
/// model is reloaded (so instances held by the app stay valid) without reflection.
public struct ModelStorage<Properties: Codable> {
    @usableFromInline var values: Properties
    @usableFromInline var metadata: ModelMetadata
    /// The context that owns the model. Weak: the context retains its models, not the reverse.
    @usableFromInline weak var context: ModelContext?

    /// Creates the storage of a new model with the given properties and a fresh ``ModelID``.
    public init(_ properties: Properties) {
        values = properties
        let now = Date()
        metadata = ModelMetadata(
            modelId: ModelID.generate(), objectId: nil, createdAt: now, updatedAt: now, state: .new,
            membership: .unmanaged)
    }

    /// A copy of all persisted properties at once, for snapshots or to hand the values to another
    /// task. Write them through the model (`author.name = …`), which also stamps `updatedAt`.
    public var properties: Properties { values }

    /// Records that a persisted property changed.
    @usableFromInline mutating func touch() {
        metadata.updatedAt = Date()
    }

    /// Where this model's references look their targets up when the remembered instance is gone:
    /// its own context; the current context if it has never been in one; nowhere once its context
    /// was destroyed or it was removed (a released model must not pick up unrelated instances).
    var lookupContext: ModelContext? {
        if let context { return context }
        return metadata.membership == .unmanaged ? ModelContext.current : nil
    }

    /// Whether a reference to this model should resolve: it is in a context, or it has never been
    /// put in one (a context-free or not yet registered model the app holds). A model removed from
    /// its context, or whose context was destroyed, is not live.
    @usableFromInline var isLive: Bool {
        context != nil || metadata.membership == .unmanaged
    }
}

/// The framework-managed part of a model: identity, dates, state.
@usableFromInline struct ModelMetadata {
    @usableFromInline var modelId: ModelID
    @usableFromInline var objectId: String?
    @usableFromInline var createdAt: Date
    @usableFromInline var updatedAt: Date
    @usableFromInline var state: ModelState
    @usableFromInline var membership: Membership

    @usableFromInline init(
        modelId: ModelID, objectId: String?, createdAt: Date, updatedAt: Date, state: ModelState,
        membership: Membership
    ) {
        self.modelId = modelId
        self.objectId = objectId
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.state = state
        self.membership = membership
    }
}

/// Whether a model has ever belonged to a context.
@usableFromInline enum Membership: Sendable {
    /// Never added to a context.
    case unmanaged
    /// Added to a context (which may since have been destroyed).
    case managed
    /// Removed from its context explicitly, or by `clear()`.
    case removed
}
