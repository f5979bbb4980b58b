import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@testable import ModelKitServices

/// A delete that another device's update raced: Kinto checks `If-Match` before it writes, not
/// atomically with the write, and its update writes the record over a tombstone, so both
/// writes are accepted and the record is back after the delete (seen on PostgreSQL in the
/// two-process test). The tests make the race's outcome deterministically: once the device's
/// delete is acknowledged, another client writes the record again.
extension SyncTests {
    /// The tombstone's version the device keeps for the record's delete, if it keeps one.
    static func deletedVersion(of objectId: String, on device: Device) -> String? {
        let table = VersionTable.of(device.context, store: device.service.storeIdentifier).table
        return table.removed.values.first { $0.objectId == objectId }.flatMap(VersionTable.deletedVersion(of:))
    }

    @Test("A record written again after this device's delete was acknowledged is deleted again by its next sync")
    func recordBroughtBackAfterADeleteIsDeletedAgain() async throws {
        let (one, two) = try await Self.twoDevices()
        let service = one.service
        // The racing device's update: the record as it was (its model id too), a field changed.
        guard case .object(var raced)? = try await Self.serverRecord(service, "Article", "a1") else {
            throw FixtureError("no record a1 on the server")
        }
        one.article("a1")?.removeFromContext()
        try await one.store.save()
        let deleting = try await one.sync.sync()
        #expect(deleting.deleted == 1)
        #expect(try await Self.serverRecord(service, "Article", "a1") == nil)
        let tombstone = try #require(Self.deletedVersion(of: "a1", on: one).flatMap { Int64($0) })
        #expect(one.sync.pendingChangeCount == 0)

        // The racing update, accepted after the delete.
        let stamp = tombstone + 5
        raced["title"] = "Raced edit"
        raced["last_modified"] = .int(stamp)
        let server = try await KintoServer.shared.value
        let written = try await server.request(
            "PUT", "/buckets/\(service.bucket)/collections/Article/records/a1", body: ["data": .object(raced)])
        guard written.status == 201 || written.status == 200, written.body["data"]?["last_modified"] == .int(stamp) else {
            throw FixtureError("writing a1 again answered \(written.status): \(written.body)")
        }

        let report = try await one.sync.sync()
        let conflict = try #require(report.conflicts.first { $0.record.id == "a1" }, "\(report.conflicts)")
        #expect(conflict.kind == .deletedHere)
        #expect(report.deleted == 1)
        #expect(one.article("a1") == nil)
        #expect(try await Self.serverRecord(service, "Article", "a1") == nil)
        // The second delete is known at its own tombstone, after the record's version.
        #expect((Self.deletedVersion(of: "a1", on: one).flatMap { Int64($0) } ?? 0) > stamp)

        // The other device ends without it too; the first pulls nothing more.
        _ = try await two.sync.sync()
        #expect(two.article("a1") == nil && two.writer("w")?.articles.map(\.objectId) == ["a2"])
        let again = try await one.sync.sync()
        #expect(again.pulled == 0 && again.deleted == 0 && again.conflicts.isEmpty)
    }

    @Test("A delete done is kept for the look-back span, survives a relaunch, and is forgotten once the pulls are past it")
    func deletesDoneAreForgottenAfterTheLookBack() async throws {
        let (one, _) = try await Self.twoDevices()
        one.article("a2")?.removeFromContext()
        try await one.store.save()
        _ = try await one.sync.sync()
        #expect(Self.deletedVersion(of: "a2", on: one) != nil)
        #expect(one.sync.pendingChangeCount == 0 && one.sync.pendingDeletes().isEmpty)

        // Within the 30 s span: kept, across a relaunch too.
        _ = try await one.sync.sync()
        try one.relaunch()
        #expect(Self.deletedVersion(of: "a2", on: one) != nil)
        #expect(one.sync.pendingChangeCount == 0)

        // With no span, the next pull (at the tombstone's version or later) is past it.
        one.sync.lookBack = .zero
        let report = try await one.sync.sync()
        #expect(report.deleted == 0 && report.conflicts.isEmpty)
        #expect(Self.deletedVersion(of: "a2", on: one) == nil)
        #expect(VersionTable.of(one.context, store: one.service.storeIdentifier).table.removed.isEmpty)
    }
}
