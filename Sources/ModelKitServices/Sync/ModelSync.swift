import Foundation
import ModelKit
import Observation

/// Keeps a store's models in step with a backend, offline first: the app edits, inserts,
/// deletes and saves its store whether or not the server answers, and ``sync(progress:isolation:)`` pulls
/// what changed on the server since the last sync, merges it into the context by identity, then
/// pushes what changed here.
///
/// ```swift
/// let store = try ModelStore(url: url)
/// let sync = ModelSync(store: store, service: service, models: [Author.self, Post.self])
/// let author = Author.instance(in: store.context)
/// author.name = "Ann"
/// try await store.save()                  // durable, with or without the server
/// let report = try await sync.sync()
/// print(report.pulled, report.pushed, report.conflicts)
/// ```
///
/// What is kept, in the store, atomically with the models (so a crash at any moment loses no
/// saved change and applies none twice): each record's server version, the values at the last
/// sync of the properties changed since (the base of the three-way merge), the models never
/// pushed, the deletes not pushed yet, and the version each collection was last pulled at. See
/// Docs/Sync.md.
///
/// A `ModelSync` belongs to its store's isolation domain, like the store. Syncs of one store
/// never run at once, even from two `ModelSync`s of it.
/// Its state (``isSyncing``, ``lastSuccessfulSync``, ``lastError``, ``pendingChangeCount``) is
/// observable with the Observation framework.
public final class ModelSync {
    /// The store synced.
    public let store: ModelStore
    /// The backend.
    public let service: any ModelService
    /// The model types synced, in the order their collections are pulled.
    public let models: [any RemoteModel.Type]
    /// The policy per model name; ``ConflictPolicy/threeWay`` for the others.
    var policies: [String: ConflictPolicy] = [:]
    /// How many pull-and-push rounds one sync runs at most, when the server keeps changing
    /// records between a round's pull and its push.
    public var maximumRounds = 3
    /// How far before the version a collection was last pulled at each pull looks again for
    /// changes: 30 seconds by default, 0 not to look back.
    ///
    /// A server may make a change visible after later ones: Kinto on PostgreSQL stamps a record
    /// when its transaction writes it and shows it when the transaction commits, so a change
    /// committed late is older than the version a pull already got, and the change feed does not
    /// give it again. Each pull therefore also lists the ids and versions of the collection's
    /// changes in this span (a few bytes each, one request a page of 1,000) and reads by id the
    /// records it does not hold at those versions. A change committed later still than this is
    /// found when a push of the same record is refused and the next pull does not move the
    /// record's version (or the sync has no round left): the sync then reads that record by id
    /// and merges it.
    public var lookBack: Duration = .seconds(30)

    let registrar = ObservationRegistrar()
    var syncing = false
    var successfulSync: Date?
    var failure: ServiceError?
    var eventContinuations: [UUID: AsyncStream<SyncEvent>.Continuation] = [:]
    /// The running sync's progress, if its caller gave one.
    var progress: Progress?

    /// A sync of `store`'s models of the types in `models` with `service`.
    ///
    /// Models of other types stay local. References from a synced model should only name
    /// models of synced types: the server could not resolve the others.
    ///
    /// - Complexity: O(1).
    public init(store: ModelStore, service: any ModelService, models: [any RemoteModel.Type]) {
        self.store = store
        self.service = service
        self.models = models
        // From now on a removed model's version stays, as a delete to push.
        versions.table.keepsRemovedEntries = true
        if let text = store.context.packageValue(Self.lastSyncKey(service)), let seconds = Double(text) {
            successfulSync = Date(timeIntervalSince1970: seconds)
        }
    }

    /// Sets how conflicts on records of `type` are settled (``ConflictPolicy/threeWay`` by
    /// default).
    ///
    /// - Complexity: O(1).
    public func setPolicy<M: RemoteModel>(_ policy: ConflictPolicy, for type: M.Type) {
        policies[M.modelName] = policy
    }

    var context: ModelContext { store.context }
    var versions: VersionTable { VersionTable.of(store.context, store: service.storeIdentifier) }

    static func lastSyncKey(_ service: any ModelService) -> String {
        "ModelKitServices.lastSync " + service.storeIdentifier
    }

    static func sinceKey(_ service: any ModelService, collection: String) -> String {
        "ModelKitServices.since " + service.storeIdentifier + " " + collection
    }
}

// MARK: State

extension ModelSync: Observable {
    /// Whether a sync is under way. Observable.
    public var isSyncing: Bool {
        registrar.access(self, keyPath: \.isSyncing)
        return syncing
    }

