import Foundation
import ModelKit
import Testing
import ModelKitTestSupport

/// A model for index tests: ages collide, names share prefixes (some with combining marks).
final class Member: ModelObject<Member.Properties> {
    struct Properties: ModelProperties, Equatable {
        var name = ""
        var age = 0
        var score = 0.0
        var active = false
        var home = Home()
    }
}

private let memberNames = ["ana", "anabel", "Ana", "ánx", "a\u{301}ny", "bob", "bo", "", "zoë", "zoe\u{308}", "😀x", "b"]

private func makeMembers(_ count: Int, in context: ModelContext, random: inout SplitMix64) -> [Member] {
    (0..<count).map { _ in
        let member = Member.instance(in: context)
        randomize(member, &random)
        return member
    }
}

private func randomize(_ member: Member, _ random: inout SplitMix64) {
    member.name = memberNames[Int(random.next() % UInt64(memberNames.count))]
    member.age = Int(random.next() % 40)
    member.score = random.next() % 17 == 0 ? .nan : Double(Int(random.next() % 200)) / 4 - 10
    member.active = random.next() % 2 == 0
    member.home = Home(city: ["Paris", "Lyon", "Oslo"][Int(random.next() % 3)], floor: Int(random.next() % 5))
}

/// Random predicates over Member, as typed, keyed and text forms that must agree.
private func randomPredicates(_ random: inout SplitMix64) -> (ModelPredicate<Member>, ModelPredicate<Member>, String) {
    let a = Int(random.next() % 40)
    let b = Int(random.next() % 40)
    let name = memberNames[Int(random.next() % UInt64(memberNames.count))]
    let prefix = String(name.unicodeScalars.prefix(Int(random.next() % 3)).map(Character.init))
    let score = Double(Int(random.next() % 200)) / 4 - 10
    switch random.next() % 8 {
    case 0: return (.where(\.age, .equals(a)), .where("age", .equals(a)), "age = \(a)")
    case 1: return (.where(\.age, .between(a, b)), .where("age", .between(a, b)), "age BETWEEN {\(a), \(b)}")
    case 2: return (.where(\.age, .in([a, b, 99])), .where("age", .in([a, b, 99])), "age IN {\(a), \(b), 99}")
    case 3: return (.where(\.name, .beginsWith(prefix)), .where("name", .beginsWith(prefix)), "name BEGINSWITH '\(prefix)'")
    case 4: return (.where(\.score, .greaterThan(score)), .where("score", .greaterThan(score)), "score > \(score)")
    case 5: return (.where(\.score, .lessThanOrEqual(score)), .where("score", .lessThanOrEqual(score)), "score <= \(score)")
    case 6:
        return (
            .where(\.age, .lessThan(a)) && (.where(\.name, .equals(name)) || .where(\.home.city, .equals("Oslo"))),
            .where("age", .lessThan(a)) && (.where("name", .equals(name)) || .where("home.city", .equals("Oslo"))),
            "age < \(a) AND (name = '\(name)' OR home.city = 'Oslo')"
        )
    default: return (.where(\.active, .equals(true)), .where("active", .equals(true)), "active = TRUE")
    }
}

@Suite("Indexes")
@MainActor struct IndexTests {
    @Test("Every indexed condition gives the results of a scan, through inserts, writes and removals")
    func randomizedAgainstScan() throws {
        var random = SplitMix64(seed: 7)
        let indexed = ModelContext()
        indexed.addIndex(on: \.age, of: Member.self)
        indexed.addIndex(on: \.name, of: Member.self)
        indexed.addIndex(on: \.score, of: Member.self)
        indexed.addIndex(on: \.home.city, of: Member.self, kind: .hash)
        indexed.addHashIndex(on: \.active, of: Member.self)
        #expect(indexed.indexCount(of: Member.self) == 5)
        var members = makeMembers(200, in: indexed, random: &random)
        for round in 0..<300 {
            // Mutate: writes (quiet after the first), inserts, removals.
            for _ in 0..<Int(random.next() % 6) {
                let member = members[Int(random.next() % UInt64(members.count))]
                switch random.next() % 6 {
                case 0: indexed.remove(member)
                case 1: indexed.insert(member)
                case 2: members += makeMembers(1, in: indexed, random: &random)
                default: randomize(member, &random)
                }
            }
            let live = Set(indexed.models(of: Member.self).map(ObjectIdentifier.init))
            let (typed, keyed, text) = randomPredicates(&random)
            // Reference: evaluate the predicate on every live model without indexes.
            let reference = Set(
                try indexed.models(of: Member.self).filter { member in
                    try Self.matchesWithoutIndexes(member, typed)
                }.map(ObjectIdentifier.init))
            #expect(reference.isSubset(of: live))
            let viaTyped = Set(try Member.query(in: indexed).filter(typed).results().map(ObjectIdentifier.init))
            let viaKeyed = Set(try Member.query(in: indexed).filter(keyed).results().map(ObjectIdentifier.init))
            let viaText = Set(try Member.query(in: indexed).filter(text).results().map(ObjectIdentifier.init))
            #expect(viaTyped == reference, "round \(round): \(text)")
            #expect(viaKeyed == reference, "round \(round): \(text)")
            #expect(viaText == reference, "round \(round): \(text)")
            #expect(try Member.query(in: indexed).filter(typed).count() == reference.count)
            if viaTyped != reference || viaKeyed != reference { return }
        }
    }

