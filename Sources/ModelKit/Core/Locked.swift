import Synchronization

/// State guarded by a mutex.
///
/// `Mutex` alone would require everything returned from its critical sections to be `sending`,
/// which the model instances a context hands out are not: they stay reachable from the context.
/// This wrapper keeps the state in the class and only uses the mutex for mutual exclusion.
final class Locked<State>: @unchecked Sendable {
    private let mutex = Mutex(())
    private var state: State

    init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with exclusive access to the state. `body` must not call back into code that
    /// takes the same lock (it is not recursive) nor call out to user code.
    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        try mutex.withLock { _ in try body(&state) }
    }
}
