import Foundation

/// A typed handle to a model's persisted properties and framework state (id, dates, context),
/// which live in the model object itself (see ``ModelObject``).
///
/// Keeping the properties in one struct is what lets ModelKit replace all of them at once when a
/// model is reloaded (so instances held by the app stay valid) without reflection.
@usableFromInline struct ModelStorage<Properties: ModelProperties> {
    /// The model itself. A storage value is made from the model where it is used
    /// (`Model.storage`), from a reference the caller holds, so the optimizer drops the retain.
    /// (Not `unowned(unsafe)`: reading a property in place through such a reference makes the
    /// compiler retain the object and copy the whole `Properties` struct, on every access.)
    @usableFromInline let box: ModelObject<Properties>

    @inlinable init(box: ModelObject<Properties>) {
        self.box = box
    }


    /// The persisted properties, in place.
    @inlinable var values: Properties {
        // `_read` rather than `get`: reading one property borrows the properties in place instead
        // of copying (and retaining) all of them.
        _read { yield box.values }
        nonmutating set { box.values = newValue }
        nonmutating _modify { yield &box.values }
    }

    @inlinable var metadata: ModelMetadata {
        _read { yield box.metadata }
        nonmutating set { box.metadata = newValue }
        nonmutating _modify { yield &box.metadata }
    }

    /// The context that owns the model, unretained: the context retains its models, not the reverse.
    @inlinable var context: ModelContext? {
        get { box.context }
        nonmutating set { box.context = newValue }
    }

    /// See ``ModelObject/tracker``.
    @inlinable var tracker: ChangeTracker<Properties>? {
        get { box.tracker }
        nonmutating set { box.tracker = newValue }
    }

    /// See ``ModelObject/quietEpoch``.
    @inlinable var quietEpoch: UInt32 {
        get { box.quietEpoch }
        nonmutating set { box.quietEpoch = newValue }
    }

    /// See ``ModelObject/stampPending``.
    @inlinable var stampPending: Bool {
        get { box.stampPending }
        nonmutating set { box.stampPending = newValue }
    }

    /// See ``ModelObject/insertedGeneration``.
    @inlinable var insertedGeneration: UInt32 {
        get { box.insertedGeneration }
        nonmutating set { box.insertedGeneration = newValue }
    }

    /// See ``AnyModelObject/writesQuietly``.
    @inlinable var writesQuietly: Bool { box.writesQuietly }

    /// Stamps `updatedAt` now if a change is waiting for its stamp; returns it.
    func resolveUpdatedAt() -> Date {
        if box.stampPending {
            box.stampPending = false
            box.quietEpoch = 0  // the next write must mark the stamp as pending again
            let now = Date()
            if now > box.metadata.updatedAt { box.metadata.updatedAt = now }
        }
        return box.metadata.updatedAt
    }

    /// Where this model's references look their targets up when the remembered instance is gone:
    /// its own context; nowhere when it is in none (a model outside every context has no domain
    /// whose models it could pick up, and a released model must not pick up unrelated instances).
    var lookupContext: ModelContext? { context }

    /// The identity of the model's context, read without retaining the context (see
    /// ``ModelObject/context``).
    @inline(__always) var contextIdentity: ObjectIdentifier? {
        box.context.map { ObjectIdentifier($0) }
    }

    /// Whether a reference to this model should resolve: it is in a context, or it has never been
    /// put in one (a context-free or not yet registered model the app holds). A model removed from
    /// its context, or whose context was destroyed, is not live.
    @usableFromInline var isLive: Bool {
        box.context != nil || box.metadata.membership == .unmanaged
    }
}

/// What a model's ``Model/changes`` compare with.
@usableFromInline enum ChangeBaseline: UInt8 {
    /// The values saved in the tracker at the first write since the last reset or load (no saved
    /// values: no change).
    case saved
    /// A new model, never reset or loaded, never written: no changes.
    case newUntouched
    /// A new model, never reset or loaded, written since it was made: its changes are what
    /// differs from a new instance of its type (the values `init()` gives it).
    case newWritten
}

/// The framework-managed part of a model: identity, dates, state.
///
/// Every model has one, so it is packed: 41 bytes, against 50 with a `String?` object id and a
/// byte for each enum. Few models have an object id (it is a backend's id), so it lives in a
/// box of its own and costs the others 8 bytes instead of 16.
@usableFromInline struct ModelMetadata {
    @usableFromInline var modelId: ModelID
    private var objectIdBox: ObjectIdBox?
    @usableFromInline var createdAt: Date
    @usableFromInline var updatedAt: Date
    /// ``ModelState`` in the low two bits, ``Membership`` in the next two.
    private var packedStates: UInt8

    @usableFromInline var objectId: String? {
        get { objectIdBox?.value }
        set { objectIdBox = newValue.map(ObjectIdBox.init) }
    }

    @usableFromInline var state: ModelState {
        get {
            switch packedStates & 3 {
            case 0: .new
            case 1: .needsData
            default: .loaded
            }
        }
        set { packedStates = packedStates & ~3 | newValue.code }
    }

    @usableFromInline var membership: Membership {
        get {
            switch packedStates >> 2 & 3 {
            case 0: .unmanaged
            case 1: .managed
            default: .removed
            }
        }
        set { packedStates = packedStates & ~12 | newValue.code << 2 }
    }

    @usableFromInline init(
        modelId: ModelID, objectId: String?, createdAt: Date, updatedAt: Date, state: ModelState,
        membership: Membership
    ) {
        self.modelId = modelId
        self.objectIdBox = objectId.map(ObjectIdBox.init)
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.packedStates = state.code | membership.code << 2
    }
}

/// A model's object id, out of line (see ``ModelMetadata``). Immutable, so that copies of the
/// metadata share it safely.
private final class ObjectIdBox: Sendable {
    let value: String

    init(_ value: String) {
        self.value = value
    }
}

extension ModelState {
    /// The state's code in ``ModelMetadata``.
    fileprivate var code: UInt8 {
        switch self {
        case .new: 0
        case .needsData: 1
        case .loaded: 2
        }
    }
}

extension Membership {
    /// The membership's code in ``ModelMetadata``.
    fileprivate var code: UInt8 {
        switch self {
        case .unmanaged: 0
        case .managed: 1
        case .removed: 2
        }
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
