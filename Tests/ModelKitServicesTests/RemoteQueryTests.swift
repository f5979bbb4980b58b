import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@testable import ModelKitServices

/// The model of the query tests: every kind of property a condition can be on.
final class Sample: ModelObject<Sample.Properties>, RemoteModel {
    struct Properties: ModelProperties {
        var name = ""
        var nick: String?
        var age = 0
        var rank: Int?
        var score = 0.0
        var flag = false
        var tags: [String] = []
        var born = Date(timeIntervalSince1970: 0)
        var home = Home()
        var keeper = ModelRef<Keeper>()
    }

    struct Home: Codable, Equatable, Sendable {
        var city = ""
    }
}

final class Keeper: ModelObject<Keeper.Properties>, RemoteModel {
    struct Properties: ModelProperties {
        var name = ""
        var age = 0
    }
}

/// A service on a fresh bucket with the collections of the query tests.
func queryService(pageSize: Int = 1_000) async throws -> KintoService {
    try ModelRegistry.register(Sample.self, Keeper.self)
    let server = try await KintoServer.shared.value
    let bucket = try await server.makeBucket(prefix: "q", collections: ["Sample", "Keeper"])
    return server.service(bucket: bucket, pageSize: pageSize)
}

@Suite("Queries on a real Kinto server", .enabled(if: serviceTestsEnabled, serviceTestsSkipped), .hangBackstop)
struct RemoteQueryTests {
    /// Twelve samples with known values, saved.
    static func saved(_ service: KintoService, in context: ModelContext) async throws -> [Sample] {
        let names = [
            "Ann", "ann", "Émile", "E\u{301}mile", "bo", "Jon G", "straße", "\u{212A}ing", "King", "a,b", "x*y", "line\nbreak",
        ]
        let keepers = (0..<3).map { index in
            let keeper = Keeper.instance(in: context)
            keeper.name = "keeper \(index)"
            keeper.age = 30 + index * 10
            return keeper
        }
        var samples: [Sample] = []
        for (index, name) in names.enumerated() {
            let sample = Sample.instance(in: context)
            sample.name = name
            sample.nick = index % 3 == 0 ? nil : "n\(index % 4)"
            sample.age = index
            sample.rank = index % 4 == 0 ? nil : index % 5
            sample.score = [0.5, -1, .nan, .infinity, -.infinity, 2.25][index % 6]
            sample.flag = index % 2 == 0
            sample.tags = [["swift"], ["ios", "swift"], [], ["Swift", "a,b"]][index % 4]
            sample.born = Date(timeIntervalSince1970: Double(index) * 86_400.5)
            sample.home = Sample.Home(city: index % 2 == 0 ? "Paris" : "Oslo")
            if index % 4 != 3 { sample.keeper = keepers[index % 3] }
            try await service.save(sample)
            samples.append(sample)
        }
        return samples
    }

