// Timing and statistics.

/// Takes a value without telling the optimizer what happens to it, so that the work producing it
/// cannot be dropped, and so that whatever it refers to stays alive up to the call.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// A running checksum of the results of every timed run (counts, byte sizes), printed at the end
/// so that no result is dead code. It is a liveness device, not a fingerprint: ModelKit's ids and
/// timestamps differ between processes, and so do the sizes of its JSON output.
struct Checksum {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    /// Mixes `number` in (FNV-1a over its 8 bytes).
    mutating func add(_ number: Int) {
        var bits = UInt64(bitPattern: Int64(number))
        for _ in 0..<8 {
            value ^= bits & 0xFF
            value &*= 0x0000_0100_0000_01B3
            bits >>= 8
        }
    }
}

/// Seconds in `duration`.
func seconds(_ duration: Duration) -> Double {
    let parts = duration.components
    return Double(parts.seconds) + Double(parts.attoseconds) * 1e-18
}

/// The median of `values` (the mean of the middle two for an even count).
func median(_ values: [Double]) -> Double {
    precondition(!values.isEmpty, "median of no values")
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// The state shared by the timed runs: how many to make, what to print, the checksum.
struct Session {
    /// Timed runs per subject at the current size.
    var runs: Int
    /// The benchmark and size being run, for `--verbose` lines.
    var label = ""
    /// Prints every run's time to standard error.
    var verbose = false
    var checksum = Checksum()
    /// Also runs the slowest peers at the largest sizes (`--full`).
    var full = false
    /// Runs only these subjects of the write, load and service benchmarks (`--subjects`), all when `nil`.
    var subjects: [String]?

    /// Whether the write, load and service benchmarks run `subject`.
    func includes(subject: String) -> Bool {
        subjects?.contains(subject) ?? true
    }
}

/// One thing being timed: ModelKit, a peer, or one phase of ModelKit's work.
struct Subject {
    let name: String
    /// Makes one timed run and returns its seconds.
    let runOnce: (inout Checksum) throws -> Double

    /// A subject whose runs call `setup` first, outside the timed region, for inputs that `body`
    /// consumes or mutates (a fresh context, for example). After the clock stops, `verify` turns
    /// the result into a number for the checksum (and may check it); then the input and the
    /// result are released, so tearing down a large graph is not timed either.
    init<Input, Output>(
        _ name: String,
        setup: @escaping () throws -> Input,
        body: @escaping (Input) throws -> Output,
        verify: @escaping (Output) throws -> Int
    ) {
        self.name = name
        runOnce = { checksum in
            let clock = ContinuousClock()
            let input = try setup()
            let start = clock.now
            let output = try body(input)
            let end = clock.now
            checksum.add(try verify(output))
            blackHole(output)
            blackHole(input)
            return seconds(end - start)
        }
    }

    /// A subject whose body needs no fresh input per run.
    init<Output>(_ name: String, body: @escaping () throws -> Output, verify: @escaping (Output) throws -> Int) {
        self.init(name, setup: {}, body: { _ in try body() }, verify: verify)
    }
}

/// Times every subject `session.runs` times and returns their medians in seconds, in order.
///
/// The runs are interleaved (one run of each subject per round, starting with a different
/// subject each round), so that a slow phase of the machine affects all subjects alike rather
/// than whichever happened to be running.
func measure(_ subjects: [Subject], session: inout Session) throws -> [Double] {
    var times = [[Double]](repeating: [], count: subjects.count)
    for round in 0..<session.runs {
        for offset in subjects.indices {
            let index = (round + offset) % subjects.count
            times[index].append(try subjects[index].runOnce(&session.checksum))
        }
    }
    if session.verbose {
        for (subject, list) in zip(subjects, times) {
            printError("\(session.label) \(subject.name): \(list.map { fixed($0, 6) }.joined(separator: " ")) s")
        }
    }
    return times.map(median)
}

/// A benchmark result that does not hold what it was expected to.
struct VerificationError: Error, CustomStringConvertible {
    let description: String
}

/// Throws unless `actual == expected`: every subject must do the full work.
func expect(_ actual: Int, _ expected: Int, _ what: String) throws -> Int {
    guard actual == expected else {
        throw VerificationError(description: "\(what): expected \(expected), got \(actual)")
    }
    return actual
}
