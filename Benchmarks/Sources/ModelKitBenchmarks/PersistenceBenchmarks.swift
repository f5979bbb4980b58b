import Foundation
import ModelKit

// Whole-graph files (issue #3): the blog written to and loaded from a file as JSON and as a binary
// property list, by ModelKit, by Foundation's Codable encoders on plain acyclic structs, and by
// NSKeyedArchiver on the cyclic graph as NSObject classes.
//
// Writers are timed from the graph in memory to the file on disk; loaders from the file on disk
// to the graph in memory. Each subject's blog is built once per size, outside the timed region.
//
// The write benchmarks time one subject after another, not interleaved: each subject's blog is
// built, timed and released before the next one is built, so that at a million posts the process
// holds one graph at a time and each subject's peak resident memory is its own. The load
// benchmarks' inputs are files, so their runs are interleaved as in the rest of the suite.

extension Benchmarks {
    /// The most posts at which NSKeyedArchiver and NSKeyedUnarchiver run without `--full`.
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

    /// Whether `writer` is skipped at `n` posts: NSKeyed* above ``slowPeerLimit`` without `--full`.
    static func skips(_ writer: FileWriter, n: Int, session: Session) -> Bool {
        writer.isSlow && n > slowPeerLimit && !session.full
    }

    static let writeJSON = Benchmark(name: "write-json") { data, session in
        try timeWrites([FileSubjects.modelKit(.json), FileSubjects.jsonEncoder], data: data, session: &session)
    }

    static let loadJSON = Benchmark(name: "load-json") { data, session in
        try timeLoads([FileSubjects.modelKitLoader(.json), FileSubjects.jsonDecoder], data: data, session: &session)
    }

    static let writePlist = Benchmark(name: "write-plist") { data, session in
        try timeWrites(
            [FileSubjects.modelKit(.binaryPropertyList), FileSubjects.propertyListEncoder, FileSubjects.keyedArchiver],
            data: data, session: &session)
    }

