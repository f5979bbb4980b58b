import Foundation
import ModelKit
import ModelKitTestSupport
// The test models, Writer and Article, are declared once in Tests/ServiceTestModels, shared with
// the child processes (Tests/SyncKillChild). Exported from here so that every file of the tests
// sees them, as when they were declared in this file, without an import in each.
@_exported import ServiceTestModels
import Testing

@testable import ModelKitServices

#if canImport(Glibc)
    import Glibc
#endif

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One Kinto server for the whole test process, started on first use with Scripts/kinto-server
/// (which installs Kinto into .build/kinto-venv if needed). The server stops by itself when this
/// process exits (it watches its parent), and after two hours in any case (a full run on a busy
/// machine may take more than the 15 minutes this was).
///
/// The environment chooses the server: `MODELKIT_KINTO_BACKEND=postgresql` starts Kinto on a
/// PostgreSQL of its own (Scripts/postgres-server; `memory`, the default, keeps everything in
/// memory), and `MODELKIT_KINTO_URL=http://host:port/v1` uses a server that is already running
/// instead (see Docs/Services.md for what it must allow).
struct KintoServer: Sendable {
    let url: URL
    let user: String
    let password: String
    /// `memory` or `postgresql`; nil for a server given by `MODELKIT_KINTO_URL`.
    let backend: String?
    /// The database of a PostgreSQL server that the tests started, for starting a second Kinto
    /// on it.
    let postgresqlURL: String?

    static let shared = Task<KintoServer, any Error> { try await start() }

    /// A server of the docs' programs' own, so that their requests do not queue behind the other
    /// suites' on a busy machine: a docs program keeps the library's default time limit (30 s),
    /// as an app would, where the tests' services allow minutes. On PostgreSQL, a second Kinto on
    /// the same database; on memory, another memory server; the environment's server otherwise.
    static let forDocs = Task<KintoServer, any Error> {
        let first = try await shared.value
        if existingURL != nil { return first }
        if let second = try await first.startSecond() { return second }
        return try await start()
    }

    /// How long installing and starting may take before the tests fail: a backstop for a hang,
    /// long enough for pip's install on a busy machine (it took 127 s at a load of 20 on 2 cores;
    /// with the PostgreSQL backend's packages, 233 s at a similar load).
    static let startTimeout: Duration = .seconds(900)

    /// The backend the environment asks for (`MODELKIT_KINTO_BACKEND`): memory by default.
    static var requestedBackend: String {
        ProcessInfo.processInfo.environment["MODELKIT_KINTO_BACKEND"].flatMap { $0.isEmpty ? nil : $0 } ?? "memory"
    }

    /// The server the environment names (`MODELKIT_KINTO_URL`), if any.
    static var existingURL: URL? {
        ProcessInfo.processInfo.environment["MODELKIT_KINTO_URL"].flatMap { $0.isEmpty ? nil : URL(string: $0) }
    }

    private static func start() async throws -> KintoServer {
        try ModelRegistry.register(Writer.self, Article.self)
        let url: URL
        var backend: String?
        var database: String?
        if let existing = existingURL {
            url = existing
        } else {
            let backendName = requestedBackend
            guard backendName == "memory" || backendName == "postgresql" else {
                throw FixtureError("MODELKIT_KINTO_BACKEND is '\(backendName)'; expected memory or postgresql")
            }
            let values = try await launch(["--backend", backendName])
            guard let text = values["KINTO_URL"], let started = URL(string: text) else {
                throw FixtureError("Scripts/kinto-server printed no KINTO_URL")
            }
            url = started
            backend = backendName
            database = values["KINTO_POSTGRESQL_URL"]
        }
        let server = KintoServer(
            url: url, user: "tests-\(UUID().uuidString.prefix(8))", password: "correct horse", backend: backend,
            postgresqlURL: database)
        let signUp = try await server.request(
            "PUT", "/accounts/\(server.user)", body: ["data": ["password": .string(server.password)]],
            headers: ["If-None-Match": "*"], authenticated: false)
        guard signUp.status == 201 else {
            throw FixtureError(
                "sign-up at \(url) answered \(signUp.status): the server needs the accounts plugin, with sign-up open "
                    + "to everyone (kinto.account_create_principals = system.Everyone)")
        }
        return server
    }

