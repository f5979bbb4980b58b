import Foundation
import ModelKit

// String-key and query-language queries on the kinds of property that once fell off the fast
// path (issue 18): a model with an `Int64?` property (which made string keys on *every* property
// of the type encode each model), `Bool`, `GeoPoint`, a key through a reference, and a
// case-insensitive string-key sort. Each is timed by string key (the row ModelKit's ratios are
// against), in the query language and by key path, against a hand-written closure over an array
// of the same models. Every filter selects 1% of the members.

/// A member for the query-kind benchmarks.
final class QueryMember: ModelObject<QueryMember.Properties> {
    struct Properties: ModelProperties {
        var name = ""
        var age = 0
        /// Nil for every other member.
        var rank: Int64?
        var isActive = false
        var location = GeoPoint(latitude: 0, longitude: 0)
        var team = ModelRef<QueryTeam>()
    }
}

/// A team of the query-kind benchmarks, referenced by members.
final class QueryTeam: ModelObject<QueryTeam.Properties> {
    struct Properties: ModelProperties {
        var size = 0
    }
}

/// n members and 100 teams in one context.
private struct MemberFixture {
    let context: ModelContext
    let members: [QueryMember]
    /// Member `i % 100 == 42` are active; 1% of members lie within 50 km of this point.
    static let center = GeoPoint(latitude: 48.8566, longitude: 2.3522)

    /// Member `i` has age `i * 7919 % 10_000`, rank `i` when `i` is even, belongs to team
    /// `i % 100` (whose size is its number), and stands at the centre when `i % 100 == 7`, far from
    /// it otherwise. Names mix case so that a case-insensitive order differs from the plain one.
    init(n: Int) {
        let context = ModelContext()
        self.context = context
        let teams = (0..<100).map { size in
            let team = QueryTeam.instance(in: context)
            team.size = size
            return team
        }
        var members: [QueryMember] = []
        members.reserveCapacity(n)
        for i in 0..<n {
            let member = QueryMember.instance(in: context)
            member.age = i &* 7919 % 10_000
            member.rank = i.isMultiple(of: 2) ? Int64(i) : nil
            member.name = (i.isMultiple(of: 3) ? "Member " : "member ") + String(i &* 7919 % n, radix: 36)
            member.isActive = i % 100 == 42
            member.location =
                i % 100 == 7 ? Self.center : GeoPoint(latitude: -33 - Double(i % 10), longitude: 151 + Double(i % 7))
            member.team = teams[i % 100]
            members.append(member)
        }
        self.members = members
    }
}

extension Benchmarks {
    static let queryBesideInt64 = Benchmark(name: "query-int-beside-int64") { data, session in
        let fixture = MemberFixture(n: data.n)
        return try memberQueryResult(
            fixture, session: &session,
            keyed: { $0.where("age", .between(100, 199)) },
            text: "age BETWEEN {100, 199}",
            typed: { $0.where(\.age, .between(100, 199)) },
            closure: { $0.age >= 100 && $0.age <= 199 })
    }

    static let queryInt64 = Benchmark(name: "query-int64") { data, session in
        let fixture = MemberFixture(n: data.n)
        let upper = Int64(data.n / 50)
        return try memberQueryResult(
            fixture, session: &session,
            keyed: { $0.where("rank", .lessThan(upper)) },
            text: "rank < \(upper)",
            typed: { $0.where(\.rank, .lessThan(upper)) },
            closure: { $0.rank.map { $0 < upper } ?? false })
    }

    static let queryBool = Benchmark(name: "query-bool") { data, session in
        let fixture = MemberFixture(n: data.n)
        return try memberQueryResult(
            fixture, session: &session,
            keyed: { $0.where("isActive", .equals(true)) },
            text: "isActive == TRUE",
            typed: { $0.where(\.isActive, .equals(true)) },
            closure: { $0.isActive })
    }

