import Foundation
import ModelKit
import Testing
import ModelKitTestSupport

// A scan compiles a predicate into one list of steps: integer ranges, string equality and array
// membership checked inline, other conditions as closures on the properties in place, and
// conditions on the model itself (computed properties, references, encoding) run with the
// properties closed. Random trees of all of them, over every property kind, by key path and by
// string key, must give the answer of a plain-Swift reference.

/// A model with a property of every kind a scan reads in place, one it can't (a computed
/// property) and a reference.
final class Specimen: ModelObject<Specimen.Properties> {
    struct Properties: ModelProperties {
        var name = ""
        var nickname: String?
        var age = 0
        var rank: Int?
        var weight: Int64 = 0
        var score = 0.0
        var active = false
        var tags: [String] = []
        var friend = ModelRef<Specimen>()
    }
}

extension Specimen.Properties {
    /// Not stored: a key path to it has no offset, so conditions on it take the model.
    var initial: String { String(name.prefix(1)) }
}

private let names = ["ana", "Ana", "bob", "Bøb", "carl", "", "zoë", "Zoe", "ab"]
private let words = ["a", "b", "c", "d"]

/// One condition, in the forms the test asks and the reference decides.
private struct Leaf {
    let typed: ModelPredicate<Specimen>
    let keyed: ModelPredicate<Specimen>
    let holds: (Specimen) -> Bool

    static func random(_ random: inout SplitMix64) -> Leaf {
        func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }
        let age = pick([0, 1, 17, 50, 99, 100, Int.max, Int.min])
        let other = Int(random.next() % 101)
        let name = pick(names)
        let list = (0..<Int(random.next() % 4)).map { _ in pick(names) }
        let tags = (0..<Int(random.next() % 3)).map { _ in pick(words) }
        switch random.next() % 22 {
        case 0: return Leaf(typed: .where(\.age, .equals(age)), keyed: .where("age", .equals(age))) { $0.age == age }
        case 1: return Leaf(typed: .where(\.age, .notEquals(age)), keyed: .where("age", .notEquals(age))) { $0.age != age }
        case 2: return Leaf(typed: .where(\.age, .greaterThan(age)), keyed: .where("age", .greaterThan(age))) { $0.age > age }
        case 3: return Leaf(typed: .where(\.age, .lessThan(age)), keyed: .where("age", .lessThan(age))) { $0.age < age }
        case 4:
            return Leaf(typed: .where(\.age, .between(other, age)), keyed: .where("age", .between(other, age))) {
                other <= $0.age && $0.age <= age
            }
        case 5:
            let ages = [other, age, 3]
            return Leaf(typed: .where(\.age, .notIn(ages)), keyed: .where("age", .notIn(ages))) { !ages.contains($0.age) }
        case 6:
            return Leaf(typed: .where(\.rank, .greaterThanOrEqual(other)), keyed: .where("rank", .greaterThanOrEqual(other))) {
                $0.rank.map { $0 >= other } ?? false
            }
        case 7:
            return Leaf(typed: .where(\.rank, .notEquals(other)), keyed: .where("rank", .notEquals(other))) { $0.rank != other }
        case 8:
            let weight = Int64(other)
            return Leaf(typed: .where(\.weight, .lessThanOrEqual(weight)), keyed: .where("weight", .lessThanOrEqual(weight))) {
                $0.weight <= weight
            }
        case 9:
            let score = Double(other) / 4 - 10
            return Leaf(typed: .where(\.score, .greaterThan(score)), keyed: .where("score", .greaterThan(score))) {
                $0.score > score
            }
        case 10:
            return Leaf(typed: .where(\.name, .equals(name)), keyed: .where("name", .equals(name))) { $0.name == name }
        case 11:
            return Leaf(typed: .where(\.name, .notEquals(name)), keyed: .where("name", .notEquals(name))) { $0.name != name }
        case 12:
            return Leaf(typed: .where(\.name, .in(list)), keyed: .where("name", .in(list))) { list.contains($0.name) }
        case 13:
            let prefix = String(name.prefix(2))
            return Leaf(typed: .where(\.name, .beginsWith(prefix)), keyed: .where("name", .beginsWith(prefix))) {
                $0.name.hasPrefix(prefix)
            }
        case 14:
            return Leaf(typed: .where(\.nickname, .equals(name)), keyed: .where("nickname", .equals(name))) {
                $0.nickname == name
            }
        case 15:
            return Leaf(typed: .where(\.nickname, .notIn(list)), keyed: .where("nickname", .notIn(list))) {
                $0.nickname.map { !list.contains($0) } ?? true
            }
        case 16:
            let tag = pick(words)
            return Leaf(typed: .where(\.tags, .contains(tag)), keyed: .where("tags", .contains(tag))) { $0.tags.contains(tag) }
        case 17:
            return Leaf(typed: .where(\.tags, .containsAll(tags)), keyed: .where("tags", .containsAll(tags))) { specimen in
                tags.allSatisfy { specimen.tags.contains($0) }
            }
        case 18:
            return Leaf(typed: .where(\.tags, .containsAny(tags)), keyed: .where("tags", .containsAny(tags))) { specimen in
                tags.contains { specimen.tags.contains($0) }
            }
        case 19:
            return Leaf(typed: .where(\.active, .equals(true)), keyed: .where("active", .equals(true))) { $0.active }
        case 20:
            // A closure of its own on a stored property, and a computed property: the general paths.
            let threes = Array(stride(from: 0, through: 100, by: 3))
            let initial = String(pick(names.filter { !$0.isEmpty }).prefix(1))
            return random.next() % 2 == 0
                ? Leaf(typed: .where(\.age, Condition { $0 % 3 == 0 }), keyed: .where("age", .in(threes))) { $0.age % 3 == 0 }
                : Leaf(typed: .where(\.initial, .equals(initial)), keyed: .where("name", .beginsWith(initial))) {
                    $0.name.hasPrefix(initial)
                }
        default:
            // Through the reference: the typed form takes the referenced model, the string key
            // reads its properties in place.
            return Leaf(
                typed: .where(\.friend, .where(\.age, .greaterThan(other))), keyed: .where("friend.age", .greaterThan(other))
            ) { specimen in specimen.friend.map { $0.age > other } ?? false }
        }
    }
}

