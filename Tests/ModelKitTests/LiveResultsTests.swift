import Foundation
import ModelKit
import ModelKitTestSupport
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
        let live = try LiveWriter.query(in: context).filter("name BEGINSWITH[c] 'e' OR age < 15").sorted(by: "age", ascending: false).live()
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
}