    static let queryGeoPoint = Benchmark(name: "query-geopoint") { data, session in
        let fixture = MemberFixture(n: data.n)
        let center = MemberFixture.center
        return try memberQueryResult(
            fixture, session: &session,
            keyed: { $0.where("location", .within(kilometers: 50, of: center)) },
            text: "location WITHIN 50 KM OF {\(center.latitude), \(center.longitude)}",
            typed: { $0.where(\.location, .within(kilometers: 50, of: center)) },
            closure: { $0.location.distance(to: center) <= 50 })
    }

    static let queryThroughReference = Benchmark(name: "query-through-reference") { data, session in
        let fixture = MemberFixture(n: data.n)
        return try memberQueryResult(
            fixture, session: &session,
            keyed: { $0.where("team.size", .equals(42)) },
            text: "team.size == 42",
            typed: { $0.filter(.where(\.team, .where(\.size, .equals(42)))) },
            closure: { $0.team?.size == 42 })
    }

    static let querySortCaseInsensitive = Benchmark(name: "query-sort-caseinsensitive") { data, session in
        let fixture = MemberFixture(n: data.n)
        let context = fixture.context
        let members = fixture.members
        let n = members.count
        // The peer a user would write: lower-cased names compared as Swift strings.
        let expected = members.sorted { $0.name.lowercased() < $1.name.lowercased() }.map(\.name)
        let verify = { (sorted: [QueryMember]) throws -> Int in
            // Names that differ only in case may tie, in any order: compare lower-cased.
            guard sorted.count == n, zip(sorted, expected).allSatisfy({ $0.name.lowercased() == $1.lowercased() }) else {
                throw VerificationError(description: "case-insensitive order differs from the lower-cased peer")
            }
            return n
        }
        let keyed = Subject(
            "ModelKit (string key)",
            body: { try QueryMember.query(in: context).sorted(by: "name", options: .caseInsensitive).results() },
            verify: verify)
        let closure = Subject(
            "sorted closure, lowercased()", body: { members.sorted { $0.name.lowercased() < $1.name.lowercased() } },
            verify: verify)
        let plain = Subject(
            "ModelKit (string key, no options)", body: { try QueryMember.query(in: context).sorted(by: "name").results() },
            verify: { try expect($0.count, n, "sorted members") })
        let typed = Subject(
            "ModelKit (key path, no options)", body: { try QueryMember.query(in: context).sorted(by: \.name).results() },
            verify: { try expect($0.count, n, "sorted members") })
        return try BenchmarkResult(
            timing: [keyed, closure], extras: [plain, typed], notes: ["\(n) members sorted by name"],
            session: &session)
    }

    /// Times one condition by string key, in the query language and by key path on `fixture`,
    /// against a closure, after checking that all forms agree.
    private static func memberQueryResult(
        _ fixture: MemberFixture, session: inout Session,
        keyed: @escaping (Query<QueryMember>) -> Query<QueryMember>,
        text: String,
        typed: @escaping (Query<QueryMember>) -> Query<QueryMember>,
        closure: @escaping (QueryMember) -> Bool
    ) throws -> BenchmarkResult {
        let context = fixture.context
        let members = fixture.members
        let expected = members.filter(closure).count
        let key = Subject(
            "ModelKit (string key)", body: { try keyed(QueryMember.query(in: context)).results() },
            verify: { try expect($0.count, expected, "matches") })
        let language = Subject(
            "ModelKit (query language)", body: { try QueryMember.query(in: context).filter(text).results() },
            verify: { try expect($0.count, expected, "matches") })
        let path = Subject(
            "ModelKit (key path)", body: { try typed(QueryMember.query(in: context)).results() },
            verify: { try expect($0.count, expected, "matches") })
        let filter = Subject(
            "filter closure", body: { members.filter(closure) }, verify: { try expect($0.count, expected, "matches") })
        return try BenchmarkResult(
            timing: [key, filter], extras: [language, path],
            notes: ["\(expected) of \(members.count) members match \(text)"], session: &session)
    }
}
