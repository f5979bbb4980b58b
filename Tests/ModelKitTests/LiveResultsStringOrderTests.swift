import Foundation
import ModelKitTestSupport
import Testing

@testable import ModelKit

/// A model sorted by a struct whose first stored property is a string, at the struct's offset,
/// but whose order is not that string's.
final class LiveLabelled: ModelObject<LiveLabelled.Properties> {
    struct Label: Codable, Comparable, Sendable {
        var text = ""
        var rank = 0

        static func < (a: Label, b: Label) -> Bool { (a.rank, a.text) < (b.rank, b.text) }
    }

    struct Properties: ModelProperties {
        var label = Label()
    }
}

// A live query ordered by one key path to a stored `String` compares a search's entries as the
// strings read in place (LiveOrder's `stringKey`); these check it against a re-run of the query,
// both ways, for single edits and for batches placed by search and by a walk, and that orders
// only looking like it (an optional string, a struct starting with a string) keep the general
// comparison.
@Suite("Live results ordered by a string key path")
@MainActor struct LiveResultsStringOrderTests {
    /// `count` writers with names from a few values (so that many tie and the id decides), in a
    /// new context.
    private func writers(_ count: Int, names: [String]) -> (ModelContext, [LiveWriter]) {
        let context = ModelContext()
        let all = (0..<count).map { index in
            let writer = LiveWriter.instance(objectId: "w\(index)", in: context)
            writer.name = names[index % names.count]
            writer.age = index
            return writer
        }
        return (context, all)
    }

