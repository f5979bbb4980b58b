import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@testable import ModelKitServices

/// Many clients at once on one collection (issue #32), on the backend the environment chose
/// (`MODELKIT_KINTO_BACKEND`; .ci/run runs these on memory and on PostgreSQL), and on two Kinto
/// servers over one PostgreSQL. Every save must succeed or end in a real conflict; the records
/// on the server are then exactly those the successful saves wrote, none lost, none twice.
@Suite(
    "Many clients at once, on one server and on two", .enabled(if: serviceTestsEnabled, serviceTestsSkipped),
    .hangBackstop)
struct ConcurrentClientsTests {
    /// Generous retries: PostgreSQL refuses colliding transactions with "please retry", and with
    /// 16 clients in one collection a save may collide several times (each retry waits the
    /// server's Retry-After, 3 s by default, plus jitter).
    static let retry = RetryPolicy(maximumAttempts: 12, delay: .milliseconds(200))

    /// A client: its own service (connections, counters) on `server`'s bucket.
    static func client(_ server: KintoServer, bucket: String) -> KintoService {
        server.service(bucket: bucket, retry: retry)
    }

    /// A writer named `name` with `articles` articles, none saved: one batch of `articles + 1`.
    static func graph(_ name: String, articles: Int, in context: ModelContext) -> Writer {
        let writer = Writer.instance(in: context)
        writer.name = name
        writer.articles = ModelArray(
            (0..<articles).map { index in
                let article = Article.instance(in: context)
                article.title = "\(name) #\(index)"
                article.author = writer
                return article
            })
        return writer
    }

    /// The ids of every record of `collection` on the server, in id order, read page by page.
    static func recordIds(_ collection: String, bucket: String, on server: KintoServer) async throws -> [String] {
        var ids: [String] = []
        var after = ""
        while true {
            let filter = after.isEmpty ? "" : "&gt_id=\(after)"
            let page = try await server.request(
                "GET", "/buckets/\(bucket)/collections/\(collection)/records?_fields=id&_limit=500&_sort=id\(filter)")
            guard page.status == 200, case .array(let records)? = page.body["data"] else {
                throw FixtureError("listing \(collection) answered \(page.status)")
            }
            let more = records.compactMap { $0["id"]?.stringValue }
            ids += more
            guard more.count == 500, let last = more.last else { return ids }
            after = last
        }
    }

    /// What one client did: the graph it saved (writer id, article ids), and whether its update
    /// of the shared writer went through (or met a conflict).
    struct Outcome: Sendable {
        var writer: String
        var articles: [String]
        var updatedShared: Bool
    }

    /// Holds each client until all of them have arrived, so that every update of the shared
    /// writer starts from the version they all read.
    actor Barrier {
        private var waiting: [CheckedContinuation<Void, Never>] = []
        private let count: Int
        init(count: Int) { self.count = count }

        func arrive() async {
            if waiting.count + 1 == count {
                for continuation in waiting { continuation.resume() }
                waiting = []
                return
            }
            await withCheckedContinuation { waiting.append($0) }
        }
    }

