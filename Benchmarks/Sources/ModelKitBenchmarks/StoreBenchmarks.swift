import BlogFixture
import Foundation
import ModelKit

// The store benchmarks (issue #31): saving what changed, opening, and compaction, on the blog held
// by StoreFixture. Subjects: "ModelKit" (ModelStore), "ModelKit full rewrite" (the whole context
// written with `write(to:format:)`, or for the opens loaded with `load(from:)`), and "GRDB (WAL)"
// (StorePeer.swift). All three make every save durable with fsync before it returns.

extension Benchmarks {
    static let storeSave1 = Benchmark(name: "store-save-1") { data, session in
        try timeStoreSaves(changing: 1, data: data, session: &session)
    }

    static let storeSave1k = Benchmark(name: "store-save-1k") { data, session in
        try timeStoreSaves(changing: 1_000, data: data, session: &session)
    }

    static let storeSave100k = Benchmark(name: "store-save-100k") { data, session in
        try timeStoreSaves(changing: 100_000, data: data, session: &session)
    }

    static let storeOpen = Benchmark(name: "store-open") { data, session in
        try timeStoreOpens(withJournal: false, data: data, session: &session)
    }

    static let storeOpenJournal = Benchmark(name: "store-open-journal") { data, session in
        try timeStoreOpens(withJournal: true, data: data, session: &session)
    }

    static let storeCompact = Benchmark(name: "store-compact") { data, session in
        try timeStoreCompaction(data: data, session: &session)
    }

    static let fullRewrite = "ModelKit full rewrite"
    static let grdbWAL = "GRDB (WAL)"

    /// Times a save after changing `count` posts' titles and bodies (or every post but the
    /// spot-checked ones, in a smaller blog). Each subject makes its own edits in its untimed setup.
    static func timeStoreSaves(changing count: Int, data: BlogData, session: inout Session) throws -> BenchmarkResult {
        let fixture = try StoreFixture.shared(for: data)
        let store = fixture.store
        let changed = fixture.changedPosts(count)
        var perSave: [(syncs: Int, journalBytes: Int)] = []
        let modelKit = Subject(
            Report.modelKit,
            setup: { () throws -> ModelStore.Statistics in
                try fixture.flush()  // the full rewrite's edits are pending in the same context
                fixture.apply(fixture.nextEdits(changed))
                return store.statistics
            },
            body: { before in
                try store.save()
                return before
            },
            verify: { before in
                let after = store.statistics
                perSave.append((after.syncs - before.syncs, after.journalBytes - before.journalBytes))
                return try expect(after.saves - before.saves, 1, "saves")
            })
        let rewrite = Subject(
            fullRewrite,
            setup: { fixture.apply(fixture.nextEdits(changed)) },
            body: { _ in try modelKitWrite(store.context, to: fixture.rewriteURL, format: .binaryPropertyList) },
            verify: { _ in try expectFile(fixture.rewriteURL) })
        let grdb = Subject(
            grdbWAL,
            setup: { fixture.nextEdits(changed) },
            body: { edits in
                try fixture.grdb.save(edits)
                return edits.count
            },
            verify: { $0 })
        var result = try BenchmarkResult(timing: selected([modelKit, rewrite, grdb], session), session: &session)
        result.notes.append("changed: \(grouped(changed.count)) posts (title and body) per save")
        if let last = perSave.last {
            result.notes.append(
                "ModelKit: fsync calls per save \(perSave.map { String($0.syncs) }.joined(separator: ", ")) (statistics.syncs); "
                    + "journal +\(grouped(last.journalBytes)) bytes per save; base \(megabytes(store.statistics.baseBytes))")
        }
        result.notes.append("ModelKit full rewrite: \(megabytes(fileSize(fixture.rewriteURL))) per save")
        return result
    }

    /// Times opening the store (base alone, or with a journal of about 10% of the base), loading the
    /// base with `load(from:)`, and opening the SQLite database and reading every row. Each run opens
    /// fresh copies of the files (copied untimed), since closing a database or store may change them.
    static func timeStoreOpens(withJournal journal: Bool, data: BlogData, session: inout Session) throws -> BenchmarkResult {
        let fixture = try StoreFixture.shared(for: data)
        let files = try fixture.openFiles(withJournal: journal)
        let scratch = ScratchDirectory.shared
        let storeCopy = try scratch.file("run-store.plist", n: data.n)
        let grdbCopy = try scratch.file("run-blog.sqlite", n: data.n)
        let recorders = (modelKit: PeakRecorder(), rewrite: PeakRecorder(), grdb: PeakRecorder())
        let modelKit = Subject(
            Report.modelKit, recordingPeaksIn: recorders.modelKit,
            setup: { try copyFiles(from: files.store, to: storeCopy, suffixes: ["", "-journal"]) },
            body: { _ in try ModelStore(url: storeCopy, options: StoreFixture.options) },
            verify: { store in
                defer { store.close() }
                return try verifyLoadedBlog(store.context, data)
            })
        // The same fresh copy as the store opens: a file just written is read at another speed
        // than one that has sat in the page cache (huge pages for the read buffer can be scarcer).
        let rewrite = Subject(
            fullRewrite, recordingPeaksIn: recorders.rewrite,
            setup: { try copyFiles(from: files.store, to: storeCopy, suffixes: ["", "-journal"]) },
            body: { _ in try modelKitLoad(from: storeCopy, format: .binaryPropertyList) },
            verify: { try verifyLoadedBlog($0, data) })
        let grdb = Subject(
            grdbWAL, recordingPeaksIn: recorders.grdb,
            setup: {
                try? FileManager.default.removeItem(atPath: grdbCopy.path + "-shm")
                try copyFiles(from: files.grdb, to: grdbCopy, suffixes: ["", "-wal"])
            },
            body: { _ in try GRDBBlog.open(grdbCopy) },
            verify: { try verifyLoadedBlog($0.graph, data) })
        var result = try BenchmarkResult(timing: selected([modelKit, rewrite, grdb], session), session: &session)
        result.notes.append(
            "ModelKit: base \(megabytes(files.baseBytes)), journal \(megabytes(files.journalBytes))"
                + (journal ? " (\(percent(files.journalBytes, of: files.baseBytes)) of the base, \(files.saves) saves)" : ""))
        result.notes.append(
            "GRDB (WAL): database \(megabytes(files.grdbBytes.database)), WAL \(megabytes(files.grdbBytes.wal))"
                + (journal
                    ? " (\(percent(files.grdbBytes.wal, of: files.grdbBytes.database)), \(files.grdbSaves) transactions)" : ""))
        for (name, recorder) in [
            (Report.modelKit, recorders.modelKit), (fullRewrite, recorders.rewrite), (grdbWAL, recorders.grdb),
        ] {
            guard let run = recorder.highest else { continue }
            result.peakRSSBytes[name] = run.peak
            result.notes.append(
                "\(name): RSS before opening \(megabytes(run.start)), peak while opening \(megabytes(run.peak)) "
                    + "(+\(megabytes(run.peak - run.start)))")
        }
        if let run = recorders.modelKit.highest { fixture.openPeakGrowth[journal] = run.peak - run.start }
        if journal, let with = fixture.openPeakGrowth[true], let without = fixture.openPeakGrowth[false] {
            result.notes.append(
                "ModelKit: peak growth while opening with the journal \(megabytes(with)), without \(megabytes(without)) "
                    + "(store-open): \(with >= without ? "+" : "-")\(megabytes(abs(with - without))) "
                    + "for a journal of \(megabytes(files.journalBytes))")
        }
        return result
    }

