import Foundation
public import ModelKitShims
import Observation
import Synchronization

// The bookkeeping behind change tracking. A write to a model that nobody observes takes the
// inlined fast path in Model+Properties.swift: one comparison of `storage.quietEpoch` with the
// global epoch, then the store. Everything else happens here, in `willChange`/`didChange`, which
// a write reaches when the fast path is not established (the first change since a reset, after
// `updatedAt` was read, after a property was read under observation) or when somebody wants to
// hear about every write.

/// A global counter that invalidates every model's fast path at once, when something outside the
/// model starts to care about its writes: a context gains its first observer or resets its
/// changes, or notifications are switched on for all models.
@usableFromInline enum ChangeEpoch {
    /// The current epoch; never 0, which a model's `quietEpoch` uses for "not quiet".
    ///
    /// Read through a pure inline C function (see ModelKitShims.h): inlined, and known to the
    /// optimizer to only read memory, so the write path around it needs no retain of the model.
    @inlinable static var current: UInt32 { modelkit_change_epoch() }

    /// Starts a new epoch: every model takes the slow path on its next write.
    static func advance() {
        modelkit_advance_change_epoch()
    }

    /// Flipped in the quiet epoch of a model whose type declares relationships: its plain writes
    /// are quiet, but a write of a reference must still look for an inverse to keep in line.
    /// The epoch's low 31 bits are never all 0, so neither form of the quiet epoch is 0.
    /// (Computed, not stored: a stored static is read through a once-check on every write.)
    @inlinable static var relationshipsBit: UInt32 { 0x8000_0000 }
}

/// The state of one model that changed since a reset or load, is observed or holds models: the
/// values at the last reset, the models it holds, and (in a second object, rarer still) batches
/// and listeners. A new model written before its first reset needs none of it (see
/// ``ChangeBaseline``).
///
/// Split in two so that the common case, a model written once since its reset, costs one small
/// object: the values at the reset and a pointer.
@usableFromInline final class ChangeTracker<Properties: Codable>: HeldModels {
    /// The values at the last reset, saved on the first change after it. `nil`: unchanged.
    @usableFromInline var original: Properties?
    /// The encoded values at the last reset, for changes made before the process that wrote a
    /// whole-graph file or snapshot (its `tracking` member): they come back encoded, and take
    /// precedence over ``original`` until the next reset.
    var restored: ModelValue.Object?
    /// Batches, notifications and observers; made for the first of them.
    @usableFromInline var listening: ChangeListening<Properties>?

    @usableFromInline override init() {}

    /// Whether the tracker holds nothing, so that the box can drop it.
    var isEmpty: Bool {
        original == nil && restored == nil && held.isEmpty && (listening?.isIdle ?? true)
    }

    /// ``listening``, made if needed.
    var listeningState: ChangeListening<Properties> {
        if let listening { return listening }
        let made = ChangeListening<Properties>()
        listening = made
        return made
    }

    /// `beginChanges()` nesting.
    @usableFromInline var batchDepth: Int {
        @inlinable get { listening?.batchDepth ?? 0 }
        set { listeningState.batchDepth = newValue }
    }

    /// The values at the outermost `beginChanges()`, for the coalesced report at the end.
    var batchStart: Properties? {
        get { listening?.batchStart }
        set { listeningState.batchStart = newValue }
    }

    /// The values a load gave the model inside the open batch, for its undo (see
    /// ``ChangeListening/batchLoaded``).
    var batchLoaded: Properties? {
        get { listening?.batchLoaded }
        set { listeningState.batchLoaded = newValue }
    }

    /// Whether a property was read under observation and written inside the open batch: the
    /// Observation framework is told once, at the end.
    @usableFromInline var batchTouchedObservation: Bool {
        @inlinable get { listening?.batchTouchedObservation ?? false }
        set { listeningState.batchTouchedObservation = newValue }
    }

    /// Posts NotificationCenter notifications for this model even when they are off globally.
    var postsNotifications: Bool {
        get { listening?.postsNotifications ?? false }
        set { listeningState.postsNotifications = newValue }
    }