    static let loadPlist = Benchmark(name: "load-plist") { data, session in
        try timeLoads(
            [FileSubjects.modelKitLoader(.binaryPropertyList), FileSubjects.propertyListDecoder, FileSubjects.keyedUnarchiver],
            data: data, session: &session)
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
                notes.append("\(writer.subject) skipped above n = \(grouped(slowPeerLimit)) (too slow); --full runs it")
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
                    "\(loader.subject) skipped above n = \(grouped(slowPeerLimit)) (its input is too slow to write); --full runs it"
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
    /// NSKeyedArchiver: only runs above ``Benchmarks/slowPeerLimit`` posts with `--full`.
    var isSlow = false
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

enum FileSubjects {
    static func modelKit(_ format: PersistenceFormat) -> FileWriter {
        FileWriter(subject: Report.modelKit, fileName: format == .json ? "modelkit.json" : "modelkit.plist") { data, url in
            let context = ModelContext()
            _ = buildModelKitBlog(data, in: context)
            return { try modelKitWrite(context, to: url, format: format) }
        }
    }

    static var jsonEncoder: FileWriter {
        FileWriter(subject: "JSONEncoder", fileName: "codable.json") { data, url in
            let blog = buildPlainBlog(data)
            let encoder = JSONEncoder()
            return { try encoder.encode(blog).write(to: url, options: .atomic) }
        }
    }

    static var propertyListEncoder: FileWriter {
        FileWriter(subject: "PropertyListEncoder", fileName: "codable.plist") { data, url in
            let blog = buildPlainBlog(data)
            let encoder = PropertyListEncoder()
            encoder.outputFormat = .binary
            return { try encoder.encode(blog).write(to: url, options: .atomic) }
        }
    }

    static var keyedArchiver: FileWriter {
        FileWriter(subject: "NSKeyedArchiver", fileName: "keyed.plist", isSlow: true) { data, url in
            let blog = buildArchivedBlog(data)
            return { try writeKeyedArchive(blog, to: url) }
        }
    }

    static func modelKitLoader(_ format: PersistenceFormat) -> FileLoader {
        FileLoader(subject: Report.modelKit, writer: modelKit(format)) { data, url, recorder in
            Subject(
                Report.modelKit, recordingPeaksIn: recorder, setup: {},
                body: { _ in try modelKitLoad(from: url, format: format) },
                verify: { context in try verifyLoadedBlog(context, data) })
        }
    }

    static var jsonDecoder: FileLoader {
        FileLoader(subject: "JSONDecoder", writer: jsonEncoder) { data, url, recorder in
            let decoder = JSONDecoder()
            return Subject(
                "JSONDecoder", recordingPeaksIn: recorder, setup: {},
                body: { _ in try decoder.decode(PlainBlog.self, from: Data(contentsOf: url)) },
                verify: { blog in try verifyLoadedBlog(blog, data) })
        }
    }

    static var propertyListDecoder: FileLoader {
        FileLoader(subject: "PropertyListDecoder", writer: propertyListEncoder) { data, url, recorder in
            let decoder = PropertyListDecoder()
            return Subject(
                "PropertyListDecoder", recordingPeaksIn: recorder, setup: {},
                body: { _ in try decoder.decode(PlainBlog.self, from: Data(contentsOf: url)) },
                verify: { blog in try verifyLoadedBlog(blog, data) })
        }
    }

    static var keyedUnarchiver: FileLoader {
        FileLoader(subject: "NSKeyedUnarchiver", writer: keyedArchiver) { data, url, recorder in
            Subject(
                "NSKeyedUnarchiver", recordingPeaksIn: recorder, setup: {},
                body: { _ in try loadKeyedArchive(from: url) },
                verify: { blog in try verifyLoadedBlog(blog, data) })
        }
    }
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

/// Checks the decoded structs: counts, every author's post ids, and the spot-checked posts'
/// content and ids (both ways). Returns the number of posts.
func verifyLoadedBlog(_ blog: PlainBlog, _ data: BlogData) throws -> Int {
    _ = try expect(blog.authors.count, data.authorCount, "authors decoded")
    let posts = try expect(blog.posts.count, data.n, "posts decoded")
    _ = try expect(blog.authors.reduce(0) { $0 + $1.postIds.count }, data.n, "post ids held by the decoded authors")
    for i in data.spotCheckedPosts {
        let a = data.author(ofPost: i)
        let author = blog.authors[a]
        let post = blog.posts[i]
        try check(
            author.name == data.authorNames[a] && author.email == data.authorEmails[a] && author.age == data.authorAges[a],
            "author \(a)")
        try check(
            post.title == data.titles[i] && post.body == data.bodies[i] && post.publishedAt == data.dates[i]
                && post.tags == data.tags[i],
            "post \(i)")
        try check(
            post.authorId == author.id && author.postIds[i / data.authorCount] == post.id, "the ids of post \(i) and its author")
    }
    return posts
}

/// Checks the unarchived objects: counts, every author's posts, and the spot-checked posts'
/// content and author (both ways). Returns the number of posts.
func verifyLoadedBlog(_ blog: ArchivedBlog, _ data: BlogData) throws -> Int {
    _ = try expect(blog.authors.count, data.authorCount, "authors unarchived")
    let posts = try expect(blog.authors.reduce(0) { $0 + $1.posts.count }, data.n, "posts held by the unarchived authors")
    for i in data.spotCheckedPosts {
        let a = data.author(ofPost: i)
        let author = blog.authors[a]
        let post = author.posts[i / data.authorCount]
        try check(
            author.name == data.authorNames[a] && author.email == data.authorEmails[a] && author.age == data.authorAges[a],
            "author \(a)")
        try check(
            post.title == data.titles[i] && post.body == data.bodies[i] && post.publishedAt == data.dates[i]
                && post.tags == data.tags[i],
            "post \(i)")
        try check(post.author === author, "the author of post \(i)")
    }
    return posts
}
