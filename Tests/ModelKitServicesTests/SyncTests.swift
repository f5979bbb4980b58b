import Foundation
import ModelKit
import ModelKitTestSupport
import Observation
import Synchronization
import Testing

@testable import ModelKitServices

/// Offline-first sync (issue #34) against a real Kinto server: two devices, each a store of its
/// own, syncing through one bucket.
@Suite("Offline sync on a real Kinto server", .enabled(if: serviceTestsEnabled, serviceTestsSkipped), .hangBackstop)
struct SyncTests {
    /// A device: a store in a folder of its own and a sync of writers and articles.
    final class Device {
        let folder: URL
        let service: KintoService
        var store: ModelStore
        var sync: ModelSync

        init(service: KintoService, folder: URL? = nil) throws {
            try? ModelRegistry.register(Writer.self, Article.self)
            self.service = service
            self.folder =
                folder ?? FileManager.default.temporaryDirectory.appendingPathComponent("modelkit-sync-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: self.folder, withIntermediateDirectories: true)
            store = try ModelStore(url: self.folder.appendingPathComponent("device.store"))
            sync = ModelSync(store: store, service: service, models: [Writer.self, Article.self])
        }

        var context: ModelContext { store.context }

        /// Closes the store and opens it again, as a relaunch does.
        func relaunch() throws {
            store.close()
            store = try ModelStore(url: folder.appendingPathComponent("device.store"))
            sync = ModelSync(store: store, service: service, models: [Writer.self, Article.self])
        }

        func writer(_ objectId: String) -> Writer? { context.model(Writer.self, objectId: objectId) }
        func article(_ objectId: String) -> Article? { context.model(Article.self, objectId: objectId) }

        deinit { try? FileManager.default.removeItem(at: folder) }
    }

    /// Two devices on one fresh bucket; the first has a writer "w" with articles "a1" and "a2",
    /// synced to both.
    static func twoDevices() async throws -> (Device, Device) {
        let service = try await KintoServer.freshService()
        let one = try Device(service: service)
        let writer = Writer.instance(objectId: "w", in: one.context)
        writer.name = "Ann"
        writer.age = 40
        for id in ["a1", "a2"] {
            let article = Article.instance(objectId: id, in: one.context)
            article.title = "Title \(id)"
            article.author = writer
            writer.articles.append(article)
        }
        try await one.store.save()
        let first = try await one.sync.sync()
        #expect(first.pushed == 3)
        let two = try Device(service: service)
        let pulled = try await two.sync.sync()
        #expect(pulled.pulled == 3)
        return (one, two)
    }

    /// A device on a fresh bucket that reaches the server through a fault proxy, with a service
    /// that reaches the bucket directly; the caller stops the proxy.
    static func deviceThroughProxy() async throws -> (direct: KintoService, proxy: FaultProxy, device: Device) {
        let direct = try await KintoServer.freshService()
        let proxy = try await FaultProxy.start()
        do {
            return (direct, proxy, try Device(service: proxy.service(bucket: direct.bucket)))
        } catch {
            proxy.stop()
            throw error
        }
    }

    /// A writer `objectId` named `name`, saved in `device`'s store, whose create a sync sent but
    /// never landed: the proxy drops the batch before the server sees it, on each of the
    /// service's 3 attempts, and the sync fails.
    static func writerThatNeverLanded(
        _ objectId: String, named name: String, on device: Device, through proxy: FaultProxy
    ) async throws -> Writer {
        let writer = Writer.instance(objectId: objectId, in: device.context)
        writer.name = name
        try await device.store.save()
        try await proxy.inject([["match": "POST /v1/batch", "action": "drop", "times": 3]])
        await #expect(throws: ServiceError.self) { try await device.sync.sync() }
        return writer
    }