    @Test("Each operator family gives the local answer, and the ones Kinto evaluates are sent")
    func operatorFamilies() async throws {
        let service = try await queryService()
        let context = ModelContext()
        _ = try await Self.saved(service, in: context)
        let base = Sample.query(in: context)
        // (query, sent to the server, exact there)
        let cases: [(String, Query<Sample>, Bool, Bool)] = [
            ("age == 3", base.where("age", .equals(3)), true, true),
            ("age != 3", base.where("age", .notEquals(3)), true, true),
            ("age > 4", base.where("age", .greaterThan(4)), true, true),
            ("age >= 4", base.where("age", .greaterThanOrEqual(4)), true, true),
            ("rank < 3 (optional)", base.where("rank", .lessThan(3)), true, false),
            ("rank <= 3 (optional)", base.where("rank", .lessThanOrEqual(3)), true, false),
            ("age BETWEEN 2, 7", base.where("age", .between(2, 7)), true, true),
            ("age IN", base.where("age", .in([1, 5, 9])), true, true),
            ("age NOT IN", base.where("age", .notIn([1, 5, 9])), true, true),
            ("rank IN with nil", base.where("rank", .in([ModelValue.null, 2])), true, true),
            ("nick EXISTS", base.where("nick", .exists), true, true),
            ("nick NOT EXISTS", base.where("nick", .notExists), true, true),
            ("name == Ann", base.where("name", .equals("Ann")), true, true),
            ("name == Émile (not stable: local)", base.where("name", .equals("Émile")), false, false),
            ("name != Ann", base.where("name", .notEquals("Ann")), true, true),
            ("name IN", base.where("name", .in(["Ann", "bo"])), true, true),
            ("name BEGINSWITH an", base.where("name", .beginsWith("an")), false, false),
            ("name ENDSWITH ing", base.where("name", .endsWith("ing")), false, false),
            ("name CONTAINS n", base.where("name", .contains("n")), false, false),
            ("name LIKE ?n*", base.where("name", .like("?n*")), false, false),
            ("name ==[c] ann", base.where("name", .equals("ann", options: .caseInsensitive)), false, false),
            (
                "name BEGINSWITH[cd] e",
                base.where("name", .beginsWith("e", options: [.caseInsensitive, .diacriticInsensitive])), false, false
            ),
            ("tags CONTAINS swift", base.where("tags", .contains("swift")), true, true),
            ("tags CONTAINSALL", base.where("tags", .containsAll(["ios", "swift"])), true, true),
            ("tags CONTAINSANY", base.where("tags", .containsAny(["ios", "Swift"])), true, true),
            ("tags CONTAINS a,b (comma: local)", base.where("tags", .contains("a,b")), false, false),
            ("score > 0", base.where("score", .greaterThan(0.0)), true, false),
            ("score < 1 (local)", base.where("score", .lessThan(1.0)), false, false),
            ("flag == true", base.where("flag", .equals(true)), true, true),
            ("home.city == Paris", base.where("home.city", .equals("Paris")), true, true),
            ("keeper.age > 35", base.where("keeper.age", .greaterThan(35)), false, false),
            ("key path age > 4", base.where(\.age, .greaterThan(4)), true, true),
            ("key path rank != 2", base.where(\.rank, .notEquals(2)), true, true),
            ("key path closure", base.where(\.age, Condition { $0 % 2 == 0 }), false, false),
            ("through a key path reference", base.filter(.where(\.keeper, .where(\.age, .greaterThan(35)))), false, false),
            ("OR on one key", base.filter(.where("age", .equals(1)) || .where("age", .in([2, 3]))), true, true),
            ("OR across keys", base.filter(.where("age", .equals(1)) || .where("flag", .equals(true))), false, false),
            ("NOT of a leaf", base.filter(!.where("age", .greaterThan(4))), true, true),
            ("NOT of an AND", base.filter(!(.where("age", .greaterThan(4)) && .where("flag", .equals(true)))), false, false),
            ("NOT of an OR", base.filter(!(.where("age", .greaterThan(4)) || .where("flag", .equals(true)))), true, true),
            (
                "NOT of an AND on one key", base.filter(!(.where("age", .notEquals(4)) && .where("age", .notIn([5, 6])))), true,
                true
            ),
            ("query language", try base.filter("age >= 2 AND (name BEGINSWITH[c] 'a' OR rank == nil)"), true, false),
            (
                "query language, exact", try base.filter("age BETWEEN {2, 9} AND NOT flag == true AND rank IN {1, 2, nil}"), true,
                true
            ),
        ]
        for (label, query, sent, exact) in cases {
            let (local, remote) = try await bothWays(query, service)
            #expect(remote == local, "\(label)")
            let plan = service.plan(of: query)
            #expect(!plan.conditions.isEmpty == sent, "\(label): sent \(plan.conditions)")
            #expect(plan.isExact == exact, "\(label): exact")
        }
    }

    @Test("With pattern filters on, begins-with, ends-with and LIKE go to the server as like_ and give the local answer")
    func patternFilters() async throws {
        let plain = try await queryService()
        let service = KintoService(
            url: plain.baseURL, bucket: plain.bucket, user: plain.user, password: (try await KintoServer.shared.value).password,
            timeout: .seconds(120), patternFilters: true)  // the fixture's services' time limit
        let context = ModelContext()
        _ = try await Self.saved(service, in: context)
        let base = Sample.query(in: context)
        for query in [
            base.where("name", .beginsWith("an")), base.where("name", .beginsWith("a")), base.where("name", .endsWith("ing")),
            base.where("name", .like("?n*")), base.where(\.name, .beginsWith("Jo")),
        ] {
            let plan = service.plan(of: query)
            #expect(plan.conditions.first?.op == .like && !plan.isExact)
            let (local, remote) = try await bothWays(query, service)
            #expect(remote == local)
            #expect(!local.isEmpty)
        }
    }

