import Foundation
import Testing
import ModelKitTestSupport

@testable import ModelKit

/// A context of ten notes counting 0 to 9.
private func tenNotes() -> ModelContext {
    let context = ModelContext()
    for count in 0..<10 { Note.instance(in: context).count = count }
    return context
}

@Suite("Predicates built in code")
struct PredicateNestingTests {
    init() throws {
        try ModelRegistry.register(Note.self)
    }

    func notes() -> ModelContext { tenNotes() }

    @Test("30,000 nested negations collapse and run like the predicate they negate")
    func deepNegations() throws {
        let context = notes()
        let base = try ModelPredicate<Note>("count > 6")
        var predicate = base
        for _ in 0..<30_000 { predicate = !predicate }
        #expect(try Note.query(in: context).filter(predicate).count() == 3)
        predicate = !predicate
        #expect(try Note.query(in: context).filter(predicate).count() == 7)
    }

    @Test("a predicate nested deeper than the limit is a QueryError, not a stack overflow")
    func deepNesting() throws {
        let context = notes()
        let other = try ModelPredicate<Note>("count < 100")
        var predicate = try ModelPredicate<Note>("count > 6")
        for _ in 0..<30_000 { predicate = !(predicate && other) }
        let error = #expect(throws: QueryError.self) { _ = try Note.query(in: context).filter(predicate).results() }
        #expect(error?.code == .invalidCondition)
        #expect(error?.expected == "predicates nested at most \(ModelPredicate<Note>.maximumNesting) levels deep")
        // Just within the limit, it runs: 255 pairs of `!` and `&&` are 510 levels.
        var shallow = try ModelPredicate<Note>("count > 6")
        for _ in 0..<255 { shallow = !(shallow && other) }
        #expect(try Note.query(in: context).filter(shallow).count() == 7)
    }

    @Test("a long chain of || or && is one level, however long")
    func longChains() throws {
        let context = notes()
        var any = try ModelPredicate<Note>("count == 100")
        var all = try ModelPredicate<Note>("count >= 0")
        for count in 0..<2_000 {
            any = any || (try ModelPredicate<Note>("count == \(count % 3)"))
            all = all && (try ModelPredicate<Note>("count != \(count + 5)"))
        }
        #expect(try Note.query(in: context).filter(any).count() == 3)
        #expect(try Note.query(in: context).filter(all).count() == 5)
    }

    @Test(
        "p = p || q a hundred thousand times appends in place, and branches built from one predicate stay apart",
        .hangBackstop)
    func chainsBuiltInALoop() throws {
        let context = notes()
        let never = try ModelPredicate<Note>("count == 100")
        let one = try ModelPredicate<Note>("count == 1")
        var any = never || never
        // In place: every predicate of the loop adds to the one shared array (a copy per step
        // would be quadratic, and a new chain); checked without a clock, so that a busy machine
        // can't fail it.
        let shared = try #require(any.chain?.operands)
        var moved = 0
        for _ in 1..<100_000 {
            any = any || never
            if any.chain?.operands !== shared { moved += 1 }
        }
        #expect(moved == 0)
        #expect(any.chain?.count == 100_001 && shared.nodes.count == 100_001)
        let base = any
        // Two predicates built from one: the second must not see the first's operand.
        let withOne = base || one
        let withoutOne = base || never
        #expect(try Note.query(in: context).filter(withOne).count() == 1)
        #expect(try Note.query(in: context).filter(withoutOne).count() == 0)
        #expect(try Note.query(in: context).filter(base).count() == 0)
        if case .or(let operands) = withOne.node { #expect(operands.count == 100_002) } else { Issue.record("not a chain") }
    }
}

@Suite("Conditions built in code")
struct ConditionNestingTests {
    init() throws {
        try ModelRegistry.register(Note.self)
    }

    func notes() -> ModelContext { tenNotes() }

    func count(_ condition: Condition<Int>, in context: ModelContext) throws -> Int {
        try Note.query(in: context).where(\.count, condition).count()
    }

    @Test("30,000 nested negations of a condition collapse and run like the condition they negate")
    func deepNegations() throws {
        let context = notes()
        var condition = Condition<Int>.greaterThan(6)
        for _ in 0..<30_000 { condition = !condition }
        #expect(condition.depth == 1)
        #expect(try count(condition, in: context) == 3)
        #expect(try count(!condition, in: context) == 7)
    }

    @Test("a condition nested deeper than the limit makes the query throw a QueryError, not overflow the stack")
    func deepNesting() throws {
        let context = notes()
        var condition = Condition<Int>.greaterThan(6)
        for _ in 0..<30_000 { condition = !(condition && .lessThan(100)) }
        let error = #expect(throws: QueryError.self) { try count(condition, in: context) }
        #expect(error?.code == .invalidCondition)
        #expect(error?.expected == "predicates nested at most \(ModelPredicate<Note>.maximumNesting) levels deep")
        // Just within the limit, it runs: 255 pairs of `!` and `&&` are 511 levels.
        var shallow = Condition<Int>.greaterThan(6)
        for _ in 0..<255 { shallow = !(shallow && .lessThan(100)) }
        #expect(try count(shallow, in: context) == 7)
    }