    @Test("Models made offline are pushed by a sync, and another device pulls them with their references")
    func pushAndPull() async throws {
        let (one, two) = try await Self.twoDevices()
        let writer = try #require(two.writer("w"))
        #expect(writer.name == "Ann")
        #expect(writer.articles.map(\.objectId) == ["a1", "a2"])
        #expect(two.article("a1")?.author === writer)
        #expect(!two.context.hasChanges && two.sync.pendingChangeCount == 0)
        #expect(one.sync.pendingChangeCount == 0)
        // Nothing changed: a sync pulls and pushes nothing.
        let again = try await one.sync.sync()
        #expect(again.pulled == 0 && again.pushed == 0 && again.conflicts.isEmpty)
    }

    @Test("Edits of different fields of one record on two devices are both kept")
    func differentFields() async throws {
        let (one, two) = try await Self.twoDevices()
        one.writer("w")?.name = "Ann Lee"
        try await one.store.save()
        two.writer("w")?.age = 41
        try await two.store.save()
        try await one.sync.sync()
        let report = try await two.sync.sync()
        #expect(report.conflicts.count == 1)
        #expect(report.conflicts.first?.kind == .changedOnBoth)
        #expect(report.conflicts.first?.fields.isEmpty == true)
        try await one.sync.sync()
        for device in [one, two] {
            #expect(device.writer("w")?.name == "Ann Lee")
            #expect(device.writer("w")?.age == 41)
            #expect(device.sync.pendingChangeCount == 0)
        }
        let record = try await one.service.read(RecordID(collection: "Writer", id: "w"))
        #expect(record.fields["name"] == "Ann Lee" && record.fields["age"] == 41)
    }

    @Test("A field changed differently on both devices keeps the server's value, and the report says so")
    func sameField() async throws {
        let (one, two) = try await Self.twoDevices()
        one.writer("w")?.name = "First"
        two.writer("w")?.name = "Second"
        try await one.sync.sync()
        let report = try await two.sync.sync()
        let field = try #require(report.conflicts.first?.fields.first)
        #expect(field.field == "name" && field.local == "Second" && field.remote == "First" && field.merged == "First")
        #expect(field.base == "Ann")
        #expect(two.writer("w")?.name == "First")
    }

    @Test("To-many references changed on both devices merge as sets of added and removed members")
    func toManyAsSets() async throws {
        let (one, two) = try await Self.twoDevices()
        let writer = try #require(one.writer("w"))
        let a3 = Article.instance(objectId: "a3", in: one.context)
        a3.title = "Three"
        a3.author = writer
        writer.articles.append(a3)
        let other = try #require(two.writer("w"))
        other.articles.removeAll { $0.objectId == "a1" }
        try await one.sync.sync()
        let merged = try await two.sync.sync()
        #expect(merged.conflicts.first?.fields.map(\.field) == ["articles"])
        try await one.sync.sync()
        for device in [one, two] {
            #expect(device.writer("w")?.articles.map(\.objectId) == ["a2", "a3"])
        }
    }

    @Test("A record deleted on the server removes its model, and a local edit of it loses to the delete")
    func deletedOnServer() async throws {
        let (one, two) = try await Self.twoDevices()
        let article = try #require(one.article("a1"))
        article.removeFromContext()
        try await one.store.save()
        #expect(one.sync.pendingChangeCount == 1)
        two.article("a1")?.title = "Edited meanwhile"
        try await one.sync.sync()
        #expect(one.sync.pendingChangeCount == 0)
        let report = try await two.sync.sync()
        #expect(report.removed == 1)
        #expect(report.conflicts.map(\.kind) == [.deletedOnServer])
        #expect(two.article("a1") == nil)
        await #expect(throws: ServiceError.self) { try await one.service.read(RecordID(collection: "Article", id: "a1")) }
    }

    @Test("A record deleted here and changed on the server is deleted, and the report says so")
    func deletedHere() async throws {
        let (one, two) = try await Self.twoDevices()
        two.article("a2")?.title = "Changed on two"
        try await two.sync.sync()
        one.article("a2")?.removeFromContext()
        let report = try await one.sync.sync()
        #expect(report.conflicts.map(\.kind) == [.deletedHere])
        #expect(report.deleted == 1)
        let gone = await #expect(throws: ServiceError.self) {
            try await one.service.read(RecordID(collection: "Article", id: "a2"))
        }
        #expect(gone?.code == .notFound)
        try await two.sync.sync()
        #expect(two.article("a2") == nil)
    }

