import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A program that a test runs in a process of its own (a child executable of this package, a
/// script), with its output piped to the test and read line by line or to its end.
///
/// One place for what the kill tests, the peak-memory tests and the service tests' helpers all
/// do: find the executable built next to the test bundle, start it, read what it reports, kill
/// it, and make sure that a child that hangs cannot hang the test (a backstop signals it, which
/// ends the reads).
///
/// ```swift
/// let child = try ChildProcess(executable, ["--peak", "json", "48"], output: .standardOutput)
/// while let line = child.nextLine() { print(line) }
/// let (reason, status) = child.waitUntilExit()
/// ```
///
/// Its reads block: run them off the cooperative threads (``offCooperativeThreads(_:)``).
public final class ChildProcess {
    /// Which of the child's output streams the test reads; the others are the test process's.
    public enum Output {
        /// None: the child writes to the test process's standard output and error.
        case none
        /// Its standard output.
        case standardOutput
        /// Its standard output and standard error, as one stream.
        case merged
    }

    /// The child's process, started.
    public let process: Process
    /// Its process id.
    public var pid: Int32 { process.processIdentifier }
    private let output: ExecPipe?
    /// What was read after the last complete line.
    private var pending = Data()
    private let backstop: DispatchWorkItem?

    /// An executable of this package that the test target depends on, so SwiftPM builds it next
    /// to the test bundle; nil when it is not there. `directories` are looked in first (a test
    /// target's `Bundle.module.bundleURL.deletingLastPathComponent()`, for example).
    ///
    /// Complexity: a few file-system lookups.
    public static func builtExecutable(named name: String, lookingIn directories: [URL] = []) -> URL? {
        let program = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        // Linux: the tests run as `.build/debug/<Package>PackageTests.xctest`, an executable next
        // to the children. macOS: the bundle holding this code sits in `.build/debug`.
        let candidates =
            directories + [
                Bundle(for: ChildProcess.self).bundleURL.deletingLastPathComponent(), Bundle.main.bundleURL, program,
                program.deletingLastPathComponent(),
            ]
        return candidates.map { $0.appendingPathComponent(name) }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    /// Starts `executable` with `arguments`, its standard input empty and `output` piped to this.
    /// When `backstop` is given, a child still running that long after its start gets `signal`
    /// (a hang: nothing the tests wait for takes that long), which ends the reads; see
    /// ``cancelBackstop()``.
    ///
    /// - Throws: what `Process.run()` throws when the program cannot be started.
    public init(
        _ executable: URL, _ arguments: [String], output: Output = .merged, backstop: Duration? = .seconds(300),
        stopping signal: Int32 = SIGKILL
    ) throws {
        process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        switch output {
        case .none:
            self.output = nil
        case .standardOutput:
            let pipe = try ExecPipe()
            process.standardOutput = pipe.writing
            self.output = pipe
        case .merged:
            let pipe = try ExecPipe()
            process.standardOutput = pipe.writing
            process.standardError = pipe.writing
            self.output = pipe
        }
        try process.run()
        self.output?.closeWriting()
        if let backstop {
            let pid = process.processIdentifier
            let item = DispatchWorkItem { kill(pid, signal) }
            DispatchQueue.global().asyncAfter(deadline: .now() + Self.interval(backstop), execute: item)
            self.backstop = item
        } else {
            self.backstop = nil
        }
    }

    /// The next whole line the child wrote, without its line break; nil at the end of its
    /// output. A last line cut short (by a kill) is not returned: ``readToEnd()`` has it.
    /// Blocks until the child writes a line break or closes its output.
    public func nextLine() -> Substring? {
        guard let output else { return nil }
        while true {
            if let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[pending.startIndex..<end], as: UTF8.self)
                pending = Data(pending[(end + 1)...])
                return Substring(line)
            }
            let chunk = output.reading.availableData
            if chunk.isEmpty { return nil }
            pending += chunk
        }
    }

    /// Everything the child writes from here to the end of its output (when it exits, or is
    /// killed), with what was read but not returned as a line.
    public func readToEnd() -> String {
        guard let output else { return "" }
        let rest = pending + output.reading.readDataToEndOfFile()
        pending = Data()
        return String(decoding: rest, as: UTF8.self)
    }

    /// Sends `signal` to the child now, or after `delay` (from another thread, so that the
    /// caller can keep reading meanwhile).
    public func send(_ signal: Int32 = SIGKILL, after delay: Duration? = nil) {
        let pid = pid
        guard let delay else {
            kill(pid, signal)
            return
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + Self.interval(delay)) { kill(pid, signal) }
    }

    /// Lets the child outlive the backstop: for a server that runs on once it said it started.
    public func cancelBackstop() {
        backstop?.cancel()
    }

    /// Waits for the child to end, cancels the backstop, and returns how it ended.
    @discardableResult
    public func waitUntilExit() -> (reason: Process.TerminationReason, status: Int32) {
        process.waitUntilExit()
        backstop?.cancel()
        return (process.terminationReason, process.terminationStatus)
    }

    /// Runs `work`, which blocks (reading a child's output, waiting for it), on a thread of its
    /// own, so that the tests' cooperative threads (two on a two-core machine) stay free.
    ///
    /// - Throws: what `work` throws.
    public static func offCooperativeThreads<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try work() })
            }
        }
    }

    private static func interval(_ duration: Duration) -> DispatchTimeInterval {
        let (seconds, attoseconds) = duration.components
        return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }
}
