import Foundation
import Synchronization

// Context-level change tracking: which models were inserted, updated and removed since the last
// reset, and observers and streams of every change in the context.

/// The ids of the models a context inserted, updated and removed since its last
/// ``ModelContext/resetChanges()``. The three sets are disjoint.
public struct ContextChanges: Equatable, Sendable {
    /// Models added to the context (and still in it). A model inserted and then changed is only
    /// inserted.
    public var inserted: Set<ModelID> = []
    /// Models that were in the context at the reset and whose persisted properties were written.
    public var updated: Set<ModelID> = []
    /// Models that were in the context at the reset (or were re-inserted since) and are gone.
    public var removed: Set<ModelID> = []

    /// Whether anything was inserted, updated or removed.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && removed.isEmpty }

    public init() {}
}

/// The context's record of changes. Inserting a model must stay cheap in time and memory, so
/// insertions are not listed: a model inserted since the reset carries the context's change
/// generation (`insertedGeneration`), and the inserted models are found by walking the context's
/// models when the changes are read. Only their number is kept, so that reading the changes of a
/// context where nothing was inserted walks nothing.
struct ChangeLog {
    /// How many models inserted since the reset are still in the context.
    var insertedCount = 0
    /// Models that were there at the reset (or came back after being removed) and were written.
    var updated: Set<ModelID> = []
    /// Models that were there at the reset and are gone.
    var removed: Set<ModelID> = []
    /// Models whose tracking (package metadata, state after a push) changed: not a change of
    /// the model, but what a store must save (`ModelContext.noteTrackingChanged`).
    var tracked: Set<ModelID> = []

    /// Records an insertion; returns whether the model counts as inserted (rather than as a model
    /// that was there at the reset and came back, which counts as updated).
    mutating func inserted(_ id: ModelID) -> Bool {
        if !removed.isEmpty, removed.remove(id) != nil {
            updated.insert(id)
            return false
        }
        insertedCount += 1
        return true
    }

    /// Records a removal; `insertedSinceReset` models simply were never there.
    mutating func removed(_ id: ModelID, insertedSinceReset: Bool) {
        updated.remove(id)
        tracked.remove(id)
        if insertedSinceReset {
            insertedCount -= 1
        } else {
            removed.insert(id)
        }
    }

    var isEmpty: Bool { insertedCount == 0 && updated.isEmpty && removed.isEmpty }
}

extension ModelContext {
    /// The models inserted, updated and removed since the last ``resetChanges()``.
    ///
    /// A model counts as updated once a persisted property was written (assigning a property its
    /// current value is no write). Models are used by one thread at a time, so a write made on
    /// another thread shows up here once that thread's write happened before your read, as for
    /// any shared state.
    ///
    /// - Complexity: O(k) in the number of changed models (the sets are copied), plus O(n) in
    ///   the number of models in the context when a model was inserted since the last reset
    ///   (inserted models are found by walking the context's models, so that inserting costs no
    ///   memory).
    public var changes: ContextChanges {
        let generation = changeGeneration
        return withRegistry { $0.changes(generation: generation) }
    }

    /// Whether any model was inserted, updated or removed since the last ``resetChanges()``: for
    /// example, to save on exit only when something changed.
    ///
    /// Observable: read inside `withObservationTracking` or a SwiftUI view's body, it notifies
    /// when it turns true (the first insertion, write or removal) or false (``resetChanges()``,
    /// a store's save), and not on the changes in between.
    ///
    /// ```swift
    /// Button("Save") { try? store.save() }.disabled(!context.hasChanges)
    /// ```
    ///
    /// - Complexity: O(1).
    public var hasChanges: Bool {
        accessObserved(\.hasChanges)
        return withRegistry { !$0.log.isEmpty }
    }

    /// The inserted models still in the context.
    ///
    /// - Complexity: O(n) in the number of models in the context, when any was inserted since
    ///   the last reset; else O(1).
    public var insertedModels: [any Model] {
        let generation = changeGeneration
        return withRegistry { registry in
            registry.insertedIds(generation: generation).compactMap { registry.models[$0] }
        }
    }

    /// The updated models still in the context.
    ///
    /// - Complexity: As ``changes``.
    public var updatedModels: [any Model] {
        let generation = changeGeneration
        return withRegistry { registry in
            registry.changes(generation: generation).updated.compactMap { registry.models[$0] }
        }
    }

    /// Forgets the context's record of changes. The models' own ``Model/changes`` are untouched:
    /// reset them from the threads that use them.
    public func resetChanges() {
        withRegistry { $0.log = ChangeLog() }
        packageStateChanged = false
        generation.wrappingAdd(1, ordering: .relaxed)  // models inserted before are not "inserted" any more
        ChangeEpoch.advance()  // models must note their next write again
    }

    /// Calls `body` for every model inserted into, updated in or removed from this context, until
    /// the returned token is cancelled or released.
    ///
    /// `body` runs synchronously in the context's isolation domain, right after the change, with
    /// no lock held; it may use the context and its models. Changes inside a model's
    /// ``Model/beginChanges()``/``Model/endChanges()`` arrive as one
    /// ``ModelChangeEvent/Kind/updated`` event.
    ///
    /// ```swift
    /// let token = context.observeChanges { event in print(event.kind, event.modelId) }
    /// ```
    ///
    /// - Complexity: O(1) to register; every later change of the context's models is compared
    ///   with its values before (O(n) in the size of the model's properties) while it is observed.
    public func observeChanges(_ body: @escaping (ModelChangeEvent) -> Void) -> ObservationToken {
        ObservationToken(list: changeObservers, id: addChangeObserver { event, _, _ in body(event) })
    }

    /// Every model inserted into, updated in or removed from this context, as it happens, as an
    /// asynchronous sequence.
    ///
    /// ```swift
    /// for await event in context.changeEvents() {
    ///     switch event.kind {
    ///     case .inserted: print("new", event.modelName, event.modelId)
    ///     case .updated: print("changed", event.changes.properties)
    ///     case .removed: print("gone", event.modelId)
    ///     }
    /// }
    /// ```
    ///
    /// While a context has observers, every write to its models is compared with the values
    /// before it (O(n) in the size of the model's properties), so that events carry the changed
    /// properties: stop iterating when you no longer need the events.
    public func changeEvents(
        bufferingPolicy: AsyncStream<ModelChangeEvent>.Continuation.BufferingPolicy = .unbounded
    ) -> AsyncStream<ModelChangeEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: ModelChangeEvent.self, bufferingPolicy: bufferingPolicy)
        let id = addChangeObserver { event, _, _ in continuation.yield(event) }
        let observers = changeObservers
        continuation.onTermination = { _ in observers.remove(id) }
        return stream
    }

    func addChangeObserver(_ callback: @escaping ObserverList.Callback, readsChanges: Bool = true) -> UInt64 {
        let (id, wasEmpty) = changeObservers.add(callback, readsChanges: readsChanges)
        if wasEmpty { ChangeEpoch.advance() }  // models that write quietly must report again
        return id
    }

    /// Records that the model with `id` was written.
    @usableFromInline func noteUpdated(_ id: ModelID) {
        withRegistry { registry in
            guard registry.models[id] != nil else { return }
            registry.log.updated.insert(id)
        }
    }
}