    @Test("Changes and deletes saved offline survive a relaunch and are pushed once")
    func relaunchKeepsPending() async throws {
        let (one, two) = try await Self.twoDevices()
        one.writer("w")?.name = "Offline edit"
        one.article("a1")?.removeFromContext()
        let fresh = Article.instance(objectId: "a9", in: one.context)
        fresh.title = "Made offline"
        try await one.store.save()
        try one.relaunch()
        #expect(one.sync.pendingChangeCount == 3)
        let report = try await one.sync.sync()
        #expect(report.pushed == 2 && report.deleted == 1)
        #expect(one.sync.pendingChangeCount == 0)
        try await two.sync.sync()
        #expect(two.writer("w")?.name == "Offline edit")
        #expect(two.article("a1") == nil)
        #expect(two.article("a9")?.title == "Made offline")
    }

    @Test("A push whose answer the store never recorded is not applied twice")
    func lostAnswer() async throws {
        let service = try await KintoServer.freshService()
        let device = try Device(service: service)
        let writer = Writer.instance(objectId: "w", in: device.context)
        writer.name = "Once"
        try await device.store.save()
        // The store as a crash right after the server answered would leave it.
        let files = try FileManager.default.contentsOfDirectory(at: device.folder, includingPropertiesForKeys: nil)
        let saved = try files.map { ($0, try Data(contentsOf: $0)) }
        try await device.sync.sync()
        device.store.close()
        for (url, data) in saved { try data.write(to: url) }
        try device.relaunch()
        #expect(device.sync.pendingChangeCount == 1)
        let report = try await device.sync.sync()
        #expect(report.conflicts.isEmpty)
        #expect(device.sync.pendingChangeCount == 0)
        #expect(device.writer("w")?.hasChanges == false)
        let page = try await service.listRecords(RecordListRequest(collection: "Writer"), after: nil)
        #expect(page.records.map(\.id.id) == ["w"])
    }

    @Test("Server wins and client wins replace the other side's changes; a custom policy decides the fields")
    func policies() async throws {
        let (one, two) = try await Self.twoDevices()
        two.sync.setPolicy(.serverWins, for: Writer.self)
        one.writer("w")?.name = "Server"
        try await one.sync.sync()
        two.writer("w")?.age = 99
        try await two.sync.sync()
        #expect(two.writer("w")?.age == 40 && two.writer("w")?.name == "Server")

        two.sync.setPolicy(.clientWins, for: Writer.self)
        one.writer("w")?.name = "One"
        try await one.sync.sync()
        two.writer("w")?.name = "Two"
        try await two.sync.sync()
        #expect(two.writer("w")?.name == "Two")
        try await one.sync.sync()
        #expect(one.writer("w")?.name == "Two")

        two.sync.setPolicy(
            .custom { versions in
                var fields = versions.remote
                if case .string(let remote)? = versions.remote["name"], case .string(let local)? = versions.local["name"] {
                    fields["name"] = .string(remote + " & " + local)
                }
                return fields
            }, for: Writer.self)
        one.writer("w")?.name = "A"
        try await one.sync.sync()
        two.writer("w")?.name = "B"
        try await two.sync.sync()
        #expect(two.writer("w")?.name == "A & B")
        try await one.sync.sync()
        #expect(one.writer("w")?.name == "A & B")
    }

    @Test("A record that does not decode is skipped and reported; the others are merged")
    func undecodableRecord() async throws {
        let (one, two) = try await Self.twoDevices()
        let bad: RecordFields = ["name": "Bad", "age": "not a number"]
        let results = try await one.service.perform([.create(RecordID(collection: "Writer", id: "bad"), fields: bad)])
        guard case .written = results.first else { throw FixtureError("the bad record was not written") }
        one.writer("w")?.name = "Good"
        try await one.sync.sync()
        let report = try await two.sync.sync()
        #expect(report.skipped.count == 1)
        #expect(report.skipped.first?.record == RecordID(collection: "Writer", id: "bad"))
        #expect(two.writer("bad") == nil)
        #expect(two.writer("w")?.name == "Good")
    }

