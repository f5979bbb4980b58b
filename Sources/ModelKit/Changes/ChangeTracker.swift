import Foundation
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
    /// The counter, in memory that is never freed, whose address every model's storage holds: the
    /// inlined fast path reads it with two loads and no call (a global would need its lazy
    /// accessor), and, unlike an atomic stored in an object, reading it through a plain pointer
    /// makes the compiler keep no object alive around the write.
    @usableFromInline nonisolated(unsafe) static let address: UnsafeMutablePointer<Atomic<UInt32>> = {
        let address = UnsafeMutablePointer<Atomic<UInt32>>.allocate(capacity: 1)
        address.initialize(to: Atomic(1))
        return address
    }()

    /// The current epoch; never 0, which a model's `quietEpoch` uses for "not quiet".
    @inlinable static var current: UInt32 { address.pointee.load(ordering: .relaxed) }

    /// The epoch at `address`, for the inlined write path.
    ///
    /// Out of line and declared read-only on purpose: the optimizer treats an inlined atomic load
    /// as a barrier that may release objects, and then keeps the caller's reference to the model
    /// retained across every write (a retain and a release per write, most of its cost). A call
    /// it knows only reads memory is no such barrier. The load is relaxed: a write racing with the
    /// change of epoch may go either way, as it may with any ordering.
    @inlinable @inline(never) @_effects(readonly)
    static func load(_ address: UnsafeMutablePointer<Atomic<UInt32>>) -> UInt32 {
        address.pointee.load(ordering: .relaxed)
    }

    /// Starts a new epoch: every model takes the slow path on its next write.
    static func advance() {
        let next = address.pointee.wrappingAdd(1, ordering: .relaxed).newValue
        if next == 0 { address.pointee.store(1, ordering: .relaxed) }
    }
}

/// Change-tracking state of one model that changed or is observed.
@usableFromInline final class ChangeTracker<Properties: Codable> {
    /// The values at the last reset, saved on the first change after it. `nil`: unchanged.
    @usableFromInline var original: Properties?
    /// `beginChanges()` nesting.
    @usableFromInline var batchDepth = 0
    /// The values at the outermost `beginChanges()`, for the coalesced report at the end.
    var batchStart: Properties?
    /// Whether a property was read under observation and written inside the open batch: the
    /// Observation framework is told once, at the end.
    @usableFromInline var batchTouchedObservation = false
    /// Posts NotificationCenter notifications for this model even when they are off globally.
    var postsNotifications = false
    /// Closure observers and streams of this model; created for the first one.
    var observers: ObserverList?

    @usableFromInline init() {}

    /// Whether anybody wants to hear about this model's changes, apart from Observation.
    @usableFromInline func hasListeners(context: ModelContext?) -> Bool {
        postsNotifications || ModelNotifications.isEnabled || !(observers?.isEmpty ?? true)
            || (context?.changeObservers.isEmpty == false)
    }
}

/// The Observation framework's registrar of one model, made on the model's first read.
///
/// Observation is per model: the key path reported for every persisted property is the model's
/// `storage`, so reading any persisted property of a model inside `withObservationTracking` (or a
/// SwiftUI `body`) makes any change to a persisted property of that model invalidate it.
@usableFromInline final class ModelObservation {
    @usableFromInline let registrar = ObservationRegistrar()
    /// `\Model.storage` for the model's type, made once: key paths over generic types are built
    /// at run time.
    @usableFromInline let keyPath: AnyKeyPath
    /// Set when a property was read since the last write (the read may have been tracked): the
    /// next write must tell the registrar. Cleared by that write. A tracking registered by a read
    /// fires at most once, and registering again needs another read, so writes in between
    /// need not tell the registrar.
    @usableFromInline @exclusivity(unchecked) var armed = false

    init(keyPath: AnyKeyPath) {
        self.keyPath = keyPath
    }
}

/// Observers of one model or one context. Adding, removing and listing are thread-safe; the
/// callbacks are called by whoever reports a change, without any lock held.
final class ObserverList: @unchecked Sendable {
    typealias Callback = (ModelChangeEvent, AnyObject?) -> Void

    private struct State {
        var nextId: UInt64 = 0
        var entries: [(id: UInt64, callback: Callback)] = []
    }

    private let state = Locked(State())
    /// Mirrors `entries.isEmpty`, readable without the lock on the paths that only need a hint.
    private let count = Atomic<Int>(0)

    /// Adds `callback`; returns its id and whether it is the first observer.
    func add(_ callback: @escaping Callback) -> (id: UInt64, wasEmpty: Bool) {
        let result = state.withLock { state -> (UInt64, Bool) in
            state.nextId += 1
            state.entries.append((state.nextId, callback))
            return (state.nextId, state.entries.count == 1)
        }
        count.add(1, ordering: .relaxed)
        return result
    }