    /// When the last sync that finished without an error ended (kept in the store). Observable.
    public var lastSuccessfulSync: Date? {
        registrar.access(self, keyPath: \.lastSuccessfulSync)
        return successfulSync
    }

    /// Why the last sync failed; `nil` after one that succeeded. Observable.
    public var lastError: ServiceError? {
        registrar.access(self, keyPath: \.lastError)
        return failure
    }

    /// How many records have changes the server does not have yet: models of the synced types
    /// that are new or changed, and deletes not pushed. Observable: a reader hears when a sync
    /// starts and ends, when the store is saved, and of the first change after a save (further
    /// changes before the next save are not told one by one).
    ///
    /// - Complexity: O(*n*) in the models of the synced types.
    public var pendingChangeCount: Int {
        registrar.access(self, keyPath: \.pendingChangeCount)
        // Read under the same observation: the store's saves and first changes reach the reader.
        _ = store.needsSaving
        return pendingModels().count + pendingDeletes().count
    }

    /// What the sync reports as it goes, from now on, until the sequence is dropped.
    ///
    /// ```swift
    /// for await event in sync.events {
    ///     if case .conflict(let conflict) = event { print(conflict) }
    /// }
    /// ```
    public var events: AsyncStream<SyncEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: SyncEvent.self, bufferingPolicy: .bufferingNewest(256))
        let id = UUID()
        eventContinuations[id] = continuation
        return stream
    }

    func emit(_ event: SyncEvent) {
        for (id, continuation) in eventContinuations {
            if case .terminated = continuation.yield(event) { eventContinuations[id] = nil }
        }
    }

    /// Counts `count` units done on the caller's progress; throws when it was cancelled.
    func advance(by count: Int, total: Int) throws(ServiceError) {
        guard let progress else { return }
        progress.totalUnitCount += Int64(total)
        progress.completedUnitCount += Int64(count)
        if progress.isCancelled { throw ServiceError(.cancelled("the sync's progress was cancelled")) }
    }

    func setSyncing(_ value: Bool) {
        registrar.withMutation(of: self, keyPath: \.isSyncing) { syncing = value }
        registrar.withMutation(of: self, keyPath: \.pendingChangeCount) {}
    }

    func setOutcome(error: ServiceError?, finishedAt date: Date?) {
        registrar.withMutation(of: self, keyPath: \.lastError) { failure = error }
        if let date {
            registrar.withMutation(of: self, keyPath: \.lastSuccessfulSync) { successfulSync = date }
        }
    }
}

// MARK: Syncing

extension ModelSync {
    /// Pulls the changes made on the server since the last sync and merges them into the
    /// context, then pushes this device's changes, then saves the store; again (up to
    /// ``maximumRounds``) when the server changed a record meanwhile. A call made while a sync is
    /// under way waits for it, then syncs.
    ///
    /// The pull asks each collection for the records changed since the version it was last
    /// pulled at (deletions included, page by page). Models the context holds are updated in
    /// place (observers see ordinary change events, live queries update); records it does not
    /// hold are added; deleted records' models are removed (references to them read `nil`,
    /// delete rules apply). A record this device also changed goes to the type's
    /// ``ConflictPolicy``. The push then creates, replaces (`If-Match` the version last seen)
    /// and deletes records, referenced ones first, as ``ModelService/save(_:isolation:)`` does.
    ///
    /// - Parameter progress: Counts the records pulled and the writes pushed as they go (its
    ///   total grows with each page and push); cancelling it stops the sync between requests,
    ///   keeping what was merged and pushed, with ``ServiceError/Code/cancelled``.
    /// - Returns: What was pulled, pushed and settled.
    /// - Throws: ``ServiceError`` when the server cannot be reached or refuses (the store then
    ///   keeps every change still to push, and what was merged before the error is saved);
    ///   the store's ``ModelKit/PersistenceError`` or ``ModelKit/SerializationError`` when it
    ///   cannot save; ``ServiceError/Code/pendingChanges`` when the store syncs with another
    ///   service or user (see ``logOut(discardingPendingChanges:isolation:)``).
    /// - Complexity: O(*n*) in the models of the synced types (finding what to push), plus
    ///   O(*c*) in the size of the records changed on either side, plus the requests: one per
    ///   page of changes per collection and the push's batches.
    @discardableResult
    public func sync(progress: Progress? = nil, isolation: isolated (any Actor)? = #isolation) async throws -> SyncReport {
        await beginExclusive()
        emit(.started)
        defer { endExclusive() }
        var report = SyncReport()
        self.progress = progress
        defer { self.progress = nil }
        do {
            try checkOwner()
            assignObjectIds()
            var refused: [RecordID: RemoteVersion?] = [:]
            var again = true
            while again, report.rounds < max(1, maximumRounds) {
                report.rounds += 1
                try await pull(into: &report)
                if !refused.isEmpty { try await readBack(refused, into: &report) }
                let pending = pendingModels()
                markCreatesSent(pending)
                try await store.save()
                refused = try await push(pending, into: &report)
                again = !refused.isEmpty
                try await store.save()
            }
            if again {
                // Read what the last round's push met, so that the next sync pushes against
                // the server's version even when no pull would bring it (a late commit).
                try await readBack(refused, into: &report)
                try await store.save()
                // Still refused after the last round: the server keeps changing the record, or
                // its version here cannot move (a record the pull skipped). Not a success.
                throw ServiceError(.conflict(current: nil))
            }
            let now = Date()
            context.setPackageValue(String(now.timeIntervalSince1970), forKey: Self.lastSyncKey(service))
            context.setPackageValue(service.storeIdentifier, forKey: Self.ownerKey)
            try await store.save()
            setOutcome(error: nil, finishedAt: now)
            emit(.finished(report))
            return report
        } catch {
            // What was merged and pushed stays, saved when the store can.
            try? await store.save()
            let serviceError =
                error as? ServiceError ?? ServiceError(.invalidModel(expected: "a store that saves", found: "\(error)"))
            setOutcome(error: serviceError, finishedAt: nil)
            emit(.failed(serviceError))
            throw error
        }
    }

