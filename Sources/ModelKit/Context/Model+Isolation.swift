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
        owner.preconditionIsolated(
            "ModelKit: \(modelName) \(model.modelId) belongs to a context of \(Self.domainName(of: owner)), "
                + "but was reached from another isolation domain (\(Thread.isMainThread ? "the main thread" : "\(Thread.current)")). "
                + "Hand its ModelID or a ModelSnapshot across instead.")
    }

    private static func domainName(of actor: any Actor) -> String {
        actor === MainActor.shared ? "the main actor" : "actor \(type(of: actor))"
    }
}