    @Test("Sync state is observable: in progress, last success, last error and pending changes; events arrive")
    func observableState() async throws {
        let (one, _) = try await Self.twoDevices()
        let events = one.sync.events
        let notified = ChangeCount()
        withObservationTracking {
            _ = one.sync.isSyncing
        } onChange: {
            notified.add()
        }
        let before = try #require(one.sync.lastSuccessfulSync)
        one.writer("w")?.age = 50
        #expect(one.sync.pendingChangeCount == 1)
        try await one.sync.sync()
        #expect(notified.value == 1)
        #expect(!one.sync.isSyncing)
        #expect(try #require(one.sync.lastSuccessfulSync) > before)
        #expect(one.sync.lastError == nil)
        // The count is heard of at the first change after a save, and at the save.
        let counted = ChangeCount()
        withObservationTracking {
            _ = one.sync.pendingChangeCount
        } onChange: {
            counted.add()
        }
        one.writer("w")?.age = 77
        #expect(counted.value == 1 && one.sync.pendingChangeCount == 1)
        withObservationTracking {
            _ = one.sync.pendingChangeCount
        } onChange: {
            counted.add()
        }
        try await one.store.save()
        #expect(counted.value == 2)
        var seen: [String] = []
        for await event in events {
            switch event {
            case .started: seen.append("started")
            case .pulled: seen.append("pulled")
            case .pushed: seen.append("pushed")
            case .finished: seen.append("finished")
            case .conflict, .failed: seen.append("other")
            }
            if seen.last == "finished" { break }
        }
        #expect(seen.first == "started" && seen.last == "finished" && seen.contains("pushed"))
        // A server that cannot be reached: the error is kept, the change stays pending.
        let server = try await KintoServer.shared.value
        let nowhere = KintoService(
            url: URL(string: "http://127.0.0.1:9/v1")!, bucket: "b", user: server.user, password: server.password,
            timeout: .seconds(5))
        let offline = ModelSync(store: one.store, service: nowhere, models: [Writer.self, Article.self])
        one.writer("w")?.age = 51
        await #expect(throws: ServiceError.self) { try await offline.sync() }
        #expect(offline.lastError != nil)
        #expect(one.writer("w")?.hasChanges == true)
    }

    @Test("Logging out with changes not pushed is refused, unless they are discarded; it empties the store")
    func logOut() async throws {
        let (one, _) = try await Self.twoDevices()
        one.writer("w")?.name = "Not pushed"
        try await one.store.save()
        let refused = await #expect(throws: ServiceError.self) { try await one.sync.logOut() }
        #expect(refused?.code == .pendingChanges)
        #expect(one.writer("w")?.name == "Not pushed")
        try await one.sync.logOut(discardingPendingChanges: true)
        #expect(one.context.models(of: Writer.self).isEmpty && one.context.models(of: Article.self).isEmpty)
        #expect(one.service.credentials == nil)
        // A store that cannot save refuses the log-out before it forgets anything.
        let (three, _) = try await Self.twoDevices()
        three.store.close()
        await #expect(throws: PersistenceError.self) { try await three.sync.logOut(discardingPendingChanges: true) }
        #expect(three.writer("w") != nil && three.service.credentials != nil)
        #expect(one.sync.pendingChangeCount == 0 && one.sync.lastSuccessfulSync == nil)
        try one.relaunch()
        #expect(one.context.models(of: Writer.self).isEmpty)
    }