    /// Closure observers and streams of this model; created for the first one.
    var observers: ObserverList? {
        get { listening?.observers }
        set { listeningState.observers = newValue }
    }

    /// Whether somebody listening to a model with `tracker` (or none) reads what changed, so
    /// that a change must be found by encoding the values before and after: notifications, the
    /// model's observers, the context's observers and streams, its undo manager (a change that
    /// turns out empty registers no undo step). Live result sets don't: they re-read the model.
    static func readsChanges(_ tracker: ChangeTracker?, context: ModelContext?) -> Bool {
        ModelNotifications.isEnabled || (tracker?.listening?.hasListeners ?? false)
            || (context.map { $0.undoManager != nil || $0.changeObservers.readsChanges } ?? false)
    }

    /// Whether anybody wants to hear about the changes of a model with `tracker` (or none),
    /// apart from Observation.
    @usableFromInline static func hasListeners(_ tracker: ChangeTracker?, context: ModelContext?) -> Bool {
        ModelNotifications.isEnabled || (tracker?.listening?.hasListeners ?? false) || (context?.hasChangeListeners ?? false)
    }
}

/// The models a model holds (see ``ModelObject/held``), in a class that is not generic so that
/// code not specialized for the model's type (to-many mutations) reads them at a fixed offset,
/// without looking up the tracker's generic metadata.
@usableFromInline class HeldModels {
    var held: [AnyObject] = []

    @usableFromInline init() {}
}

/// The rarely used part of a model's ``ChangeTracker``.
@usableFromInline final class ChangeListening<Properties: Codable> {
    @usableFromInline var batchDepth = 0
    var batchStart: Properties?
    /// The values a load or merge gave the model inside the open batch: what the batch's undo
    /// restores instead of `batchStart` (a load is not an edit to undo; see `replaceLoadedValues`).
    var batchLoaded: Properties?
    @usableFromInline var batchTouchedObservation = false
    var postsNotifications = false
    var observers: ObserverList?
    /// Whether the batch is one the model joined in its context's open `batchChanges`, which
    /// ends it.
    var joinedContextBatch = false

    init() {}

    /// Whether this model itself has listeners.
    @usableFromInline var hasListeners: Bool {
        postsNotifications || !(observers?.isEmpty ?? true)
    }

    /// Whether nothing here is in use: no batch, no notifications, no observer.
    var isIdle: Bool {
        batchDepth == 0 && !postsNotifications && (observers?.isEmpty ?? true)
    }
}

/// The Observation framework's side of every model: shared registrars and key paths, each model
/// using the pair its identity picks.
///
/// Observation works per model: reading any persisted property of a model inside
/// `withObservationTracking` (or a SwiftUI `body`) makes the next change of any persisted
/// property of that model fire the tracking. A registrar per model would cost about 250 bytes
/// for every model ever read, because the framework can't tell whether a read is being tracked.
/// Instead a model's identity picks one of 1,024 shared registrars and one of 1,024 key paths,
/// and the framework matches changes to trackings by that pair, so models spend nothing. Two
/// models share a pair with a chance of about one in a million; a change to one then also fires
/// a tracking that read the other, an extra, harmless update.
@usableFromInline enum ObservationSlots {
    /// The subject every access and change is reported on: registrars match by key path only.
    @usableFromInline final class Subject: Observable, Sendable {
        subscript(pair pair: Int) -> Int { pair }
    }

    /// The registrars, key paths and subject, made once and never freed. The registrars live in
    /// raw memory: `ObservationRegistrar` is a resilient type, and reading one out of an array
    /// would copy it through its value witnesses on every read of every model.
    // Unchecked: the pointers are filled once in `init` and never written again; what they point
    // to (registrars, key paths) is itself `Sendable`.
    final class Table: @unchecked Sendable {
        let registrars: UnsafeMutablePointer<Unmanaged<Registrar>>
        let keyPaths: UnsafeMutablePointer<Unmanaged<KeyPath<Subject, Int>>>
        let subject = Subject()

