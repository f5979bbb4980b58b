import Foundation
import Testing
import ModelKitTestSupport

@testable import ModelKit

/// A context's record of inserted, updated and removed models, checked against a plain
/// reference over random sequences of inserts, writes, removals, moves, loads, clears and resets.
@Suite("Context changes")
struct ContextChangesTests {
    /// What the reference knows about one model.
    struct Fact {
        var atReset = false
        var present = false
        var written = false
        var cameBack = false
    }

    /// The documented rules, from the facts.
    static func expected(_ facts: [ModelID: Fact]) -> ContextChanges {
        var changes = ContextChanges()
        for (id, fact) in facts {
            if fact.present && !fact.atReset { changes.inserted.insert(id) }
            if fact.present && fact.atReset && (fact.written || fact.cameBack) { changes.updated.insert(id) }
            if !fact.present && fact.atReset { changes.removed.insert(id) }
        }
        return changes
    }

    @Test("Random inserts, writes, removals, moves, loads, clears and resets give the changes a plain reference gives", arguments: [1, 2, 3, 4])
    func randomOperationsMatchTheReference(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let context = ModelContext()
        let elsewhere = ModelContext()
        var pool: [Author] = []
        var facts: [ModelID: Fact] = [:]

        func present() -> [Author] { pool.filter { facts[$0.modelId]?.present == true } }
        func absent() -> [Author] { pool.filter { facts[$0.modelId]?.present != true } }

        for step in 0..<600 {
            switch random.next() % 10 {
            case 0, 1:
                let author = Author.instance(in: context)
                pool.append(author)
                facts[author.modelId] = Fact(present: true)
            case 2, 3:
                guard let author = present().randomElement(using: &random) else { continue }
                author.age += 1
                facts[author.modelId]?.written = true
            case 4:
                guard let author = present().randomElement(using: &random) else { continue }
                context.remove(author)
                facts[author.modelId]?.present = false
                facts[author.modelId]?.written = false
            case 5:
                // A removed model comes back, or one moves here from another context.
                guard let author = absent().randomElement(using: &random) else { continue }
                context.insert(author)
                var fact = facts[author.modelId] ?? Fact()
                if fact.atReset { fact.cameBack = true }
                fact.present = true
                facts[author.modelId] = fact
            case 6:
                let author = Author.instance(in: elsewhere)
                pool.append(author)
                facts[author.modelId] = Fact()
            case 7:
                // A load brings new models (a bulk registration) and updates one it has.
                let source = ModelContext()
                let fresh = (0..<Int(random.next() % 4)).map { _ in Author.instance(in: source) }
                try context.load(try source.data())
                for author in fresh {
                    let loaded = try #require(context.model(Author.self, modelId: author.modelId))
                    pool.append(loaded)
                    facts[loaded.modelId] = Fact(present: true)
                }
            case 8:
                if random.next() % 4 == 0 {
                    context.clear()
                    for id in facts.keys where facts[id]!.present { facts[id]!.present = false }
                } else {
                    context.resetChanges()
                    for id in facts.keys {
                        facts[id] = Fact(atReset: facts[id]!.present, present: facts[id]!.present)
                    }
                }
            default:
                let changes = context.changes
                #expect(changes == Self.expected(facts), "step \(step)")
                #expect(context.hasChanges == !changes.isEmpty, "step \(step)")
                #expect(Set(context.insertedModels.map(\.modelId)) == changes.inserted, "step \(step)")
            }
        }
        #expect(context.changes == Self.expected(facts))
        #expect(context.hasChanges == !Self.expected(facts).isEmpty)
    }

    @Test("A context where nothing changed reports no changes, and one where a model came and went reports none either")
    func insertThenRemoveIsNoChange() {
        let context = ModelContext()
        #expect(!context.hasChanges)
        let author = Author.instance(in: context)
        #expect(context.changes.inserted == [author.modelId])
        context.remove(author)
        #expect(!context.hasChanges)
        #expect(context.changes.isEmpty)
        #expect(context.insertedModels.isEmpty)
    }
}