    @Test("A store synced with one user refuses to sync with another")
    func anotherUser() async throws {
        let (one, _) = try await Self.twoDevices()
        // One change pending for the owner (the other user's versions would count all three).
        one.writer("w")?.name = "Pending"
        let server = try await KintoServer.shared.value
        let other = KintoService(
            url: server.url, bucket: one.service.bucket, user: "someone-else", password: "x", timeout: .seconds(120))
        let sync = ModelSync(store: one.store, service: other, models: [Writer.self, Article.self])
        let error = await #expect(throws: ServiceError.self) { try await sync.sync() }
        #expect(error?.code == .pendingChanges)
        if case .pendingChanges(let count, _)? = error?.kind {
            #expect(count == 1)
        } else {
            Issue.record("\(String(describing: error))")
        }
        #expect(error.map { "\($0)" }?.contains("someone-else") == true)
        #expect(error.map { "\($0)" }?.contains(server.password) == false)
    }

    @Test("Progress counts the records pulled and the writes pushed; cancelling it stops the sync")
    func progress() async throws {
        let (one, two) = try await Self.twoDevices()
        one.writer("w")?.name = "Progress"
        let progress = Progress(totalUnitCount: 0)
        try await one.sync.sync(progress: progress)
        #expect(progress.totalUnitCount >= 1 && progress.completedUnitCount == progress.totalUnitCount)
        let cancelled = Progress(totalUnitCount: 0)
        cancelled.cancel()
        let error = await #expect(throws: ServiceError.self) { try await two.sync.sync(progress: cancelled) }
        #expect(error?.code == .cancelled)
        try await two.sync.sync()
        #expect(two.writer("w")?.name == "Progress")
    }