        init() {
            registrars = .allocate(capacity: 1024)
            keyPaths = .allocate(capacity: 1024)
            for index in 0..<1024 {
                (registrars + index).initialize(to: .passRetained(Registrar()))
                (keyPaths + index).initialize(to: .passRetained(\Subject.[pair: index]))
            }
        }
    }

    /// A registrar in an object: calling it through a `let` of a final class borrows it in place.
    final class Registrar: Sendable {
        let registrar = ObservationRegistrar()
    }

    static let table = Table()

    /// Fibonacci hashing of the box's address: its top 20 bits pick the registrar and key path.
    /// (The address itself, not `hashValue`, which would run SipHash on every read.)
    @inline(__always)
    private static func slot(_ address: UInt) -> (registrar: Int, keyPath: Int) {
        let mixed = UInt64(address) &* 0x9E37_79B9_7F4A_7C15
        return (Int(mixed >> 54), Int((mixed >> 44) & 1023))
    }

    @inline(__always)
    private static func slot(_ box: AnyObject) -> (registrar: Int, keyPath: Int) {
        slot(UInt(bitPattern: ObjectIdentifier(box)))
    }

    /// Tells the framework that a property of the model whose box is at `address` is read.
    ///
    /// It takes the address as a number, not the box: the read path then has no object to keep
    /// alive across this call.
    @usableFromInline static func access(_ address: UInt) {
        let table = self.table
        let slot = slot(address)
        table.keyPaths[slot.keyPath]._withUnsafeGuaranteedRef { keyPath in
            table.registrars[slot.registrar]._withUnsafeGuaranteedRef { $0.registrar.access(table.subject, keyPath: keyPath) }
        }
    }

    /// Tells the framework that a property of the model that owns `box` is about to change.
    @usableFromInline static func willSet(_ box: AnyObject) {
        let table = self.table
        let slot = slot(box)
        table.keyPaths[slot.keyPath]._withUnsafeGuaranteedRef { keyPath in
            table.registrars[slot.registrar]._withUnsafeGuaranteedRef { $0.registrar.willSet(table.subject, keyPath: keyPath) }
        }
    }

    /// Tells the framework that a property of the model that owns `box` changed.
    @usableFromInline static func didSet(_ box: AnyObject) {
        let table = self.table
        let slot = slot(box)
        table.keyPaths[slot.keyPath]._withUnsafeGuaranteedRef { keyPath in
            table.registrars[slot.registrar]._withUnsafeGuaranteedRef { $0.registrar.didSet(table.subject, keyPath: keyPath) }
        }
    }
}

/// Observers of one model or one context. Adding, removing and listing are thread-safe; the
/// callbacks are called by whoever reports a change, without any lock held.
// Unchecked: the callbacks are not `Sendable`, but they are only stored and copied out under
// `state`'s lock, and called by the code that reports a change, in the observed context's domain;
// only adding and removing (a token's cancel) may come from elsewhere.
final class ObserverList: @unchecked Sendable {
    /// The event, the model it happened to, and for an update, the model's `Properties` before
    /// it (live result sets find where the model was in their order by them).
    typealias Callback = (ModelChangeEvent, AnyObject?, Any?) -> Void

    private struct State {
        var nextId: UInt64 = 0
        var entries: [(id: UInt64, callback: Callback, readsChanges: Bool)] = []
    }

    private let state = Locked(State())
    /// Mirrors `entries.isEmpty`, readable without the lock on the paths that only need a hint.
    private let count = Atomic<Int>(0)
    /// How many entries read the event's `changes` (see `readsChanges`).
    private let readers = Atomic<Int>(0)

    /// Adds `callback`; returns its id and whether it is the first observer. An observer that
    /// doesn't read the events' `changes` (`readsChanges: false`) gets them empty, unless
    /// another reads them: then nobody encodes a model to find them.
    func add(_ callback: @escaping Callback, readsChanges: Bool = true) -> (id: UInt64, wasEmpty: Bool) {
        let result = state.withLock { state -> (UInt64, Bool) in
            state.nextId += 1
            state.entries.append((state.nextId, callback, readsChanges))
            return (state.nextId, state.entries.count == 1)
        }
        count.add(1, ordering: .relaxed)
        if readsChanges { readers.add(1, ordering: .relaxed) }
        return result
    }

