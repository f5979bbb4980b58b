import Foundation

/// A model's persisted properties together with its framework state (id, dates, context).
///
/// Every model declares exactly one: `let storage = ModelStorage(Properties())`. Its contents are
/// managed by ModelKit; read them through the model (``Model/modelId``, `author.name`, …).
///
/// Keeping the properties in one struct is what lets ModelKit replace all of them at once when a
/// model is reloaded (so instances held by the app stay valid) without reflection.
///
/// `ModelStorage` is a handle to one object that holds the properties and the state side by side.
/// Because the model refers to it with a `let`, a property write is a plain store into that
/// object, with no run-time exclusivity check on the model.
public struct ModelStorage<Properties: Codable> {
    @usableFromInline let box: ModelBox<Properties>

    /// Creates the storage of a new model with the given properties and a fresh ``ModelID``.
    public init(_ properties: Properties) {
        let now = Date()
        box = ModelBox(
            values: properties,
            metadata: ModelMetadata(
                modelId: ModelID.generate(), objectId: nil, createdAt: now, updatedAt: now, state: .new,
                membership: .unmanaged))
    }

    /// A copy of all persisted properties at once, for snapshots or to hand the values to another
    /// task. Write them through the model (`author.name = …`), which also records the change.
    public var properties: Properties { box.values }

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

    /// See ``ModelBox/tracker``.
    @inlinable var tracker: ChangeTracker<Properties>? {
        get { box.tracker }
        nonmutating set { box.tracker = newValue }
    }

    /// See ``ModelBox/quietEpoch``.
    @inlinable var quietEpoch: UInt32 {
        get { box.quietEpoch }
        nonmutating set { box.quietEpoch = newValue }
    }

    /// See ``ModelBox/stampPending``.
    @inlinable var stampPending: Bool {
        get { box.stampPending }
        nonmutating set { box.stampPending = newValue }
    }

    /// See ``ModelBox/insertedGeneration``.
    @inlinable var insertedGeneration: UInt32 {
        get { box.insertedGeneration }
        nonmutating set { box.insertedGeneration = newValue }
    }

    /// Whether a write may skip all change bookkeeping (see ``ModelBox/quietEpoch``).
    @inlinable var writesQuietly: Bool {
        box.quietEpoch == ChangeEpoch.current
    }

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

    /// Whether a reference to this model should resolve: it is in a context, or it has never been
    /// put in one (a context-free or not yet registered model the app holds). A model removed from
    /// its context, or whose context was destroyed, is not live.
    @usableFromInline var isLive: Bool {
        box.context != nil || box.metadata.membership == .unmanaged
    }
}

