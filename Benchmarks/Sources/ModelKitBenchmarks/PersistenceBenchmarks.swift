import BlogFixture
import Foundation
import ModelKit

// Whole-graph files (issue #3): the blog written to and loaded from a file as JSON and as a binary
// property list, by ModelKit, by Foundation's Codable coders on plain acyclic structs (with the
// same information as ModelKit's file, and in a compact shape: FilePeers.swift), and by
// NSKeyedArchiver on the cyclic graph as NSObject classes (without arrays and with them,
// PeerArchives.swift). The subjects are in FileSubjects.swift.
//
// Writers are timed from the graph in memory to the file on disk; loaders from the file on disk
// to the graph in memory. Each subject's blog is built once per size, outside the timed region.
//
// The write benchmarks time one subject after another, not interleaved: each subject's blog is
// built, timed and released before the next one is built, so that at a million posts the process
// holds one graph at a time and each subject's peak resident memory is its own. The load
// benchmarks' inputs are files, so their runs are interleaved as in the rest of the suite.

extension Benchmarks {
    /// The most posts at which NSKeyedArchiver and NSKeyedUnarchiver on the archive with arrays
    /// run without `--full`.
    ///
    /// On macOS an archiving run takes about 100 s at a million posts (issue #3), so they stop
    /// below that. On Linux, swift-corelibs-foundation's archiver finds objects it has already
    /// written by `isEqual`, not identity, and an NSArray's hash is its count: every author's
    /// ten-post array and every post's three-tag array collide, and archiving grows much faster
    /// than linearly (31 s at 10,000 posts; one run at 100,000 had not finished after 23 minutes).
    /// The loaders need the archive, so both stop at the same size.
    #if os(Linux)
        static let slowPeerLimit = 10_000
    #else
        static let slowPeerLimit = 100_000
    #endif

    /// The most posts at which NSKeyedArchiver and NSKeyedUnarchiver on the array-free archive
    /// run without `--full`, where there is a limit.
    ///
    /// On Linux the array-free archive grows about linearly, but swift-corelibs-foundation's
    /// archiver takes about 0.2 ms a post (on the development machine 2.2 s at 10,000 posts, 17.5 s
    /// at 100,000 and 216 s at a million, peaking at 5.4 GB), so a million posts would add several
    /// minutes a run. Elsewhere it always runs.
    #if os(Linux)
        static let flatArchiveLimit: Int? = 100_000
    #else
        static let flatArchiveLimit: Int? = nil
    #endif

    /// Whether `writer` is skipped at `n` posts: above its limit without `--full`.
    static func skips(_ writer: FileWriter, n: Int, session: Session) -> Bool {
        guard let limit = writer.postLimit else { return false }
        return n > limit && !session.full
    }

    static let writeJSON = Benchmark(name: "write-json") { data, session in
        try timeWrites(FileSubjects.jsonWriters, data: data, session: &session)
    }

    static let loadJSON = Benchmark(name: "load-json") { data, session in
        try timeLoads(FileSubjects.jsonLoaders, data: data, session: &session)
    }

    static let writePlist = Benchmark(name: "write-plist") { data, session in
        try timeWrites(FileSubjects.plistWriters, data: data, session: &session)
    }

    static let loadPlist = Benchmark(name: "load-plist") { data, session in
        try timeLoads(FileSubjects.plistLoaders, data: data, session: &session)
    }

    /// Times each writer in turn: builds its blog, measures the resident memory, times the runs,
    /// releases the blog.
    static func timeWrites(_ writers: [FileWriter], data: BlogData, session: inout Session) throws -> BenchmarkResult {
        var rows: [(subject: String, seconds: Double)] = []
        var notes: [String] = []
        var files: [String] = []
        var peaks: [String: Int] = [:]
        for writer in writers where session.includes(subject: writer.subject) {
            if skips(writer, n: data.n, session: session) {
                notes.append("\(writer.subject) skipped above n = \(grouped(writer.postLimit ?? 0)) (too slow); --full runs it")
                continue
            }
            let url = try ScratchDirectory.shared.file(writer.fileName, n: data.n)
            let recorder = PeakRecorder()
            var builtBytes: Int?
            do {
                let write = try writer.prepare(data, url)
                builtBytes = Memory.settledResidentBytes()
                let subject = Subject(
                    writer.subject, recordingPeaksIn: recorder, setup: {}, body: { _ in try write() },
                    verify: { _ in try expectFile(url) })
                rows.append((writer.subject, try measure([subject], session: &session)[0]))
            }
            files.append("\(writer.subject) \(megabytes(fileSize(url)))")
            if let builtBytes, let run = recorder.highest {
                peaks[writer.subject] = run.peak
                notes.append(
                    "\(writer.subject): RSS after building the graph \(megabytes(builtBytes)), peak while writing "
                        + "\(megabytes(run.peak)) (\(fixed(Double(run.peak) / Double(builtBytes), 2)) x)")
            }
        }
        if !files.isEmpty { notes.insert("files: " + files.joined(separator: ", "), at: 0) }
        return BenchmarkResult(rows: rows, notes: notes, peakRSSBytes: peaks)
    }

