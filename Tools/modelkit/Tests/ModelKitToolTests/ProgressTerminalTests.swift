import Foundation
import ModelKit
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("progress on a terminal") @MainActor
struct ProgressTerminalTests {
    /// Runs `modelkit arguments…` with standard error on a pseudo-terminal; returns what the
    /// terminal showed. It waits for the process and for the terminal's end, never for a time.
    func runOnTerminal(_ arguments: [String]) throws -> (status: Int32, terminal: String, stdout: String) {
        var master: Int32 = 0
        var slave: Int32 = 0
        guard openpty(&master, &slave, nil, nil, nil) == 0 else {
            Issue.record("openpty failed: errno \(errno)")
            return (-1, "", "")
        }
        let out = try temporaryDirectory().appendingPathComponent("stdout")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        let process = Process()
        process.executableURL = toolURL
        process.arguments = arguments
        process.standardError = FileHandle(fileDescriptor: slave, closeOnDealloc: false)
        process.standardOutput = try FileHandle(forWritingTo: out)
        // Read the terminal meanwhile, so that a full terminal buffer never holds the tool up.
        let reader = TerminalReader(master: master)
        let thread = Thread { reader.readToEnd() }
        thread.start()
        try process.run()
        process.waitUntilExit()
        close(slave)  // the terminal ends for the reader once no one holds its other side
        reader.finished.wait()
        close(master)
        return (process.terminationStatus, reader.text, try String(contentsOf: out, encoding: .utf8))
    }

    @Test("info shows its progress on a terminal, rewriting one line, and erases it at the end")
    func progress() throws {
        let path = try blogFile(posts: 12_000, in: try temporaryDirectory())
        let run = try runOnTerminal(["info", path])
        #expect(run.status == 0)
        #expect(run.stdout.contains("models:      12,001"))
        #expect(run.terminal.contains("\rreading \(path)   0% (0.0 of "))
        #expect(run.terminal.contains("\rreading \(path) 100% ("))
        #expect(run.terminal.hasSuffix("\r\u{1B}[K"), "the line is erased: \(run.terminal.debugDescription)")
        #expect(!run.terminal.contains("\n"), "progress never scrolls")
    }

    @Test("check and query show progress too, and errors still reach the terminal")
    func otherCommands() throws {
        let directory = try temporaryDirectory()
        let path = try blogFile(posts: 100, in: directory)
        #expect(try runOnTerminal(["check", path]).terminal.contains("\rchecking \(path) 100%"))
        #expect(try runOnTerminal(["query", path, "views > 5", "--ndjson"]).terminal.contains("\rquerying \(path) 100%"))
        let failed = try runOnTerminal(["query", path, "views > 'x'", "--type", "Post"])
        #expect(failed.status == 1)
        #expect(failed.terminal.contains("\r\u{1B}[Kmodelkit: \(path): a Post: expected"))
    }
}

/// Reads a pseudo-terminal's master side until the terminal ends (EIO once the slave is closed).
final class TerminalReader: @unchecked Sendable {
    // Written by the reading thread only, read after `finished` is signalled.
    private var bytes: [UInt8] = []
    let master: Int32
    let finished = DispatchSemaphore(value: 0)

    init(master: Int32) { self.master = master }

    var text: String { String(decoding: bytes, as: UTF8.self) }

    func readToEnd() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(master, &buffer, buffer.count)
            if count > 0 {
                bytes.append(contentsOf: buffer[0..<count])
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                break
            }
        }
        finished.signal()
    }
}