    @Test("A query mixing a key path, the query language, an order and a limit gives the local answer and count")
    func mixedForms() async throws {
        let service = try await queryService()
        let source = ModelContext()
        _ = try await Self.saved(service, in: source)
        let context = ModelContext()
        let query = try Sample.query(in: context)
            .where(\.age, .greaterThan(3))
            .filter("flag == true OR name BEGINSWITH[c] 'a'")
            .sorted(by: "age", ascending: false)
            .limit(3)
        let samples = try await service.fetch(query)  // [Sample], in the query's order
        let total = try await service.count(query)  // ignores limit and offset
        // Over the same records locally:
        let local = query.running(in: source)
        #expect(samples.map(\.objectId) == (try local.results()).map(\.objectId))
        #expect(total == (try local.count()))
        #expect(samples.count == 3 && total == 5)
    }

    @Test("A query pages through the results with Next-Page, a page of three at a time")
    func paging() async throws {
        let service = try await queryService(pageSize: 3)
        let context = ModelContext()
        _ = try await Self.saved(service, in: context)
        let before = service.metrics.requests
        let query = Sample.query(in: context).where("age", .greaterThanOrEqual(1))
        let (local, remote) = try await bothWays(query, service)
        #expect(local.count == 11)
        #expect(remote == local)
        // 11 records, 3 a page: 4 pages (the last one says there is no next).
        #expect(service.metrics.requests - before == 4)
    }

    @Test("Sort, limit and offset go to the server when it orders as the query does, and the window is the local one")
    func sortLimitOffset() async throws {
        let service = try await queryService(pageSize: 4)
        let context = ModelContext()
        _ = try await Self.saved(service, in: context)
        let pushed = Sample.query(in: context).where("age", .greaterThan(0)).sorted(by: "flag").sorted(
            by: "rank", ascending: false
        )
        .offset(3).limit(4)
        #expect(service.plan(of: pushed).serverOrder != nil)
        let before = service.metrics.requests
        let (local, remote) = try await bothWays(pushed, service)
        #expect(local.count == 4)
        #expect(remote == local)
        // 7 records (offset 3 + limit 4), 4 a page: 2 requests, not the 11 candidates' 3.
        #expect(service.metrics.requests - before == 2)

        // A key path to an integer sorts on the server too.
        let keyPath = Sample.query(in: context).where(\.age, .lessThan(11)).sorted(by: \.rank).sorted(by: \.age, ascending: false)
            .offset(2).limit(3)
        #expect(service.plan(of: keyPath).serverOrder?.count == 3)
        let byKeyPath = try await bothWays(keyPath, service)
        #expect(byKeyPath.remote == byKeyPath.local && byKeyPath.local.count == 3)

        // Ordered by a string, the order is the client's.
        let local2 = Sample.query(in: context).sorted(by: "name", ascending: false).offset(2).limit(5)
        #expect(service.plan(of: local2).serverOrder == nil)
        let both = try await bothWays(local2, service)
        #expect(both.remote == both.local)
        let none = try await bothWays(Sample.query(in: context).limit(0), service)
        #expect(none.remote.isEmpty && none.local.isEmpty)
        let unordered = try await bothWays(Sample.query(in: context).offset(5).limit(3), service)
        #expect(unordered.remote == unordered.local && unordered.local.count == 3)
    }

    @Test("count asks the server for Total-Records when the filter is exact, and counts candidates otherwise")
    func count() async throws {
        let service = try await queryService()
        let context = ModelContext()
        _ = try await Self.saved(service, in: context)
        let exact = Sample.query(in: context).where("age", .greaterThan(3)).where("flag", .equals(true)).limit(1)
        let before = service.metrics.requests
        #expect(try await service.count(exact) == (try exact.count()))
        #expect(service.metrics.requests - before == 1)
        let inexact = Sample.query(in: context).where("name", .beginsWith("a", options: .caseInsensitive))
        #expect(try await service.count(inexact) == (try inexact.count()))
        #expect(try await service.count(inexact) == 3)
        #expect(try await service.count(Sample.query(in: context)) == 12)
    }