    /// Makes sure each loader's input file exists (written by the write benchmark of this size, or
    /// else here, untimed), then times the loaders interleaved.
    static func timeLoads(_ loaders: [FileLoader], data: BlogData, session: inout Session) throws -> BenchmarkResult {
        var notes: [String] = []
        var subjects: [Subject] = []
        var recorders: [PeakRecorder] = []
        var files: [String] = []
        for loader in loaders where session.includes(subject: loader.subject) {
            if skips(loader.writer, n: data.n, session: session) {
                notes.append(
                    "\(loader.subject) skipped above n = \(grouped(loader.writer.postLimit ?? 0)) (its input is too slow to write); --full runs it"
                )
                continue
            }
            let url = try ScratchDirectory.shared.file(loader.writer.fileName, n: data.n)
            if fileSize(url) == 0 {
                let write = try loader.writer.prepare(data, url)
                try write()
            }
            files.append("\(loader.subject) \(megabytes(fileSize(url)))")
            let recorder = PeakRecorder()
            recorders.append(recorder)
            subjects.append(loader.makeSubject(data, url, recorder))
        }
        let medians = try measure(subjects, session: &session)
        var peaks: [String: Int] = [:]
        for (subject, recorder) in zip(subjects, recorders) {
            guard let run = recorder.highest else { continue }
            peaks[subject.name] = run.peak
            notes.append("\(subject.name): RSS before loading \(megabytes(run.start)), peak while loading \(megabytes(run.peak))")
        }
        if !files.isEmpty { notes.insert("files: " + files.joined(separator: ", "), at: 0) }
        return BenchmarkResult(rows: zip(subjects, medians).map { ($0.name, $1) }, notes: notes, peakRSSBytes: peaks)
    }
}

extension BenchmarkResult {
    /// Rows timed elsewhere, with the peak resident memory of the subjects that measured it.
    init(rows: [(subject: String, seconds: Double)], notes: [String], peakRSSBytes: [String: Int]) {
        self.rows = rows
        self.notes = notes
        self.peakRSSBytes = peakRSSBytes
    }
}

// MARK: - Subjects

/// One subject of a write benchmark.
struct FileWriter {
    let subject: String
    /// The name of its file among the files of one size.
    let fileName: String
    /// The most posts at which it runs without `--full` (NSKeyedArchiver), or `nil`: always.
    var postLimit: Int?
    /// Builds the subject's blog from the data (untimed) and returns the timed write to the URL,
    /// which keeps the blog alive for as long as it is.
    let prepare: (BlogData, URL) throws -> () throws -> Void
}

/// One subject of a load benchmark.
struct FileLoader {
    let subject: String
    /// Writes the input file, when the write benchmark has not left it.
    let writer: FileWriter
    /// The timed load from the URL, with an untimed check of what it loaded.
    let makeSubject: (BlogData, URL, PeakRecorder) -> Subject
}

// MARK: - Checks (untimed)

/// Throws unless a writer left a non-empty file at `url`; returns its size.
func expectFile(_ url: URL) throws -> Int {
    let size = fileSize(url)
    guard size > 0 else { throw VerificationError(description: "no file written at \(url.path)") }
    return size
}

/// Throws unless `condition` holds.
func check(_ condition: Bool, _ what: @autoclosure () -> String) throws {
    guard condition else { throw VerificationError(description: "loaded data is wrong: \(what())") }
}

extension BlogData {
    /// The posts whose content every load is checked against: the first, one in the middle and
    /// the last.
    var spotCheckedPosts: [Int] { [0, n / 2 + 3, n - 1] }
}

/// Checks ModelKit's loaded context: model counts, every author's posts, and the spot-checked
/// posts' content and author (both ways). Returns the number of models.
func verifyLoadedBlog(_ context: ModelContext, _ data: BlogData) throws -> Int {
    let models = try expect(context.count, data.n + data.authorCount + 1, "models in the loaded context")
    let blogs = context.models(of: BenchBlog.self)
    _ = try expect(blogs.count, 1, "blogs in the loaded context")
    let authors = blogs[0].authors.models
    _ = try expect(authors.count, data.authorCount, "authors of the loaded blog")
    _ = try expect(authors.reduce(0) { $0 + $1.posts.count }, data.n, "posts held by the loaded authors")
    for i in data.spotCheckedPosts {
        let a = data.author(ofPost: i)
        let author = authors[a]
        let post = author.posts.models[i / data.authorCount]
        try check(
            author.name == data.authorNames[a] && author.email == data.authorEmails[a] && author.age == data.authorAges[a],
            "author \(a)")
        try check(
            post.title == data.titles[i] && post.body == data.bodies[i] && post.publishedAt == data.dates[i]
                && post.tags == data.tags[i],
            "post \(i)")
        try check(post.author === author, "the author of post \(i)")
    }
    return models
}
