import Foundation
import ModelKit
import Testing
import ModelKitTestSupport

/// A model with a property of every kind the query engine compares.
final class Person: ModelObject<Person.Properties> {
    struct Properties: ModelProperties, Equatable {
        var name = ""
        var age = 0
        var score = 0.0
        var active = false
        var nickname: String?
        var birthday: Date?
        var tags: [String] = []
        var location = GeoPoint(latitude: 0, longitude: 0)
        var home = Home()
        var badge: UUID?
        var website: URL?
        var friend = ModelRef<Person>()
    }
}

struct Home: Codable, Equatable {
    var city = ""
    var floor = 0
}

/// Six people with known values, in a fresh context.
@MainActor private func people(_ body: ([Person]) throws -> Void) throws {
    try inFreshContext { (_) throws in
        let rows: [(String, Int, Double, Bool, String?, [String], String, Double, Double)] = [
            ("Jon", 39, 7.5, true, "jonny", ["swift", "ios"], "Paris", 48.8566, 2.3522),
            ("José", 24, 9.0, false, nil, ["swift"], "Lyon", 45.7640, 4.8357),
            ("joanna", 35, -1.25, true, "jo", [], "Berlin", 52.5200, 13.4050),
            ("Émile", 61, 1e300, false, nil, ["rust", "ios"], "Paris", 48.8600, 2.3400),
            ("Zoë", 17, Double.leastNonzeroMagnitude, true, "z", ["kotlin"], "Zürich", 47.3769, 8.5417),
            ("bob", 35, 3.0, false, nil, ["swift", "rust"], "", 0, 0),
        ]
        var models: [Person] = []
        for (index, row) in rows.enumerated() {
            let person = Person.instance()
            person.name = row.0
            person.age = row.1
            person.score = row.2
            person.active = row.3
            person.nickname = row.4
            person.tags = row.5
            person.home = Home(city: row.6, floor: index)
            person.location = GeoPoint(latitude: row.7, longitude: row.8)
            person.birthday = index.isMultiple(of: 2) ? Date(timeIntervalSince1970: Double(index) * 1e8) : nil
            models.append(person)
        }
        models[0].friend = models[3]  // Jon → Émile (61)
        models[1].friend = models[2]  // José → joanna (35)
        models[4].friend = models[0]  // Zoë → Jon (39)
        try body(models)
    }
}

private func names(_ models: [Person]) -> Set<String> { Set(models.map(\.name)) }

@Suite("Query conditions")
@MainActor struct QueryConditionTests {
    @Test("Every comparison condition, by string key and by key path, selects the same people")
    func comparisons() throws {
        try people { (_) throws in
            let cases: [(QueryCondition, Condition<Int>, Set<String>)] = [
                (.equals(35), .equals(35), ["joanna", "bob"]),
                (.notEquals(35), .notEquals(35), ["Jon", "José", "Émile", "Zoë"]),
                (.greaterThan(35), .greaterThan(35), ["Jon", "Émile"]),
                (.greaterThanOrEqual(35), .greaterThanOrEqual(35), ["Jon", "Émile", "joanna", "bob"]),
                (.lessThan(24), .lessThan(24), ["Zoë"]),
                (.lessThanOrEqual(24), .lessThanOrEqual(24), ["Zoë", "José"]),
                (.in([17, 61, 99]), .in([17, 61, 99]), ["Zoë", "Émile"]),
                (.notIn([17, 61]), .notIn([17, 61]), ["Jon", "José", "joanna", "bob"]),
                (.between(24, 35), .between(24, 35), ["José", "joanna", "bob"]),
                (.between(35, 24), .between(35, 24), []),
            ]
            for (keyed, typed, expected) in cases {
                #expect(try names(Person.query().where("age", keyed).results()) == expected, "\(keyed)")
                #expect(try names(Person.query().where(\.age, typed).results()) == expected, "\(keyed)")
            }
        }
    }

