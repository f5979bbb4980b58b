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
    /// Removes the observer from its list; idempotent.
    private let remove: @Sendable () -> Void

    init(list: ObserverList, id: UInt64) {
        remove = { list.remove(id) }
    }

    /// A token that calls `remove` to stop its observer (which must tolerate repeated calls).
    init(remove: @escaping @Sendable () -> Void) {
        self.remove = remove
    }

    /// Stops the observer.
    public func cancel() {
        remove()
    }

    deinit { remove() }

    public static func == (lhs: ObservationToken, rhs: ObservationToken) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
