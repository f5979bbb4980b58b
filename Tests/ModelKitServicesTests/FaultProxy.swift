import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@testable import ModelKitServices

#if canImport(Glibc)
    import Glibc
#endif

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Whether the tests that need a Kinto server run: `MODELKIT_SKIP_SERVICE_TESTS=1` turns them off
/// for offline work (CI never sets it). Without it, a server that cannot be provisioned fails the
/// tests with what to do about it.
let serviceTestsEnabled = ProcessInfo.processInfo.environment["MODELKIT_SKIP_SERVICE_TESTS"] != "1"
let serviceTestsSkipped: Comment = "MODELKIT_SKIP_SERVICE_TESTS=1 is set: the tests against a real Kinto server are off"

/// A fault-injecting proxy (Scripts/fault-proxy) in front of the test Kinto server, one per test,
/// on 127.0.0.1 and a free port. It stops when `stop()` is called, when this process exits (it
/// watches its parent), and after an hour in any case.
struct FaultProxy: Sendable {
    /// The API root through the proxy, `http://127.0.0.1:PORT/v1`.
    let url: URL
    let pid: Int32
    let server: KintoServer

    /// What the proxy saw: each request as "METHOD /path", and the fault it applied (or nil).
    struct Log: Sendable {
        let requests: [(line: String, fault: String?)]
        /// Bytes of made-up oversize bodies the proxy managed to send before the client hung up.
        let oversizeBytesSent: Int
    }

    static func start() async throws -> FaultProxy {
        let server = try await KintoServer.shared.value
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        // The Kinto venv's Python (installed by Scripts/kinto-server, which has run by now).
        let venv =
            ProcessInfo.processInfo.environment["KINTO_VENV"].map(URL.init(fileURLWithPath:))
            ?? root.appendingPathComponent(".build/kinto-venv")
        let upstream = try #require(URL(string: "/", relativeTo: server.url)?.absoluteURL)
        // Bounded: a proxy that prints no port within 5 minutes (a hang: it takes well under a
        // second on an idle machine) is stopped, which ends the read.
        let arguments = [
            root.appendingPathComponent("Scripts/fault-proxy").path, "--upstream", upstream.absoluteString,
            "--parent-pid", "\(ProcessInfo.processInfo.processIdentifier)", "--max-lifetime", "3600",
        ]
        let python = venv.appendingPathComponent("bin/python")
        let (pid, line) = try await ChildProcess.offCooperativeThreads {
            let process = try ChildProcess(python, arguments, output: .standardOutput, stopping: SIGTERM)
            let line = process.nextLine().map(String.init) ?? process.readToEnd()
            // It runs on until stop().
            process.cancelBackstop()
            return (process.pid, line)
        }
        guard line.hasPrefix("PROXY_PORT="),
            let port = Int(line.dropFirst("PROXY_PORT=".count).prefix(while: \.isNumber)),
            let url = URL(string: "http://127.0.0.1:\(port)/v1")
        else {
            kill(pid, SIGTERM)
            throw FixtureError("Scripts/fault-proxy did not start (it printed '\(line)'); run it by hand to see why")
        }
        return FaultProxy(url: url, pid: pid, server: server)
    }

    /// A service through the proxy, on `bucket`, with the test account; retries are quick by
    /// default so that the tests are, and the time limit long, so that only a hang reaches it on
    /// a busy machine (a test of the limit itself sets a short one).
    func service(
        bucket: String, timeout: Duration = .seconds(120),
        retry: RetryPolicy = RetryPolicy(maximumAttempts: 3, delay: .milliseconds(50)),
        maximumResponseBytes: Int = KintoService.defaultMaximumResponseBytes
    ) -> KintoService {
        KintoService(
            url: url, bucket: bucket, user: server.user, password: server.password, timeout: timeout, retry: retry,
            maximumResponseBytes: maximumResponseBytes)
    }

    /// Queues fault rules (see Scripts/fault-proxy for their form).
    func inject(_ rules: ModelValue) async throws {
        let answer = try await control("POST", "/__proxy__/faults", body: rules.jsonData())
        guard answer.status == 200 else { throw FixtureError("the proxy refused the rules: \(answer.status)") }
    }

    func log() async throws -> Log {
        let answer = try await control("GET", "/__proxy__/log", body: nil)
        let body = try ModelValue(json: answer.body)
        guard case .array(let requests)? = body["requests"], case .int(let sent)? = body["oversize_bytes_sent"] else {
            throw FixtureError("the proxy's log is \(body)")
        }
        return Log(
            requests: requests.map { ($0["line"]?.stringValue ?? "", $0["fault"]?.stringValue) }, oversizeBytesSent: Int(sent))
    }

    /// The requests the proxy saw whose line contains `text`.
    func count(_ text: String) async throws -> Int {
        try await log().requests.filter { $0.line.contains(text) }.count
    }

    /// Lets the requests held by a `hold` rule named `name` go on to the server.
    func release(_ name: String) async throws {
        let answer = try await control("POST", "/__proxy__/release", body: (["name": .string(name)] as ModelValue).jsonData())
        guard answer.status == 200 else { throw FixtureError("the proxy refused to release '\(name)': \(answer.status)") }
    }

    func stop() {
        kill(pid, SIGTERM)
    }

    private func control(_ method: String, _ path: String, body: Data?) async throws -> (status: Int, body: Data) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(url.port ?? 0)\(path)")!, timeoutInterval: 120)
        request.httpMethod = method
        request.httpBody = body
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }
}

/// Waits until `condition` holds, looking again every 20 ms: for an event that the code under test
/// gives no other signal of (a request reaching the proxy, say). Only a hang reaches the
/// backstop, which throws, naming `what` was awaited.
func waitUntil(
    _ what: String, backstop: Duration = .seconds(300), _ condition: @Sendable () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + backstop
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw FixtureError("waited \(backstop) for \(what)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// Everything a failed operation must leave as it was: each model's type, object id, state,
/// values and changes, the number of models, and the server versions the context keeps.
struct ContextState: Equatable, CustomStringConvertible {
    struct Entry: Equatable {
        let type: String
        let modelId: String
        let objectId: String?
        let state: ModelState
        let properties: ModelValue.Object?
        let changes: ModelChanges
    }

    let entries: [Entry]
    let versions: [String: String]

    init(_ context: ModelContext, store: any ModelService) {
        entries = context.allModels.map { model in
            Entry(
                type: "\(type(of: model))", modelId: "\(model.modelId)", objectId: model.objectId, state: model.modelState,
                properties: try? model.properties, changes: model.changes)
        }.sorted { $0.modelId < $1.modelId }
        var versions: [String: String] = [:]
        for (id, version) in VersionTable.of(context, store: store.storeIdentifier).table.values {
            versions["\(id)"] = version
        }
        self.versions = versions
    }

    var description: String {
        entries.map { "\($0.type) \($0.objectId ?? "-") \($0.state) changes=\($0.changes.count)" }.joined(separator: "; ")
            + " versions=\(versions)"
    }
}