/// The object behind ``ModelStorage``: a model's properties and framework state, side by side.
///
/// Its stored properties opt out of Swift's run-time exclusivity checks: they are only ever
/// accessed through the model that owns the box, and a model is used by one thread at a time, so
/// the check would only catch a property access nested inside a mutation of the same model's
/// properties, which ModelKit's accessors never do. This is what makes a property write a plain
/// store (the check costs about as much as the rest of a write).
@usableFromInline final class ModelBox<Properties: Codable> {
    // The fields are ordered so that the small ones pack into the bytes after the metadata's
    // last field: every model has a box, and 16 bytes here are 16 bytes per model.
    @usableFromInline @exclusivity(unchecked) var values: Properties
    @usableFromInline @exclusivity(unchecked) var metadata: ModelMetadata
    /// Whether a persisted property was read since the last write (the read may have been
    /// tracked by the Observation framework): the next write must tell the framework.
    @usableFromInline @exclusivity(unchecked) var observed = false
    /// Set when a property changed after `updatedAt` was last stamped; the stamp is taken when
    /// `updatedAt` is next read (or the change is reported), so that writes need no clock read.
    @usableFromInline @exclusivity(unchecked) var stampPending = false
    /// What the model's changes compare with: a new model's are what differs from the type's
    /// default values until its first reset, so that its first writes need no saved copy (most
    /// models are created, filled in and saved, and never reset in between).
    @usableFromInline @exclusivity(unchecked) var baseline = ChangeBaseline.newUntouched
    /// Equal to ``ChangeEpoch/current`` while a write needs no bookkeeping at all: the values at
    /// the last reset are saved, `updatedAt` is marked for stamping, the context knows the model
    /// changed and nobody wants to hear about each write. Anything that changes one of these
    /// sets it to 0, and the next write takes the slow path once and re-establishes it.
    @usableFromInline @exclusivity(unchecked) var quietEpoch: UInt32 = 0
    /// The change generation of the context when it inserted the model: while it is still the
    /// context's generation, the model counts as inserted there and its writes need no noting.
    @usableFromInline @exclusivity(unchecked) var insertedGeneration: UInt32 = 0
    /// The model's position in its context's list of models of its type (see
    /// `ModelContext.Registry`), or -1. 32 bits: a context holds fewer than 2^31 models of a type.
    @exclusivity(unchecked) private var storedTypeSlot: Int32 = -1
    /// The context that holds the model. Not `weak`: a weak reference costs an atomic operation
    /// on the context's side table to form and to read, on every insert, load and reference
    /// read. The pointer is valid exactly while the context holds the model: inserting sets it,
    /// and removing, clearing, and the context's deinitializer clear it.
    @usableFromInline @exclusivity(unchecked) unowned(unsafe) var context: ModelContext?
    /// What only some models need: the values at the last reset once a property changed,
    /// observers, batches, held models. Made when first needed and dropped when it holds nothing
    /// again, so that an unchanged model spends one pointer on all of it.
    @usableFromInline @exclusivity(unchecked) var tracker: ChangeTracker<Properties>?

    /// The models this model holds while it is in no context: those assigned to its references
    /// then. Without them, a graph built before it joins a context would have nothing keeping
    /// its parts alive (references do not retain). The context it joins adopts them, and the
    /// list is emptied; a model in a context holds only targets in other contexts.
    var held: [AnyObject] {
        get { (tracker as HeldModels?)?.held ?? [] }
        set {
            if let tracker = tracker as HeldModels? {
                tracker.held = newValue
                if newValue.isEmpty { dropTrackerIfEmpty() }
            } else if !newValue.isEmpty {
                let tracker = ChangeTracker<Properties>()
                tracker.held = newValue
                self.tracker = tracker
            }
        }
        // In place, so that `held.append(_:)` and `held += …` do not copy the array each time
        // (a get-then-set would: the tracker still holds the old array while it is changed).
        _modify {
            let holder: HeldModels
            if let tracker {
                holder = tracker
            } else {
                let made = ChangeTracker<Properties>()
                tracker = made
                holder = made
            }
            yield &holder.held
            if holder.held.isEmpty { dropTrackerIfEmpty() }
        }
    }

    /// Adds `models` to ``held``; nothing to do (the usual case) when there are none.
    func hold(_ models: [AnyObject]) {
        if !models.isEmpty { held += models }
    }

    /// See `storedTypeSlot`.
    var typeSlot: Int {
        get { Int(storedTypeSlot) }
        set { storedTypeSlot = Int32(truncatingIfNeeded: newValue) }
    }

    /// Forgets the tracker once nothing in it is in use, giving its memory back.
    @usableFromInline func dropTrackerIfEmpty() {
        if let tracker, tracker.isEmpty { self.tracker = nil }
    }

    init(values: Properties, metadata: ModelMetadata) {
        self.values = values
        self.metadata = metadata
    }

    /// Calls `body` with the address of the properties, for reading stored properties at their
    /// offsets (`MemoryLayout<Properties>.offset(of:)`). The pointer is valid only during `body`.
    @inlinable
    func withValuesPointer<Result>(_ body: (UnsafeRawPointer) throws -> Result) rethrows -> Result {
        try withUnsafeMutablePointer(to: &values) { try body(UnsafeRawPointer($0)) }
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