    @Test("between includes both bounds, also across Int, Double and Decimal")
    func betweenBounds() throws {
        try people { (_) throws in
            #expect(try names(Person.query().where("age", .between(35.0, 39)).results()) == ["Jon", "joanna", "bob"])
            #expect(
                try names(Person.query().where("age", .between(Decimal(35), Decimal(string: "39.5")!)).results()) == [
                    "Jon", "joanna", "bob",
                ])
            #expect(try names(Person.query().where("score", .between(3, 9)).results()) == ["Jon", "José", "bob"])
            #expect(try names(Person.query().where("score", .greaterThan(1e299)).results()) == ["Émile"])
            #expect(try names(Person.query().where("score", .between(0, 1e-300)).results()) == ["Zoë"])
            #expect(try names(Person.query().where("age", .greaterThan(UInt64.max)).results()) == [])
            #expect(try names(Person.query().where("age", .greaterThan(Int64.min)).results()).count == 6)
        }
    }

    @Test("Two conditions on one key both apply (the seed let the second overwrite the first)")
    func twoConditionsOnOneKey() throws {
        try people { (_) throws in
            let query = Person.query().where("age", .greaterThanOrEqual(24)).where("age", .lessThan(39))
            #expect(try names(query.results()) == ["José", "joanna", "bob"])
        }
    }

    @Test("exists and notExists test optionals, by key and by key path")
    func existence() throws {
        try people { (_) throws in
            #expect(try names(Person.query().where("nickname", .exists).results()) == ["Jon", "joanna", "Zoë"])
            #expect(try names(Person.query().where("nickname", .notExists).results()) == ["José", "Émile", "bob"])
            #expect(try names(Person.query().where(\.nickname, .exists()).results()) == ["Jon", "joanna", "Zoë"])
            #expect(try names(Person.query().where(\.nickname, .notExists()).results()) == ["José", "Émile", "bob"])
            #expect(try names(Person.query().where("friend", .exists).results()) == ["Jon", "José", "Zoë"])
            #expect(try names(Person.query().where("nickname", .equals(String?.none)).results()) == ["José", "Émile", "bob"])
        }
    }

    @Test("String conditions honour case and diacritic options")
    func strings() throws {
        try people { (_) throws in
            #expect(try names(Person.query().where("name", .beginsWith("jo")).results()) == ["joanna"])
            #expect(
                try names(Person.query().where("name", .beginsWith("jo", options: .caseInsensitive)).results()) == [
                    "Jon", "José", "joanna",
                ])
            #expect(try names(Person.query().where("name", .endsWith("e")).results()) == ["Émile"])
            #expect(
                try names(Person.query().where("name", .endsWith("e", options: .diacriticInsensitive)).results()) == [
                    "José", "Émile", "Zoë",
                ])
            #expect(
                try names(
                    Person.query().where("name", .equals("emile", options: [.caseInsensitive, .diacriticInsensitive])).results())
                    == ["Émile"])
            #expect(
                try names(Person.query().where("name", .contains("O", options: .caseInsensitive)).results()) == [
                    "Jon", "José", "joanna", "Zoë", "bob",
                ])
            #expect(
                try names(Person.query().where(\.name, .beginsWith("JO", options: .caseInsensitive)).results()) == [
                    "Jon", "José", "joanna",
                ])
            #expect(
                try names(
                    Person.query().where(\.name, .endsWith("E", options: [.caseInsensitive, .diacriticInsensitive])).results())
                    == ["José", "Émile", "Zoë"])
            #expect(
                try names(Person.query().where("name", .in(["JON", "bob"], options: .caseInsensitive)).results()) == [
                    "Jon", "bob",
                ])
        }
    }

    @Test("LIKE matches whole strings with * and ?, which contains does not interpret")
    func like() throws {
        try people { (_) throws in
            #expect(try names(Person.query().where("name", .like("jo*")).results()) == ["joanna"])
            #expect(try names(Person.query().where("name", .like("J??")).results()) == ["Jon"])
            #expect(
                try names(Person.query().where("name", .like("*o*", options: .caseInsensitive)).results()) == [
                    "Jon", "José", "joanna", "Zoë", "bob",
                ])
            #expect(try names(Person.query().where("name", .like("jo")).results()) == [])
            #expect(try names(Person.query().where("name", .contains("jo*")).results()) == [])
            #expect(try names(Person.query().where(\.name, .like("?o?")).results()) == ["Jon", "Zoë", "bob"])
            #expect(try names(Person.query().where(\.name, .like("Zo\\?")).results()) == [])
        }
    }

    @Test("Array conditions: contains, containsAll, containsAny")
    func arrays() throws {
        try people { (_) throws in
            #expect(try names(Person.query().where("tags", .contains("swift")).results()) == ["Jon", "José", "bob"])
            #expect(try names(Person.query().where("tags", .containsAll(["swift", "rust"])).results()) == ["bob"])
            #expect(
                try names(Person.query().where("tags", .containsAny(["kotlin", "ios"])).results()) == ["Jon", "Émile", "Zoë"])
            #expect(try names(Person.query().where("tags", .containsAll([String]())).results()).count == 6)
            #expect(try names(Person.query().where(\.tags, .contains("swift")).results()) == ["Jon", "José", "bob"])
            #expect(try names(Person.query().where(\.tags, .containsAll(["swift", "rust"])).results()) == ["bob"])
            #expect(
                try names(Person.query().where(\.tags, .containsAny(["kotlin", "ios"])).results()) == ["Jon", "Émile", "Zoë"])
        }
    }

    @Test("Within a distance of a GeoPoint, and nearest first")
    func geo() throws {
        try people { (_) throws in
            let paris = GeoPoint(latitude: 48.8566, longitude: 2.3522)
            #expect(try names(Person.query().where("location", .within(kilometers: 5, of: paris)).results()) == ["Jon", "Émile"])
            #expect(
                try names(Person.query().where(\.location, .within(kilometers: 450, of: paris)).results()) == [
                    "Jon", "Émile", "José",
                ])
            #expect(
                try names(Person.query().where("location", .within(kilometers: 700, of: paris)).results()) == [
                    "Jon", "Émile", "José", "Zoë",
                ])
            let nearest = try Person.query().where("location", .within(kilometers: 1000, of: paris))
                .sorted(byDistanceOf: "location", from: paris).results().map(\.name)
            #expect(nearest == ["Jon", "Émile", "José", "Zoë", "joanna"])
            let typed = try Person.query().sorted(byDistanceOf: \.location, from: paris).limit(3).results().map(\.name)
            #expect(typed == ["Jon", "Émile", "José"])
            #expect(throws: QueryError.self) {
                try Person.query().where("location", .within(kilometers: -1, of: paris)).results()
            }
        }
    }

    @Test("Conditions reach into nested structs and through references")
    func paths() throws {
        try people { (_) throws in
            #expect(try names(Person.query().where("home.city", .equals("Paris")).results()) == ["Jon", "Émile"])
            #expect(try names(Person.query().where(\.home.city, .equals("Paris")).results()) == ["Jon", "Émile"])
            #expect(try names(Person.query().where("friend.age", .greaterThan(36)).results()) == ["Jon", "Zoë"])
            #expect(try names(Person.query().where("friend.friend.name", .equals("Émile")).results()) == ["Zoë"])
            #expect(try names(Person.query().where("friend.home.city", .beginsWith("Ber")).results()) == ["José"])
        }
    }

    @Test("Dates, booleans, UUIDs and URLs compare as values")
    func otherKinds() throws {
        try people { (models) throws in
            let badge = UUID()
            models[2].badge = badge
            models[3].website = URL(string: "https://example.com/é")
            #expect(try names(Person.query().where("active", .equals(true)).results()) == ["Jon", "joanna", "Zoë"])
            #expect(try names(Person.query().where(\.active, .equals(false)).results()) == ["José", "Émile", "bob"])
            #expect(try names(Person.query().where("badge", .equals(badge)).results()) == ["joanna"])
            #expect(
                try names(Person.query().where("website", .equals(URL(string: "https://example.com/é")!)).results()) == ["Émile"])
            let cutoff = Date(timeIntervalSince1970: 1.5e8)
            #expect(try names(Person.query().where("birthday", .greaterThan(cutoff)).results()) == ["joanna", "Zoë"])
            #expect(try names(Person.query().where(\.birthday, .greaterThan(cutoff)).results()) == ["joanna", "Zoë"])
        }
    }
}

