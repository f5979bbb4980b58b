import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@testable import ModelKitServices

/// The change feed (`changes(in:since:after:)`) against a real Kinto server: what a sync pulls.
@Suite("The change feed on a real Kinto server", .enabled(if: serviceTestsEnabled, serviceTestsSkipped), .hangBackstop)
struct ChangeFeedTests {
    static let collection = "Note"

    /// A service on a fresh bucket with an empty `Note` collection, asking `pageSize` changes a page.
    static func service(pageSize: Int = 1_000) async throws -> KintoService {
        let server = try await KintoServer.shared.value
        let fresh = try await KintoServer.freshService(collections: [collection])
        return server.service(bucket: fresh.bucket, pageSize: pageSize)
    }

    static func id(_ name: String) -> RecordID { RecordID(collection: collection, id: name) }

    static func fields(_ text: String) -> RecordFields { ["text": .string(text)] }

    /// Performs `writes`, each of which must be written; returns their versions.
    @discardableResult
    static func write(_ service: KintoService, _ writes: [RecordWrite]) async throws -> [RemoteVersion] {
        try await service.perform(writes).map { result in
            guard case .written(let version) = result else { throw FixtureError("a write failed: \(result)") }
            return version
        }
    }

    /// Every page of a pull, and what each page said.
    struct Pull {
        var records: [RemoteRecord] = []
        var deletions: [RecordDeletion] = []
        var timestamps: [RemoteVersion?] = []
        var pages: Int { timestamps.count }
        var timestamp: RemoteVersion? { timestamps.last ?? nil }
    }

    /// Reads every page of the changes since `since`; `between` runs after each page but the last.
    static func pull(
        _ service: KintoService, since: RemoteVersion?, between: (Int) async throws -> Void = { _ in }
    ) async throws -> Pull {
        var pull = Pull()
        var cursor: RecordCursor?
        repeat {
            let page = try await service.changes(in: collection, since: since, after: cursor)
            pull.records += page.records
            pull.deletions += page.deletions
            pull.timestamps.append(page.timestamp)
            cursor = page.next
            if cursor != nil { try await between(pull.pages) }
        } while cursor != nil
        return pull
    }

    /// A record as the tests compare it: its version and its fields.
    struct Stored: Equatable, CustomStringConvertible {
        let version: RemoteVersion
        let fields: ModelValue
        var description: String { "\(version.rawValue) \(fields.jsonString())" }
        init(_ record: RemoteRecord) {
            version = record.version
            fields = .object(record.fields)
        }
    }

    /// Applies a pull to a local copy, change by change in the order of their versions.
    static func apply(_ pull: Pull, to local: inout [String: Stored]) {
        enum Change { case record(RemoteRecord), deletion(RecordDeletion) }
        let changes =
            pull.records.map { (number($0.version), Change.record($0)) }
            + pull.deletions.map { (number($0.version), .deletion($0)) }
        for (_, change) in changes.sorted(by: { $0.0 < $1.0 }) {
            switch change {
            case .record(let record): local[record.id.id] = Stored(record)
            case .deletion(let deletion): local[deletion.id.id] = nil
            }
        }
    }

    /// What the server holds: every record, listed.
    static func serverRecords(_ service: KintoService) async throws -> [String: Stored] {
        var records: [String: Stored] = [:]
        var cursor: RecordCursor?
        repeat {
            let page = try await service.listRecords(RecordListRequest(collection: collection), after: cursor)
            for record in page.records { records[record.id.id] = Stored(record) }
            cursor = page.next
        } while cursor != nil
        return records
    }

    static func number(_ version: RemoteVersion) -> Int64 { Int64(version.rawValue) ?? -1 }

    static func isAscending(_ versions: [RemoteVersion]) -> Bool {
        zip(versions, versions.dropFirst()).allSatisfy { number($0) < number($1) }
    }

    // MARK: Pulls

    @Test("A first pull returns every live record, oldest change first, no deletion, and the collection's timestamp")
    func firstPull() async throws {
        let service = try await Self.service()
        let created = try await Self.write(service, (0..<5).map { .create(Self.id("n\($0)"), fields: Self.fields("note \($0)")) })
        let deleted = try await Self.write(service, [.delete(Self.id("n2"), expected: created[2])])

        let pull = try await Self.pull(service, since: nil)
        #expect(pull.pages == 1)
        #expect(pull.deletions.isEmpty)
        #expect(pull.records.map(\.id.id) == ["n0", "n1", "n3", "n4"])
        #expect(pull.records.map(\.version) == [created[0], created[1], created[3], created[4]])
        #expect(pull.records.first?.fields["text"] == .string("note 0"))
        // The collection's timestamp is its latest change: here the deletion.
        #expect(pull.timestamp == deleted[0])
    }

