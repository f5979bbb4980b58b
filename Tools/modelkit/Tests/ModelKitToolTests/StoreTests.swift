import Foundation
import ModelKit
import Testing

@Suite("stores: info, check --recover and compact") @MainActor
struct StoreTests {
    /// A store with three saves after its first: Ann and two posts, one renamed, one removed.
    func makeStore(format: PersistenceFormat = .json) throws -> URL {
        let url = try temporaryDirectory().appendingPathComponent("notes.store")
        var options = ModelStore.Options()
        options.format = format
        options.compactionThreshold = nil
        let store = try ModelStore(url: url, options: options)
        let ann = Author.instance(objectId: "ann", in: store.context)
        ann.name = "Ann"
        try store.save()
        let post = Post.instance(objectId: "p1", in: store.context)
        post.title = "First"
        Post.instance(objectId: "p2", in: store.context).title = "Second"
        try store.save()
        post.title = "First, renamed"
        try store.save()
        store.context.model(Post.self, objectId: "p2")!.removeFromContext()
        try store.save()
        store.close()
        return url
    }

    @Test("info of a store shows its journal: saves, bytes and the last save")
    func info() throws {
        let url = try makeStore()
        let run = try modelkit("info", url.path)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("models:       0"), "the base is empty until a compaction")
        #expect(run.stdout.contains("journal:      \(url.path)-journal"))
        #expect(run.stdout.contains("  saves:      4"))
        #expect(run.stdout.contains("  last save:  20"))
    }

    @Test("check of a store checks each record, and notes a torn save at the end without failing")
    func tornSave() throws {
        let url = try makeStore()
        let journal = FileHandle(forWritingAtPath: url.path + "-journal")!
        try journal.seekToEnd()
        try journal.write(contentsOf: Data("MKRC\u{1}\u{1}".utf8))
        try journal.close()
        let run = try modelkit("check", url.path)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("note: journal: 4 saves"))
        #expect(run.stdout.contains("note: the journal ends with 6 bytes of a save torn by a crash"))
        #expect(try modelkit("info", url.path).stdout.contains("  torn save:  6 bytes at the end"))
    }

    /// Damages the second record's payload: a valid record follows, so opening fails.
    func damage(_ url: URL) throws -> Int {
        var offsets: [Int] = []
        _ = try ModelJournal.read(at: URL(fileURLWithPath: url.path + "-journal")) { offsets.append($0.offset) }
        var bytes = try Data(contentsOf: URL(fileURLWithPath: url.path + "-journal"))
        bytes[offsets[1] + 30] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: url.path + "-journal"))
        return offsets[1]
    }

    @Test("check of a damaged journal is status 1 with the byte offset; --recover writes the saves before it to a new file")
    func recover() throws {
        let url = try makeStore()
        let offset = try damage(url)
        let journalBefore = try Data(contentsOf: URL(fileURLWithPath: url.path + "-journal"))
        let run = try modelkit("check", url.path)
        #expect(run.status == 1)
        #expect(run.stderr.contains("byte \(offset): expected a whole record"))
        #expect(run.stderr.contains("damagedJournal"))

        let output = url.deletingLastPathComponent().appendingPathComponent("recovered.json").path
        let recovered = try modelkit("check", url.path, "--recover", output)
        #expect(recovered.status == 1, "the store was damaged")
        #expect(recovered.stdout.contains("recovered: 1 models from the base and 1 saves to \(output)"))
        #expect(recovered.stderr.contains("the saves from there on are not in \(output)"))
        let context = ModelContext()
        try context.load(from: URL(fileURLWithPath: output))
        #expect(context.models(of: Author.self).map(\.name) == ["Ann"])
        // Never in place: the store's files are as they were.
        #expect(try Data(contentsOf: URL(fileURLWithPath: url.path + "-journal")) == journalBefore)
        // Nor over an existing file.
        let again = try modelkit("check", url.path, "--recover", output)
        #expect(again.status == 2)
        #expect(again.stderr.contains("expected a new file for --recover"))
    }

    @Test(
        "compact folds the journal into the base, which the library then loads alone",
        arguments: [PersistenceFormat.json, .binaryPropertyList])
    func compact(format: PersistenceFormat) throws {
        let url = try makeStore(format: format)
        let run = try modelkit("compact", url.path)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("compacted: 2 models, 4 saves folded in"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: url.path + "-journal")).count == 16)
        let context = ModelContext()
        try context.load(from: url)
        #expect(context.models(of: Post.self).map(\.title) == ["First, renamed"])
        let store = try ModelStore(url: url)
        #expect(store.context.count == 2)
        #expect(!store.needsSaving)
    }

    @Test("compact fails on a store the library has open, and on a damaged journal, changing nothing")
    func compactRefuses() throws {
        let url = try makeStore()
        let base = try Data(contentsOf: url)
        do {
            let store = try ModelStore(url: url)
            let run = try modelkit("compact", url.path)
            #expect(run.status == 1)
            #expect(run.stderr.contains("expected a store no program has open, found it locked (storeLocked)"))
            store.close()
        }
        _ = try damage(url)
        let damaged = try modelkit("compact", url.path)
        #expect(damaged.status == 1)
        #expect(damaged.stderr.contains("check --recover"))
        #expect(try Data(contentsOf: url) == base)
        let plain = try blogFile(posts: 1, in: url.deletingLastPathComponent())
        #expect(try modelkit("compact", plain).stderr.contains("expected a store"))
    }
}
