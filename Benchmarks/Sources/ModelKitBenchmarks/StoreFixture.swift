import BlogFixture
import Foundation
import ModelKit

// The state the store benchmarks share at one size (issue #31): the blog in a ModelStore (binary
// property list, `.full` durability, compaction only on request) and in SQLite through GRDB, built
// once and reused by every `store-*` benchmark of that size. Building a million-post graph takes
// seconds and about a gigabyte, so it is not rebuilt per benchmark or per run.
//
// The saves change the same graph over and over: each run edits its posts' titles and bodies
// with a new round number, so every edit is a real change, and posts are never the spot-checked
// ones, so the opens can still check the blog's original content.

final class StoreFixture {
    let data: BlogData
    let store: ModelStore
    /// The store's base; its journal is beside it (`-journal`).
    let storeURL: URL
    /// The posts of `store.context` in blog order (post `i` of the data).
    let posts: [BenchPost]
    let grdb: GRDBBlog
    /// Where "ModelKit full rewrite" writes the whole context.
    let rewriteURL: URL
    /// How many edits the fixture has made, to make each edit's text new.
    private var round = 0
    /// The opens' input files, made on first use.
    private var openFiles: [Bool: StoreOpenFiles] = [:]
    /// ModelKit's peak resident growth while opening, without and with the journal, for the notes.
    var openPeakGrowth: [Bool: Int] = [:]

    /// The benchmarks run one after another on one task, and only they touch this; the fixture of
    /// the previous size is closed and released when the size changes.
    nonisolated(unsafe) private static var current: StoreFixture?

    /// The fixture of `data`'s size, built on first use.
    static func shared(for data: BlogData) throws -> StoreFixture {
        if let current, current.data.n == data.n { return current }
        current?.store.close()
        current = nil
        let fixture = try StoreFixture(data)
        current = fixture
        return fixture
    }

    /// The options of every store the benchmarks open: the "ModelKit" subject.
    static var options: ModelStore.Options {
        var options = ModelStore.Options()
        options.format = .binaryPropertyList
        options.durability = .full
        options.compactionThreshold = nil
        return options
    }

    private init(_ data: BlogData) throws {
        self.data = data
        let scratch = ScratchDirectory.shared
        rewriteURL = try scratch.file("rewrite.plist", n: data.n)
        storeURL = try scratch.file("store.plist", n: data.n)
        store = try ModelStore(url: storeURL, options: Self.options)
        let graph = buildModelKitGraph(data, in: store.context)
        BenchBlog.instance(in: store.context).authors = ModelArray(graph.authors)
        posts = graph.posts
        try store.compact()
        grdb = try GRDBBlog.create(data, at: try scratch.file("blog.sqlite", n: data.n))
    }

    // MARK: - Edits

    /// `count` posts (at most the blog's, less the spot-checked ones), spread evenly over the blog.
    func changedPosts(_ count: Int) -> [Int] {
        let spotChecked = Set(data.spotCheckedPosts)
        let step = max(1, data.n / count)
        return Array(stride(from: 1, to: data.n, by: step).lazy.filter { !spotChecked.contains($0) }.prefix(count))
    }

    /// New titles and bodies for `posts`, different from every earlier edit.
    func nextEdits(_ posts: [Int]) -> [PostEdit] {
        round += 1
        let round = self.round
        return posts.map { i in
            PostEdit(post: i, title: "\(data.titles[i]) (edit \(round))", body: "\(data.bodies[i]) Edited in round \(round).")
        }
    }

    /// Makes `edits` in the store's context, as an app changes its models before saving.
    func apply(_ edits: [PostEdit]) {
        for edit in edits {
            posts[edit.post].title = edit.title
            posts[edit.post].body = edit.body
        }
    }

    /// Saves whatever is pending in the store (untimed), so that a timed save holds only its own edits.
    func flush() throws {
        if store.needsSaving { try store.save() }
    }

    // MARK: - The opens' files

    /// The files the opens read: the store's base alone, or with a journal of about 10% of the base's
    /// bytes made by saves with compaction off; and the SQLite database, alone or with a WAL of about
    /// 10% of its bytes made by transactions of the same edits.
    func openFiles(withJournal journal: Bool) throws -> StoreOpenFiles {
        if let files = openFiles[journal] { return files }
        let scratch = ScratchDirectory.shared
        let name = journal ? "open-journal" : "open"
        try flush()
        try store.compact()
        try grdb.checkpoint()
        var saves = 0
        var grdbSaves = 0
        if journal {
            // Chunks of 1% of the posts, one save (transaction) each, until the log holds a tenth of
            // the base: the store's journal with compaction off; SQLite's WAL with no automatic
            // checkpoint. A transaction logs whole pages, so the WAL reaches a tenth in fewer saves.
            let chunks = changedPosts(data.n / 10).chunked(max(1, data.n / 100))
            while store.statistics.journalBytes < store.statistics.baseBytes / 10 && saves < 1_000 {
                apply(nextEdits(chunks[saves % chunks.count]))
                try store.save()
                saves += 1
            }
            try grdb.setAutocheckpoint(pages: 0)
            while grdb.fileSizes.wal < grdb.fileSizes.database / 10 && grdbSaves < 1_000 {
                try grdb.save(nextEdits(chunks[grdbSaves % chunks.count]))
                grdbSaves += 1
            }
        }
        let files = StoreOpenFiles(
            store: try scratch.file("\(name)-store.plist", n: data.n), grdb: try scratch.file("\(name)-blog.sqlite", n: data.n),
            saves: saves, grdbSaves: grdbSaves, baseBytes: store.statistics.baseBytes,
            journalBytes: store.statistics.journalBytes,
            grdbBytes: grdb.fileSizes)
        try copyFiles(from: storeURL, to: files.store, suffixes: ["", "-journal"])
        try copyFiles(from: grdb.url, to: files.grdb, suffixes: ["", "-wal"])
        if journal {
            try grdb.setAutocheckpoint(pages: GRDBBlog.defaultAutocheckpointPages)
            try grdb.checkpoint()
        }
        openFiles[journal] = files
        return files
    }
}

/// The input files of one open benchmark, and what they hold.
struct StoreOpenFiles {
    /// The store's base; its journal is beside it (`-journal`) when it has one.
    let store: URL
    /// The SQLite database; its WAL is beside it (`-wal`) when it has one.
    let grdb: URL
    /// The saves that made the journal, and the transactions that made the WAL.
    let saves: Int
    let grdbSaves: Int
    let baseBytes: Int
    let journalBytes: Int
    let grdbBytes: (database: Int, wal: Int)
}

/// Copies `source` + each suffix that exists to `target` + the same suffix, replacing it; removes
/// `target` + a suffix whose source does not exist.
///
/// Each copy is flushed to disk before this returns: otherwise the kernel writes back hundreds of
/// megabytes of the copy while the next timed open runs, on the same two cores.
func copyFiles(from source: URL, to target: URL, suffixes: [String]) throws {
    let manager = FileManager.default
    for suffix in suffixes {
        let from = source.path + suffix
        let to = target.path + suffix
        try? manager.removeItem(atPath: to)
        guard manager.fileExists(atPath: from) else { continue }
        try manager.copyItem(atPath: from, toPath: to)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: to))
        defer { try? handle.close() }
        try handle.synchronize()
    }
}

extension Array {
    /// The array in consecutive slices of `size` elements (the last may be shorter).
    func chunked(_ size: Int) -> [[Element]] {
        stride(from: 0, to: count, by: size).map { Array(self[$0..<Swift.min($0 + size, count)]) }
    }
}