    func remove(_ id: UInt64) {
        let removed = state.withLock { state -> Bool? in
            guard let index = state.entries.firstIndex(where: { $0.id == id }) else { return nil }
            return state.entries.remove(at: index).readsChanges
        }
        guard let removed else { return }
        count.subtract(1, ordering: .relaxed)
        if removed { readers.subtract(1, ordering: .relaxed) }
    }

    var isEmpty: Bool { count.load(ordering: .relaxed) == 0 }

    /// Whether an observer reads the events' `changes`.
    var readsChanges: Bool { readers.load(ordering: .relaxed) > 0 }

    /// Calls every observer with `event`. The list is copied first: observers may add or remove
    /// observers, or read and write models, from their callbacks.
    func notify(_ event: ModelChangeEvent, model: AnyObject?, before: Any? = nil) {
        guard !isEmpty else { return }
        // A copy of the array is one retain of its storage; mapping it to the callbacks was an
        // allocation per event (a context batch's end reports every model it changed).
        let entries = state.withLock { $0.entries }
        for entry in entries { entry.callback(event, model, before) }
    }
}

/// What `willChange` learned before a write, for `didChange` after it.
@usableFromInline struct PendingChange<Properties> {
    /// The values before the write, when its changes must be reported one by one.
    @usableFromInline var before: Properties?
    /// Whether the Observation registrar was told `willSet`.
    @usableFromInline var toldRegistrar = false

    @inlinable init() {}
}

extension Model {
    /// The model's tracker, made if needed.
    var changeTracker: ChangeTracker<Properties> {
        if let tracker = storage.tracker { return tracker }
        let tracker = ChangeTracker<Properties>()
        storage.tracker = tracker
        return tracker
    }

    /// Tells the Observation framework that a persisted property is read. Called by every getter.
    ///
    /// The first read since the last write also marks the model as read (`observed`), so that
    /// the next write tells the framework; writes in between need not, because a tracking fires
    /// at most once and registering again takes another read.
    @inlinable @inline(__always)
    func _observeRead() {
        _checkIsolation()
        let box = storage.box
        if _slowPath(!box.observed) {
            box.observed = true
            box.quietEpoch = 0
        }
        ObservationSlots.access(UInt(bitPattern: ObjectIdentifier(box)))
    }

    /// The slow path before a write, for the inlined property setters: `model` is retained by the
    /// caller (`Unmanaged.passRetained`) and released by ``_didChange(_:_:)``.
    ///
    /// Specialized for each model type (but not inlined), so that it needs no run-time lookups
    /// of generic metadata: it runs on the first write of every model.
    @inlinable @inline(never)
    static func _willChange(_ model: Unmanaged<Self>) -> PendingChange<Properties> {
        model.takeUnretainedValue()._willChange()
    }

    /// The slow path after a write started with ``_willChange(_:)``; releases `model`.
    @inlinable @inline(never)
    static func _didChange(_ model: Unmanaged<Self>, _ pending: PendingChange<Properties>) {
        model.takeRetainedValue()._didChange(pending)
    }

