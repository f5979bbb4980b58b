import Foundation
import ModelKitTestSupport
import Testing

@testable import ModelKit

/// A checked live query that places every batch by search: the results here are small.
@MainActor private func searching(_ query: Query<LiveWriter>) throws -> CheckedLiveResults {
    try CheckedLiveResults(query, searchCostFactor: 0)
}

@Suite("Live results placing a context batch by search")
@MainActor struct LiveResultsBatchSearchTests {
    /// Writers w0…w(count-1) aged 0, 10, 20, … in a new context.
    private func writers(_ count: Int) -> (ModelContext, [LiveWriter]) {
        let context = ModelContext()
        let all = (0..<count).map { index in
            let writer = LiveWriter.instance(objectId: "w\(index)", in: context)
            writer.age = index * 10
            return writer
        }
        return (context, all)
    }

    @Test("A batch that moves the first model last and the last first, with ties, is placed by search and equals a re-run")
    func bothEndsAndTies() throws {
        let (context, all) = writers(10)
        let checked = try searching(LiveWriter.query(in: context).sorted(by: \.age))
        context.batchChanges {
            all[0].age = 1_000  // first to last
            all[9].age = -5  // last to first
            all[4].age = 50  // ties with w5: the model id breaks it
            all[6].age = 50  // a third at 50
        }
        #expect(try checked.equalsRerun())
        #expect(checked.ids.first == "w9" && checked.ids.last == "w0")
        #expect(checked.changes.count == 1)
        #expect(checked.live.walkedBatches == 0)
    }

    @Test("Models leaving and entering the filter, one edited twice, one inserted and removed, one edited then removed")
    func leavingEnteringTwiceInsertedRemoved() throws {
        let (context, all) = writers(12)
        let checked = try searching(
            LiveWriter.query(in: context).where(\.age, .between(20, 80)).sorted(by: \.age, ascending: false))
        context.batchChanges {
            all[2].age = 500  // leaves
            all[10].age = 45  // enters
            all[11].age = 21  // enters at the end
            all[5].age = 75  // edited twice: moves, then back before where it was
            all[5].age = 15  // … and out of the filter
            all[9].age = 61  // out and …
            all[9].age = 79  // … in again, first
            let passing = LiveWriter.instance(objectId: "passing", in: context)
            passing.age = 50
            context.remove(passing)  // inserted and removed: never shown
            all[4].age = 41
            context.remove(all[4])  // edited, then removed
            context.remove(all[8])  // removed untouched
            let added = LiveWriter.instance(objectId: "added", in: context)
            added.age = 30  // inserted: ties with w3
        }
        #expect(try checked.equalsRerun())
        // w3 and "added" tie at 30: the re-run above checks their order.
        #expect(checked.ids.count == 7 && checked.ids.prefix(4) == ["w9", "w7", "w6", "w10"] && checked.ids.last == "w11")
        #expect(checked.changes.count == 1)
        #expect(checked.live.walkedBatches == 0)
    }

    @Test("A window's change set comes from the search too, and the window shows the matches' slice")
    func windowedResults() throws {
        let (context, all) = writers(20)
        let checked = try searching(LiveWriter.query(in: context).sorted(by: \.age).offset(3).limit(5))
        context.batchChanges {
            all[0].age = 35
            all[19].age = 1
            all[7].age = 2_000
            context.remove(all[3])
        }
        #expect(try checked.equalsRerun())
        #expect(checked.ids == ["w0", "w4", "w5", "w6", "w8"])
        #expect(checked.live.walkedBatches == 0)
    }

