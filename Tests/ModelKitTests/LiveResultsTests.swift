import Foundation
@testable import ModelKit
import ModelKitTestSupport
import Observation
import Testing

@Suite("Live results")
@MainActor struct LiveResultsTests {
    @Test("An edit of the sorted key moves the model, and an edit that stops it matching removes it, with one change set each")
    func editsMoveAndRemove() throws {
        let context = ModelContext()
        context.undoManager = ModelUndoManager()
        let writers = (0..<6).map { index in
            let writer = LiveWriter.instance(objectId: "e\(index)", in: context)
            writer.name = "w\(index)"
            writer.age = index
            return writer
        }
        let live = try LiveWriter.query(in: context).filter("name BEGINSWITH[c] 'e' OR age < 15").sorted(
            by: "age", ascending: false
        ).live()
        var changes: [LiveChangeSet] = []
        let token = live.observe { _, change in changes.append(change) }
        #expect(live.map(\.age) == [5, 4, 3, 2, 1, 0])
        writers[1].age = 10
        #expect(live.map(\.age) == [10, 5, 4, 3, 2, 0])
        #expect(changes == [LiveChangeSet(moves: [.init(from: 4, to: 0)])])
        writers[3].age = 75
        #expect(live.map(\.age) == [10, 5, 4, 2, 0])
        #expect(changes.last == LiveChangeSet(deletions: [3]))
        token.cancel()
    }

    @Test(
        "Reading live results under observation tracking fires on the next update that changes them, and not on a change they don't show"
    )
    func observationTracking() throws {
        let context = ModelContext()
        let writer = LiveWriter.instance(in: context)
        let live = try LiveWriter.query(in: context).where(\.age, .greaterThan(10)).live()
        final class Flag: @unchecked Sendable { var fired = false }
        let flag = Flag()
        withObservationTracking {
            _ = live.count
        } onChange: {
            flag.fired = true
        }
        writer.name = "not shown"  // doesn't match before or after: no update
        #expect(!flag.fired)
        writer.age = 20
        #expect(flag.fired)
        #expect(live.totalCount == 1 && live.exists)
    }

    @Test("The change stream delivers each change set in order, and ends when the live results go away")
    func changeStream() async throws {
        let context = ModelContext()
        var live: LiveResults<LiveWriter>? = try LiveWriter.query(in: context).sorted(by: \.age).live()
        let stream = live!.changes()
        let first = LiveWriter.instance(in: context)
        first.age = 5
        LiveWriter.instance(in: context).age = 1  // before `first`, at 0 as its default age was
        first.removeFromContext()
        live = nil
        var received: [LiveChangeSet] = []
        for await change in stream { received.append(change) }
        #expect(
            received == [
                LiveChangeSet(insertions: [0]), LiveChangeSet(modifications: [0]), LiveChangeSet(insertions: [0]),
                LiveChangeSet(modifications: [0]), LiveChangeSet(deletions: [1]),
            ])
    }

    @Test("A live query works in a ModelActor's context as on the main actor")
    func inModelActor() async throws {
        actor Worker: ModelActor {
            let modelContext = ModelContext()
            func run() throws -> [String] {
                let live = try LiveWriter.query(in: modelContext).where(\.age, .lessThan(50)).sorted(by: \.name).live()
                var shown: [String] = []
                let token = live.observe { results, _ in shown = results.map(\.name) }
                for (name, age) in [("b", 10), ("a", 20), ("c", 90)] {
                    let writer = LiveWriter.instance(in: modelContext)
                    writer.name = name
                    writer.age = age
                }
                token.cancel()
                return shown
            }
        }
        #expect(try await Worker().run() == ["a", "b"])
    }

    @Test("A window shows its slice of the matches, and change sets are relative to the window")
    func window() throws {
        let context = ModelContext()
        let writers = (0..<5).map { index in
            let writer = LiveWriter.instance(in: context)
            writer.age = index * 10
            return writer
        }
        let live = try LiveWriter.query(in: context).sorted(by: \.age).offset(1).limit(2).live()
        var changes: [LiveChangeSet] = []
        let token = live.observe { _, change in changes.append(change) }
        #expect(live.map(\.age) == [10, 20])
        writers[4].age = 5  // enters before the window: 0, 5 | 10 | 20, 30
        #expect(live.map(\.age) == [5, 10])
        #expect(changes == [LiveChangeSet(deletions: [1], insertions: [0])])
        token.cancel()
    }

    @Test("A filter through a reference follows changes of the referenced model, by running the query again")
    func throughReference() throws {
        let context = ModelContext()
        let writer = LiveWriter.instance(in: context)
        let book = LiveBook.instance(in: context)
        book.writer = writer
        let live = try LiveBook.query(in: context).where("writer.age", .greaterThan(30)).live()
        var changes: [LiveChangeSet] = []
        let token = live.observe { _, change in changes.append(change) }
        #expect(live.isEmpty)
        writer.age = 40  // a change of another model's type
        #expect(live.map(\.modelId) == [book.modelId])
        #expect(changes == [LiveChangeSet(insertions: [0])])
        token.cancel()
    }
}

/// What `@LiveQuery` (SwiftUI only) shows for a query that can't run, tested where it is decided.
@Suite("Live results of a query that can't run")
@MainActor struct FailedLiveResultsTests {
    @Test("A query that can't run gives empty results that name its error and stay empty")
    func failedQueryGivesEmptyResults() throws {
        let context = ModelContext()
        let writer = LiveWriter.instance(objectId: "f0", in: context)
        writer.name = "Ann"
        // A distance below zero: checked when the query runs, not when it is made.
        let query = LiveWriter.query(in: context).where("name", .within(kilometers: -1, of: GeoPoint(latitude: 0, longitude: 0)))
        #expect(throws: QueryError.self) { try query.live() }
        let live = query.liveOrFailed()
        #expect(live.isEmpty && live.totalCount == 0 && !live.exists)
        #expect(live.lastError != nil)
        LiveWriter.instance(objectId: "f1", in: context).name = "Ben"
        #expect(live.isEmpty)
    }

    @Test("A query that runs gives the same results as live()")
    func runningQueryGivesLiveResults() throws {
        let context = ModelContext()
        LiveWriter.instance(objectId: "g0", in: context).name = "Ann"
        let live = LiveWriter.query(in: context).where("name", .beginsWith("A")).liveOrFailed()
        #expect(live.map(\.name) == ["Ann"] && live.lastError == nil)
        LiveWriter.instance(objectId: "g1", in: context).name = "Abe"
        #expect(live.count == 2)
    }
}