@Suite("Compound queries, order and windows")
@MainActor struct QueryCompoundTests {
    @Test("AND, OR, NOT and nested groups")
    func compound() throws {
        try people { (_) throws in
            let either: ModelPredicate<Person> = .where("age", .lessThan(20)) || .where("age", .greaterThan(60))
            #expect(try names(Person.query().filter(either).results()) == ["Zoë", "Émile"])
            #expect(try names(Person.query().filter(!either).results()) == ["Jon", "José", "joanna", "bob"])
            let nested: ModelPredicate<Person> =
                .where(\.active, .equals(true)) && (.where("tags", .contains("ios")) || !.where(\.age, .greaterThan(20)))
            #expect(try names(Person.query().filter(nested).results()) == ["Jon", "Zoë"])
            #expect(try names(Person.query().where(\.age, .lessThan(20) || .greaterThan(60)).results()) == ["Zoë", "Émile"])
            #expect(try Person.query().filter(.all).count() == 6)
        }
    }

    @Test("Sorting by several keys, ascending and descending, with nil first")
    func sorting() throws {
        try people { (_) throws in
            let byAge = try Person.query().sorted(by: "age", ascending: false).sorted(by: "name").results().map(\.name)
            #expect(byAge == ["Émile", "Jon", "bob", "joanna", "José", "Zoë"])
            let typed = try Person.query().sorted(by: \.age, ascending: false).sorted(by: \.name).results().map(\.name)
            #expect(typed == byAge)
            let nicknames = try Person.query().sorted(by: "nickname").sorted(by: "name").results().map(\.name)
            #expect(nicknames == ["José", "bob", "Émile", "joanna", "Jon", "Zoë"])  // nil first; then by name, "J" < "b" < "É"
            let typedNicknames = try Person.query().sorted(by: \.nickname).sorted(by: \.name).results().map(\.name)
            #expect(typedNicknames == nicknames)
            let descending = try Person.query().sorted(by: "nickname", ascending: false).sorted(by: "name").results().map(\.name)
            #expect(descending == ["Zoë", "Jon", "joanna", "José", "bob", "Émile"])
            let folded = try Person.query().sorted(by: "name", options: [.caseInsensitive, .diacriticInsensitive]).results().map(
                \.name)
            #expect(folded == ["bob", "Émile", "joanna", "Jon", "José", "Zoë"])
        }
    }

