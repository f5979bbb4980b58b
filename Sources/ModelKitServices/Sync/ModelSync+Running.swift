import Foundation
import ModelKit

// Syncing over time (periodically, backing off when the server fails), the store's owner, and
// logging out: a store's pending changes belong to the user who made them.

extension ModelSync {
    /// Syncs now, then every `interval`, until the calling task is cancelled: put it in a
    /// SwiftUI `.task` or a task the app keeps. After a failure that may pass (the server
    /// unreachable or failing, too many requests, no room left), the next attempt waits twice as
    /// long as the one before (from `interval`, at most `maximumBackoff`), or as long as the
    /// server asked (`Retry-After`) if that is longer; a sync that succeeds goes back to
    /// `interval`. Syncs started by ``sync(progress:isolation:)`` meanwhile wait for each other,
    /// never run at once.
    ///
    /// ```swift
    /// .task { try? await sync.syncPeriodically(every: .seconds(60)) }
    /// ```
    ///
    /// - Throws: What no retry fixes, after which it stops: ``ServiceError/Code/unauthorized``
    ///   and ``ServiceError/Code/forbidden`` (log in again), ``ServiceError/Code/pendingChanges``
    ///   and ``ServiceError/Code/invalidModel``, and the store's errors. Cancelling the task ends
    ///   it without an error.
    /// - Complexity: One ``sync(progress:isolation:)`` per interval.
    public func syncPeriodically(
        every interval: Duration, maximumBackoff: Duration = .seconds(15 * 60), isolation: isolated (any Actor)? = #isolation
    ) async throws {
        var wait = interval
        while !Task.isCancelled {
            do {
                try await sync()
                wait = interval
            } catch let error as ServiceError {
                switch error.code {
                case .cancelled: return
                // A quota used up may be freed (by another device's deletes, or the server's
                // owner), so it is waited out with the same growing waits as a failing server.
                case .unreachable, .timedOut, .serverError, .rateLimited, .conflict, .httpStatus, .invalidResponse,
                    .notAttempted, .quotaExceeded:
                    wait = min(max(wait * 2, error.retryAfter ?? .zero), max(maximumBackoff, interval))
                default:
                    throw error
                }
            }
            do {
                try await Task.sleep(for: wait)
            } catch {
                return
            }
        }
    }

    /// Forgets the user's data on this device and logs the service out: every model of the
    /// synced types leaves the store, with what the sync kept about them, the store is saved,
    /// and a ``UserService`` logs out. The next user starts from an empty store. A sync under
    /// way finishes first; syncs started meanwhile wait for the log-out.
    ///
    /// ```swift
    /// try await sync.sync()          // push what is pending first
    /// try await sync.logOut()
    /// ```
    ///
    /// - Parameter discardingPendingChanges: Whether changes not pushed yet may be lost; by
    ///   default they stop the log-out.
    /// - Throws: ``ServiceError/Code/pendingChanges`` when changes are not pushed yet and not to
    ///   be discarded, and the store's errors when it cannot save: nothing is changed then. The
    ///   store's errors from its last save (the device's copy is gone from memory, the store
    ///   file still holds it), and the service's log-out errors (the store is empty).
    /// - Complexity: O(*n*) in the models of the synced types.
    public func logOut(discardingPendingChanges: Bool = false, isolation: isolated (any Actor)? = #isolation) async throws {
        // A sync under way would merge and save this user's records after the log-out.
        await beginExclusive()
        defer { endExclusive() }
        let pending = pendingChangeCount
        if pending > 0, !discardingPendingChanges {
            throw ServiceError(
                .pendingChanges(count: pending, reason: "logging out would lose them; sync first, or log out discarding them"))
        }
        // A store that cannot save fails here, before anything is forgotten.
        try await store.save()
        let versions = self.versions
        for type in models {
            for model in allModels(type) {
                versions[model.modelId] = nil
                model.removeFromContext()
            }
        }
        for (id, _) in versions.table.removed { versions.table.forgetRemoved(id) }
        for type in models { context.setPackageValue(nil, forKey: Self.sinceKey(service, collection: type.modelName)) }
        context.setPackageValue(nil, forKey: Self.lastSyncKey(service))
        context.setPackageValue(nil, forKey: Self.ownerKey)
        try await store.save()
        registrar.withMutation(of: self, keyPath: \.lastSuccessfulSync) { successfulSync = nil }
        registrar.withMutation(of: self, keyPath: \.pendingChangeCount) {}
        try (service as? any UserService)?.logOut()
    }

    /// Where the store records the service it syncs with.
    static let ownerKey = "ModelKitServices.sync owner"

    /// Checks that the store syncs with this service (server, bucket and user): the first sync
    /// that succeeds records it, and the store's versions and pending changes are that user's.
    ///
    /// - Throws: ``ServiceError/Code/pendingChanges`` for another user's store (its changes would
    ///   be pushed as this user's, its models would mix with theirs).
    func checkOwner() throws(ServiceError) {
        let identity = service.storeIdentifier
        guard let owner = context.packageValue(Self.ownerKey), owner != identity else { return }
        // Counted as the owner's versions say: by this service's, every model would be new.
        let owners = VersionTable.of(context, store: owner)
        throw ServiceError(
            .pendingChanges(
                count: pendingModels(versions: owners).count + pendingDeletes(versions: owners).count,
                reason: "the store syncs with \(owner), not \(identity); log out of it first (logOut(discardingPendingChanges:))")
        )
    }
}
