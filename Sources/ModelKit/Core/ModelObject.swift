import Foundation

/// The persisted properties of a model: a `Codable` struct whose stored properties all have
/// default values, which gives it the `init()` this protocol asks for.
///
/// ```swift
/// struct Properties: ModelProperties {
///     var name = ""
///     var posts = ModelArray<Post>()
/// }
/// ```
///
/// `init()` makes the values of a new model and the values a file's missing keys take. A struct
/// that declares an initializer of its own (`init(from:)`, say) loses the implicit `init()`;
/// declare `init() {}` next to it.
public protocol ModelProperties: Codable {
    /// The properties of a new model.
    init()
}

/// The base class of every model: subclass ``ModelObject``, never this one.
///
/// It holds the framework state that does not depend on the model's type (id, dates, state, the
/// context), at the same place in every model, so that the context's tables can read a model's
/// id without knowing its type. It has no public members; use the model's (``Model/modelId``…).
///
/// Its stored properties opt out of Swift's run-time exclusivity checks, as ``ModelObject``'s do.
open class AnyModelObject {
    // The fields are ordered so that the small ones pack into the bytes after the metadata's
    // last field: every model has them, and 8 bytes here are 8 bytes per model.
    @usableFromInline @exclusivity(unchecked) final var metadata: ModelMetadata
    /// Whether a persisted property was read since the last write (the read may have been
    /// tracked by the Observation framework): the next write must tell the framework.
    @usableFromInline @exclusivity(unchecked) final var observed = false
    /// Set when a property changed after `updatedAt` was last stamped; the stamp is taken when
    /// `updatedAt` is next read (or the change is reported), so that writes need no clock read.
    @usableFromInline @exclusivity(unchecked) final var stampPending = false
    /// What the model's changes compare with: a new model's are what differs from the type's
    /// default values until its first reset, so that its first writes need no saved copy (most
    /// models are created, filled in and saved, and never reset in between).
    @usableFromInline @exclusivity(unchecked) final var baseline = ChangeBaseline.newUntouched
    /// Equal to ``ChangeEpoch/current`` while a write needs no bookkeeping at all: the values at
    /// the last reset are saved, `updatedAt` is marked for stamping, the context knows the model
    /// changed and nobody wants to hear about each write. Anything that changes one of these
    /// sets it to 0, and the next write takes the slow path once and re-establishes it. For a
    /// type that declares relationships it is the epoch with ``ChangeEpoch/relationshipsBit``
    /// flipped: a quiet write of a reference still keeps the reference's inverse.
    @usableFromInline @exclusivity(unchecked) final var quietEpoch: UInt32 = 0
    /// The change generation of the context when it inserted the model: while it is still the
    /// context's generation, the model counts as inserted there and its writes need no noting.
    @usableFromInline @exclusivity(unchecked) final var insertedGeneration: UInt32 = 0
    /// The model's position in its context's list of models of its type (see
    /// `ModelContext.Registry`), or -1. 32 bits: a context holds fewer than 2^31 models of a type.
    @exclusivity(unchecked) private final var storedTypeSlot: Int32 = -1
    /// The context that holds the model. Not `weak`: a weak reference costs an atomic operation
    /// on the context's side table to form and to read, on every insert, load and reference
    /// read. The pointer is valid exactly while the context holds the model: inserting sets it,
    /// and removing, clearing, and the context's deinitializer clear it.
    @usableFromInline @exclusivity(unchecked) unowned(unsafe) final var context: ModelContext?

    /// See `storedTypeSlot`.
    final var typeSlot: Int {
        get { Int(storedTypeSlot) }
        set { storedTypeSlot = Int32(truncatingIfNeeded: newValue) }
    }

    init(metadata: ModelMetadata) {
        self.metadata = metadata
    }
}

