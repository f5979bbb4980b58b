import Foundation
import ModelKit

// Queries over n authors: ModelKit's query engine (with indexes, scanning by key path, scanning
// by string key) against a hand-written `filter` closure over an array of the same model objects
// (the floor for a linear scan) and Foundation's `#Predicate` evaluated over that array. Every
// condition selects about 1% of the authors. The indexed subject runs on a second, identical
// context that has indexes on age, name and city (built before the clock starts); the others
// run on a context without indexes.

/// An author for the query benchmarks.
final class QueryAuthor: Model {
    struct Properties: Codable {
        var name = ""
        var age = 0
        var city = ""
        var score = 0.0
        var tags: [String] = []
    }
    let storage = ModelStorage(Properties())
}

/// The authors of one size, in a context, and the array the peers scan.
private struct QueryFixture {
    let context = ModelContext()
    let authors: [QueryAuthor]

    /// Author `i` has age `i * 7919 % 10_000` (a permutation of 0..<10_000 when n is a multiple),
    /// a name starting with one of 100 two-letter prefixes, one of 10 cities and a tag of 50.
    /// With `indexed`, the context indexes age, name and city.
    init(n: Int, indexed: Bool = false) {
        let cities = ["Paris", "Lyon", "Berlin", "Zürich", "Oslo", "Rome", "Porto", "Gent", "Graz", "Lund"]
        var authors: [QueryAuthor] = []
        authors.reserveCapacity(n)
        for i in 0..<n {
            let author = QueryAuthor.instance(in: context)
            author.age = i &* 7919 % 10_000
            author.name = QueryFixture.prefix(i % 100) + "-\(i)"
            author.city = cities[i % 10]
            author.score = Double(i % 1000) / 10
            author.tags = ["t\(i % 50)"]
            authors.append(author)
        }
        self.authors = authors
        if indexed {
            context.addIndex(on: \.age, of: QueryAuthor.self)
            context.addIndex(on: \.name, of: QueryAuthor.self)
            context.addIndex(on: \.city, of: QueryAuthor.self, kind: .hash)
        }
    }

    /// A two-letter prefix per number below 100: "aa", "ab", …
    static func prefix(_ k: Int) -> String {
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        return String(letters[k / 26 % 26]) + String(letters[k % 26])
    }
}

extension Benchmarks {
    static let queryBetween = Benchmark(name: "query-between") { data, session in
        let fixture = QueryFixture(n: data.n)
        let indexed = QueryFixture(n: data.n, indexed: true)
        return try queryResult(
            fixture, indexed, session: &session,
            typed: { $0.where(\.age, .between(100, 199)) },
            keyed: { $0.where("age", .between(100, 199)) },
            closure: { $0.age >= 100 && $0.age <= 199 },
            predicate: #Predicate<QueryAuthor> { $0.age >= 100 && $0.age <= 199 })
    }

    static let queryIn = Benchmark(name: "query-in") { data, session in
        let fixture = QueryFixture(n: data.n)
        let indexed = QueryFixture(n: data.n, indexed: true)
        let ages = Array(stride(from: 5, to: 10_000, by: 100))  // 100 of 10,000 ages
        let set = Set(ages)
        return try queryResult(
            fixture, indexed, session: &session,
            typed: { $0.where(\.age, .in(ages)) },
            keyed: { $0.where("age", .in(ages)) },
            closure: { set.contains($0.age) },
            predicate: #Predicate<QueryAuthor> { ages.contains($0.age) })
    }

    static let queryBeginsWith = Benchmark(name: "query-beginswith") { data, session in
        let fixture = QueryFixture(n: data.n)
        let indexed = QueryFixture(n: data.n, indexed: true)
        let prefix = QueryFixture.prefix(42) + "-"
        return try queryResult(
            fixture, indexed, session: &session,
            typed: { $0.where(\.name, .beginsWith(prefix)) },
            keyed: { $0.where("name", .beginsWith(prefix)) },
            closure: { $0.name.hasPrefix(prefix) },
            predicate: #Predicate<QueryAuthor> { $0.name.starts(with: prefix) })
    }

    static let queryCompound = Benchmark(name: "query-compound") { data, session in
        let fixture = QueryFixture(n: data.n)
        let indexed = QueryFixture(n: data.n, indexed: true)
        return try queryResult(
            fixture, indexed, session: &session,
            typed: {
                $0.filter(.where(\.age, .lessThan(1000)) && (.where(\.city, .equals("Oslo")) || .where(\.tags, .contains("t7"))))
            },
            keyed: { try $0.filter("age < 1000 AND (city = 'Oslo' OR tags CONTAINS 't7')") },
            closure: { $0.age < 1000 && ($0.city == "Oslo" || $0.tags.contains("t7")) },
            predicate: #Predicate<QueryAuthor> { $0.age < 1000 && ($0.city == "Oslo" || $0.tags.contains("t7")) })
    }

    /// Times one condition in every form on `fixture`, after checking that all forms agree.
    private static func queryResult(
        _ fixture: QueryFixture, _ indexed: QueryFixture, session: inout Session,
        typed: @escaping (Query<QueryAuthor>) -> Query<QueryAuthor>,
        keyed: @escaping (Query<QueryAuthor>) throws -> Query<QueryAuthor>,
        closure: @escaping (QueryAuthor) -> Bool,
        predicate: Predicate<QueryAuthor>
    ) throws -> BenchmarkResult {
        let context = fixture.context
        let indexedContext = indexed.context
        let authors = fixture.authors
        let expected = authors.filter(closure).count
        let index = Subject(
            "ModelKit (indexed)", body: { try typed(QueryAuthor.query(in: indexedContext)).results() },
            verify: { try expect($0.count, expected, "matches") })
        let indexCount = Subject(
            "ModelKit (indexed), count only", body: { try typed(QueryAuthor.query(in: indexedContext)).count() },
            verify: { try expect($0, expected, "count") })
        let indexKeyed = Subject(
            "ModelKit (indexed), string key", body: { try keyed(QueryAuthor.query(in: indexedContext)).results() },
            verify: { try expect($0.count, expected, "matches") })
        let scan = Subject(
            "ModelKit (scan)", body: { try typed(QueryAuthor.query(in: context)).results() },
            verify: { try expect($0.count, expected, "matches") })
        let key = Subject(
            "ModelKit (string key)", body: { try keyed(QueryAuthor.query(in: context)).results() },
            verify: { try expect($0.count, expected, "matches") })
        let filter = Subject(
            "filter closure", body: { authors.filter(closure) }, verify: { try expect($0.count, expected, "matches") })
        let foundation = Subject(
            "#Predicate", body: { try authors.filter(predicate) }, verify: { try expect($0.count, expected, "matches") })
        let count = Subject(
            "ModelKit (scan), count only", body: { try typed(QueryAuthor.query(in: context)).count() },
            verify: { try expect($0, expected, "count") })
        let result = try BenchmarkResult(
            timing: [index, scan, key, filter, foundation], extras: [indexCount, indexKeyed, count],
            notes: ["\(expected) of \(authors.count) authors match"], session: &session)
        blackHole(indexed)
        return result
    }
}
