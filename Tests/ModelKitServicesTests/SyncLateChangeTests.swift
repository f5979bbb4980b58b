import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@testable import ModelKitServices

/// Changes the change feed does not give (see KintoService+ChangeVersions.swift): a server that
/// commits a change after later ones, as Kinto on PostgreSQL does under concurrent transactions.
/// The tests make such changes deterministically, on both backends: another client writes the
/// record with a `last_modified` of its own, older than the version the device pulled at, which
/// Kinto keeps, so `_since` skips it exactly as it skips a change committed late.
extension SyncTests {
    /// Writes a filler record into `collection` (a copy of `source` under `id`, with `changes`)
    /// stamped 10 ms after the collection's newest version, and returns that stamp: the devices
    /// that pull it next pull at it, and a record stamped just before it is one they will not be
    /// given (Kinto keeps an update's own `last_modified` only when it is newer than the record's,
    /// so the late writes need this room above every record's version).
    static func makeRoom(
        _ service: KintoService, _ collection: String, _ id: String, copying source: String, changes: [String: ModelValue] = [:]
    ) async throws -> Int64 {
        let server = try await KintoServer.shared.value
        let list = try await server.request(
            "GET", "/buckets/\(service.bucket)/collections/\(collection)/records?_sort=-last_modified&_limit=1")
        guard case .int(let newest)? = list.body["data"]?[0]?["last_modified"] else {
            throw FixtureError("listing \(collection) answered \(list.status): \(list.body)")
        }
        return try await write(service, collection, id, copying: source, changes: changes, stamp: newest + 10)
    }

    /// Has another client write record `id` of `collection` (a change of it, or, with `copying`,
    /// a new record from that one's fields under a new model id) with `stamp` as its version.
    @discardableResult
    static func write(
        _ service: KintoService, _ collection: String, _ id: String, copying source: String? = nil,
        changes: [String: ModelValue], stamp: Int64
    ) async throws -> Int64 {
        let server = try await KintoServer.shared.value
        let records = "/buckets/\(service.bucket)/collections/\(collection)/records/"
        let base = try await server.request("GET", records + (source ?? id))
        guard case .object(var data)? = base.body["data"] else { throw FixtureError("reading \(source ?? id): \(base.body)") }
        if source != nil {
            data["id"] = nil
            data["modelId"] = .string(UUID().uuidString)
        }
        for (key, value) in changes { data[key] = value }
        data["last_modified"] = .int(stamp)
        let written = try await server.request("PUT", records + id, body: ["data": .object(data)])
        guard written.status == 200 || written.status == 201, case .int(let version)? = written.body["data"]?["last_modified"]
        else {
            throw FixtureError("writing \(id) answered \(written.status): \(written.body)")
        }
        // The premise of the tests: the server kept the stamp.
        guard version == stamp else { throw FixtureError("the server stamped \(id) \(version), not \(stamp)") }
        return version
    }

    /// The record's fields on the server, or nil when it is gone.
    static func serverRecord(_ service: KintoService, _ collection: String, _ id: String) async throws -> ModelValue? {
        let server = try await KintoServer.shared.value
        let answer = try await server.request("GET", "/buckets/\(service.bucket)/collections/\(collection)/records/\(id)")
        return answer.status == 404 ? nil : answer.body["data"]
    }

    @Test(
        "A change the server shows after later ones is pulled by the next sync's look-back, and costs nothing when none is missing"
    )
    func lateChangesArePulledByTheLookBack() async throws {
        let (_, two) = try await Self.twoDevices()
        let service = two.service
        let room = try await Self.makeRoom(service, "Article", "filler", copying: "a2")
        _ = try await two.sync.sync()
        // Stamped before the version the device pulled at.
        let edited = try await Self.write(service, "Article", "a1", changes: ["title": "Late title"], stamp: room - 5)
        let made = try await Self.write(
            service, "Article", "a3", copying: "a2", changes: ["title": "Late article"], stamp: room - 4)

        // Without the look-back the change feed misses both: they are older than its `since`.
        two.sync.lookBack = .zero
        let blind = try await two.sync.sync()
        #expect(blind.pulled == 0 && blind.lateChanges == 0)
        #expect(two.article("a1")?.title == "Title a1")
        #expect(two.article("a3") == nil)

        two.sync.lookBack = .seconds(30)
        let report = try await two.sync.sync()
        #expect(report.lateChanges == 2)
        #expect(report.pulled == 2)
        #expect(two.article("a1")?.title == "Late title")
        let late = try #require(two.article("a3"))
        #expect(late.title == "Late article")
        #expect(late.author === two.writer("w"))
        let versions = VersionTable.of(two.context, store: service.storeIdentifier)
        #expect(versions[try #require(two.article("a1")).modelId] == RemoteVersion(String(edited)))
        #expect(versions[late.modelId] == RemoteVersion(String(made)))

        // Held at those versions now: the look-back reads nothing more.
        let again = try await two.sync.sync()
        #expect(again.lateChanges == 0 && again.pulled == 0)
        // And after a relaunch, from what the store kept.
        try two.relaunch()
        let relaunched = try await two.sync.sync()
        #expect(relaunched.lateChanges == 0 && relaunched.pulled == 0)
        #expect(two.article("a3")?.title == "Late article")
    }