/// The class a model subclasses: its persisted properties and framework state in one object.
///
/// ```swift
/// final class Author: ModelObject<Author.Properties> {
///     struct Properties: ModelProperties {
///         var name = ""
///         var posts = ModelArray<Post>()
///     }
/// }
/// ```
///
/// See ``Model`` for what a model can do. A model is one allocation: the properties live in the
/// object, next to its id, dates and context, as an `NSManagedObject`'s or a Realm `Object`'s do.
///
/// Its stored properties opt out of Swift's run-time exclusivity checks: they are only ever
/// accessed through the model's own accessors, and a model is used by one thread at a time, so
/// the check would only catch a property access nested inside a mutation of the same model's
/// properties, which ModelKit's accessors never do. This is what makes a property write a plain
/// store (the check costs about as much as the rest of a write).
///
/// - Complexity: A model takes its properties' size plus 104 bytes (see
///   Docs/ModelsAndReferences.md, "What a model costs").
open class ModelObject<Properties: ModelProperties>: AnyModelObject, Model {
    @usableFromInline @exclusivity(unchecked) final var values: Properties
    /// What only some models need: the values at the last reset once a property changed,
    /// observers, batches, held models. Made when first needed and dropped when it holds nothing
    /// again, so that an unchanged model spends one pointer on all of it.
    @usableFromInline @exclusivity(unchecked) final var tracker: ChangeTracker<Properties>?

    /// Creates a model with default properties and a fresh ``ModelID``, outside any context.
    ///
    /// Prefer ``Model/instance(in:isolation:)``, which also registers the new model in a context.
    public required init() {
        values = Properties()
        let now = Date()
        super.init(
            metadata: ModelMetadata(
                modelId: ModelID.generate(), objectId: nil, createdAt: now, updatedAt: now, state: .new,
                membership: .unmanaged))
    }

    /// A copy of all persisted properties at once, for snapshots or to hand the values to
    /// another task (it is `Sendable` when `Properties` is). Write them through the model
    /// (`author.name = …`), which also records the change.
    ///
    /// ```swift
    /// let values = author.persistedProperties
    /// print(values.name)
    /// ```
    ///
    /// - Complexity: O(1): the struct is copied, its arrays and strings are shared.
    public final var persistedProperties: Properties { values }

    /// The name written to serialized data and used to find the type again when reading it.
    ///
    /// Defaults to the class's name. Override it to keep files readable after renaming the class,
    /// or to match a backend's class name, like `modelName` in ModelKit for Objective-C:
    ///
    /// ```swift
    /// override class var modelName: String { "Author" }
    /// ```
    open class var modelName: String { String(describing: self) }

    /// The models this model holds while it is in no context: those assigned to its references
    /// then. Without them, a graph built before it joins a context would have nothing keeping
    /// its parts alive (references do not retain). The context it joins adopts them, and the
    /// list is emptied; a model in a context holds only targets in other contexts.
    @usableFromInline final var held: [AnyObject] {
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
    @usableFromInline final func hold(_ models: [AnyObject]) {
        if !models.isEmpty { held += models }
    }

    /// Forgets the tracker once nothing in it is in use, giving its memory back.
    @usableFromInline final func dropTrackerIfEmpty() {
        if let tracker, tracker.isEmpty { self.tracker = nil }
    }

    /// Calls `body` with the address of the properties, for reading stored properties at their
    /// offsets (`MemoryLayout<Properties>.offset(of:)`). The pointer is valid only during `body`.
    @inlinable
    final func withValuesPointer<Result>(_ body: (UnsafeRawPointer) throws -> Result) rethrows -> Result {
        try withUnsafeMutablePointer(to: &values) { try body(UnsafeRawPointer($0)) }
    }
}

/// Models are identified by their ``Model/modelId``, so SwiftUI's `ForEach` and `List` take
/// them as they are.
extension ModelObject: Identifiable {
    /// The model's ``Model/modelId``.
    public final var id: ModelID { metadata.modelId }
}