/// A random tree of leaves under `&&`, `||` and `!`, in both forms and as the reference.
private func tree(depth: Int, _ random: inout SplitMix64) -> Leaf {
    if depth == 0 || random.next() % 4 == 0 { return Leaf.random(&random) }
    switch random.next() % 3 {
    case 0:
        let operand = tree(depth: depth - 1, &random)
        return Leaf(typed: !operand.typed, keyed: !operand.keyed) { !operand.holds($0) }
    case 1:
        let operands = (0..<2 + Int(random.next() % 3)).map { _ in tree(depth: depth - 1, &random) }
        return Leaf(
            typed: operands.dropFirst().reduce(operands[0].typed) { $0 && $1.typed },
            keyed: operands.dropFirst().reduce(operands[0].keyed) { $0 && $1.keyed }
        ) { specimen in operands.allSatisfy { $0.holds(specimen) } }
    default:
        let operands = (0..<2 + Int(random.next() % 3)).map { _ in tree(depth: depth - 1, &random) }
        return Leaf(
            typed: operands.dropFirst().reduce(operands[0].typed) { $0 || $1.typed },
            keyed: operands.dropFirst().reduce(operands[0].keyed) { $0 || $1.keyed }
        ) { specimen in operands.contains { $0.holds(specimen) } }
    }
}

/// Specimens with random values, in the current context; some reference another.
@MainActor private func specimens(_ count: Int, _ random: inout SplitMix64) -> [Specimen] {
    func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }
    let all = (0..<count).map { _ in
        let specimen = Specimen.instance()
        specimen.name = pick(names)
        specimen.nickname = random.next() % 3 == 0 ? nil : pick(names)
        specimen.age = random.next() % 20 == 0 ? pick([Int.max, Int.min]) : Int(random.next() % 101)
        specimen.rank = random.next() % 2 == 0 ? nil : Int(random.next() % 101)
        specimen.weight = Int64(random.next() % 101)
        specimen.score = random.next() % 10 == 0 ? .nan : Double(Int(random.next() % 200)) / 4 - 10
        specimen.active = random.next() % 2 == 0
        specimen.tags = (0..<Int(random.next() % 4)).map { _ in pick(words) }
        return specimen
    }
    for specimen in all where random.next() % 2 == 0 { specimen.friend = pick(all) }
    return all
}

