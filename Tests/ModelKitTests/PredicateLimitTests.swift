import Foundation
import Testing

@testable import ModelKit

@Suite("Predicates built in code")
struct PredicateNestingTests {
    init() throws {
        try ModelRegistry.register(Note.self)
    }

    func notes() -> ModelContext {
        let context = ModelContext()
        for count in 0..<10 { Note.instance(in: context).count = count }
        return context
    }

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
        .timeLimit(.minutes(1)))
    func chainsBuiltInALoop() throws {
        let context = notes()
        let never = try ModelPredicate<Note>("count == 100")
        let one = try ModelPredicate<Note>("count == 1")
        var any = never
        for _ in 0..<100_000 { any = any || never }
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
