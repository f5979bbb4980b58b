import Observation

// The context's own state as Observation-framework values: `hasChanges`, `count` (and
// `isEmpty`) and a store's `needsSaving`. Reading one under `withObservationTracking` (or in a
// SwiftUI view's body) registers it; from then on every change of the context's tables (see
// `withRegistry`) compares the three with the values last told and notifies those that differ.

/// A context is `Observable`: reading ``ModelContext/hasChanges``, ``ModelContext/count``,
/// ``ModelContext/isEmpty`` or its store's ``ModelStore/needsSaving`` inside
/// `withObservationTracking` or a SwiftUI view's body tracks the value, and a change of it
/// (an insertion, a write, a removal, a load, a merge, an undo, a save or ``ModelContext/resetChanges()``)
/// notifies the observer. A change that leaves the value as it was notifies nothing: the second
/// write after a save does not, since ``ModelContext/hasChanges`` was already true.
///
/// ```swift
/// withObservationTracking {
///     saveButton.isEnabled = context.hasChanges
/// } onChange: {
///     print("hasChanges changed")
/// }
/// ```
///
/// - Complexity: Nothing until one of the values is read under observation; from then on O(1)
///   more per change of the context's tables.
extension ModelContext: Observable {}

extension ModelContext {
    /// The values of the context that the Observation framework tracks.
    struct ObservedState: Equatable {
        var hasChanges: Bool
        var count: Int
        var needsSaving: Bool
    }

    /// Registers a read of `keyPath` with the Observation framework, and starts checking the
    /// observed values on each change of the tables if this is the first such read.
    ///
    /// - Complexity: O(1).
    func accessObserved<Member>(_ keyPath: KeyPath<ModelContext, Member>) {
        if observedState == nil { observedState = currentObservedState }
        observationRegistrar.access(self, keyPath: keyPath)
    }

    /// Whether the context has something a ``ModelStore``'s save would write: a change
    /// (``hasChanges``) or a model whose tracking changed. Observable, like ``hasChanges``.
    ///
    /// - Complexity: O(1).
    var needsSaving: Bool {
        accessObserved(\.needsSaving)
        return packageStateChanged || withRegistry { !$0.log.isEmpty || !$0.log.tracked.isEmpty }
    }

    /// Tells the observers of each observed value that changed since it was last told.
    /// The new values are recorded first, so an observer that reads the context, or changes it,
    /// sees them and is not told twice.
    ///
    /// - Complexity: O(1).
    func publishObservedStateChanges() {
        guard let old = observedState else { return }
        let new = currentObservedState
        guard new != old else { return }
        observedState = new
        if new.hasChanges != old.hasChanges {
            observationRegistrar.withMutation(of: self, keyPath: \.hasChanges) {}
        }
        if new.count != old.count {
            observationRegistrar.withMutation(of: self, keyPath: \.count) {}
        }
        if new.needsSaving != old.needsSaving {
            observationRegistrar.withMutation(of: self, keyPath: \.needsSaving) {}
        }
    }
}
