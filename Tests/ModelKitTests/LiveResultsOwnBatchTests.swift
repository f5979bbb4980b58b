import Foundation
import ModelKitTestSupport
import Testing

@testable import ModelKit

// Two cases a review of the batch and single-update paths found uncovered: an update a live
// query hears while the model is already in a `beginChanges()` batch of its own (an earlier
// observer began it on hearing of the same update), and an order by a nested `String` key path,
// which takes the in-place string comparison.
@Suite("Live results: updates heard during a model's own batch, and nested string keys")
@MainActor struct LiveResultsOwnBatchTests {
    @Test(
        "An update heard while the model is in a batch an earlier observer began leaves it in the results once, by a string and by an integer order",
        arguments: [true, false])
    func updateDuringOwnBatch(byName: Bool) throws {
        let context = ModelContext()
        let writers = (0..<20).map { index in
            let writer = LiveWriter.instance(objectId: "w\(index)", in: context)
            writer.name = "n" + String(format: "%02d", index)
            writer.age = index
            return writer
        }
        let target = writers[3]
        var began = false
        // Registered before the live query, so it hears each event first.
        let token = context.observeChanges { event in
            guard event.modelId == target.modelId, !began else { return }
            began = true
            target.beginChanges()
        }
        let query = byName ? LiveWriter.query(in: context).sorted(by: \.name) : LiveWriter.query(in: context).sorted(by: \.age)
        let live = try query.live()
        // The first write changes the sort key: the observer begins the batch with the new value
        // as its start, while the live query must find the model by the value before.
        if byName {
            target.name = "zz"
            target.age = 100
        } else {
            target.age = 100
            target.name = "zz"
        }
        #expect(live.filter { $0 === target }.count == 1)
        #expect(live.count == writers.count)
        try target.endChanges()
        #expect(live.map(ObjectIdentifier.init) == (try query.results()).map(ObjectIdentifier.init))
        withExtendedLifetime(token) {}
    }

    @Test(
        "A live query ordered by a nested String key path, both ways, equals a re-run through single edits and batches of strings that tie, differ after 8 bytes, or are not ASCII",
        arguments: [true, false])
    func nestedStringKeyPath(ascending: Bool) throws {
        let context = ModelContext()
        let names = ["", "Ann", "ann", "Åsa", "abcdefgh\u{301}", "abcdefgh", "abcdefgi", "ab\u{0}", "ab", "e\u{301}", "é"]
        var random = SplitMix64(seed: ascending ? 5 : 6)
        let models = (0..<80).map { index in
            let model = LiveLabelled.instance(objectId: "l\(index)", in: context)
            model.label = .init(text: names[index % names.count], rank: 80 - index)
            return model
        }
        let query = LiveLabelled.query(in: context).sorted(by: \.label.text, ascending: ascending)
        let live = try query.live()
        // The nested path is a stored String: the results keep keys and compare in place.
        #expect(live.order.hasKeys)
        func randomName() -> String { names[Int.random(in: 0..<names.count, using: &random)] }
        for round in 0..<60 {
            if random.chance(0.5) {
                context.batchChanges {
                    for _ in 0..<Int.random(in: 2...8, using: &random) {
                        models[Int.random(in: 0..<models.count, using: &random)].label.text = randomName()
                    }
                }
            } else {
                models[Int.random(in: 0..<models.count, using: &random)].label.text = randomName()
            }
            #expect(live.map(ObjectIdentifier.init) == (try query.results()).map(ObjectIdentifier.init), "round \(round)")
        }
    }
}