    @Test("Results merge into the context by identity, and a fetched model saves as an update")
    func mergeByIdentity() async throws {
        let service = try await queryService()
        let source = ModelContext()
        let saved = try await Self.saved(service, in: source)
        let context = ModelContext()
        let held = Sample.instance(objectId: try #require(saved[4].objectId), in: context)
        #expect(held.modelState == .needsData)
        let results = try await service.fetch(Sample.query(in: context).where("age", .in([4, 5])).sorted(by: "age"))
        #expect(results.count == 2)
        #expect(results[0] === held)
        #expect(held.modelState == .loaded && !held.hasChanges)
        #expect(held.name == "bo")
        #expect(context.models(of: Sample.self).count == 2)
        // Again: the same instances, nothing added.
        let again = try await service.fetch(Sample.query(in: context).where("age", .in([4, 5])).sorted(by: "age"))
        #expect(again.count == 2 && again[0] === results[0] && again[1] === results[1])
        #expect(context.models(of: Sample.self).count == 2)
        // The reference is a placeholder, or the keeper the context holds.
        #expect(held.keeper?.objectId == saved[4].keeper?.objectId)

        // The version was kept: a save is an update with a precondition, which succeeds...
        held.name = "bo (changed)"
        try await service.save(held)
        // ... and conflicts when another client changed the record meanwhile.
        saved[5].name = "changed by the source"
        try await service.save(saved[5])
        results[1].name = "stale"
        let error = await #expect(throws: ServiceError.self) { try await service.save(results[1]) }
        #expect(error?.code == .conflict)
    }

    @Test("A malformed record is an invalid response, and the context is left as it was")
    func malformedRecord() async throws {
        let service = try await queryService()
        let source = ModelContext()
        _ = try await Self.saved(service, in: source)
        let server = try await KintoServer.shared.value
        let put = try await server.request(
            "PUT", "/buckets/\(service.bucket)/collections/Sample/records/bad1",
            body: ["data": ["name": "bad", "age": "not a number", "tags": [], "score": 1, "flag": false]])
        #expect(put.status == 201)
        let context = ModelContext()
        let held = Sample.instance(objectId: "bad1", in: context)
        let kept = Sample.instance(in: context)
        kept.name = "kept"
        let error = await #expect(throws: ServiceError.self) {
            _ = try await service.fetch(Sample.query(in: context).where("flag", .equals(false)))
        }
        #expect(error?.code == .invalidResponse)
        #expect(context.count == 2)
        #expect(held.modelState == .needsData)
        #expect(kept.name == "kept" && kept.hasChanges)

        // An unknown key is an invalid query, before any request.
        let before = service.metrics.requests
        let unknown = await #expect(throws: ServiceError.self) {
            _ = try await service.fetch(Sample.query(in: context).where("nope", .equals(1)))
        }
        #expect(unknown?.code == .invalidQuery)
        #expect(service.metrics.requests == before)
    }

    @Test("More candidates than allowed is queryTooBroad; a Next-Page elsewhere is refused")
    func limits() async throws {
        let service = try await queryService(pageSize: 2)
        let context = ModelContext()
        _ = try await Self.saved(service, in: context)
        let error = await #expect(throws: ServiceError.self) {
            _ = try await service.fetch(
                Sample.query(in: context).where("name", .contains("n", options: .caseInsensitive)), maximumCandidates: 5)
        }
        #expect(error?.code == .queryTooBroad)
        let path = "/buckets/\(service.bucket)/collections/Sample/records"
        let own = service.baseURL.absoluteString + path + "?_limit=2&_token=abc"
        #expect(try service.nextCursor(["Next-Page": own], path: path) == RecordCursor(token: "abc"))
        for hostile in [
            "http://evil.example/v1" + path + "?_token=abc",
            service.baseURL.absoluteString + "/buckets/x/collections/Sample/records?_token=a",
        ] {
            #expect(throws: ServiceError.self) { try service.nextCursor(["Next-Page": hostile], path: path) }
        }
    }
}