    /// Waits until no sync or log-out of this store runs (by any `ModelSync` of it), then marks
    /// one as running.
    func beginExclusive(isolation: isolated (any Actor)? = #isolation) async {
        let gate = SyncGate.of(context)
        while gate.isRunning {
            await withCheckedContinuation { gate.waiting.append($0) }
        }
        gate.isRunning = true
        setSyncing(true)
    }

    /// Marks the running sync or log-out done, and lets the next one go.
    func endExclusive() {
        setSyncing(false)
        let gate = SyncGate.of(context)
        gate.isRunning = false
        let waiters = gate.waiting
        gate.waiting = []
        for waiter in waiters { waiter.resume() }
    }

    /// Gives an object id (its record id) to every model of a synced type that has none, so
    /// that this device's references and the server's name records alike.
    func assignObjectIds() {
        var random = RandomUUIDs()
        for type in models {
            for model in allModels(type) where model.objectId == nil && model.modelState != .needsData {
                model.objectId = random.makeString()
                // Saved with the pull: a push cut short must be retried under the same id.
                context.noteTrackingChanged(model.modelId)
            }
        }
    }

    func allModels<M: RemoteModel>(_ type: M.Type) -> [any Model] {
        context.models(of: M.self)
    }

    /// The models of the synced types that the server does not have as they are: never pushed,
    /// or changed since.
    func pendingModels() -> [any Model] { pendingModels(versions: versions) }

    /// ``pendingModels()`` as `versions` (another service's or user's table) says.
    func pendingModels(versions: VersionTable) -> [any Model] {
        var pending: [any Model] = []
        for type in models {
            for model in allModels(type) {
                if model.modelState == .needsData, !model.hasChanges { continue }
                if versions[model.modelId] == nil || model.hasChanges { pending.append(model) }
            }
        }
        return pending
    }

    /// The deletes still to push: removed models whose records the server had.
    func pendingDeletes() -> [(ModelID, ModelMetadataTable.RemovedEntry)] { pendingDeletes(versions: versions) }

    /// ``pendingDeletes()`` as `versions` (another service's or user's table) says.
    func pendingDeletes(versions: VersionTable) -> [(ModelID, ModelMetadataTable.RemovedEntry)] {
        let names = Set(models.map { $0.modelName })
        return versions.table.removed.filter {
            names.contains($0.value.modelName) && !VersionTable.mark(of: $0.value).isDeleted
        }.sorted { $0.key < $1.key }
    }
}

/// Whether a sync or log-out of a store runs, shared by every `ModelSync` of the store (kept in
/// its context, whose isolation domain it belongs to), and who waits for it.
final class SyncGate {
    var isRunning = false
    var waiting: [CheckedContinuation<Void, Never>] = []

    static func of(_ context: ModelContext) -> SyncGate {
        let key = "ModelKitServices.syncGate"
        if let gate = context[packageState: key] as? SyncGate { return gate }
        let gate = SyncGate()
        context[packageState: key] = gate
        return gate
    }
}
