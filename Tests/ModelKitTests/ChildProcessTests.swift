import Foundation
import ModelKitTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The tests' helper for child processes (ModelKitTestSupport's `ChildProcess`), on `/bin/sh`.
@Suite("The tests' child processes")
struct ChildProcessTests {
    static let shell = URL(fileURLWithPath: "/bin/sh")

    @Test("Lines come back whole, in order; a last line without a break is left to readToEnd")
    func lines() throws {
        let child = try ChildProcess(Self.shell, ["-c", "printf 'one\\n\\ntwo\\nthr'; printf 'ee' >&2"])
        #expect(child.nextLine() == "one")
        #expect(child.nextLine() == "")
        #expect(child.nextLine() == "two")
        #expect(child.nextLine() == nil)
        #expect(child.readToEnd() == "three")
        let (reason, status) = child.waitUntilExit()
        #expect(reason == .exit && status == 0)
    }

    @Test("Only standard output is read when asked, and nothing at all with no output")
    func outputs() throws {
        let child = try ChildProcess(Self.shell, ["-c", "echo out; echo err >&2"], output: .standardOutput)
        #expect(child.readToEnd() == "out\n")
        child.waitUntilExit()
        let silent = try ChildProcess(Self.shell, ["-c", "exit 3"], output: .none)
        #expect(silent.nextLine() == nil && silent.readToEnd() == "")
        #expect(silent.waitUntilExit().status == 3)
    }

    @Test("A child that hangs gets the backstop's signal, which ends the read")
    func backstop() throws {
        let child = try ChildProcess(Self.shell, ["-c", "echo started; exec sleep 600"], backstop: .milliseconds(200))
        #expect(child.nextLine() == "started")
        #expect(child.nextLine() == nil)
        let (reason, status) = child.waitUntilExit()
        #expect(reason == .uncaughtSignal && status == SIGKILL)
    }

    @Test("A signal sent after a delay ends a child that reports meanwhile, off the cooperative threads")
    func delayedSignal() async throws {
        let (reason, status) = try await ChildProcess.offCooperativeThreads {
            let child = try ChildProcess(Self.shell, ["-c", "while :; do echo tick; sleep 0.01; done"])
            child.send(SIGTERM, after: .milliseconds(50))
            while child.nextLine() != nil {}
            let (reason, status) = child.waitUntilExit()
            return (reason == .uncaughtSignal, status)
        }
        #expect(reason && status == SIGTERM)
    }

    @Test("A missing program throws, and an executable not built is nil")
    func missing() {
        #expect(throws: (any Error).self) { try ChildProcess(URL(fileURLWithPath: "/nonexistent/program"), []) }
        #expect(ChildProcess.builtExecutable(named: "NoSuchChild") == nil)
        #expect(ChildProcess.builtExecutable(named: "StoreKillChild") != nil)
    }
}