    @Test("A periodic sync runs until its task is cancelled, and stops when the server refuses the credentials")
    @MainActor func periodic() async throws {
        let (one, two) = try await Self.twoDevices()
        let events = two.sync.events
        let running = Task { try await two.sync.syncPeriodically(every: .milliseconds(100)) }
        one.writer("w")?.name = "Periodic"
        try await one.sync.sync()
        var finished = 0
        for await event in events {
            if case .finished = event { finished += 1 }
            if finished >= 2, two.writer("w")?.name == "Periodic" { break }
        }
        running.cancel()
        try await running.value
        #expect(two.writer("w")?.name == "Periodic")

        let server = try await KintoServer.shared.value
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("modelkit-sync-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try ModelStore(url: folder.appendingPathComponent("refused.store"))
        let refused = KintoService(
            url: server.url, bucket: one.service.bucket, user: server.user, password: "wrong", timeout: .seconds(120))
        let sync = ModelSync(store: store, service: refused, models: [Writer.self, Article.self])
        let error = await #expect(throws: ServiceError.self) { try await sync.syncPeriodically(every: .milliseconds(10)) }
        #expect(error?.code == .unauthorized)
        #expect(sync.lastError?.code == .unauthorized)
    }

    @Test("A model made without an object id keeps the one its first sync gave it when the push is cut short")
    func objectIdKeptAcrossFailedPush() async throws {
        let (service, proxy, device) = try await Self.deviceThroughProxy()
        defer { proxy.stop() }
        let writer = Writer.instance(in: device.context)
        writer.name = "No id yet"
        try await device.store.save()
        // The pull gets through; every try of the push is dropped.
        try await proxy.inject([["match": "POST /v1/batch", "action": "drop", "times": 50]])
        await #expect(throws: ServiceError.self) { try await device.sync.sync() }
        let assigned = try #require(writer.objectId)
        try device.relaunch()
        let relaunched = try #require(device.context.models(of: Writer.self).first)
        #expect(relaunched.objectId == assigned)
        var synced = false
        for _ in 0..<60 where !synced {
            // The drops left in the proxy's queue are used up by these attempts.
            synced = (try? await device.sync.sync()) != nil
        }
        #expect(synced)
        let page = try await service.listRecords(RecordListRequest(collection: "Writer"), after: nil)
        #expect(page.records.map(\.id.id) == [assigned])
    }

    @Test("A first sync that fails does not tie the store to its service")
    func failedFirstSyncBindsNothing() async throws {
        let service = try await KintoServer.freshService()
        let server = try await KintoServer.shared.value
        let device = try Device(service: service)
        let nowhere = KintoService(
            url: URL(string: "http://127.0.0.1:9/v1")!, bucket: "b", user: server.user, password: server.password,
            timeout: .seconds(5))
        let offline = ModelSync(store: device.store, service: nowhere, models: [Writer.self, Article.self])
        Writer.instance(objectId: "w", in: device.context).name = "Offline first"
        await #expect(throws: ServiceError.self) { try await offline.sync() }
        let report = try await device.sync.sync()
        #expect(report.pushed == 1)
    }

    @Test("A log-out waits for the sync under way, so no record of the user is merged after it")
    @MainActor func logOutDuringSync() async throws {
        let (one, _) = try await Self.twoDevices()
        let fresh = try Device(service: one.service)
        let running = Task { @MainActor in try await fresh.sync.sync() }
        while !fresh.sync.isSyncing { await Task.yield() }
        try await fresh.sync.logOut(discardingPendingChanges: true)
        _ = try await running.value
        #expect(fresh.context.models(of: Writer.self).isEmpty && fresh.context.models(of: Article.self).isEmpty)
        try fresh.relaunch()
        #expect(fresh.context.models(of: Writer.self).isEmpty && fresh.context.models(of: Article.self).isEmpty)
        #expect(fresh.context.packageValue(ModelSync.ownerKey) == nil)
    }

    @Test("A conflict whose merge does not decode fails the sync, and is merged again once the policy is fixed")
    func unmergeableConflict() async throws {
        let (one, two) = try await Self.twoDevices()
        two.sync.setPolicy(
            .custom { versions in
                var fields = versions.remote
                fields["age"] = "not a number"
                return fields
            }, for: Writer.self)
        one.writer("w")?.name = "One"
        try await one.sync.sync()
        two.writer("w")?.name = "Two"
        let error = await #expect(throws: ServiceError.self) { try await two.sync.sync() }
        #expect(error?.code == .conflict)
        #expect(two.sync.lastError?.code == .conflict)
        #expect(two.writer("w")?.name == "Two")
        two.sync.setPolicy(.threeWay, for: Writer.self)
        try await two.sync.sync()
        try await one.sync.sync()
        #expect(two.writer("w")?.name == "One" && one.writer("w")?.name == "One")
        #expect(two.sync.pendingChangeCount == 0)
    }

    @Test("A model made here keeps its object id when the server deletes an earlier record of that id")
    func newModelSurvivesDeleteOfSameId() async throws {
        let (one, two) = try await Self.twoDevices()
        let first = Article.instance(objectId: "dup", in: one.context)
        first.title = "one's"
        try await one.sync.sync()
        first.removeFromContext()
        try await one.sync.sync()
        let mine = Article.instance(objectId: "dup", in: two.context)
        mine.title = "two's offline work"
        try await two.store.save()
        let report = try await two.sync.sync()
        #expect(report.removed == 0 && report.conflicts.isEmpty)
        #expect(two.article("dup")?.title == "two's offline work")
        try await one.sync.sync()
        #expect(one.article("dup")?.title == "two's offline work")
    }

    @Test("Two ModelSyncs of one store never sync at once: the second waits for the first")
    @MainActor func twoSyncsOfOneStore() async throws {
        let (one, _) = try await Self.twoDevices()
        let second = ModelSync(store: one.store, service: one.service, models: [Writer.self, Article.self])
        one.writer("w")?.name = "Both"
        let first = Task { @MainActor in try await one.sync.sync() }
        while !one.sync.isSyncing { await Task.yield() }
        let other = Task { @MainActor in try await second.sync() }
        var overlapped = false
        while one.sync.isSyncing {
            if second.isSyncing { overlapped = true }
            await Task.yield()
        }
        let pushed = try await first.value.pushed + other.value.pushed
        #expect(!overlapped)
        #expect(pushed == 1)
    }
}

/// A count that an observation's change handler may bump from any thread.
final class ChangeCount: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }
}
