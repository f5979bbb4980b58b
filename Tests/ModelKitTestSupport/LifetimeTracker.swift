import Foundation

/// Counts live objects, to prove that graphs are released.
///
/// Give each object under test a token from ``token()`` in a stored property. The token dies with
/// its owner, so ``liveCount`` is the number of owners still alive.
///
/// ```swift
/// let tracker = LifetimeTracker()
/// do {
///     let node = Node()
///     node.lifetime = tracker.token()
/// }
/// #expect(tracker.liveCount == 0)
/// ```
public final class LifetimeTracker: @unchecked Sendable {
    // NSLock rather than Mutex, so that ThreadSanitizer can see the locking.
    private let lock = NSLock()
    private var counts = (live: 0, created: 0)

    public init() {}

    /// A token that counts as live until it is deinitialized.
    public func token() -> LifetimeToken {
        lock.withLock {
            counts.live += 1
            counts.created += 1
        }
        return LifetimeToken(tracker: self)
    }

    /// The number of tokens still alive.
    public var liveCount: Int { lock.withLock { counts.live } }

    /// The number of tokens ever created.
    public var createdCount: Int { lock.withLock { counts.created } }

    fileprivate func release() {
        lock.withLock { counts.live -= 1 }
    }
}

/// Keeps its ``LifetimeTracker`` informed of its lifetime.
public final class LifetimeToken: Sendable {
    private let tracker: LifetimeTracker

    fileprivate init(tracker: LifetimeTracker) {
        self.tracker = tracker
    }

    deinit { tracker.release() }
}