    @Test("Undo and redo of a batch, a merge and a load are placed by search and equal a re-run")
    func undoMergeAndLoad() throws {
        let (context, all) = writers(8)
        let undo = ModelUndoManager()
        context.undoManager = undo
        let checked = try searching(LiveWriter.query(in: context).where(\.age, .lessThan(65)).sorted(by: \.age))
        context.batchChanges {
            all[1].age = 64
            all[6].age = 3
            all[7].age = 4
        }
        #expect(try checked.equalsRerun())
        undo.undo()
        #expect(try checked.equalsRerun())
        #expect(checked.ids == ["w0", "w1", "w2", "w3", "w4", "w5", "w6"])
        undo.redo()
        #expect(try checked.equalsRerun())
        let other = ModelContext()
        for (objectId, age) in [("w0", 62), ("w2", 1), ("m1", 15), ("m2", 1)] {
            LiveWriter.instance(objectId: objectId, in: other).age = age
        }
        try context.merge(other.snapshotOfChanges())
        #expect(try checked.equalsRerun())
        let loaded = ModelContext()
        for index in 0..<3 { LiveWriter.instance(objectId: "l\(index)", in: loaded).age = 30 - index }
        try context.load(try loaded.data())
        #expect(try checked.equalsRerun())
        #expect(checked.live.walkedBatches == 0)
    }

    @Test(
        "A changed model in an open batch of its own at the context batch's end makes the end walk the results, with the right results"
    )
    func ownBatchFallsBackToTheWalk() throws {
        let (context, all) = writers(6)
        let checked = try searching(LiveWriter.query(in: context).sorted(by: \.age))
        context.batchChanges {
            all[0].age = 55
            all[1].beginChanges()
            all[1].age = 100
            try? all[1].endChanges()  // reported: w1 is one of the batch's models
            all[1].beginChanges()
            all[1].age = 7  // not reported: its own batch is still open at the context's end
            all[2].age = -1
        }
        // w1 is held by its values at its own batch's start.
        #expect(checked.ids == ["w2", "w3", "w4", "w5", "w0", "w1"])
        #expect(checked.live.walkedBatches == 1)
        try all[1].endChanges()
        #expect(try checked.equalsRerun())
        #expect(checked.ids == ["w2", "w1", "w3", "w4", "w5", "w0"])
    }

    @Test(
        "With the default cost, a batch that changes most of the results walks them, and one that changes a few of many searches")
    func walkOrSearchByCost() throws {
        let (context, all) = writers(1_000)
        let live = try LiveWriter.query(in: context).sorted(by: \.age).live()
        context.batchChanges {
            for writer in all.prefix(500) { writer.age += 5 }
        }
        #expect(live.walkedBatches == 1)
        context.batchChanges {
            all[0].age = 5_000
            all[999].age = -1
        }
        #expect(live.walkedBatches == 1)
        #expect(
            try live.map(ObjectIdentifier.init)
                == LiveWriter.query(in: context).sorted(by: \.age).results().map(ObjectIdentifier.init))
    }

    @Test("Random batches of edits, insertions and removals over random queries are placed by search and equal a re-run")
    func randomBatches() throws {
        var random = SplitMix64(seed: 33)
        let (context, initial) = writers(200)
        var all = initial
        let queries = [
            LiveWriter.query(in: context).sorted(by: \.age),
            LiveWriter.query(in: context).where(\.age, .between(300, 1_200)).sorted(by: \.age, ascending: false),
            LiveWriter.query(in: context).where(\.age, .greaterThan(900)).sorted(by: \.name).sorted(by: \.age),
            LiveWriter.query(in: context).sorted(by: \.name).offset(10).limit(30),
        ]
        let checked = try queries.map { try searching($0) }
        for _ in 0..<60 {
            context.batchChanges {
                for _ in 0..<Int.random(in: 1...40, using: &random) {
                    switch Int.random(in: 0..<10, using: &random) {
                    case 0..<6:
                        let writer = all.randomElement(using: &random)!
                        // Few distinct values: many ties.
                        writer.age = Int.random(in: 0..<40, using: &random) * 50
                        if Bool.random(using: &random) { writer.name = "n\(Int.random(in: 0..<8, using: &random))" }
                    case 6..<8:
                        let writer = LiveWriter.instance(in: context)
                        writer.age = Int.random(in: 0..<40, using: &random) * 50
                        all.append(writer)
                    default:
                        guard all.count > 20 else { break }
                        context.remove(all.remove(at: Int.random(in: 0..<all.count, using: &random)))
                    }
                }
            }
            for query in checked { #expect(try query.equalsRerun(), "\(query.query)") }
        }
        for query in checked { #expect(query.live.walkedBatches == 0) }
    }
}