    @Test("limit, offset, count, first and a page with the total")
    func windows() throws {
        try people { (_) throws in
            let query = Person.query().where(\.age, .greaterThanOrEqual(24)).sorted(by: \.age)
            #expect(try query.count() == 5)
            #expect(try query.limit(2).results().map(\.name) == ["José", "joanna"])  // equal ages: creation order
            #expect(try query.offset(1).limit(2).results().map(\.name) == ["joanna", "bob"])
            #expect(try query.offset(10).results().isEmpty)
            #expect(try query.limit(0).results().isEmpty)
            #expect(try query.first()?.name == "José")
            #expect(try query.where(\.age, .greaterThan(100)).first() == nil)
            let page = try query.offset(3).limit(10).page()
            #expect(page.models.map(\.name) == ["Jon", "Émile"])
            #expect(page.totalCount == 5)
            // Pages without an order go by model id, so consecutive pages never overlap.
            let all = try Person.query().limit(6).results()
            let pages = try (0..<3).flatMap { try Person.query().offset($0 * 2).limit(2).results() }
            #expect(pages.map(\.modelId) == all.map(\.modelId))
        }
    }

    @Test("Empty contexts give empty results, and models without an objectId are found")
    func emptyAndUnidentified() throws {
        try inFreshContext { (_) throws in
            #expect(try Person.query().results().isEmpty)
            #expect(try Person.query().where("age", .greaterThan(3)).count() == 0)
            let person = Person.instance()
            person.age = 4
            #expect(try Person.query().where("age", .greaterThan(3)).results().first === person)
        }
    }

    @Test("A query in a given context sees only that context's models")
    func contexts() throws {
        let first = ModelContext()
        let second = ModelContext()
        Person.instance(in: first).age = 1
        Person.instance(in: second).age = 2
        #expect(try Person.query(in: first).results().map(\.age) == [1])
        #expect(try Person.query(in: second).where("age", .equals(2)).count() == 1)
    }
}

@Suite("Query language")
@MainActor struct QueryLanguageTests {
    @Test("The issue's example parses and selects like the equivalent typed predicate")
    func example() throws {
        try people { (_) throws in
            let text = "age BETWEEN {24, 35} AND (name BEGINSWITH[c] 'jo' OR tags CONTAINS 'swift')"
            let parsed = try Person.query().filter(text).results()
            let typed: ModelPredicate<Person> =
                .where(\.age, .between(24, 35))
                && (.where(\.name, .beginsWith("jo", options: .caseInsensitive)) || .where(\.tags, .contains("swift")))
            #expect(names(parsed) == names(try Person.query().filter(typed).results()))
            #expect(names(parsed) == ["José", "joanna", "bob"])
        }
    }

