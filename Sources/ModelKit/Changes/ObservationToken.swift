/// Keeps a closure observer registered: call ``cancel()``, or let the token go, to stop it.
///
/// ```swift
/// let token = author.observeChanges { author, changes in
///     print(changes.properties)
/// }
/// // …
/// token.cancel()   // or drop the last reference to `token`
/// ```
///
/// Cancelling is thread-safe and idempotent. A callback already running on another thread may
/// finish after `cancel()` returns; no callback starts after that.
public final class ObservationToken: Sendable, Hashable {
    private let list: ObserverList
    private let id: UInt64

    init(list: ObserverList, id: UInt64) {
        self.list = list
        self.id = id
    }

    /// Stops the observer.
    public func cancel() {
        list.remove(id)
    }

    deinit { list.remove(id) }

    public static func == (lhs: ObservationToken, rhs: ObservationToken) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