    @Test("A change committed later than the look-back is read when a push meets it twice, and merged field by field")
    func lateChangesBeyondTheLookBackAreReadBack() async throws {
        let (one, two) = try await Self.twoDevices()
        let service = two.service
        let writerRoom = try await Self.makeRoom(service, "Writer", "filler", copying: "w", changes: ["articles": []])
        let articleRoom = try await Self.makeRoom(service, "Article", "filler", copying: "a2")
        _ = try await one.sync.sync()
        _ = try await two.sync.sync()
        two.sync.lookBack = .zero
        try await Self.write(service, "Writer", "w", changes: ["age": 41], stamp: writerRoom - 5)
        try await Self.write(service, "Article", "a2", changes: ["title": "Edited elsewhere"], stamp: articleRoom - 5)

        // This device edits another field of the writer, and deletes the article.
        let writer = try #require(two.writer("w"))
        writer.name = "Bea"
        try #require(two.article("a2")).removeFromContext()
        try await two.store.save()
        let report = try await two.sync.sync()
        // Round 1: both writes refused (412). Round 2: the pull does not bring the changes, so
        // the sync reads the two records, merges, and pushes against their versions.
        #expect(report.skipped.isEmpty, "\(report.skipped)")
        #expect(report.rounds == 2)
        #expect(report.lateChanges == 2)
        #expect(report.pushed == 1 && report.deleted == 1)
        #expect(Set(report.conflicts.map(\.record.id)) == ["w", "a2"])
        #expect(writer.name == "Bea" && writer.age == 41)
        #expect(two.sync.pendingChangeCount == 0)

        let record = try #require(try await Self.serverRecord(service, "Writer", "w"))
        #expect(record["name"] == "Bea" && record["age"] == 41)
        #expect(try await Self.serverRecord(service, "Article", "a2") == nil)

        // The other device pulls the merged record and the delete.
        one.sync.lookBack = .zero
        _ = try await one.sync.sync()
        #expect(one.writer("w")?.name == "Bea" && one.writer("w")?.age == 41)
        #expect(one.article("a2") == nil)
    }

    @Test("The look-back reads page after page of versions, and a sync with one round reads back what its push met")
    func lookBackPagesAndOneRound() async throws {
        let (one, _) = try await Self.twoDevices()
        let server = try await KintoServer.shared.value
        // A device whose pages hold one change each.
        let paged = server.service(bucket: one.service.bucket, pageSize: 1)
        let three = try Device(service: paged)
        let room = try await Self.makeRoom(paged, "Article", "filler", copying: "a2")
        _ = try await three.sync.sync()
        try await Self.write(paged, "Article", "a1", changes: ["title": "Late one"], stamp: room - 6)
        try await Self.write(paged, "Article", "a2", changes: ["title": "Late two"], stamp: room - 5)
        let pulled = try await three.sync.sync()
        #expect(pulled.lateChanges == 2)
        #expect(three.article("a1")?.title == "Late one" && three.article("a2")?.title == "Late two")

        // One round: the push is refused, and the sync reads the record before it fails, so the
        // next sync pushes against the server's version.
        let writerRoom = try await Self.makeRoom(paged, "Writer", "filler", copying: "w", changes: ["articles": []])
        _ = try await three.sync.sync()
        three.sync.lookBack = .zero
        three.sync.maximumRounds = 1
        try await Self.write(paged, "Writer", "w", changes: ["age": 52], stamp: writerRoom - 5)
        three.writer("w")?.name = "One round"
        try await three.store.save()
        let refused = await #expect(throws: ServiceError.self) { try await three.sync.sync() }
        #expect(refused?.code == .conflict)
        #expect(three.writer("w")?.age == 52 && three.writer("w")?.name == "One round")
        let next = try await three.sync.sync()
        #expect(next.pushed == 1 && next.rounds == 1)
        let record = try #require(try await Self.serverRecord(paged, "Writer", "w"))
        #expect(record["name"] == "One round" && record["age"] == 52)
    }

    @Test(
        "A delete refused for a late change is read back even when a reference pulled meanwhile made a placeholder of its record")
    func readBackPastAPlaceholder() async throws {
        let (one, two) = try await Self.twoDevices()
        let service = two.service
        let room = try await Self.makeRoom(service, "Writer", "filler", copying: "w", changes: ["articles": []])
        _ = try await two.sync.sync()
        _ = try await one.sync.sync()
        two.sync.lookBack = .zero
        // Two deletes the writer (and its articles, so that nothing here names it).
        two.article("a1")?.removeFromContext()
        two.article("a2")?.removeFromContext()
        two.writer("w")?.removeFromContext()
        try await two.store.save()
        // Meanwhile the server's writer changes late, and one makes an article by it.
        try await Self.write(service, "Writer", "w", changes: ["age": 60], stamp: room - 5)
        let fresh = Article.instance(objectId: "a9", in: one.context)
        fresh.title = "By w"
        fresh.author = one.writer("w")
        _ = try await one.sync.sync()

        let report = try await two.sync.sync()
        #expect(report.deleted == 3)
        #expect(try await Self.serverRecord(service, "Writer", "w") == nil)
        #expect(two.sync.pendingChangeCount == 0)
    }
}

@Suite("The look-back span in milliseconds")
struct LookBackSpanTests {
    @Test("A duration becomes whole milliseconds, saturating at Int64.max, and a negative one none")
    func milliseconds() {
        #expect(ModelSync.milliseconds(.seconds(30)) == 30_000)
        #expect(ModelSync.milliseconds(.milliseconds(1_500)) == 1_500)
        #expect(ModelSync.milliseconds(.microseconds(999)) == 0)
        #expect(ModelSync.milliseconds(.zero) == 0)
        #expect(ModelSync.milliseconds(.seconds(-1)) == 0)
        #expect(ModelSync.milliseconds(.milliseconds(-1)) == 0)
        #expect(ModelSync.milliseconds(.seconds(Int64.max)) == .max)
        #expect(ModelSync.milliseconds(.seconds(Int64.max / 1000) + .milliseconds(999)) == .max)
        #expect(ModelSync.milliseconds(.seconds(18_446_744_073_709_552)) == .max)
    }
}
