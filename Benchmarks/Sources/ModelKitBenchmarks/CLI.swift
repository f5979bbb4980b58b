// Command-line options, parsed by hand: the suite has no package dependencies besides ModelKit.

/// What to run, as given on the command line.
struct Options: Equatable {
    /// Numbers of posts (the blog graph has n posts and n / 10 authors). A million is behind
    /// `--large`: it alone takes several times as long as the smaller sizes together.
    var sizes: [Int] = [10_000, 100_000]
    /// Runs only the benchmarks whose name contains this text, or one of its comma-separated parts.
    var filter: String?
    /// Where to write the JSON report, if anywhere.
    var jsonPath: String?
    /// Runs per benchmark, subject and size; `nil` means the default for the size.
    var runs: Int?
    /// Prints the time of every run, not only the medians.
    var verbose = false
    /// Also runs NSKeyedArchiver and NSKeyedUnarchiver above their limits
    /// (`Benchmarks.flatArchiveLimit`, `Benchmarks.slowPeerLimit`).
    var full = false
    /// Runs only these subjects of the write, load and service benchmarks (`--subjects`), all when `nil`.
    var subjects: [String]?
    /// Kinto's backend for the service benchmarks (`--backend`): memory or postgresql.
    var backend = "memory"

    /// Whether `--filter` selects the benchmark called `name`.
    ///
    /// The benchmarks that need the Kinto server (`service-*`, `sync-*`, `files-*`) are selected
    /// only by a part that starts with "service", "sync" or "files", so that the default run and
    /// `--filter query` never start a server.
    func selects(_ name: String, needsServer: Bool = false) -> Bool {
        guard let filter else { return !needsServer }
        return filter.split(separator: ",").contains { part in
            name.contains(part)
                && (!needsServer || part.hasPrefix("service") || part.hasPrefix("sync") || part.hasPrefix("files"))
        }
    }

    /// The number of timed runs at size `n`: the `--runs` value, else 3 from a million posts up
    /// and 5 below.
    func runs(for n: Int) -> Int {
        runs ?? (n >= 1_000_000 ? 3 : 5)
    }
}

/// What the command line asks for.
enum Command: Equatable {
    case run(Options)
    case help
}

/// A command-line mistake, printed with the usage.
struct UsageError: Error, CustomStringConvertible {
    let description: String
}

enum CLI {
    static let usage = """
        Usage: ModelKitBenchmarks [--sizes N,N,...] [--large] [--filter TEXT,...] [--json FILE] [--runs N]
                                  [--full] [--subjects NAME,...] [--backend memory|postgresql] [--verbose]

        Times ModelKit against plain Swift and Foundation on a blog graph of n posts and
        n/10 authors (each post references its author, each author holds its posts).

        Options:
          --sizes N,N,...  numbers of posts to run (default: 10000,100000;
                           underscores and k/M suffixes are accepted: 10k,1_000_000,1M)
          --large          also run a million posts (about 20 minutes more on 2 cores,
                           and up to about 2 GB of memory)
          --filter TEXT,...
                           run only benchmarks whose name contains TEXT (or one of
                           the comma-separated TEXTs: write-json,load-json)
          --json FILE      also write the medians as a JSON array of
                           {"benchmark", "n", "subject", "seconds"} objects to FILE,
                           with "peakRSSBytes" where peak memory is measured (Linux)
                           and "selectivity" for the queries
          --runs N         timed runs per benchmark, subject and size
                           (default: 3 for n >= 1000000, 5 otherwise; the median is reported)
          --full           also run NSKeyedArchiver and NSKeyedUnarchiver where they are
                           skipped by default as too slow: on the array-free archive above
                           100000 posts on Linux; on the archive with arrays above 10000
                           posts on Linux, 100000 elsewhere (--subjects picks one of them)
          --subjects NAME,...
                           run only these subjects of write-json, load-json, write-plist,
                           load-plist, store-* and service-* (for example ModelKit, to
                           re-measure it alone)
          --backend B      Kinto's backend for the service-* benchmarks: memory (default)
                           or postgresql (a PostgreSQL of its own, Scripts/postgres-server;
                           installed with apt-get when missing). MODELKIT_KINTO_URL in the
                           environment points them at a running server instead
          --verbose        also print every run's time (to standard error)
          -h, --help       print this help

        Benchmarks: \(Benchmarks.names.joined(separator: ", "))
        The service-* benchmarks run only with --filter service (or one of their names): they
        start a Kinto server with Scripts/kinto-server (Python 3.10+, PyPI on the first run) and
        take minutes; their n is the number of models (records), their default runs 3.
        service-query inserts n records first (100000: about 3 minutes) and queries 1% of them.
        service-concurrent has 8 clients save graphs of 25 models at once into one collection
        (n models in all) and reports saves per second, retries and refusals.
        The sync-* benchmarks (issue #34) run only with --filter sync (or one of their names), on
        the same server; n is the number of records, written there first by /batch requests
        (10000: under a minute on the memory backend, which slows as it fills: 100000 would take
        tens of minutes on a busy 2-core machine). sync-first syncs them into an empty store,
        sync-incremental pulls n/100 changed by another client, sync-push pushes n/10 local edits.
        The files-* benchmarks (issue #35) run only with --filter files (or one of their names), on
        the same server, next to Debian's curl (they say so if it is missing): 100 MB up and down
        in one file and in 1,000 files, 4 transfers at once; n is bytes, and they run once,
        whatever --sizes says.
        The store-* benchmarks (issue #31) share one blog per size, built once, in a ModelStore and
        in SQLite through GRDB; the issue's numbers are at a million posts:
          --filter store --sizes 1M
        The ratio column is peer seconds / ModelKit seconds: above 1 means ModelKit is faster.
        graph-memory reports bytes instead of seconds (also in the JSON report's "seconds"), and
        the query benchmarks report each condition at two selectivities ("selectivity" in JSON).

        Run it in release mode:
          swift run -c release --package-path Benchmarks ModelKitBenchmarks --sizes 10000
        """

