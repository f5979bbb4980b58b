import Foundation
import ModelKit

// Queries over n authors: ModelKit's query engine (with indexes, scanning by key path, scanning
// by string key) against a hand-written `filter` closure over plain final classes holding the same
// data in the same graph shape (the floor for a linear scan, issue #13), and Foundation's
// `#Predicate` evaluated over those classes. Each condition runs at two selectivities, about 1%
// and about 15% of the authors; each is a table of its own with a `selectivity` in the report.
//
// The graph shape matters: in ModelKit every author is referenced (its post's `ModelRef`) and
// holds its post (a `ModelArray`), as in the blog, so the scan pays whatever referenced models
// cost; the plain authors and posts reference each other strongly, as plain code would. See
// QueryFixture.swift.

extension Benchmarks {
    static let queryBetween = Benchmark(name: "query-between") { data, session in
        try queryResults(
            n: data.n, session: &session,
            cases: [(100, 199), (100, 1_599)].map { low, high in
                QueryCase(
                    typed: { $0.where(\.age, .between(low, high)) },
                    keyed: { $0.where("age", .between(low, high)) },
                    closure: { $0.age >= low && $0.age <= high },
                    modelClosure: { $0.age >= low && $0.age <= high },
                    predicate: #Predicate<PlainQueryAuthor> { $0.age >= low && $0.age <= high })
            })
    }

    static let queryIn = Benchmark(name: "query-in") { data, session in
        // 100 and 1,500 of the 10,000 ages.
        let narrow = Array(stride(from: 5, to: 10_000, by: 100))
        let wide = (0..<10_000).filter { $0 % 20 < 3 }
        return try queryResults(
            n: data.n, session: &session,
            cases: [narrow, wide].map { ages in
                let set = Set(ages)
                return QueryCase(
                    typed: { $0.where(\.age, .in(ages)) },
                    keyed: { $0.where("age", .in(ages)) },
                    closure: { set.contains($0.age) },
                    modelClosure: { set.contains($0.age) },
                    predicate: #Predicate<PlainQueryAuthor> { ages.contains($0.age) })
            })
    }

    static let queryBeginsWith = Benchmark(name: "query-beginswith") { data, session in
        // One of the 100 name prefixes, and one first letter shared by 15 of them.
        try queryResults(
            n: data.n, session: &session,
            cases: [QueryFixture.prefix(42) + "-", "a"].map { prefix in
                QueryCase(
                    typed: { $0.where(\.name, .beginsWith(prefix)) },
                    keyed: { $0.where("name", .beginsWith(prefix)) },
                    closure: { $0.name.hasPrefix(prefix) },
                    modelClosure: { $0.name.hasPrefix(prefix) },
                    predicate: #Predicate<PlainQueryAuthor> { $0.name.starts(with: prefix) })
            })
    }

    static let queryCompound = Benchmark(name: "query-compound") { data, session in
        try queryResults(
            n: data.n, session: &session,
            cases: [
                QueryCase(
                    typed: {
                        $0.filter(.where(\.age, .lessThan(1000)) && (.where(\.city, .equals("Oslo")) || .where(\.tags, .contains("t7"))))
                    },
                    keyed: { try $0.filter("age < 1000 AND (city = 'Oslo' OR tags CONTAINS 't7')") },
                    closure: { $0.age < 1000 && ($0.city == "Oslo" || $0.tags.contains("t7")) },
                    modelClosure: { $0.age < 1000 && ($0.city == "Oslo" || $0.tags.contains("t7")) },
                    predicate: #Predicate<PlainQueryAuthor> { $0.age < 1000 && ($0.city == "Oslo" || $0.tags.contains("t7")) }),
                QueryCase(
                    typed: {
                        $0.filter(
                            .where(\.age, .lessThan(7500))
                                && (.where(\.city, .equals("Oslo")) || .where(\.city, .equals("Rome")) || .where(\.tags, .contains("t7"))))
                    },
                    keyed: { try $0.filter("age < 7500 AND (city = 'Oslo' OR city = 'Rome' OR tags CONTAINS 't7')") },
                    closure: { $0.age < 7500 && ($0.city == "Oslo" || $0.city == "Rome" || $0.tags.contains("t7")) },
                    modelClosure: { $0.age < 7500 && ($0.city == "Oslo" || $0.city == "Rome" || $0.tags.contains("t7")) },
                    predicate: #Predicate<PlainQueryAuthor> {
                        $0.age < 7500 && ($0.city == "Oslo" || $0.city == "Rome" || $0.tags.contains("t7"))
                    }),
            ])
    }
}

/// One condition in every form the benchmark times.
struct QueryCase {
    /// ModelKit, by key path.
    let typed: (Query<QueryAuthor>) -> Query<QueryAuthor>
    /// ModelKit, by string key or query text.
    let keyed: (Query<QueryAuthor>) throws -> Query<QueryAuthor>
    /// The peer: what plain code writes over its plain classes.
    let closure: (PlainQueryAuthor) -> Bool
    /// The same closure over the ModelKit models (the suite's peer before issue #13), also timed.
    let modelClosure: (QueryAuthor) -> Bool
    let predicate: Predicate<PlainQueryAuthor>
}

extension Benchmarks {
    /// Builds the fixtures of `n` authors once and times every case on them, each case a table.
    fileprivate static func queryResults(n: Int, session: inout Session, cases: [QueryCase]) throws -> [BenchmarkResult] {
        let fixture = QueryFixture(n: n)
        let indexed = QueryFixture(n: n, indexed: true)
        let plain = PlainQueryFixture(n: n)
        let results = try cases.map { try queryResult($0, fixture, indexed, plain, session: &session) }
        blackHole((fixture, indexed, plain))
        return results
    }

    /// Times one condition in every form, after checking that all forms agree.
    private static func queryResult(
        _ condition: QueryCase, _ fixture: QueryFixture, _ indexed: QueryFixture, _ plain: PlainQueryFixture,
        session: inout Session
    ) throws -> BenchmarkResult {
        let context = fixture.context
        let indexedContext = indexed.context
        let models = fixture.authors
        let authors = plain.authors
        let closure = condition.closure
        let predicate = condition.predicate
        let expected = authors.filter(closure).count
        _ = try expect(models.filter(condition.modelClosure).count, expected, "models matched by the closure")
        func matches(_ name: String, _ context: ModelContext, _ query: @escaping (Query<QueryAuthor>) throws -> Query<QueryAuthor>)
            -> Subject
        {
            Subject(name, body: { try query(QueryAuthor.query(in: context)).results() }, verify: { try expect($0.count, expected, "matches") })
        }
        func count(_ name: String, _ context: ModelContext) -> Subject {
            Subject(name, body: { try condition.typed(QueryAuthor.query(in: context)).count() }, verify: { try expect($0, expected, "count") })
        }
        let scan = matches("ModelKit (scan)", context, condition.typed)
        let filter = Subject(
            "filter closure (plain classes)", body: { authors.filter(closure) }, verify: { try expect($0.count, expected, "matches") })
        let foundation = Subject(
            "#Predicate (plain classes)", body: { try authors.filter(predicate) }, verify: { try expect($0.count, expected, "matches") })
        let modelFilter = Subject(
            "filter closure (ModelKit models)", body: { models.filter(condition.modelClosure) },
            verify: { try expect($0.count, expected, "matches") })
        var result = try BenchmarkResult(
            timing: [
                matches("ModelKit (indexed)", indexedContext, condition.typed), scan,
                matches("ModelKit (string key)", context, condition.keyed), filter, foundation,
            ],
            extras: [
                count("ModelKit (indexed), count only", indexedContext),
                matches("ModelKit (indexed), string key", indexedContext, condition.keyed),
                count("ModelKit (scan), count only", context), modelFilter,
            ],
            notes: ["\(expected) of \(authors.count) authors match; every author is referenced by its post"],
            session: &session)
        result.selectivity = Double(expected) / Double(authors.count)
        // The target of issue #13: the scan against the closure over plain classes.
        if let scanTime = result.rows.first(where: { $0.subject == scan.name })?.seconds,
            let filterTime = result.rows.first(where: { $0.subject == filter.name })?.seconds, filterTime > 0
        {
            result.notes.append("ModelKit (scan) takes \(fixed(scanTime / filterTime, 2)) x the filter closure (plain classes)")
        }
        return result
    }
}