    /// Runs `clients` clients at once, each on `servers[i % servers.count]`: each saves a graph
    /// of its own and changes the shared writer (whose version all of them start from).
    static func run(clients: Int, articles: Int, servers: [KintoServer], bucket: String, shared: String)
        async throws -> [Outcome]
    {
        let barrier = Barrier(count: clients)
        return try await withThrowingTaskGroup(of: Outcome.self) { group in
            for index in 0..<clients {
                let server = servers[index % servers.count]
                group.addTask {
                    let service = client(server, bucket: bucket)
                    let context = ModelContext()
                    // Everybody reads the shared writer first, so all updates start from one version.
                    let sharedCopy = Writer.instance(objectId: shared, in: context)
                    let writer = graph("client \(index)", articles: articles, in: context)
                    do {
                        try await service.fetch(sharedCopy)
                        try await service.save(writer)
                    } catch {
                        await barrier.arrive()  // the others must not wait for this one forever
                        throw error
                    }
                    await barrier.arrive()
                    sharedCopy.name = "changed by client \(index)"
                    var updated = true
                    do {
                        try await service.save(sharedCopy)
                    } catch let error as ServiceError where error.code == .conflict {
                        updated = false
                        #expect(sharedCopy.hasChanges, "a refused save leaves the change in place")
                    }
                    return Outcome(
                        writer: try #require(writer.objectId), articles: writer.articles.map { $0.objectId ?? "" },
                        updatedShared: updated)
                }
            }
            var outcomes: [Outcome] = []
            for try await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
    }

    /// Checks that the server holds exactly the records the outcomes say were saved.
    static func check(_ outcomes: [Outcome], shared: String, bucket: String, on server: KintoServer) async throws {
        let writers = try await recordIds("Writer", bucket: bucket, on: server)
        let articles = try await recordIds("Article", bucket: bucket, on: server)
        #expect(writers.count == Set(writers).count && articles.count == Set(articles).count, "no record twice")
        #expect(Set(writers) == Set(outcomes.map(\.writer) + [shared]), "every saved writer, nothing else")
        #expect(Set(articles) == Set(outcomes.flatMap(\.articles)), "every saved article, nothing else")
        // Exactly one update of the shared writer should win, the others meeting a real conflict:
        // ModelKit sends each with If-Match and the version all of them read. Kinto 26.5 checks
        // If-Match with a read before its write, without locking the record, so concurrent updates
        // from one version can pass together: on PostgreSQL (READ COMMITTED; seen 4 of 16 on one
        // server, 8 of 8 on two) and, more rarely, on the memory backend under load (seen 2 of 16
        // in a CI run at high load). A known issue of the server; every other outcome is checked.
        let winners = outcomes.filter(\.updatedShared).count
        #expect(winners >= 1)
        withKnownIssue(
            "Kinto 26.5 does not make If-Match atomic: concurrent updates from one version may pass together",
            isIntermittent: true
        ) {
            #expect(winners == 1)
        }
        let record = try await server.request("GET", "/buckets/\(bucket)/collections/Writer/records/\(shared)")
        #expect(record.body["data"]?["name"]?.stringValue?.hasPrefix("changed by client") == true)
    }

    /// A bucket of its own on `server` with a shared writer in it; returns the bucket and the
    /// writer's id.
    static func setUp(on server: KintoServer) async throws -> (bucket: String, shared: String) {
        let service = try await KintoServer.freshService(on: server)
        let context = ModelContext()
        let shared = Writer.instance(in: context)
        shared.name = "shared"
        try await service.save(shared)
        return (service.bucket, try #require(shared.objectId))
    }

    @Test("Sixteen clients saving graphs into one collection at once: each save succeeds or meets a real conflict")
    func sixteenClients() async throws {
        let server = try await KintoServer.shared.value
        let (bucket, shared) = try await Self.setUp(on: server)
        let outcomes = try await Self.run(clients: 16, articles: 24, servers: [server], bucket: bucket, shared: shared)
        #expect(outcomes.count == 16)
        try await Self.check(outcomes, shared: shared, bucket: bucket, on: server)
    }

    static let twoServersNeedPostgreSQL: Comment =
        "two Kinto servers need one PostgreSQL under them: run with MODELKIT_KINTO_BACKEND=postgresql (and no MODELKIT_KINTO_URL)"

    @Test(
        "Two Kinto servers over one PostgreSQL behave as one: concurrent saves, conflicts, deletes and queries",
        .enabled(
            if: KintoServer.requestedBackend == "postgresql" && KintoServer.existingURL == nil, twoServersNeedPostgreSQL))
    func twoServers() async throws {
        let first = try await KintoServer.shared.value
        let second = try #require(try await first.startSecond())
        let (bucket, shared) = try await Self.setUp(on: first)
        let outcomes = try await Self.run(clients: 8, articles: 12, servers: [first, second], bucket: bucket, shared: shared)
        // Both servers see the same records.
        try await Self.check(outcomes, shared: shared, bucket: bucket, on: first)
        try await Self.check(outcomes, shared: shared, bucket: bucket, on: second)

        // A conflict across servers: a client on each changes the same writer from one version.
        let onFirst = Self.client(first, bucket: bucket)
        let onSecond = Self.client(second, bucket: bucket)
        let contextA = ModelContext()
        let contextB = ModelContext()
        let copyA = Writer.instance(objectId: outcomes[0].writer, in: contextA)
        let copyB = Writer.instance(objectId: outcomes[0].writer, in: contextB)
        try await onFirst.fetch(copyA)
        try await onSecond.fetch(copyB)
        copyA.age = 1
        copyB.age = 2
        try await onFirst.save(copyA)
        let conflict = try #require(await #expect(throws: ServiceError.self) { try await onSecond.save(copyB) })
        #expect(conflict.code == .conflict)
        try await onSecond.fetch(copyB)
        #expect(copyB.age == 1, "the second server reads what the first wrote")

        // Deletes through one server are gone on the other; queries agree.
        let deleted = outcomes.prefix(4).map(\.writer)
        for (index, id) in deleted.enumerated() {
            let service = index.isMultiple(of: 2) ? onSecond : onFirst
            let context = ModelContext()
            let writer = Writer.instance(objectId: id, in: context)
            try await service.fetch(writer)
            try await service.delete(writer)
        }
        for service in [onFirst, onSecond] {
            let context = ModelContext()
            let query = try Writer.query(in: context).filter("name BEGINSWITH 'client'").sorted(by: "name")
            let found = try await service.fetch(query)
            #expect(Set(found.compactMap(\.objectId)) == Set(outcomes.dropFirst(4).map(\.writer)))
            #expect(try await service.count(query) == outcomes.count - 4)
        }
        let remaining = try await Self.recordIds("Writer", bucket: bucket, on: second)
        #expect(Set(remaining) == Set(outcomes.dropFirst(4).map(\.writer) + [shared]))
    }
}