    /// Parses the arguments after the program name. Options take their value as the next
    /// argument or after `=` (`--runs 3`, `--runs=3`).
    static func parse(_ arguments: [String]) throws(UsageError) -> Command {
        var options = Options()
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            var name = argument
            var inlineValue: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            func value() throws(UsageError) -> String {
                if let inlineValue { return inlineValue }
                guard let next = remaining.popFirst() else { throw UsageError(description: "\(name) needs a value") }
                return next
            }
            switch name {
            case "-h", "--help":
                return .help
            case "--sizes":
                let text = try value()
                var sizes: [Int] = []
                for item in text.split(separator: ",", omittingEmptySubsequences: false) {
                    guard let size = parseCount(item), size >= 10 else {
                        throw UsageError(description: "--sizes: \"\(item)\" is not a number of posts >= 10")
                    }
                    sizes.append(size)
                }
                options.sizes = sizes
            case "--large":
                if !options.sizes.contains(1_000_000) { options.sizes.append(1_000_000) }
            case "--verbose":
                options.verbose = true
            case "--full":
                options.full = true
            case "--subjects":
                let names = try value().split(separator: ",").map(String.init)
                guard !names.isEmpty else { throw UsageError(description: "--subjects needs subject names") }
                options.subjects = names
            case "--backend":
                let backend = try value()
                guard backend == "memory" || backend == "postgresql" else {
                    throw UsageError(description: "--backend: \"\(backend)\" is not memory or postgresql")
                }
                options.backend = backend
            case "--filter":
                options.filter = try value()
            case "--json":
                let path = try value()
                guard !path.isEmpty else { throw UsageError(description: "--json needs a file name") }
                options.jsonPath = path
            case "--runs":
                let text = try value()
                guard let runs = Int(text), runs >= 1 else {
                    throw UsageError(description: "--runs: \"\(text)\" is not a positive number")
                }
                options.runs = runs
            default:
                throw UsageError(description: "unknown argument \"\(argument)\"")
            }
        }
        return .run(options)
    }

    /// Parses `10000`, `10_000`, `10k` or `1M`.
    static func parseCount(_ text: Substring) -> Int? {
        var digits = text.filter { $0 != "_" }
        var multiplier = 1
        switch digits.last {
        case "k", "K":
            multiplier = 1_000
            digits.removeLast()
        case "m", "M":
            multiplier = 1_000_000
            digits.removeLast()
        default:
            break
        }
        guard let value = Int(digits) else { return nil }
        let (product, overflow) = value.multipliedReportingOverflow(by: multiplier)
        return overflow ? nil : product
    }
}