    @Test(
        "Batches of renames with ties, placed by search and by a walk, ascending and descending, equal a re-run",
        arguments: [(true, 0), (false, 0), (true, 8), (false, 8)])
    func renamedBatches(ascending: Bool, searchCostFactor: Int) throws {
        // Names whose kept keys (their first 8 bytes) differ, tie (a shared prefix, NULs at
        // the end) or can't be made (not ASCII, or a combining mark as the ninth byte).
        let names = [
            "", "Ann", "ann", "Bob", "Åsa", "Zoë", "bob", "a longer name than fits in place", "a longer name, too",
            "a longer", "a longerX", "abcdefgh\u{301}", "abcdefgh", "abcdefgi", "ab\u{0}", "ab",
        ]
        let (context, all) = writers(120, names: names)
        let checked = try CheckedLiveResults(
            LiveWriter.query(in: context).where(\.age, .lessThan(100)).sorted(by: \.name, ascending: ascending),
            searchCostFactor: searchCostFactor)
        var random = SplitMix64(seed: 33)
        for round in 0..<30 {
            let count = 1 + Int(random.next() % 12)
            context.batchChanges {
                for _ in 0..<count {
                    let writer = all[Int(random.next() % UInt64(all.count))]
                    writer.name = names[Int(random.next() % UInt64(names.count))]
                    if random.next() % 5 == 0 { writer.age = Int(random.next() % 130) }  // in or out of the filter
                }
            }
            #expect(try checked.equalsRerun(), "round \(round)")
        }
        // And single renames, placed one at a time.
        for round in 0..<40 {
            all[Int(random.next() % UInt64(all.count))].name = names[Int(random.next() % UInt64(names.count))]
            #expect(try checked.equalsRerun(), "single \(round)")
        }
        if searchCostFactor == 0 { #expect(checked.live.walkedBatches == 0) }
    }

    @Test("An optional string key path, nil included, keeps the general comparison and equals a re-run")
    func optionalString() throws {
        let (context, all) = writers(40, names: ["x"])
        for (index, writer) in all.enumerated() { writer.nickname = index % 3 == 0 ? nil : "n\(index % 7)" }
        let checked = try CheckedLiveResults(
            LiveWriter.query(in: context).sorted(by: \.nickname, ascending: false), searchCostFactor: 0)
        context.batchChanges {
            all[0].nickname = "n9"
            all[1].nickname = nil
            all[5].nickname = "a"
        }
        all[7].nickname = "zz"
        #expect(try checked.equalsRerun())
    }

    @Test("A struct key whose first property is a string, at the same offset, is ordered by its own <")
    func structStartingWithString() throws {
        let context = ModelContext()
        let all = (0..<30).map { index in
            let model = LiveLabelled.instance(in: context)
            // The text's order is the reverse of the rank's.
            model.label = .init(text: "t\(100 - index)", rank: index)
            return model
        }
        let query = LiveLabelled.query(in: context).sorted(by: \.label)
        let live = try query.live()
        live.searchCostFactor = 0
        context.batchChanges {
            all[0].label = .init(text: "a", rank: 50)
            all[29].label = .init(text: "z", rank: -1)
            all[10].label.rank = 20
        }
        all[3].label = .init(text: "m", rank: 15)
        #expect(try query.results().map(ObjectIdentifier.init) == live.map(ObjectIdentifier.init))
        #expect(live.first === all[29] && live.last === all[0])
    }

    @Test(
        "A live query made inside a batch keeps each model by the name it had at the batch's start, and later renames around it find it",
        arguments: [true, false])
    func madeInsideABatch(ascending: Bool) throws {
        let names = ["gus the elder", "gus the younger", "ann", "Zoë", "bob", "abcdefgh"]
        let (context, all) = writers(30, names: names)
        let query = LiveWriter.query(in: context).sorted(by: \.name, ascending: ascending)
        var made: CheckedLiveResults?
        context.batchChanges {
            all[3].name = "zzz"
            all[4].name = "gus the eldest"
            made = try? CheckedLiveResults(query)
            all[5].name = "a"
        }
        let checked = try #require(made)
        #expect(try checked.equalsRerun())
        var random = SplitMix64(seed: 5)
        for round in 0..<40 {
            // Neighbours of the models renamed in the batch, renamed one at a time.
            let writer = all[[2, 3, 4, 5, 6, 9, 10][round % 7]]
            writer.name = names[Int(random.next() % UInt64(names.count))] + (round % 3 == 0 ? "" : " \(round)")
            #expect(try checked.equalsRerun(), "round \(round)")
        }
    }

    @Test(
        "A model still in a batch of its own when a context batch ends keeps its place and key until its own batch ends, both ways",
        arguments: [true, false])
    func ownBatchOpenAtTheEnd(ascending: Bool) throws {
        let names = ["gus the elder", "gus the younger", "ann", "bob", "Åsa"]
        let (context, all) = writers(20, names: names)
        let checked = try CheckedLiveResults(
            LiveWriter.query(in: context).sorted(by: \.name, ascending: ascending), searchCostFactor: 0)
        context.batchChanges {
            all[0].name = "gus the eldest"
            all[1].beginChanges()
            all[1].name = "aaa"
            try? all[1].endChanges()  // reported: w1 is one of the batch's models
            all[1].beginChanges()
            all[1].name = "abc"  // not reported: its own batch is still open at the context's end
            all[2].name = "zzz"
        }
        // w1 is held by its name at its own batch's start ("aaa"), with that name's key.
        #expect(checked.live.contains { $0 === all[1] })
        #expect(try CheckedLiveResults.keysAgree(checked.live))
        #expect(checked.live.walkedBatches == 1)
        all[3].name = "gus the elder 2"
        #expect(try CheckedLiveResults.keysAgree(checked.live))
        try all[1].endChanges()
        #expect(try checked.equalsRerun())
    }

    @Test("Two strings' kept keys, where both are made and differ, order the strings as < does")
    func prefixKeysOrderAsStrings() {
        // Pieces that make ties, shared prefixes, NULs, non-ASCII letters and combining marks
        // (which join the character before them), at every length around 8 bytes.
        let pieces = ["a", "b", "A", "z", "\u{0}", "-", "é", "e\u{301}", "\u{301}", "Å", "ab", "abcdefgh"]
        var random = SplitMix64(seed: 8)
        var texts = [""]
        for _ in 0..<400 {
            var text = ""
            for _ in 0..<Int(random.next() % 7) { text += pieces[Int(random.next() % UInt64(pieces.count))] }
            texts.append(text)
        }
        let noKey = OrderedModels<LiveWriter>.noKey
        let keys = texts.map { LiveOrder<LiveWriter>.prefixKey($0) }
        #expect(keys.contains(noKey) && keys.contains { $0 != noKey })
        var decided = 0
        for (a, keyA) in zip(texts, keys) where keyA != noKey {
            #expect(a.utf8.prefix(9).allSatisfy { $0 < 0x80 }, "\(a.debugDescription) has a key")
            for (b, keyB) in zip(texts, keys) where keyB != noKey && keyA != keyB {
                #expect((keyA < keyB) == (a < b), "\(a.debugDescription) and \(b.debugDescription)")
                decided += 1
            }
        }
        #expect(decided > 10_000)
        #expect(LiveOrder<LiveWriter>.prefixKey("") == 0)
        #expect(LiveOrder<LiveWriter>.prefixKey("abcdefgh\u{301}") == noKey)
        #expect(LiveOrder<LiveWriter>.prefixKey("abcdefghi") == LiveOrder<LiveWriter>.prefixKey("abcdefgh"))
    }

    @Test("A batch's update events carry an overridden model name, the same for every model")
    func overriddenModelName() throws {
        let context = ModelContext()
        let authors = (0..<3).map { _ in RenamedAuthor.instance(in: context) }
        var names: [String] = []
        let token = context.observeChanges { event in
            if event.kind == .updated { names.append(event.modelName) }
        }
        context.batchChanges {
            for (index, author) in authors.enumerated() { author.name = "a\(index)" }
        }
        authors[0].name = "again"
        #expect(names == ["Scribe", "Scribe", "Scribe", "Scribe"])
        token.cancel()
    }
}
