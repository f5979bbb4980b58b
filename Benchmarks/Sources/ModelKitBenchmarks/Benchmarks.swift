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
