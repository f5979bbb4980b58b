import Foundation

// The debug-build check that a model is used in its context's domain. The compiler already
// rejects sharing models across domains in Swift 6 code; this catches what it cannot see: code
// in the Swift 5 language mode, `@unchecked Sendable` wrappers, `nonisolated(unsafe)` and
// `assumeIsolated` used on the wrong executor. Release builds compile it out, so they pay nothing.

extension Model {
    /// Traps, in debug builds, when the model's context belongs to an actor whose executor is not
    /// the caller's. Called by every persisted-property accessor.
    @inlinable @inline(__always)
    func _checkIsolation() {
        #if DEBUG
            Self._checkIsolation(of: self)
        #endif
    }

    @usableFromInline @inline(never)
    static func _checkIsolation(of model: Self) {
        guard let owner = model.storage.context?.owner else { return }
        if owner === MainActor.shared {
            // The main actor's own `preconditionIsolated` stops the process on Linux without
            // printing the message, which is the point of this check; so ask the main queue.
            // A trap, not a typed error: reaching this is a data race in the caller's code, which
            // no throwing accessor could report, and only debug builds check it.
            if !MainQueue.isCurrent { preconditionFailure(violation(of: model, owner: owner)) }
        } else {
            owner.preconditionIsolated(violation(of: model, owner: owner))
        }
    }

    /// What the trap says: the model, the domain that owns it and the one that reached it.
    private static func violation(of model: Self, owner: any Actor) -> String {
        let owning = owner === MainActor.shared ? "the main actor" : "actor \(type(of: owner))"
        let reaching = Thread.isMainThread ? "the main thread" : "thread \(Thread.current)"
        return "ModelKit: \(modelName) \(model.modelId) belongs to a context of \(owning), but was reached from "
            + "another isolation domain (\(reaching)). Hand its ModelID or a ModelSnapshot across instead."
    }
}

extension ModelContext {
    /// Makes `isolation`, the domain of a caller that uses the context, its owner if the context
    /// was made outside any actor and has no owner yet. An actor's `let modelContext =
    /// ModelContext()` is made in its initializer, where there is no actor to own it; the actor's
    /// first call that creates, inserts, loads, merges, finds or queries models in it ties it to
    /// the actor, so that the debug-build check covers its models from then on. Calls made
    /// outside any actor leave it unclaimed: a function that makes a context may hand it over.
    ///
    /// - Complexity: O(1).
    @inline(__always)
    func claim(for isolation: (any Actor)?) {
        guard isUnclaimed, let isolation else { return }
        owner = isolation
        isUnclaimed = false
    }
}

/// Whether the caller runs on the main queue, which executes the main actor's jobs.
///
/// `Thread.isMainThread` is not enough: after `dispatch_main()` (an `async` top-level program on
/// Linux), the main queue, and so the main actor, is drained by another thread. A mark set on the
/// main queue is seen by whatever thread is draining it.
enum MainQueue {
    private static let key = DispatchSpecificKey<Bool>()
    private static let marked: Bool = {
        DispatchQueue.main.setSpecific(key: key, value: true)
        return true
    }()

    static var isCurrent: Bool {
        _ = marked
        return Thread.isMainThread || DispatchQueue.getSpecific(key: key) == true
    }
}