    /// Whether `member` satisfies `predicate`, judged in a context of its own without indexes.
    static func matchesWithoutIndexes(_ member: Member, _ predicate: ModelPredicate<Member>) throws -> Bool {
        let alone = ModelContext()
        let copy = Member.instance(in: alone)
        copy.name = member.name
        copy.age = member.age
        copy.score = member.score
        copy.active = member.active
        copy.home = member.home
        return try Member.query(in: alone).filter(predicate).count() == 1
    }

    @Test("A query uses the index: it sees only candidates, and still the exact results")
    func usesIndex() throws {
        let context = ModelContext()
        for age in 0..<1000 { Member.instance(in: context).age = age }
        context.addIndex(on: \.age, of: Member.self)
        #expect(try Member.query(in: context).where(\.age, .between(10, 19)).count() == 10)
        #expect(try Member.query(in: context).where("age", .greaterThanOrEqual(990)).count() == 10)
        #expect(try Member.query(in: context).filter("age < 5 OR age = 500").count() == 6)
        #expect(try Member.query(in: context).where(\.age, .in([3, 3, 7, 5000])).count() == 2)
        // Writes after the index was built are seen by the next query.
        let member = try #require(try Member.query(in: context).where(\.age, .equals(42)).first())
        member.age = 4242
        #expect(try Member.query(in: context).where(\.age, .equals(42)).count() == 0)
        #expect(try Member.query(in: context).where(\.age, .equals(4242)).first() === member)
        member.age = 4243  // a quiet write, after the model was re-read
        #expect(try Member.query(in: context).where(\.age, .equals(4243)).first() === member)
        member.removeFromContext()
        #expect(try Member.query(in: context).where(\.age, .equals(4243)).count() == 0)
        context.clear()
        #expect(try Member.query(in: context).where(\.age, .greaterThan(-1)).count() == 0)
        Member.instance(in: context).age = 1
        #expect(try Member.query(in: context).where(\.age, .equals(1)).count() == 1)
    }

    @Test("Loading updates indexed values")
    func loadUpdatesIndex() throws {
        let context = ModelContext()
        let member = Member.instance(in: context)
        member.age = 1
        let json = try member.jsonData()
        context.addIndex(on: \.age, of: Member.self)
        member.age = 2
        #expect(try Member.query(in: context).where(\.age, .equals(2)).count() == 1)
        _ = try Member.instance(fromJSON: json, in: context)  // back to 1, in place
        #expect(member.age == 1)
        #expect(try Member.query(in: context).where(\.age, .equals(1)).first() === member)
        #expect(try Member.query(in: context).where(\.age, .equals(2)).count() == 0)
    }

    @Test("Revert and batches keep indexes right")
    func revertAndBatches() throws {
        let context = ModelContext()
        let member = Member.instance(in: context)
        member.age = 5
        member.resetChanges()
        context.addIndex(on: \.age, of: Member.self)
        member.batchChanges {
            member.age = 6
            member.age = 7
        }
        #expect(try Member.query(in: context).where(\.age, .equals(7)).count() == 1)
        member.revertChanges()
        #expect(member.age == 5)
        #expect(try Member.query(in: context).where(\.age, .equals(5)).count() == 1)
        #expect(try Member.query(in: context).where(\.age, .equals(7)).count() == 0)
    }

    @Test("String keys find the index of a writable key path by probing its encoding")
    func keyProbe() throws {
        let context = ModelContext()
        context.addIndex(on: \.home.city, of: Member.self, kind: .hash)
        Member.instance(in: context).home = Home(city: "Oslo", floor: 1)
        #expect(try Member.query(in: context).filter("home.city = 'Oslo'").count() == 1)
        context.removeIndexes(of: Member.self)
        #expect(context.indexCount(of: Member.self) == 0)
        #expect(try Member.query(in: context).filter("home.city = 'Oslo'").count() == 1)
    }
}

@Suite("Loading and the rest of the context")
@MainActor struct LoadingIntegrationTests {
    @Test("Models loaded from a file are listed by type, indexed, queried and counted as inserted")
    func loadedModelsJoinEverything() throws {
        let source = ModelContext()
        for age in 0..<50 { Member.instance(in: source).age = age }
        let data = try source.data(format: .json)
        let target = ModelContext()
        target.addIndex(on: \.age, of: Member.self)
        let events = Box(0)
        let token = target.observeChanges { event in if event.kind == .inserted { events.value += 1 } }
        try target.load(data)
        #expect(target.models(of: Member.self).count == 50)
        #expect(try Member.query(in: target).where(\.age, .between(10, 19)).count() == 10)
        #expect(try Member.query(in: target).filter("age >= 45").count() == 5)
        #expect(target.changes.inserted.count == 50)
        #expect(events.value == 50)
        // Loading again updates in place: the index follows the new values.
        for member in source.models(of: Member.self) { member.age += 100 }
        try target.load(try source.data(format: .binaryPropertyList))
        #expect(target.models(of: Member.self).count == 50)
        #expect(try Member.query(in: target).where(\.age, .lessThan(100)).count() == 0)
        #expect(try Member.query(in: target).where(\.age, .between(110, 119)).count() == 10)
        token.cancel()
    }
}