    @Test("c = c || d a hundred thousand times appends in place, and branches built from one condition stay apart", .hangBackstop)
    func chainsBuiltInALoop() throws {
        let context = notes()
        var any = Condition<Int>.equals(100)
        // In place, without a clock: every condition of the loop adds to one shared chain.
        var chains: Set<ObjectIdentifier> = []
        for _ in 0..<100_000 {
            any = any || .equals(100)
            if case .chain(let chain, _)? = any.combination { chains.insert(ObjectIdentifier(chain)) }
        }
        #expect(chains.count == 1)
        if case .chain(let chain, let count)? = any.combination {
            #expect(count == 100_001 && chain.operands.count == 100_001)
        } else {
            Issue.record("not a chain")
        }
        let base = any
        let withOne = base || .equals(1)
        let withoutOne = base || .equals(100)
        #expect(try count(withOne, in: context) == 1)
        #expect(try count(withoutOne, in: context) == 0)
        #expect(try count(base, in: context) == 0)
        #expect(withOne.depth == 2)
        var all = Condition<Int>.greaterThanOrEqual(0)
        var allChains: Set<ObjectIdentifier> = []
        for index in 0..<100_000 {
            all = all && .notEquals(index + 5)
            if case .chain(let chain, _)? = all.combination { allChains.insert(ObjectIdentifier(chain)) }
        }
        #expect(allChains.count == 1)
        #expect(try count(all, in: context) == 5)
    }

    /// A condition on integers as a plain tree, evaluated directly.
    indirect enum Reference {
        case leaf((Int) -> Bool, matchesNil: Bool)
        case and(Reference, Reference)
        case or(Reference, Reference)
        case not(Reference)

        func test(_ value: Int?) -> Bool {
            switch self {
            case .leaf(let test, let matchesNil): value.map(test) ?? matchesNil
            case .and(let lhs, let rhs): lhs.test(value) && rhs.test(value)
            case .or(let lhs, let rhs): lhs.test(value) || rhs.test(value)
            case .not(let operand): !operand.test(value)
            }
        }
    }

    @Test("random conditions combined from earlier ones answer as a plain tree does, for every value and for nil", arguments: [1, 2, 3])
    func randomCombinations(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        func number() -> Int { Int(random.next() % 12) - 1 }
        var pool: [(condition: Condition<Int>, reference: Reference)] = []
        for _ in 0..<400 {
            let choice = pool.isEmpty ? 0 : random.next() % 6
            switch choice {
            case 0, 1:
                let k = number()
                let leaves: [(Condition<Int>, Reference)] = [
                    (.equals(k), .leaf({ $0 == k }, matchesNil: false)),
                    (.notEquals(k), .leaf({ $0 != k }, matchesNil: true)),
                    (.lessThan(k), .leaf({ $0 < k }, matchesNil: false)),
                    (.greaterThanOrEqual(k), .leaf({ $0 >= k }, matchesNil: false)),
                    (.in([k, k + 2]), .leaf({ $0 == k || $0 == k + 2 }, matchesNil: false)),
                    (.notIn([k, k + 3]), .leaf({ $0 != k && $0 != k + 3 }, matchesNil: true)),
                    (.between(k, k + 4), .leaf({ $0 >= k && $0 <= k + 4 }, matchesNil: false)),
                    (Condition { $0 % 3 == 0 }, .leaf({ $0 % 3 == 0 }, matchesNil: false)),
                ]
                pool.append(leaves[Int(random.next() % UInt64(leaves.count))])
            case 2, 3:
                // Often the newest, the longest of its chain, as a loop builds them.
                let lhs = random.next() % 2 == 0 ? pool[pool.count - 1] : pool[Int(random.next() % UInt64(pool.count))]
                let rhs = pool[Int(random.next() % UInt64(pool.count))]
                pool.append((lhs.condition && rhs.condition, .and(lhs.reference, rhs.reference)))
            case 4:
                let lhs = random.next() % 2 == 0 ? pool[pool.count - 1] : pool[Int(random.next() % UInt64(pool.count))]
                let rhs = pool[Int(random.next() % UInt64(pool.count))]
                pool.append((lhs.condition || rhs.condition, .or(lhs.reference, rhs.reference)))
            default:
                let operand = pool[Int(random.next() % UInt64(pool.count))]
                pool.append((!operand.condition, .not(operand.reference)))
            }
        }
        var checked = 0
        for (index, entry) in pool.enumerated() where !entry.condition.isTooDeep {
            for value in -2...12 {
                #expect(entry.condition.test(value) == entry.reference.test(value), "condition \(index), value \(value)")
            }
            #expect(entry.condition.matchesNil == entry.reference.test(nil), "condition \(index), nil")
            checked += 1
        }
        #expect(checked > 300)
        // And through a query, in place.
        let context = notes()
        for entry in pool.suffix(20) where !entry.condition.isTooDeep {
            let expected = (0..<10).filter { entry.reference.test($0) }.count
            #expect(try count(entry.condition, in: context) == expected)
        }
    }
}