    @Test(
        "Every operator of the language",
        arguments: [
            ("age = 35", ["joanna", "bob"]),
            ("age == 35 && active == true", ["joanna"]),
            ("age != 35 AND age <> 39 AND age < 60", ["José", "Zoë"]),
            ("age >= 61 || age <= 17", ["Émile", "Zoë"]),
            ("age > 35", ["Jon", "Émile"]),
            ("NOT age IN {35, 39}", ["José", "Émile", "Zoë"]),
            ("age NOT IN {35, 39, 24, 61}", ["Zoë"]),
            ("nickname EXISTS", ["Jon", "joanna", "Zoë"]),
            ("nickname NOT EXISTS", ["José", "Émile", "bob"]),
            ("nickname = nil", ["José", "Émile", "bob"]),
            ("name ENDSWITH[d] 'e'", ["José", "Émile", "Zoë"]),
            ("name =[cd] 'EMILE'", ["Émile"]),
            ("name LIKE 'J*' OR name LIKE '?ob'", ["Jon", "José", "bob"]),
            ("name CONTAINS[c] \"O\"", ["Jon", "José", "joanna", "Zoë", "bob"]),
            ("tags CONTAINSALL {'swift', 'rust'}", ["bob"]),
            ("tags CONTAINSANY {'kotlin', 'ios'}", ["Jon", "Émile", "Zoë"]),
            ("location WITHIN 5 KM OF {48.8566, 2.3522}", ["Jon", "Émile"]),
            ("home.city = 'Paris' AND friend.age > 60", ["Jon"]),
            ("score > -2 AND score < 1e-300", ["joanna", "Zoë"]),
            ("birthday > DATE('1974-09-30T00:00:00Z')", ["joanna", "Zoë"]),
            ("!(active = false) AND NOT NOT (age < 30)", ["Zoë"]),
            ("TRUEPREDICATE", ["Jon", "José", "joanna", "Émile", "Zoë", "bob"]),
            ("name IN[c] {'JON', 'BOB'}", ["Jon", "bob"]),
        ])
    func operators(text: String, expected: [String]) throws {
        try people { (_) throws in
            #expect(try names(Person.query().filter(text).results()) == Set(expected), "\(text)")
        }
    }

    @Test(
        "Syntax errors report the column and what was expected",
        arguments: [
            ("age >", 6),
            ("age BETWEEN {1}", 5),
            ("(age > 3", 9),
            ("age > 3 AND", 12),
            ("name = 'open", 8),
            ("age ~ 3", 5),
            ("age IN {1, 2", 13),
            ("AND age > 3", 1),
            ("name BEGINSWITH[x] 'a'", 17),
            ("age > 3 age < 4", 9),
            ("birthday > DATE('yesterday')", 17),
            ("", 1),
        ])
    func syntaxErrors(text: String, column: Int) {
        do {
            _ = try ModelPredicate<Person>(text)
            Issue.record("\(text) parsed")
        } catch {
            #expect(error.code == .syntax)
            #expect(error.column == column, "\(text): \(error)")
            #expect(!error.expected.isEmpty)
        }
    }

    @Test("Strings keep unicode and escapes")
    func unicodeStrings() throws {
        try inFreshContext { (_) throws in
            let person = Person.instance()
            person.name = "O'Brien 😀 \u{202E}rtl"
            #expect(try Person.query().filter("name = 'O\\'Brien 😀 \u{202E}rtl'").count() == 1)
            #expect(try Person.query().filter("name CONTAINS \"😀\"").count() == 1)
        }
    }

    @Test("Deep nesting is refused rather than overflowing the stack")
    func deepNesting() {
        let text = String(repeating: "(", count: 10_000) + "age > 1" + String(repeating: ")", count: 10_000)
        #expect(throws: QueryError.self) { try ModelPredicate<Person>(text) }
        let nots = String(repeating: "NOT ", count: 100) + "age > 1"
        #expect(throws: Never.self) { try ModelPredicate<Person>(nots) }
    }
}

