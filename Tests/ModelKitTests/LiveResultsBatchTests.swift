import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@Suite("Live results in a context batch")
@MainActor struct LiveResultsBatchTests {
    /// Writers aged 0, 10, 20, … in a context.
    private func writers(_ count: Int, in context: ModelContext) -> [LiveWriter] {
        (0..<count).map { index in
            let writer = LiveWriter.instance(objectId: "b\(index)", in: context)
            writer.age = index * 10
            return writer
        }
    }

    /// `count` writers (as `writers(_:in:)`) in a context with an undo manager whose stack is
    /// empty (with `resettingChanges`, the context's changes reset first), and a recorder of
    /// them sorted by age.
    private func undoableWriters(_ count: Int, resettingChanges: Bool = false) throws -> (
        context: ModelContext, undo: ModelUndoManager, all: [LiveWriter], recorder: CheckedLiveResults
    ) {
        let context = ModelContext()
        let undo = ModelUndoManager()
        context.undoManager = undo
        let all = writers(count, in: context)
        if resettingChanges { context.resetChanges() }
        undo.removeAllActions()
        let recorder = try CheckedLiveResults(LiveWriter.query(in: context).sorted(by: \.age))
        return (context, undo, all, recorder)
    }

    @Test("Edits of many models in a batch update the results once, at the end, with one change set")
    func editsGiveOneChangeSet() throws {
        let context = ModelContext()
        let all = writers(6, in: context)
        let recorder = try CheckedLiveResults(LiveWriter.query(in: context).where(\.age, .lessThan(100)).sorted(by: \.age))
        context.batchChanges {
            all[0].age = 35  // moves: 10 20 30 35 40 50
            all[5].age = 200  // leaves
            all[2].name = "same place"  // a modification
            #expect(recorder.ids == ["b0", "b1", "b2", "b3", "b4", "b5"])  // not yet
            let added = LiveWriter.instance(objectId: "new", in: context)
            added.age = 5  // enters
        }
        #expect(recorder.ages == [5, 10, 20, 30, 35, 40])
        #expect(
            recorder.changes == [
                LiveChangeSet(deletions: [5], insertions: [0], modifications: [2], moves: [.init(from: 0, to: 4)])
            ])
    }

    @Test("Nested batches report at the end of the outermost, and observers reading the results inside see them as at its start")
    func nestedBatchesReportAtTheOutermostEnd() throws {
        let context = ModelContext()
        let all = writers(4, in: context)
        let recorder = try CheckedLiveResults(LiveWriter.query(in: context).sorted(by: \.age, ascending: false))
        var seenByObserver: [[String]] = []
        let token = context.observeChanges { _ in seenByObserver.append(recorder.ids) }
        context.batchChanges {
            all[0].age = 100
            context.batchChanges {
                all[1].age = 90
                all[1].age = 95  // the same model twice: one event
            }
            #expect(recorder.changes.isEmpty)
            all[3].removeFromContext()
        }
        #expect(recorder.ages == [100, 95, 20])
        #expect(recorder.changes.count == 1)
        // The removal is reported at once, the two edits at the end; all see the results as before.
        #expect(seenByObserver == Array(repeating: ["b3", "b2", "b1", "b0"], count: 3))
        token.cancel()
    }

    @Test("A batch whose body throws keeps and reports what it changed before the error, once")
    func throwingBodyReportsOnce() throws {
        struct Stop: Error {}
        let context = ModelContext()
        let all = writers(3, in: context)
        let recorder = try CheckedLiveResults(LiveWriter.query(in: context).sorted(by: \.age))
        #expect(throws: Stop.self) {
            try context.batchChanges {
                all[0].age = 50
                all[1].age = 60
                throw Stop()
            }
        }
        #expect(recorder.ages == [20, 50, 60])
        #expect(recorder.changes == [LiveChangeSet(moves: [.init(from: 0, to: 1), .init(from: 1, to: 2)])])
        // The batch is closed: the next write updates at once.
        all[2].age = 70
        #expect(recorder.changes.count == 2 && recorder.ages == [50, 60, 70])
    }

    @Test("A merge of several models updates a live query once")
    func mergeGivesOneChangeSet() throws {
        let context = ModelContext()
        _ = writers(3, in: context)
        let recorder = try CheckedLiveResults(LiveWriter.query(in: context).sorted(by: \.age))
        let other = ModelContext()
        for (objectId, age) in [("b0", 25), ("b2", 5), ("m1", 15), ("m2", 1)] {
            LiveWriter.instance(objectId: objectId, in: other).age = age
        }
        try context.merge(other.snapshotOfChanges())
        #expect(recorder.ages == [1, 5, 10, 15, 25])
        #expect(recorder.changes.count == 1)
    }

    @Test("A load of several models updates a live query once")
    func loadGivesOneChangeSet() throws {
        let context = ModelContext()
        let all = writers(3, in: context)
        let recorder = try CheckedLiveResults(LiveWriter.query(in: context).sorted(by: \.age))
        let data = try all[0].jsonData()
        all[0].age = 99
        let other = ModelContext()
        for index in 0..<3 { LiveWriter.instance(objectId: "l\(index)", in: other).age = 3 - index }
        try context.load(try other.data())
        _ = try LiveWriter.instance(fromJSON: data, in: context)  // one model: as outside a batch
        #expect(recorder.ages == [0, 1, 2, 3, 10, 20])
        #expect(recorder.changes.count == 3)
    }

    @Test("Undoing and redoing a batch is one step, and updates a live query once each way")
    func undoOfABatchIsOneUpdate() throws {
        let (context, undo, all, recorder) = try undoableWriters(4)
        context.batchChanges {
            all[0].age = 100
            all[1].age = 5
            all[1].age = 15
            all[3].removeFromContext()
            LiveWriter.instance(objectId: "u", in: context).age = 1
        }
        #expect(recorder.ages == [1, 15, 20, 100])
        undo.undo()
        #expect(recorder.ages == [0, 10, 20, 30])
        #expect(!undo.canUndo)
        undo.redo()
        #expect(recorder.ages == [1, 15, 20, 100])
        #expect(recorder.changes.count == 3)
        undo.undo()
        #expect(recorder.ages == [0, 10, 20, 30] && recorder.changes.count == 4)
    }

    @Test("A batch that changes nothing delivers nothing and leaves no undo step")
    func emptyBatch() throws {
        let (context, undo, all, recorder) = try undoableWriters(2)
        context.batchChanges {}
        context.batchChanges { all[0].name = "" }  // the value it had: no write
        #expect(recorder.changes.isEmpty && !undo.canUndo)
    }

    @Test("A windowed query's change set in a batch is relative to its window")
    func windowInABatch() throws {
        let context = ModelContext()
        let all = writers(6, in: context)
        let recorder = try CheckedLiveResults(LiveWriter.query(in: context).sorted(by: \.age).offset(1).limit(3))
        context.batchChanges {
            all[5].age = 1  // 0 1 | 10 20 | 30 40
            all[1].age = 45
        }
        #expect(recorder.ages == [1, 20, 30])
        #expect(recorder.changes.count == 1)
    }

    @Test("A filter through a reference runs its query again once for a batch")
    func throughReferenceOncePerBatch() throws {
        let context = ModelContext()
        let writer = LiveWriter.instance(in: context)
        let books = (0..<3).map { _ in LiveBook.instance(in: context) }
        let live = try LiveBook.query(in: context).where("writer.age", .greaterThan(30)).live()
        var updates = 0
        let token = live.observe { _, _ in updates += 1 }
        context.batchChanges {
            writer.age = 40
            for book in books { book.writer = writer }  // each a match, outside a batch
        }
        #expect(live.count == 3 && updates == 1)
        token.cancel()
    }
    @Test("An observer that begins a batch while the outer batch reports nests in it: one undo step, undone once")
    func batchBegunWhileEndingNests() throws {
        let (context, undo, all, recorder) = try undoableWriters(4)
        var nested = 0
        let token = context.observeChanges { _ in
            nested += 1
            context.batchChanges {}  // what a cascade, a merge or a load does
        }
        context.batchChanges {
            all[0].age = 100
            all[1].age = 5
            all[2].age = 15
        }
        #expect(nested >= 3)
        #expect(recorder.ages == [5, 15, 30, 100])
        #expect(recorder.changes.count == 1)
        undo.undo()
        #expect(recorder.ages == [0, 10, 20, 30])
        #expect(!undo.canUndo)
        #expect(recorder.changes.count == 2)
        token.cancel()
    }

    @Test("A live query made inside a batch after an edit shows the edited model once when the batch ends")
    func liveQueryMadeInsideABatch() throws {
        let context = ModelContext()
        let all = writers(3, in: context)
        var recorder: CheckedLiveResults?
        context.batchChanges {
            all[0].age = 99
            recorder = try? CheckedLiveResults(LiveWriter.query(in: context).sorted(by: \.age))
        }
        let live = try #require(recorder)
        #expect(live.ids == ["b1", "b2", "b0"])
        #expect(live.ages == [10, 20, 99])
        // And one that the edit made match.
        var filtered: CheckedLiveResults?
        context.batchChanges {
            all[0].age = 5
            filtered = try? CheckedLiveResults(LiveWriter.query(in: context).where(\.age, .lessThan(15)).sorted(by: \.age))
        }
        #expect(try #require(filtered).ids == ["b0", "b1"])
    }

    @Test("A live query made inside a batch shows what one made before it shows: the results at the batch's start, until the end")
    func liveQueryMadeInsideABatchAgreesWithOneMadeBefore() throws {
        let context = ModelContext()
        let all = writers(4, in: context)
        let before = try CheckedLiveResults(LiveWriter.query(in: context).where(\.age, .lessThan(25)).sorted(by: \.age))
        var inside: CheckedLiveResults?
        context.batchChanges {
            all[0].age = 99  // leaves the filter
            all[3].age = 5  // joins it
            all[1].age = 15
            let made = try? CheckedLiveResults(LiveWriter.query(in: context).where(\.age, .lessThan(25)).sorted(by: \.age))
            #expect(made?.ids == before.ids)
            #expect(made?.ids == ["b0", "b1", "b2"])
            all[2].age = 1
            inside = made
        }
        let made = try #require(inside)
        #expect(made.ids == ["b2", "b3", "b1"])
        #expect(made.ids == before.ids)
        #expect(made.changes.count == 1 && before.changes.count == 1)
    }

    @Test("A live query made while a model's own batch is open finds the model where its values at the batch's start put it")
    func liveQueryMadeInsideAModelBatch() throws {
        let context = ModelContext()
        let all = writers(3, in: context)
        all[0].beginChanges()
        all[0].age = 99
        let recorder = try CheckedLiveResults(LiveWriter.query(in: context).sorted(by: \.age))
        try all[0].endChanges()
        #expect(recorder.ids == ["b1", "b2", "b0"])
        #expect(recorder.ages == [10, 20, 99])
    }

    @Test("Undoing a batch that merged into an edited model undoes the edit after the merge, not the merge")
    func undoOfABatchKeepsWhatAMergeBrought() throws {
        let (context, undo, all, recorder) = try undoableWriters(2, resettingChanges: true)
        let other = ModelContext()
        LiveWriter.instance(objectId: "b0", in: other).age = 70
        let snapshot = try other.snapshotOfChanges()
        context.batchChanges {
            all[0].name = "before the merge"
            try? context.merge(snapshot)
            all[0].name = "after the merge"
        }
        #expect(all[0].age == 70 && all[0].name == "after the merge")
        undo.undo()
        #expect(all[0].age == 70, "the merged value stays")
        #expect(all[0].name != "after the merge")
        #expect(recorder.ages == [10, 70])
    }
}
