/// One named benchmark: given the blog's data at one size, times ModelKit and its peers.
struct Benchmark: Sendable {
    /// The name used in tables, reports and `--filter`.
    let name: String
    /// Runs the benchmark at one size and returns its rows, ModelKit first.
    let run: @Sendable (_ data: BlogData, _ session: inout Session) throws -> BenchmarkResult
}

/// The rows of one benchmark at one size, plus lines of context printed under its table.
struct BenchmarkResult {
    var rows: [(subject: String, seconds: Double)]
    var notes: [String] = []

    /// Times `subjects` (ModelKit first, then its peers) and `phases` (parts of ModelKit's work,
    /// reported in a note rather than as rows), all interleaved.
    init(timing subjects: [Subject], phases: [Subject] = [], notes: [String] = [], session: inout Session) throws {
        let medians = try measure(subjects + phases, session: &session)
        rows = zip(subjects, medians).map { ($0.name, $1) }
        if !phases.isEmpty {
            let times = zip(phases, medians[subjects.count...]).map { "\($0.name) \(fixed($1, 6)) s" }
            self.notes.append("ModelKit phases: " + times.joined(separator: ", "))
        }
        self.notes += notes
    }
}

enum Benchmarks {
    /// Every benchmark, in the order they run.
    static let all: [Benchmark] = [
        create,
        lookupModelId,
        lookupObjectId,
        serializeJSON,
        deserializeJSON,
    ]

    static var names: [String] { all.map(\.name) }
}