    func remove(_ id: UInt64) {
        let removed = state.withLock { state -> Bool in
            guard let index = state.entries.firstIndex(where: { $0.id == id }) else { return false }
            state.entries.remove(at: index)
            return true
        }
        if removed { count.subtract(1, ordering: .relaxed) }
    }

    var isEmpty: Bool { count.load(ordering: .relaxed) == 0 }

    /// Calls every observer with `event`. The list is copied first: observers may add or remove
    /// observers, or read and write models, from their callbacks.
    func notify(_ event: ModelChangeEvent, model: AnyObject?) {
        guard !isEmpty else { return }
        let callbacks = state.withLock { $0.entries.map(\.callback) }
        for callback in callbacks { callback(event, model) }
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

    /// `\Self.storage` as the key path handed to the Observation registrar.
    @usableFromInline func observationKeyPath(_ observation: ModelObservation) -> KeyPath<Self, ModelStorage<Properties>> {
        unsafeDowncast(observation.keyPath, to: KeyPath<Self, ModelStorage<Properties>>.self)
    }

    /// Tells the Observation framework that a persisted property is read. Called by every getter.
    @inlinable @inline(__always)
    func _observeRead() {
        if let observation = storage.observation, observation.armed {
            observation.registrar.access(self, keyPath: observationKeyPath(observation))
        } else {
            _observeReadSlow()
        }
    }

    @usableFromInline func _observeReadSlow() {
        let storage = self.storage
        let observation: ModelObservation
        if let existing = storage.observation {
            observation = existing
        } else {
            observation = ModelObservation(keyPath: \Self.storage)
            storage.observation = observation
        }
        observation.armed = true
        storage.quietEpoch = 0
        observation.registrar.access(self, keyPath: observationKeyPath(observation))
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
        let epoch = ChangeEpoch.current
        var pending = PendingChange<Properties>()
        let storage = self.storage
        let tracker: ChangeTracker<Properties>
        if let existing = storage.tracker {
            tracker = existing
        } else {
            tracker = ChangeTracker<Properties>()
            storage.tracker = tracker
        }
        if tracker.original == nil { tracker.original = storage.values }
        var tell: ModelObservation?
        if let observation = storage.observation, observation.armed {
            observation.armed = false
            if tracker.batchDepth > 0 {
                tracker.batchTouchedObservation = true
            } else {
                tell = observation
            }
        }
        let context = storage.context
        if tracker.batchDepth == 0 && tracker.hasListeners(context: context) {
            pending.before = storage.values
            storage.quietEpoch = 0
        } else {
            storage.stampPending = true
            storage.quietEpoch = epoch
            // A model inserted since the context's last reset counts as inserted, not updated.
            if let context, context.changeGeneration != storage.insertedGeneration {
                context.noteUpdated(storage.metadata.modelId)
            }
        }
        if let tell {
            tell.registrar.willSet(self, keyPath: observationKeyPath(tell))
            pending.toldRegistrar = true
        }
        return pending
    }

    /// The slow path after a write: tells the registrar, and reports the change if wanted.
    @usableFromInline func _didChange(_ pending: PendingChange<Properties>) {
        if pending.toldRegistrar, let observation = storage.observation {
            observation.registrar.didSet(self, keyPath: observationKeyPath(observation))
        }
        guard let before = pending.before else { return }
        let changes = ModelChanges.between(Self.encoded(before), Self.encoded(storage.values))
        guard !changes.isEmpty else { return }
        report(changes, batched: false)
    }

    /// Stamps `updatedAt`, tells the context and delivers `changes` to everybody listening.
    func report(_ changes: ModelChanges, batched: Bool) {
        let now = Date()
        let storage = self.storage
        storage.stampPending = false
        if now > storage.metadata.updatedAt { storage.metadata.updatedAt = now }
        let (context, tracker, id) = (storage.context, storage.tracker, storage.metadata.modelId)
        context?.noteUpdated(id)
        if tracker?.postsNotifications == true || ModelNotifications.isEnabled {
            postNotifications(for: changes, batched: batched)
        }
        let event = ModelChangeEvent(kind: .updated, modelId: id, modelName: Self.modelName, changes: changes)
        tracker?.observers?.notify(event, model: self)
        context?.changeObservers.notify(event, model: self)
    }

    /// The persisted properties `values` as an object; empty when they fail to encode.
    static func encoded(_ values: Properties) -> ModelValue.Object {
        guard case .object(let object)? = try? GraphWriter(format: .propertyList).encodeProperties(values) else {
            return ModelValue.Object()
        }
        return object
    }
}
