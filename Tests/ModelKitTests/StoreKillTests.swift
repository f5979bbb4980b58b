import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A store's writer killed with SIGKILL at random moments, over and over (the child process
/// Tests/StoreKillChild); after each kill the store must open with exactly the saves that returned.
@Suite("Model store: killed writers")
struct StoreKillTests {
    /// The child, built next to the test bundle because the test target depends on it.
    static var childExecutable: URL? { AtomicWriteTests.builtExecutable(named: "StoreKillChild") }

    /// A state of the store as the child reported it: its save number and digest.
    struct State: Equatable, CustomStringConvertible {
        var sequence: Int
        var digest: String
        var description: String { "save \(sequence) (\(digest))" }
    }

    /// What one child's output says: the state it opened, the last one a save or compaction
    /// returned with, and the one in flight when it was killed (reported before the call, with no
    /// report of its return).
    struct Reports {
        var opened: State?
        var returned: State?
        var inFlight: (state: State, compacting: Bool)?
        var completed = 0
        var errors: [String] = []

        /// Reads one whole line of the child's (a line cut short by the kill never gets here).
        mutating func read(_ line: Substring) {
            let words = line.split(separator: " ")
            guard let kind = words.first, words.count >= 2, let sequence = Int(words[1]) else {
                errors.append(String(line))
                return
            }
            switch kind {
            case "opened" where words.count == 3:
                opened = State(sequence: sequence, digest: String(words[2]))
                returned = opened
            case "saving" where words.count == 3, "compacting" where words.count == 3:
                inFlight = (State(sequence: sequence, digest: String(words[2])), kind == "compacting")
            case "saved", "compacted":
                guard let inFlight, inFlight.state.sequence == sequence else {
                    errors.append("\(line) without its start")
                    return
                }
                returned = inFlight.state
                self.inFlight = nil
                completed += 1
            default:
                errors.append(String(line))
            }
        }
    }

    /// Starts the child, reads its reports until `completions` saves or compactions returned (and
    /// then, when `inFlight`, until the next one started), waits `delay` microseconds more and
    /// kills it; returns its reports. A child that stops reporting (a hang) is killed by a
    /// backstop after two minutes, which ends the read.
    static func runAndKill(_ child: URL, _ arguments: [String], completions: Int, inFlight: Bool, delay: UInt32)
        throws -> Reports
    {
        let process = try ChildProcess(child, arguments, backstop: .seconds(120))
        var reports = Reports()
        while reports.completed < completions || (inFlight && reports.inFlight == nil), reports.errors.isEmpty,
            let line = process.nextLine()
        {
            reports.read(line)
        }
        usleep(delay)
        process.send(SIGKILL)
        while let line = process.nextLine() { reports.read(line) }
        if process.waitUntilExit().reason != .uncaughtSignal {
            reports.errors.append("the child exited with status \(process.process.terminationStatus)")
        }
        return reports
    }

    @Test(
        "a store whose writer is killed at random moments, saving or compacting, opens with exactly the saves that returned",
        .hangBackstop, arguments: [("json", "full"), ("bplist", "relaxed")])
    func killedWriter(format: String, durability: String) throws {
        try StoreBlog.register()
        let child = try #require(Self.childExecutable, "the StoreKillChild executable was not built")
        var options = ModelStore.Options()
        options.deserialization.unknownKeys = .fail
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("blog.store")
            var generator = SplitMix64(seed: format == "json" ? 31 : 37)
            var expected = State(sequence: 0, digest: StoreBlog.digest(ModelContext()))
            var kills = (saving: 0, compacting: 0, between: 0, inFlightKept: 0)
            for round in 0..<110 {
                let seed = generator.next()
                // Half the kills come at any moment of the child's loop (a loop takes about 10 ms
                // in a debug build), half soon after a save or compaction started.
                let inFlight = round % 2 == 1
                let reports = try Self.runAndKill(
                    child, [url.path, format, durability, String(seed)], completions: 1 + Int(generator.next() % 6),
                    inFlight: inFlight, delay: UInt32(generator.next() % (inFlight ? 3_000 : 12_000)))
                let context = "round \(round), child seed \(seed)"
                try #require(reports.errors.isEmpty, "\(context): \(reports.errors)")
                #expect(reports.opened == expected, "\(context): the child opened another state than the test")
                let store = try ModelStore(url: url, options: options)
                let found = State(sequence: StoreBlog.sequence(store.context), digest: StoreBlog.digest(store.context))
                store.close()
                if let inFlight = reports.inFlight {
                    if inFlight.compacting { kills.compacting += 1 } else { kills.saving += 1 }
                    if found == inFlight.state { kills.inFlightKept += 1 }
                    #expect(
                        found == reports.returned || found == inFlight.state,
                        "\(context): found \(found); the last save returned \(String(describing: reports.returned)), \(inFlight.state) was in flight"
                    )
                } else {
                    kills.between += 1
                    #expect(
                        found == reports.returned,
                        "\(context): found \(found); the last save returned \(String(describing: reports.returned))")
                }
                expected = found
            }
            print("StoreKillTests \(format)/\(durability): kills \(kills)")
            // Kills landed in compactions and in saves alike.
            #expect(kills.compacting > 0)
            #expect(kills.saving > 0)
            // Killed compactions leave their temporary files; the next one removes them.
            let store = try ModelStore(url: url, options: options)
            try store.compact()
            store.close()
            let entries = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
            #expect(entries == ["blog.store", "blog.store-journal"])
        }
    }
}