@Suite("Scans of compiled predicates")
@MainActor struct ScanProgramTests {
    @Test("Random trees over every property kind give the reference's answer by key path and by string key")
    func randomTrees() throws {
        var random = SplitMix64(seed: 0x5CA7)
        try inFreshContext { (_) throws in
            let all = specimens(300, &random)
            for _ in 0..<300 {
                let predicate = tree(depth: 3, &random)
                let expected = all.filter(predicate.holds).map(\.modelId)
                // Without an order, matches come in the order the scan meets the models.
                #expect(try Specimen.query().filter(predicate.typed).results().map(\.modelId) == expected)
                #expect(try Specimen.query().filter(predicate.keyed).results().map(\.modelId) == expected)
                #expect(try Specimen.query().filter(predicate.typed).count() == expected.count)
            }
        }
    }

    @Test("With indexes narrowing the candidates, random trees still give the reference's answer")
    func randomTreesWithIndexes() throws {
        var random = SplitMix64(seed: 0x1DE7)
        try inFreshContext { (context) throws in
            let all = specimens(200, &random)
            context.addIndex(on: \.age, of: Specimen.self)
            context.addIndex(on: \.name, of: Specimen.self)
            for _ in 0..<200 {
                let predicate = tree(depth: 2, &random)
                let expected = Set(all.filter(predicate.holds).map(\.modelId))
                #expect(try Set(Specimen.query().filter(predicate.typed).results().map(\.modelId)) == expected)
                #expect(try Set(Specimen.query().filter(predicate.keyed).results().map(\.modelId)) == expected)
            }
        }
    }

    @Test("A scan of thousands of models keeps every match, in order, across its batches")
    func longScans() throws {
        var random = SplitMix64(seed: 0xB47C)
        try inFreshContext { (_) throws in
            let all = specimens(5_000, &random)
            let cases: [(ModelPredicate<Specimen>, (Specimen) -> Bool)] = [
                (.where(\.age, .between(10, 60)), { 10 <= $0.age && $0.age <= 60 }),
                (
                    .where(\.age, .lessThan(50)) && (.where(\.name, .equals("ana")) || .where(\.tags, .contains("a"))),
                    {
                        $0.age < 50 && ($0.name == "ana" || $0.tags.contains("a"))
                    }
                ),
                (.where("age", .greaterThan(98)), { $0.age > 98 }),
                (.all, { _ in true }),
            ]
            for (predicate, reference) in cases {
                #expect(try Specimen.query().filter(predicate).results().map(\.modelId) == all.filter(reference).map(\.modelId))
                #expect(try Specimen.query().filter(predicate).count() == all.filter(reference).count)
            }
        }
    }

    @Test("Integer bounds at the ends of Int match what the comparisons say")
    func integerBounds() throws {
        try inFreshContext { (_) throws in
            for age in [Int.min, -1, 0, 1, Int.max] { Specimen.instance().age = age }
            @MainActor func ages(_ condition: Condition<Int>) throws -> [Int] {
                try Specimen.query().where(\.age, condition).results().map(\.age)
            }
            #expect(try ages(.greaterThan(.max)) == [])
            #expect(try ages(.lessThan(.min)) == [])
            #expect(try ages(.greaterThanOrEqual(.max)) == [.max])
            #expect(try ages(.lessThanOrEqual(.min)) == [.min])
            #expect(try ages(.between(1, -1)) == [])
            #expect(try ages(.notEquals(0)) == [.min, -1, 1, .max])
            #expect(try Specimen.query().where("age", .greaterThan(Int.max)).count() == 0)
        }
    }
}
