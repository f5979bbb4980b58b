import BlogFixture

/// One named benchmark: given the blog's data at one size, times ModelKit and its peers.
struct Benchmark: Sendable {
    /// The name used in tables, reports and `--filter`.
    let name: String
    /// Runs the benchmark at one size and returns one table of rows per variant (most benchmarks
    /// have one; the queries have one per selectivity), ModelKit first in each.
    let run: @Sendable (_ data: BlogData, _ session: inout Session) throws -> [BenchmarkResult]
    /// For the service benchmarks: runs at `n` models against the Kinto server, asynchronously
    /// (`run` is then unused). They are only selected by a filter naming them.
    var runOnServer: (@Sendable (_ n: Int, _ session: inout Session) async throws -> BenchmarkResult)?

    /// For a benchmark whose size is its own (the file benchmarks' bytes): that size. It runs
    /// once, at the first of `--sizes`, and is reported at this `n`.
    var fixedN: Int?

    /// Whether it needs the Kinto server (and so runs only when a `--filter` part starts with
    /// "service", "sync" or "files").
    var needsServer: Bool { runOnServer != nil }

    /// A benchmark with one table per size.
    init(name: String, run: @escaping @Sendable (_ data: BlogData, _ session: inout Session) throws -> BenchmarkResult) {
        self.name = name
        self.run = { data, session in [try run(data, &session)] }
    }

    /// A service benchmark, run against the Kinto server with `n` models.
    init(name: String, needsServer: Bool, run: @escaping @Sendable (_ n: Int, _ session: inout Session) async throws -> BenchmarkResult) {
        precondition(needsServer, "use init(name:run:) for a benchmark without the server")
        self.name = name
        self.run = { _, _ in [] }
        runOnServer = run
    }

    /// A server benchmark of a size of its own, `n` (see ``fixedN``).
    init(name: String, fixedN n: Int, run: @escaping @Sendable (_ n: Int, _ session: inout Session) async throws -> BenchmarkResult) {
        self.name = name
        self.run = { _, _ in [] }
        runOnServer = run
        fixedN = n
    }

    /// A benchmark with several tables per size (``BenchmarkResult/selectivity`` tells them apart).
    init(name: String, variants: @escaping @Sendable (_ data: BlogData, _ session: inout Session) throws -> [BenchmarkResult]) {
        self.name = name
        run = variants
    }
}

/// What the `seconds` column of a benchmark holds.
enum MeasuredUnit: Equatable {
    case seconds
    /// Bytes of memory (`graph-memory`), reported in the `seconds` field of the JSON report.
    case bytes
}

/// The rows of one benchmark at one size, plus lines of context printed under its table.
struct BenchmarkResult {
    var rows: [(subject: String, seconds: Double)]
    var notes: [String] = []
    /// Peak resident memory in bytes during the runs of the subjects that measure it.
    var peakRSSBytes: [String: Int] = [:]
    /// The share of the queried models that match (queries only): the `selectivity` of the report.
    var selectivity: Double?
    /// What the rows measure: seconds, or bytes for `graph-memory`.
    var unit = MeasuredUnit.seconds
    /// Requests, bytes and CPU of each subject of a service benchmark, by subject.
    var serviceStats: [String: ServiceStats] = [:]

    /// Rows measured elsewhere (the service benchmarks).
    init(rows: [(subject: String, seconds: Double)], notes: [String] = []) {
        self.rows = rows
        self.notes = notes
    }

    /// Times `subjects` (ModelKit first, then its peers) and `extras` (parts of ModelKit's work,
    /// or variants of a peer), all interleaved. Extras are reported in notes, not as rows, with
    /// their time as a multiple of ModelKit's.
    init(timing subjects: [Subject], extras: [Subject] = [], notes: [String] = [], session: inout Session) throws {
        let medians = try measure(subjects + extras, session: &session)
        rows = zip(subjects, medians).map { ($0.name, $1) }
        let base = medians[0]
        for (extra, time) in zip(extras, medians[subjects.count...]) {
            let share = base > 0 ? " (\(fixed(time / base, 2)) x ModelKit)" : ""
            self.notes.append("also timed: \(extra.name): \(fixed(time, 6)) s" + share)
        }
        self.notes += notes
    }
}

enum Benchmarks {
    /// Every benchmark, in the order they run.
    static let all: [Benchmark] = [
        create,
        graphMemory,
        lookupModelId,
        lookupObjectId,
        serializeJSON,
        deserializeJSON,
        setProperty,
        setPropertyBatched,
        writeJSON,
        loadJSON,
        writePlist,
        loadPlist,
        saveLoad,
        queryBetween,
        queryIn,
        queryBeginsWith,
        queryCompound,
        queryBesideInt64,
        queryInt64,
        queryBool,
        queryGeoPoint,
        queryThroughReference,
        querySortCaseInsensitive,
        liveEdit,
        liveInsert,
        liveRemove,
        liveBatch,
        liveBatchFew,
        relationshipsAppend,
        relationshipsCascade,
        storeSave1,
        storeSave1k,
        storeSave100k,
        storeOpen,
        storeOpenJournal,
        storeCompact,
        serviceSave,
        serviceFetch,
        serviceQuery,
        serviceConcurrent,
        syncFirst,
        syncIncremental,
        syncPush,
        filesUploadLarge,
        filesUploadMany,
        filesDownloadLarge,
        filesDownloadMany,
    ]

    static var names: [String] { all.map(\.name) }
}