@Suite("Query errors")
@MainActor struct QueryErrorTests {
    @Test("An unknown key is a typed error, also in an empty context")
    func unknownKey() {
        inFreshContext { _ in
            for query in [
                Person.query().where("agee", .greaterThan(3)),
                Person.query().where("home.town", .equals("Paris")),
                Person.query().sorted(by: "rank"),
            ] {
                #expect {
                    try query.results()
                } throws: { error in
                    guard let error = error as? QueryError else { return false }
                    return error.code == .unknownKey && error.modelName == "Person" && error.expected.hasPrefix("one of")
                }
            }
        }
    }

    @Test("An unknown key behind a reference is reported when a model reaches it")
    func unknownKeyThroughReference() throws {
        try people { (_) throws in
            #expect(throws: QueryError.self) { try Person.query().where("friend.rank", .equals(1)).results() }
        }
    }

    @Test("Comparing incompatible kinds of values is a typed error, not an empty result")
    func incompatible() throws {
        try inFreshContext { (_) throws in
            for query in [
                Person.query().where("age", .greaterThan("thirty")),
                Person.query().where("name", .between(1, 2)),
                Person.query().where("age", .beginsWith("3")),
                Person.query().where("active", .lessThan(Date())),
                Person.query().where("tags", .containsAll([1, 2])).where("age", .equals("x")),
            ] {
                #expect {
                    try query.count()
                } throws: { error in
                    (error as? QueryError)?.code == .incompatibleTypes
                }
            }
        }
        try people { (_) throws in
            #expect(throws: QueryError.self) { try Person.query().where("nickname", .greaterThan(3)).results() }
            #expect(throws: QueryError.self) { try Person.query().filter("name > 3").results() }
        }
    }

    @Test("Errors describe themselves with where and what was expected")
    func descriptions() {
        do {
            _ = try ModelPredicate<Person>("age > ")
        } catch {
            #expect(error.description.contains("column 7"))
            #expect(error.description.contains("expected a value"))
        }
    }
}

@Suite("Query cross-checks")
@MainActor struct QueryRandomTests {
    @Test("Random queries by key, by key path and by text agree with a brute-force filter")
    func randomized() throws {
        var random = SplitMix64(seed: 42)
        try inFreshContext { (_) throws in
            let names = ["ana", "Ana", "bob", "Bøb", "carl", "", "zoë", "Zoe"]
            var models: [Person] = []
            for _ in 0..<300 {
                let person = Person.instance()
                person.age = Int(random.next() % 100)
                person.score = Double(Int(random.next() % 2000)) / 10 - 100
                person.name = names[Int(random.next() % UInt64(names.count))]
                person.nickname = random.next() % 3 == 0 ? nil : names[Int(random.next() % UInt64(names.count))]
                person.tags = (0..<Int(random.next() % 4)).map { _ in ["a", "b", "c", "d"][Int(random.next() % 4)] }
                models.append(person)
            }
            for _ in 0..<200 {
                let low = Int(random.next() % 100)
                let high = Int(random.next() % 100)
                let score = Double(Int(random.next() % 2000)) / 10 - 100
                let prefix = String(names[Int(random.next() % UInt64(names.count))].prefix(1))
                let tag = ["a", "b", "c", "d"][Int(random.next() % 4)]
                let expected = Set(
                    models.filter {
                        (low <= $0.age && $0.age <= high || $0.score > score)
                            && !($0.name.hasPrefix(prefix) && $0.tags.contains(tag)) && ($0.nickname != nil || $0.age != low)
                    }.map(\.modelId))
                let keyed: ModelPredicate<Person> =
                    (.where("age", .between(low, high)) || .where("score", .greaterThan(score)))
                    && !(.where("name", .beginsWith(prefix)) && .where("tags", .contains(tag)))
                    && (.where("nickname", .exists) || .where("age", .notEquals(low)))
                let typed: ModelPredicate<Person> =
                    (.where(\.age, .between(low, high)) || .where(\.score, .greaterThan(score)))
                    && !(.where(\.name, .beginsWith(prefix)) && .where(\.tags, .contains(tag)))
                    && (.where(\.nickname, .exists()) || .where(\.age, .notEquals(low)))
                let text =
                    "(age BETWEEN {\(low), \(high)} OR score > \(score)) AND NOT (name BEGINSWITH '\(prefix)' AND tags CONTAINS '\(tag)') AND (nickname EXISTS OR age != \(low))"
                #expect(try Set(Person.query().filter(keyed).results().map(\.modelId)) == expected)
                #expect(try Set(Person.query().filter(typed).results().map(\.modelId)) == expected)
                #expect(try Set(Person.query().filter(text).results().map(\.modelId)) == expected, "\(text)")
                #expect(try Person.query().filter(keyed).count() == expected.count)
            }
        }
    }
}