    /// Times compaction after a save of changes to a tenth of the posts (a journal of about 10% of the
    /// base): the store's `compact()`, the full rewrite after the same edits, and SQLite's WAL
    /// checkpoint(TRUNCATE) after the same edits in one transaction with automatic checkpoints off.
    /// Also timed: VACUUM and then the checkpoint, which rewrites the whole database file.
    static func timeStoreCompaction(data: BlogData, session: inout Session) throws -> BenchmarkResult {
        let fixture = try StoreFixture.shared(for: data)
        let store = fixture.store
        let changed = fixture.changedPosts(data.n / 10)
        var journals: [Int] = []
        let modelKit = Subject(
            Report.modelKit,
            setup: {
                try fixture.flush()
                fixture.apply(fixture.nextEdits(changed))
                try store.save()
                journals.append(store.statistics.journalBytes)
                return store.statistics
            },
            body: { before in
                try store.compact()
                return before
            },
            verify: { before in
                let after = store.statistics
                try check(after.journalBytes < before.journalBytes, "the journal after compaction")
                return try expect(after.compactions - before.compactions, 1, "compactions")
            })
        let rewrite = Subject(
            fullRewrite,
            setup: { fixture.apply(fixture.nextEdits(changed)) },
            body: { _ in try modelKitWrite(store.context, to: fixture.rewriteURL, format: .binaryPropertyList) },
            verify: { _ in try expectFile(fixture.rewriteURL) })
        /// The peer's setup: the same edits committed, left in the WAL.
        func saveInWAL() throws {
            try fixture.grdb.setAutocheckpoint(pages: 0)
            try fixture.grdb.save(fixture.nextEdits(changed))
        }
        func settleWAL() throws -> Int {
            let wal = fixture.grdb.fileSizes.wal
            try fixture.grdb.setAutocheckpoint(pages: GRDBBlog.defaultAutocheckpointPages)
            try fixture.grdb.checkpoint()
            return try expect(wal, 0, "WAL bytes after the checkpoint")
        }
        var walBytes: [Int] = []
        let checkpoint = Subject(
            grdbWAL,
            setup: {
                try saveInWAL()
                walBytes.append(fixture.grdb.fileSizes.wal)
            },
            body: { _ in try fixture.grdb.checkpoint() }, verify: { _ in try settleWAL() })
        let vacuum = Subject(
            "GRDB (WAL): VACUUM, then checkpoint(TRUNCATE)", setup: saveInWAL,
            body: { _ in
                try fixture.grdb.vacuum()
                try fixture.grdb.checkpoint()
            }, verify: { _ in try settleWAL() })
        let subjects = selected([modelKit, rewrite, checkpoint], session)
        let extras = session.includes(subject: grdbWAL) ? [vacuum] : []
        var result = try BenchmarkResult(timing: subjects, extras: extras, session: &session)
        result.notes.append("changed before each compaction: \(grouped(changed.count)) posts (title and body), one save")
        if let journal = journals.last {
            result.notes.append(
                "ModelKit: journal \(megabytes(journal)) (\(percent(journal, of: store.statistics.baseBytes)) of the base) "
                    + "before compaction; base \(megabytes(store.statistics.baseBytes))")
        }
        if let wal = walBytes.last {
            result.notes.append(
                "GRDB (WAL): WAL \(megabytes(wal)) before the checkpoint; database \(megabytes(fixture.grdb.fileSizes.database))")
        }
        return result
    }

    /// The subjects that `--subjects` selects, in order.
    private static func selected(_ subjects: [Subject], _ session: Session) -> [Subject] {
        subjects.filter { session.includes(subject: $0.name) }
    }
}

/// `part` as a percentage of `whole`: `10.2%`.
func percent(_ part: Int, of whole: Int) -> String {
    whole > 0 ? "\(fixed(Double(part) * 100 / Double(whole), 1))%" : "-"
}