    /// The slow path before a write: saves what change tracking needs and tells the registrar.
    @inlinable func _willChange() -> PendingChange<Properties> {
        var pending = PendingChange<Properties>()
        let storage = self.storage
        // A plain write of a quiet model of a type with relationships: nothing to do.
        if storage.box.writesQuietlyKeepingInverses { return pending }
        var tracker = storage.tracker
        switch storage.box.baseline {
        case .saved:
            // The values at the reset are saved once, at the first write after it.
            if tracker == nil {
                tracker = ChangeTracker<Properties>()
                storage.tracker = tracker
            }
            if tracker?.original == nil { tracker?.original = storage.values }
        case .newUntouched:
            // A new model compares with its type's defaults: nothing to save.
            storage.box.baseline = .newWritten
        case .newWritten:
            break
        }
        let context = storage.context
        // Inside a context's batch, a model someone listens to reports once, at its end.
        if let context, context.openBatch != nil, (tracker?.batchDepth ?? 0) == 0,
            ChangeTracker.hasListeners(tracker, context: context)
        {
            context.joinBatch(self)
            tracker = storage.tracker
        }
        let batchDepth = tracker?.batchDepth ?? 0
        var tell = false
        if storage.box.observed {
            storage.box.observed = false
            if batchDepth > 0 {
                tracker?.batchTouchedObservation = true
            } else {
                tell = true
            }
        }
        if batchDepth == 0 && ChangeTracker.hasListeners(tracker, context: context) {
            pending.before = storage.values
            storage.quietEpoch = 0
        } else {
            // A model with relationships says so in its quiet epoch: its reference writes keep
            // inverses even when quiet.
            storage.box.settleQuietly(hasRelationships: _hasRelationships(Self.self))
        }
        // Indexes re-read the model at their next use. (In the listening case above the model
        // stays on this slow path, so every write comes here.)
        if let context, context.hasIndexes { context.noteIndexedWrite(self) }
        if tell {
            ObservationSlots.willSet(storage.box)
            pending.toldRegistrar = true
        }
        return pending
    }

    /// The slow path after a write: tells the registrar, and reports the change if wanted.
    /// Specialized like `_willChange`; the reporting itself is out of line.
    @inlinable func _didChange(_ pending: PendingChange<Properties>) {
        if pending.toldRegistrar { ObservationSlots.didSet(storage.box) }
        guard let before = pending.before else { return }
        _reportWrite(since: before)
    }

    /// Reports what a write changed, to everybody listening to each write.
    @usableFromInline func _reportWrite(since before: Properties) {
        // Only live result sets listen: they need the model, not an encoding of it twice.
        guard ChangeTracker.readsChanges(storage.tracker, context: storage.context) else {
            return report(ModelChanges(), batched: false, before: before)
        }
        let changes = ModelChanges.between(Self.encoded(before), Self.encoded(storage.values))
        guard !changes.isEmpty else { return }
        registerUndo(restoring: before)
        report(changes, batched: false, before: before)
    }

    /// Stamps `updatedAt`, tells the context and delivers `changes` to everybody listening.
    func report(_ changes: ModelChanges, batched: Bool, before: Properties) {
        let now = Date()
        let storage = self.storage
        storage.stampPending = false
        if now > storage.metadata.updatedAt { storage.metadata.updatedAt = now }
        let (context, tracker, id) = (storage.context, storage.tracker, storage.metadata.modelId)
        context?.noteUpdated(id)
        if tracker?.postsNotifications == true || ModelNotifications.isEnabled {
            postNotifications(for: changes, batched: batched)
        }
        let event = ModelChangeEvent(kind: .updated, modelId: id, modelName: ReportedModelNames.of(Self.self), changes: changes)
        tracker?.observers?.notify(event, model: self)
        context?.changeObservers.notify(event, model: self, before: before)
    }

    /// The persisted properties `values` as an object; empty when they fail to encode.
    static func encoded(_ values: Properties) -> ModelValue.Object {
        guard case .object(let object)? = try? GraphStreamWriter.valueTree(of: values) else {
            return ModelValue.Object()
        }
        return object
    }
}

/// The ``Model/modelName`` of each model type that reported an update, read once per type: the
/// default name is `String(describing:)` of the class, which cost about a third of each model's
/// report at a context batch's end (`perf record -g` of live-batch). A model name is the type's
/// name in files and events, fixed for the process.
enum ReportedModelNames {
    private static let names = Locked<[ObjectIdentifier: String]>([:])

    static func of<M: Model>(_ type: M.Type) -> String {
        let key = ObjectIdentifier(type)
        if let name = names.withLock({ $0[key] }) { return name }
        let name = M.modelName
        names.withLock { $0[key] = name }
        return name
    }
}
