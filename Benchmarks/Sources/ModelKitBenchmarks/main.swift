import BlogFixture
import Foundation
import ModelKit

// ModelKitBenchmarks: times ModelKit against plain Swift and Foundation on a blog graph.
// Run `ModelKitBenchmarks --help` for the options.

func runBenchmarks(_ options: Options) async throws {
    try ModelRegistry.register(BenchBlog.self, BenchAuthor.self, BenchPost.self, ServiceItem.self, ServiceShelf.self)
    defer {
        ScratchDirectory.shared.remove()
        ServiceServer.stopShared()
    }
    ServiceServer.backend = options.backend
    let selected = Benchmarks.all.filter { options.selects($0.name, needsServer: $0.needsServer) }
    guard !selected.isEmpty else {
        throw UsageError(
            description: "no benchmark name contains \"\(options.filter ?? "")\"; benchmarks: \(Benchmarks.names.joined(separator: ", "))")
    }
    #if DEBUG
        print("warning: this is a debug build; time a release build (swift run -c release ...)\n")
    #endif
    print("ModelKit benchmarks: \(selected.map(\.name).joined(separator: ", "))")
    let sizeUnit = selected.allSatisfy(\.needsServer) ? "models" : "posts; authors = n/10; models for service-*"
    print("sizes (\(sizeUnit)): \(options.sizes.map(grouped).joined(separator: ", "))\n")

    // Standard error says what is running, for how long, and about how long is left: the work
    // left is estimated from the time so far, each benchmark's share taken as its size.
    let clock = ContinuousClock()
    let started = clock.now
    let totalWork = Double(options.sizes.reduce(0, +) * selected.count)
    var doneWork = 0.0
    var report = Report()
    var session = Session(runs: 1, verbose: options.verbose, full: options.full, subjects: options.subjects)
    for n in options.sizes {
        let data = BlogData(posts: n)
        for benchmark in selected {
            if benchmark.fixedN != nil, n != options.sizes.first { continue }
            let n = benchmark.fixedN ?? n
            // The service benchmarks take seconds per run: 3 unless --runs says otherwise.
            session.runs = benchmark.needsServer ? (options.runs ?? 3) : options.runs(for: n)
            session.label = "\(benchmark.name) n=\(n)"
            let elapsed = seconds(clock.now - started)
            let left = doneWork > 0 ? " (about \(duration(elapsed * (totalWork - doneWork) / doneWork)) left)" : ""
            printError("[\(duration(elapsed))\(left)] \(session.label)")
            let results: [BenchmarkResult]
            if let runOnServer = benchmark.runOnServer {
                results = [try await runOnServer(n, &session)]
            } else {
                results = try benchmark.run(data, &session)
            }
            for result in results {
                report.add(benchmark: benchmark.name, n: n, runs: session.runs, result: result)
            }
            doneWork += Double(n)
        }
    }
    print(report.summary())
    printError("done in \(duration(seconds(clock.now - started)))")
    if let path = options.jsonPath {
        try report.writeJSON(to: path)
        print("wrote \(report.measurements.count) measurements to \(path)")
    }
    print("checksum: \(String(session.checksum.value, radix: 16))")
}

/// `75 s`, `4 min`, `1 h 5 min`.
func duration(_ seconds: Double) -> String {
    if seconds < 90 { return "\(Int(seconds.rounded())) s" }
    let minutes = Int((seconds / 60).rounded())
    return minutes < 60 ? "\(minutes) min" : "\(minutes / 60) h \(minutes % 60) min"
}

do {
    switch try CLI.parse(Array(CommandLine.arguments.dropFirst())) {
    case .help:
        print(CLI.usage)
    case .run(let options):
        try await runBenchmarks(options)
    }
} catch let error as UsageError {
    printError("error: \(error)\n\n\(CLI.usage)")
    exit(2)
} catch {
    printError("error: \(error)")
    exit(1)
}
