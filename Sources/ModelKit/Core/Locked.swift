import Foundation

/// State guarded by a lock.
///
/// `Synchronization.Mutex` would require everything returned from its critical sections to be
/// `sending`, which the model instances a context hands out are not: they stay reachable from the
/// context. It is also invisible to ThreadSanitizer on Linux (a futex it does not model), which
/// then reports every guarded access as a race. `NSLock` is a pthread mutex there, so the
/// sanitizer can check the locking of contexts and the registry.
// Unchecked: `state` is read and written only inside `withLock`, under `lock`.
final class Locked<State>: @unchecked Sendable {
    private let lock = NSLock()
    private var state: State

    init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with exclusive access to the state. `body` must not call back into code that
    /// takes the same lock (it is not recursive) nor call out to user code.
    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
