import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@testable import ModelKitServices

/// A create that reached the server but whose answer this device never heard (the connection
/// dropped after the server acted, on every attempt): the device holds no version of the record.
/// If the app then deletes the model, the delete must still reach the server, or the next pull
/// brings the record back (seen once in the two-process test on PostgreSQL).
extension SyncTests {
    @Test("A model deleted after its create's answer was lost is deleted on the server, even after a relaunch")
    func deleteAfterALostCreateAnswerReachesTheServer() async throws {
        let (bucketService, proxy, device) = try await Self.deviceThroughProxy()
        defer { proxy.stop() }
        let kept = Writer.instance(objectId: "kept", in: device.context)
        kept.name = "Kept"
        let lost = Writer.instance(objectId: "lost", in: device.context)
        lost.name = "Lost answer"
        try await device.store.save()

        // Every attempt of the push reaches the server; no answer comes back.
        try await proxy.inject([["match": "POST /v1/batch", "action": "drop_after", "times": 3]])
        await #expect(throws: ServiceError.self) { try await device.sync.sync() }
        // The premise: the server holds the records, the device no version of them.
        #expect(try await Self.serverRecord(bucketService, "Writer", "lost") != nil)
        let versions = VersionTable.of(device.context, store: device.service.storeIdentifier)
        #expect(versions[lost.modelId] == nil)
        #expect(device.sync.pendingChangeCount == 2)

        lost.removeFromContext()
        try await device.store.save()
        try device.relaunch()
        #expect(device.sync.pendingChangeCount == 2)

        let report = try await device.sync.sync()
        #expect(report.deleted == 1)
        #expect(report.conflicts.isEmpty, "the device's own create is no change of another's: \(report.conflicts)")
        #expect(try await Self.serverRecord(bucketService, "Writer", "lost") == nil)
        #expect(device.writer("lost") == nil)
        #expect(device.writer("kept")?.name == "Kept")
        #expect(device.sync.pendingChangeCount == 0 && device.sync.pendingDeletes().isEmpty)

        // Another device sees only the kept one; the first, syncing again, gets nothing back.
        let other = try Device(service: bucketService)
        _ = try await other.sync.sync()
        #expect(other.writer("lost") == nil && other.writer("kept")?.name == "Kept")
        let again = try await device.sync.sync()
        #expect(again.pulled == 0 && device.writer("lost") == nil)
    }

    @Test("A model deleted after its create was sent but never reached the server leaves nothing to push after one sync")
    func deleteOfACreateThatNeverLandedIsForgotten() async throws {
        let (bucketService, proxy, device) = try await Self.deviceThroughProxy()
        defer { proxy.stop() }
        let never = try await Self.writerThatNeverLanded("never", named: "Never landed", on: device, through: proxy)
        #expect(try await Self.serverRecord(bucketService, "Writer", "never") == nil)

        never.removeFromContext()
        try await device.store.save()
        try device.relaunch()
        // The delete goes without a precondition; the server's 404 says it is done.
        let report = try await device.sync.sync()
        #expect(report.conflicts.isEmpty)
        #expect(device.sync.pendingChangeCount == 0 && device.sync.pendingDeletes().isEmpty)
        #expect(try await Self.serverRecord(bucketService, "Writer", "never") == nil)
    }
}