@Suite("Typed conditions through references")
@MainActor struct QueryReferenceTests {
    @Test("A typed predicate reaches the model a to-one reference leads to")
    func toOne() throws {
        try people { (_) throws in
            let typed = try Person.query().filter(.where(\.friend, .where(\.age, .greaterThan(36)))).results()
            let keyed = try Person.query().where("friend.age", .greaterThan(36)).results()
            #expect(Set(typed.map(\.name)) == ["Jon", "Zoë"])
            #expect(Set(typed.map(\.modelId)) == Set(keyed.map(\.modelId)))
            let nested = try Person.query()
                .filter(.where(\.friend, .where(\.friend, .where(\.name, .equals("Émile"))))).results()
            #expect(nested.map(\.name) == ["Zoë"])
            let mixed = try Person.query().filter(.where(\.friend, .where("home.city", .beginsWith("Ber")))).results()
            #expect(mixed.map(\.name) == ["José"])
            #expect(throws: QueryError.self) {
                try Person.query().filter(.where(\.friend, .where("rank", .equals(1)))).results()
            }
        }
    }

    @Test("A typed predicate matches when any model of a to-many reference satisfies it")
    func toMany() throws {
        try inFreshContext { (_) throws in
            let author = Author.instance()
            author.name = "Jon"
            let other = Author.instance()
            other.name = "Ann"
            for title in ["Swift", "Objective-C"] {
                let post = Post.instance()
                post.title = title
                author.posts.append(post)
            }
            let post = Post.instance()
            post.title = "Rust"
            other.posts.append(post)
            let found = try Author.query().filter(.where(\.posts, any: .where(\.title, .beginsWith("Obj")))).results()
            #expect(found.map(\.name) == ["Jon"])
            #expect(try Author.query().filter(.where(\.posts, any: .where(\.title, .equals("Go")))).count() == 0)
            post.removeFromContext()
            #expect(try Author.query().filter(.where(\.posts, any: .where(\.title, .equals("Rust")))).count() == 0)
        }
    }
}

@Suite("Hostile query text")
struct HostileQueryTextTests {
    /// The syntax error `text` gives, or `nil` if it parses.
    func syntaxError(_ text: String) -> QueryError? {
        do {
            _ = try ModelPredicate<Person>(text)
            return nil
        } catch {
            return error
        }
    }

    @Test("A megabyte of parentheses, negations or string is refused at the length limit, saying where")
    func tooLong() throws {
        let limit = ModelPredicate<Person>.maximumTextLength
        #expect(limit == 65_536)
        for text in [
            String(repeating: "(", count: 1 << 20), String(repeating: "NOT ", count: 1 << 18),
            "name = '" + String(repeating: "a", count: 1 << 20) + "'", String(repeating: "{", count: 1 << 20),
        ] {
            let error = try #require(syntaxError(text))
            #expect(error.code == .syntax)
            #expect(error.column == limit + 1)
            #expect(error.expected == "a query of at most \(limit) bytes (UTF-8)")
            #expect(error.found == "\(text.utf8.count) bytes")
        }
        // Columns count characters: the limit falls inside the 16,383rd four-byte character.
        let emoji = try #require(syntaxError("name = '" + String(repeating: "😀", count: 20_000) + "'"))
        #expect(emoji.column == 8 + 16_382 + 1)
        // Up to the limit, text is read.
        let longest = "name = '" + String(repeating: "a", count: limit - 9) + "'"
        #expect(longest.utf8.count == limit)
        #expect(syntaxError(longest) == nil)
    }

    @Test("Deep nesting is refused at the 257th level without reading the rest of the text")
    func refusedWhereTooDeep() throws {
        // A character the language doesn't use at the end: reading the whole text first reported it.
        for opener in ["(", "NOT ", "!"] {
            let text = String(repeating: opener, count: 15_000) + "age > 1 #"
            let error = try #require(syntaxError(text))
            #expect(error.expected == "at most 256 levels of nesting", "\(opener): \(error)")
            #expect(error.column == 256 * opener.count + 1)
        }
        let lists = try #require(syntaxError("age IN " + String(repeating: "{", count: 15_000) + " #"))
        #expect(lists.expected == "at most 256 levels of nesting")
        #expect(lists.column == 8 + 256)
        #expect(syntaxError(String(repeating: "(", count: 255) + "age > 1" + String(repeating: ")", count: 255)) == nil)
        #expect(syntaxError("age IN " + String(repeating: "{", count: 200) + "1" + String(repeating: "}", count: 200)) == nil)
    }
}