    /// Another Kinto server on the same PostgreSQL database as this one (Kinto keeps no state of
    /// its own, so two servers on one database are one service, as behind a load balancer), with
    /// the same accounts. Nil when this server is not one the tests started on PostgreSQL.
    func startSecond() async throws -> KintoServer? {
        guard let postgresqlURL else { return nil }
        let values = try await Self.launch(["--postgresql-url", postgresqlURL])
        guard let text = values["KINTO_URL"], let url = URL(string: text) else {
            throw FixtureError("Scripts/kinto-server printed no KINTO_URL")
        }
        return KintoServer(url: url, user: user, password: password, backend: backend, postgresqlURL: postgresqlURL)
    }

    /// Runs `Scripts/kinto-server start` with `arguments` and returns the KEY=value lines it
    /// printed.
    private static func launch(_ arguments: [String]) async throws -> [String: String] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let process = Process()
        process.executableURL = root.appendingPathComponent("Scripts/kinto-server")
        process.arguments =
            [
                "start", "--parent-pid", "\(ProcessInfo.processInfo.processIdentifier)", "--max-lifetime", "7200",
                "--timeout", "600",
            ] + arguments
        let output = try ExecPipe()
        let errors = try ExecPipe()
        process.standardOutput = output.writing
        process.standardError = errors.writing
        process.standardInput = FileHandle.nullDevice
        try process.run()
        output.closeWriting()
        errors.closeWriting()
        // Bounded: a start that hangs is stopped, which ends the reads below.
        let pid = process.processIdentifier
        let watchdog = Task.detached {
            // Cancelled once the script has exited: its PID must not be signalled then.
            guard (try? await Task.sleep(for: startTimeout)) != nil else { return }
            kill(pid, SIGTERM)
        }
        defer { watchdog.cancel() }
        // On a thread of its own: reading to the end of the script's output blocks until it exits.
        let (status, text, log): (Int32, String, String) = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let text = String(decoding: output.reading.readDataToEndOfFile(), as: UTF8.self)
                let log = String(decoding: errors.reading.readDataToEndOfFile(), as: UTF8.self)
                // waitpid, not waitUntilExit: the latter never returned in this test process.
                var status: Int32 = 0
                let waited = waitpid(pid, &status, 0)
                let exitStatus: Int32 = waited == pid ? (status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)) : -1
                continuation.resume(returning: (exitStatus, text, log))
            }
        }
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            values[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        guard status == 0 || status == -1,  // -1: reaped by Foundation; the output tells
            values["KINTO_URL"] != nil
        else {
            throw FixtureError(
                "Scripts/kinto-server \(arguments.joined(separator: " ")) could not start Kinto (status \(status)); run it "
                    + "by hand to see why (it needs python3.10+ and pip's access to PyPI once, or an existing "
                    + ".build/kinto-venv; the PostgreSQL backend needs PostgreSQL, or apt-get to install it). "
                    + "For offline work only, MODELKIT_SKIP_SERVICE_TESTS=1 turns the server tests off:\n\(log)")
        }
        return values
    }

    /// A service on a bucket of its own, with a collection per test model (or per name of
    /// `collections`), so that tests do not see each other's records.
    static func freshService(collections: [String] = ["Writer", "Article"]) async throws -> KintoService {
        try await freshService(on: try await shared.value, collections: collections)
    }

    /// ``freshService(collections:)`` on `server`.
    static func freshService(
        on server: KintoServer, collections: [String] = ["Writer", "Article"]
    ) async throws -> KintoService {
        let bucket = try await server.makeBucket(prefix: "b", collections: collections)
        return server.service(bucket: bucket)
    }

    /// Makes a bucket with a new name starting with `prefix`, and `collections` in it (each made with
    /// `collectionBody`, if any), and returns the bucket's name.
    ///
    /// On PostgreSQL, Kinto answers a write that collided with another transaction 409 "please
    /// retry" and rolls the whole batch back, so the batch is sent again after a pause. The name is
    /// new, so a 412 on a later attempt is a part an earlier attempt did make: ours.
    func makeBucket(prefix: String, collections: [String], collectionBody: ModelValue? = nil) async throws -> String {
        let bucket = prefix + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        let requests: [ModelValue] =
            [["path": .string("/buckets/\(bucket)")]]
            + collections.map { name -> ModelValue in
                let path = ModelValue.string("/buckets/\(bucket)/collections/\(name)")
                guard let collectionBody else { return ["path": path] }
                return ["path": path, "body": collectionBody]
            }
        let create: ModelValue = [
            "defaults": ["method": "PUT", "headers": ["If-None-Match": "*"]],
            "requests": .array(requests),
        ]
        let attempts = 8
        for attempt in 1...attempts {
            let answer = try await request("POST", "/batch", body: create)
            guard answer.status == 200, case .array(let responses)? = answer.body["responses"] else {
                throw FixtureError("creating bucket \(bucket) answered \(answer.status): \(answer.body)")
            }
            let statuses = responses.map { response -> Int64 in
                if case .int(let status)? = response["status"] { return status }
                return 0
            }
            if statuses.contains(409), attempt < attempts {
                try await Task.sleep(for: .seconds(attempt))
                continue
            }
            guard statuses.allSatisfy({ $0 == 201 || (attempt > 1 && $0 == 412) }) else {
                throw FixtureError("creating bucket \(bucket) answered \(answer.status): \(answer.body)")
            }
            break
        }
        return bucket
    }

    /// A service of the test account on `bucket`. Every service a test makes on the shared
    /// server has at least this time limit, 120 s: with all the service suites on PostgreSQL at
    /// once on two cores, a CI run saw a read wait more than the default 30 s. Tests that send
    /// thousands of records at once ask for more.
    func service(
        bucket: String, timeout: Duration = .seconds(120), retry: RetryPolicy = RetryPolicy(), pageSize: Int = 1_000
    ) -> KintoService {
        KintoService(
            url: url, bucket: bucket, user: user, password: password, timeout: timeout, retry: retry, pageSize: pageSize)
    }

    /// A request made by hand (another client), with the test account's credentials.
    func request(
        _ method: String, _ path: String, body: ModelValue? = nil, headers: [String: String] = [:], authenticated: Bool = true
    ) async throws -> (status: Int, body: ModelValue) {
        var request = URLRequest(url: URL(string: url.absoluteString + path)!, timeoutInterval: 300)
        request.httpMethod = method
        if let body {
            request.httpBody = body.jsonData()
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        for (key, value) in headers { request.setValue(value, forHTTPHeaderField: key) }
        if authenticated {
            request.setValue(
                "Basic " + Data("\(user):\(password)".utf8).base64EncodedString(), forHTTPHeaderField: "Authorization")
        }
        // A single write that collided with another transaction on PostgreSQL is answered 409 with
        // errno 122, "please retry", and was rolled back: sending it again is what Kinto asks for.
        var attempt = 1
        while true {
            let (data, response) = try await handSession.data(for: request)
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            let body = (try? ModelValue(json: data)) ?? .null
            guard status == 409, body["errno"] == 122, attempt < 8 else { return (status, body) }
            try await Task.sleep(for: .seconds(attempt))
            attempt += 1
        }
    }
}

/// The session of requests made by hand. Not `URLSession.shared`: on Linux its configuration's 60 s
/// request limit applies whatever the request asks, and Kinto on PostgreSQL, with every service
/// suite running at once on two cores, queued requests for longer than that (a CI run's log showed
/// 53 waiting); the limit here is a backstop, not a measure.
private let handSession: URLSession = {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.timeoutIntervalForRequest = 300
    configuration.timeoutIntervalForResource = 600
    return URLSession(configuration: configuration)
}()

struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