    @Test("A pull since the last pull's timestamp returns nothing when nothing changed, and the same timestamp")
    func nothingChanged() async throws {
        let service = try await Self.service()
        try await Self.write(service, [.create(Self.id("a"), fields: Self.fields("a"))])
        let first = try await Self.pull(service, since: nil)
        let timestamp = try #require(first.timestamp)
        let second = try await Self.pull(service, since: timestamp)
        #expect(second.records.isEmpty)
        #expect(second.deletions.isEmpty)
        #expect(second.timestamp == timestamp)
    }

    @Test(
        "After creates, updates and deletes, a pull since the timestamp returns the changed records in their latest versions and the deletions, oldest first"
    )
    func changesSinceTimestamp() async throws {
        let service = try await Self.service()
        let v = try await Self.write(service, (0..<6).map { .create(Self.id("n\($0)"), fields: Self.fields("v1 \($0)")) })
        let timestamp = try #require(try await Self.pull(service, since: nil).timestamp)

        let u1 = try await Self.write(service, [.update(Self.id("n1"), fields: Self.fields("v2 1"), expected: v[1])])
        let d4 = try await Self.write(service, [.delete(Self.id("n4"), expected: v[4])])
        let c = try await Self.write(
            service, [.create(Self.id("n6"), fields: Self.fields("v1 6")), .create(Self.id("n7"), fields: Self.fields("v1 7"))])
        let u0 = try await Self.write(service, [.update(Self.id("n0"), fields: Self.fields("v2 0"), expected: v[0])])
        let u1again = try await Self.write(service, [.update(Self.id("n1"), fields: Self.fields("v3 1"), expected: u1[0])])
        let d7 = try await Self.write(service, [.delete(Self.id("n7"), expected: c[1])])

        let pull = try await Self.pull(service, since: timestamp)
        // n1 changed twice: once, in its latest version, at its place among the latest changes.
        #expect(pull.records.map(\.id.id) == ["n6", "n0", "n1"])
        #expect(pull.records.map(\.version) == [c[0], u0[0], u1again[0]])
        #expect(pull.records.map { $0.fields["text"] } == [.string("v1 6"), .string("v2 0"), .string("v3 1")])
        // n7 was created and deleted since: its deletion shows, the record does not.
        #expect(
            pull.deletions == [
                RecordDeletion(id: Self.id("n4"), version: d4[0]), RecordDeletion(id: Self.id("n7"), version: d7[0]),
            ])
        #expect(pull.timestamp == d7[0])
        #expect(Self.number(try #require(pull.timestamp)) > Self.number(timestamp))
    }

    @Test("Small pages give every change exactly once, and every page the first page's timestamp")
    func paging() async throws {
        let service = try await Self.service(pageSize: 2)
        let v = try await Self.write(service, (0..<9).map { .create(Self.id("n\($0)"), fields: Self.fields("\($0)")) })
        let first = try await Self.pull(service, since: nil)
        #expect(first.pages == 5)
        #expect(first.records.map(\.id.id) == (0..<9).map { "n\($0)" })
        #expect(Set(first.timestamps) == [v[8]])
        #expect(first.deletions.isEmpty)

        // Seven changes since: four updates and three deletions, across four pages.
        try await Self.write(
            service,
            [0, 2, 4, 6].map { .update(Self.id("n\($0)"), fields: Self.fields("again \($0)"), expected: v[$0]) }
                + [1, 3, 5].map { .delete(Self.id("n\($0)"), expected: v[$0]) })
        let second = try await Self.pull(service, since: first.timestamp)
        #expect(second.pages == 4)
        #expect(second.records.map(\.id.id) == ["n0", "n2", "n4", "n6"])
        #expect(second.deletions.map(\.id.id) == ["n1", "n3", "n5"])
        #expect(Self.isAscending(second.records.map(\.version)) && Self.isAscending(second.deletions.map(\.version)))
        #expect(Set(second.timestamps).count == 1)
        var local: [String: Stored] = [:]
        Self.apply(first, to: &local)
        Self.apply(second, to: &local)
        #expect(local == (try await Self.serverRecords(service)))
    }

    @Test("A change made between two pages is not lost: it shows on a later page or on the next pull")
    func changeBetweenPages() async throws {
        let service = try await Self.service(pageSize: 2)
        let v = try await Self.write(service, (0..<6).map { .create(Self.id("n\($0)"), fields: Self.fields("\($0)")) })
        // After the first page (n0, n1): change one record seen, one not seen yet, add one, delete one seen.
        var late: [RemoteVersion] = []
        let first = try await Self.pull(service, since: nil) { page in
            guard page == 1 else { return }
            late = try await Self.write(
                service,
                [
                    .update(Self.id("n0"), fields: Self.fields("late 0"), expected: v[0]),
                    .update(Self.id("n4"), fields: Self.fields("late 4"), expected: v[4]),
                    .create(Self.id("n9"), fields: Self.fields("late 9")),
                    .delete(Self.id("n1"), expected: v[1]),
                ])
        }
        // Each id once per page; the records changed late come later, in their new versions.
        let seen = first.records.map(\.id.id)
        #expect(seen == ["n0", "n1", "n2", "n3", "n5", "n0", "n4", "n9"])
        #expect(Set(first.timestamps) == [v[5]])
        #expect(first.records.suffix(3).map(\.version) == Array(late.prefix(3)))
        // The first pull sees no deletion: the next one, since the first page's timestamp, does.
        let second = try await Self.pull(service, since: first.timestamp)
        #expect(second.deletions == [RecordDeletion(id: Self.id("n1"), version: late[3])])
        var local: [String: Stored] = [:]
        Self.apply(first, to: &local)
        Self.apply(second, to: &local)
        #expect(local == (try await Self.serverRecords(service)))
    }

    @Test("A collection that does not exist yet reads as no change with no timestamp; an empty one has a timestamp")
    func missingCollection() async throws {
        let service = try await Self.service()
        for since in [nil, RemoteVersion("1")] {
            let page = try await service.changes(in: "Missing", since: since, after: nil)
            #expect(page.records.isEmpty && page.deletions.isEmpty)
            #expect(page.next == nil)
            #expect(page.timestamp == nil)
        }
        // The collection exists but has never had a record: a timestamp below any record's.
        let empty = try await service.changes(in: Self.collection, since: nil, after: nil)
        #expect(empty.records.isEmpty && empty.deletions.isEmpty && empty.next == nil)
        let timestamp = try #require(empty.timestamp)
        let created = try await Self.write(service, [.create(Self.id("a"), fields: Self.fields("a"))])
        let after = try await Self.pull(service, since: timestamp)
        #expect(after.records.map(\.version) == created)
    }

    @Test("A bucket that does not exist is an error, not an empty feed")
    func missingBucket() async throws {
        let server = try await KintoServer.shared.value
        let service = server.service(bucket: "missing" + UUID().uuidString.prefix(8).lowercased())
        let error = await #expect(throws: ServiceError.self) {
            _ = try await service.changes(in: Self.collection, since: nil, after: nil)
        }
        #expect(error?.code == .forbidden, "\(String(describing: error))")
    }

    @Test("A record deleted and created again under the same id comes back as the new record, after any deletion")
    func deletedThenRecreated() async throws {
        let service = try await Self.service()
        let v = try await Self.write(
            service, [.create(Self.id("a"), fields: Self.fields("old")), .create(Self.id("b"), fields: Self.fields("b"))])
        let first = try await Self.pull(service, since: nil)
        let deleted = try await Self.write(service, [.delete(Self.id("a"), expected: v[0])])
        let recreated = try await Self.write(service, [.create(Self.id("a"), fields: Self.fields("new"))])
        let between = try await Self.pull(service, since: first.timestamp)
        #expect(between.records.map(\.id.id) == ["a"])
        #expect(between.records.first?.version == recreated[0])
        #expect(between.records.first?.fields["text"] == .string("new"))
        // Kinto drops the tombstone when the id is used again; if a deletion showed, it would be the older change.
        #expect(between.deletions.allSatisfy { $0.id.id == "a" && $0.version == deleted[0] })
        var local: [String: Stored] = [:]
        Self.apply(first, to: &local)
        Self.apply(between, to: &local)
        #expect(local["a"]?.version == recreated[0])
        #expect(local == (try await Self.serverRecords(service)))
    }

    @Test("A pull since a timestamp costs one request and bytes in proportion to the changes, not to the collection")
    func costFollowsTheChanges() async throws {
        let service = try await Self.service()
        let count = 1_000
        let v = try await Self.write(
            service, (0..<count).map { .create(Self.id("n\($0)"), fields: Self.fields("note number \($0)")) })
        let start = service.metrics
        let first = try await Self.pull(service, since: nil)
        let full = service.metrics
        #expect(first.records.count == count)
        try await Self.write(
            service, (0..<10).map { .update(Self.id("n\($0 * 97)"), fields: Self.fields("changed"), expected: v[$0 * 97]) })
        let beforeIncremental = service.metrics
        let incremental = try await Self.pull(service, since: first.timestamp)
        let end = service.metrics
        #expect(incremental.records.count == 10)
        let fullBytes = full.bytesReceived - start.bytesReceived
        let incrementalBytes = end.bytesReceived - beforeIncremental.bytesReceived
        #expect(end.requests - beforeIncremental.requests == 1)
        // 10 changes of 1,000 records: 1% of the records; 3% of the bytes allows for the envelope.
        #expect(
            incrementalBytes * 100 < fullBytes * 3, "\(incrementalBytes) bytes for 10 changes, \(fullBytes) for \(count) records")
        print(
            "Change feed: a first pull of \(count) records took \(full.requests - start.requests) request(s), "
                + "\(fullBytes) bytes; a pull of 10 changes since took \(end.requests - beforeIncremental.requests), "
                + "\(incrementalBytes) bytes")
    }

    // MARK: Bad input and bad answers

    @Test("A since that is not a timestamp, and a cursor that is not the feed's or is for another since, are query errors")
    func badInput() async throws {
        let service = try await Self.service(pageSize: 1)
        try await Self.write(service, (0..<3).map { .create(Self.id("n\($0)"), fields: Self.fields("\($0)")) })
        for since in ["", "abc", "-1", "12.5", "\"12\""] {
            let error = await #expect(throws: ServiceError.self) {
                _ = try await service.changes(in: Self.collection, since: RemoteVersion(since), after: nil)
            }
            #expect(error?.code == .invalidQuery, "since '\(since)': \(String(describing: error))")
        }
        for token in ["", "garbage", "12.x.token", ".1.token", "12.1."] {
            let error = await #expect(throws: ServiceError.self) {
                _ = try await service.changes(in: Self.collection, since: RemoteVersion("1"), after: RecordCursor(token: token))
            }
            #expect(error?.code == .invalidQuery, "cursor '\(token)': \(String(describing: error))")
        }
        let first = try await service.changes(in: Self.collection, since: nil, after: nil)
        let next = try #require(first.next)
        let mismatch = await #expect(throws: ServiceError.self) {
            _ = try await service.changes(in: Self.collection, since: first.timestamp, after: next)
        }
        #expect(mismatch?.code == .invalidQuery)
        #expect(mismatch?.description.contains("same since") == true, "\(String(describing: mismatch))")
        // The right since still reads the next page.
        let second = try await service.changes(in: Self.collection, since: nil, after: next)
        #expect(second.records.map(\.id.id) == ["n1"])
        #expect(second.timestamp == first.timestamp)
    }

    @Test(
        "A malformed change is an invalid response naming where",
        arguments: [
            (#"{"data":[{"id":"a","last_modified":1},{"id":"b"}]}"#, "data[1].last_modified"),
            (
                #"{"data":[{"id":"a","last_modified":1},{"id":"b","last_modified":2},{"id":"c","last_modified":3},{"id":"d","last_modified":"4"}]}"#,
                "data[3].last_modified"
            ),
            (#"{"data":[{"id":7,"last_modified":1}]}"#, "data[0].id"),
            (#"{"data":[{"last_modified":1}]}"#, "data[0].id"),
            (#"{"data":[{"id":"../x","last_modified":1}]}"#, "data[0].id"),
            (#"{"data":[{"id":"a","deleted":true}]}"#, "data[0].last_modified"),
            (#"{"data":[{"id":"a","last_modified":1.5,"deleted":true}]}"#, "data[0].last_modified"),
            (#"{"data":[3]}"#, "data[0]"),
            (#"{"data":{}}"#, "an array 'data'"),
            (#"[1,"#, "JSON"),
        ])
    func malformedAnswer(body: String, place: String) async throws {
        let rig = try await FaultTests.rig()
        defer { rig.proxy.stop() }
        try await rig.proxy.inject([
            ["match": "GET /v1/buckets", "action": "status", "status": 200, "body": .string(body), "headers": ["ETag": "\"12\""]]
        ])
        let error = await #expect(throws: ServiceError.self) {
            _ = try await rig.service.changes(in: "Writer", since: RemoteVersion("1"), after: nil)
        }
        #expect(error?.code == .invalidResponse)
        #expect(error?.description.contains(place) == true, "\(String(describing: error))")
    }

    @Test(
        "A first page without the collection's ETag is an invalid response", arguments: [nil, "W/\"12\"", "\"\"", "\"twelve\""])
    func missingETag(etag: String?) async throws {
        let rig = try await FaultTests.rig()
        defer { rig.proxy.stop() }
        let headers: ModelValue = etag.map { ["ETag": .string($0)] } ?? [:]
        try await rig.proxy.inject([
            ["match": "GET /v1/buckets", "action": "status", "status": 200, "body": #"{"data":[]}"#, "headers": headers]
        ])
        let error = await #expect(throws: ServiceError.self) {
            _ = try await rig.service.changes(in: "Writer", since: nil, after: nil)
        }
        #expect(error?.code == .invalidResponse)
        #expect(error?.description.contains("ETag") == true, "\(String(describing: error))")
    }

    @Test("A backend without a change feed says so")
    func defaultIsNotSupported() async throws {
        let backend = RecordsOnlyService(try await Self.service())
        let error = await #expect(throws: ServiceError.self) {
            _ = try await backend.changes(in: Self.collection, since: nil, after: nil)
        }
        #expect(error?.code == .notSupported)
        #expect(error?.description.contains("a change feed") == true)
    }

    // MARK: Random

    @Test("Random creates, updates and deletes, pulled after each round, keep a local copy equal to the server's records")
    func randomRounds() async throws {
        let seed = ProcessInfo.processInfo.environment["MODELKIT_FEED_SEED"].flatMap { UInt64($0) } ?? 0xFEED_2026
        var random = SplitMix64(seed: seed)
        let service = try await Self.service(pageSize: 3)
        let ids = (0..<12).map { "r\($0)" }
        var versions: [String: RemoteVersion] = [:]  // what the writer knows is on the server
        var local: [String: Stored] = [:]
        var since: RemoteVersion?
        var counter = 0
        var midPullWrites = 0
        var multiPagePulls = 0

        /// Random writes, one per id at most (a batch's writes to one record would depend on each other).
        func randomWrites(_ random: inout SplitMix64) -> [RecordWrite] {
            var writes: [RecordWrite] = []
            for id in ids where random.chance(0.4) {
                counter += 1
                if let version = versions[id] {
                    writes.append(
                        random.chance(0.3)
                            ? .delete(Self.id(id), expected: version)
                            : .update(Self.id(id), fields: Self.fields("\(id) #\(counter)"), expected: version))
                } else {
                    writes.append(.create(Self.id(id), fields: Self.fields("\(id) #\(counter)")))
                }
            }
            return writes
        }
        func perform(_ writes: [RecordWrite]) async throws {
            let written = try await Self.write(service, writes)
            for (write, version) in zip(writes, written) {
                if case .delete = write { versions[write.record.id] = nil } else { versions[write.record.id] = version }
            }
        }

        for round in 0..<10 {
            try await perform(randomWrites(&random))
            // From the second round on, some writes land between the pages of the pull.
            let midPull = round > 0 && random.chance(0.5)
            var between: [[RecordWrite]] = []
            if midPull { between = [randomWrites(&random)] }
            let pull = try await Self.pull(service, since: since) { _ in
                if let writes = between.popLast() {
                    try await perform(writes)
                    midPullWrites += writes.count
                }
            }
            if pull.pages > 1 { multiPagePulls += 1 }
            #expect(Set(pull.timestamps).count == 1, "seed \(seed), round \(round)")
            #expect(Self.isAscending(pull.records.map(\.version)), "seed \(seed), round \(round)")
            Self.apply(pull, to: &local)
            since = pull.timestamp
            let server = try await Self.serverRecords(service)
            #expect(local == server, "seed \(seed), round \(round): local \(local) server \(server)")
        }
        // The seed exercised what the test is for: pulls over several pages, writes between them.
        #expect(
            multiPagePulls > 3 && midPullWrites > 3,
            "seed \(seed): \(multiPagePulls) pulls of pages, \(midPullWrites) writes between")
    }
}
