import Foundation
import ModelKit
import ModelKitServices

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// The Kinto server of the `service-*` benchmarks: started once by this process with
/// `Scripts/kinto-server` (which installs Kinto into `.build/kinto-venv` on first use), on the
/// backend of `--backend`, watching this process so that it stops when the suite exits, and
/// stopped explicitly at the end; or the running server that `MODELKIT_KINTO_URL` names.
///
/// Every timed run writes into a bucket of its own, made before the clock starts and deleted after
/// it stops, so that runs never see each other's records and the server's memory stays flat.
final class ServiceServer: @unchecked Sendable {
    let url: URL
    let pid: Int32
    let user: String
    let password: String
    /// The PostgreSQL database of a server this process started with `--backend postgresql`
    /// (`KINTO_POSTGRESQL_URL`), for the sync benchmarks' seeding (SyncSeeding.swift); nil on the
    /// memory backend and for a server of `MODELKIT_KINTO_URL`.
    let databaseURL: String?
    /// Basic credentials, for the hand-written peers and the set-up requests.
    let authorization: String
    /// The server's limit of sub-requests per `/batch`.
    static let batchLimit = 25
    /// How long the server may live, at most, in seconds: more than any run of the suite.
    static let maximumLifetime = 4 * 3600
    private let admin: URLSession
    private var stopped = false
    /// Kinto's backend (`--backend`), set before any benchmark runs.
    nonisolated(unsafe) static var backend = "memory"

    /// The one server of this process, started on first use.
    nonisolated(unsafe) private static var current: ServiceServer?

    static func shared() async throws -> ServiceServer {
        if let current { return current }
        let server = try await start()
        current = server
        return server
    }

    /// Stops the server if one was started.
    static func stopShared() {
        current?.stop()
        current = nil
    }

    private init(url: URL, pid: Int32, databaseURL: String? = nil) {
        self.url = url
        self.pid = pid
        self.databaseURL = databaseURL
        user = "bench-\(UUID().uuidString.prefix(8).lowercased())"
        password = "benchmark password"
        authorization = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 300
        configuration.timeoutIntervalForResource = 600
        admin = URLSession(configuration: configuration)
    }

    /// The repository's root: the Benchmarks package is one folder below it.
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    private static func start() async throws -> ServiceServer {
        if let text = ProcessInfo.processInfo.environment["MODELKIT_KINTO_URL"], !text.isEmpty {
            guard let url = URL(string: text) else { throw ServiceBenchmarkError(description: "MODELKIT_KINTO_URL is not a URL: \(text)") }
            let server = ServiceServer(url: url, pid: 0)
            server.stopped = true  // not ours to stop
            try await server.signUp()
            printError("Kinto at \(url.absoluteString) (MODELKIT_KINTO_URL; --backend is not used)")
            return server
        }
        printError("starting Kinto (\(backend)) with Scripts/kinto-server (the first run installs it, about 15 s)")
        let script = repositoryRoot.appendingPathComponent("Scripts/kinto-server")
        let (status, output, log) = try run(
            script,
            [
                "start", "--parent-pid", "\(ProcessInfo.processInfo.processIdentifier)", "--batch-max", "\(batchLimit)",
                "--max-lifetime", "\(maximumLifetime)", "--timeout", "120", "--backend", backend,
            ])
        var values: [String: String] = [:]
        for line in output.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            values[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        guard status == 0, let text = values["KINTO_URL"], let url = URL(string: text), let pid = values["KINTO_PID"].flatMap({ Int32($0) })
        else {
            throw ServiceBenchmarkError(
                description: "Scripts/kinto-server could not start Kinto (status \(status)); it needs Python 3.10+ and, once, "
                    + "pip's access to PyPI (or an existing .build/kinto-venv; KINTO_VENV names another):\n\(log)")
        }
        let server = ServiceServer(url: url, pid: pid, databaseURL: values["KINTO_POSTGRESQL_URL"])
        try await server.signUp()
        printError("Kinto \(values["KINTO_VERSION"] ?? "?") (\(backend)) at \(url.absoluteString) (pid \(pid))")
        return server
    }

    /// Makes the benchmark's account (the server needs the accounts plugin, sign-up open).
    private func signUp() async throws {
        let (signUp, _) = try await request(
            "PUT", "/accounts/\(user)", body: Data(#"{"data":{"password":"\#(password)"}}"#.utf8),
            headers: ["If-None-Match": "*"], authenticated: false)
        guard signUp == 201 else { throw ServiceBenchmarkError(description: "signing up on Kinto at \(url) answered \(signUp)") }
    }

    /// Runs `executable` to its end and returns its status, standard output and standard error.
    static func run(_ executable: URL, _ arguments: [String]) throws -> (Int32, String, String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let pid = process.processIdentifier
        // Both pipes on threads of their own, so that neither fills up while the other is read.
        // waitpid rather than waitUntilExit, which never returned here (as in the tests' fixture).
        let log = PipeReader(errors.fileHandleForReading)
        let text = PipeReader(output.fileHandleForReading)
        var status: Int32 = 0
        let waited = waitpid(pid, &status, 0)
        // -1: Foundation reaped it first; the output tells whether it worked.
        let exitStatus: Int32 = waited == pid ? (status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)) : 0
        return (exitStatus, text.wait(), log.wait())
    }

    /// Stops the server (`Scripts/kinto-server stop PID`); its watchdog would stop it when this
    /// process exits anyway.
    func stop() {
        guard !stopped else { return }
        stopped = true
        let script = Self.repositoryRoot.appendingPathComponent("Scripts/kinto-server")
        if let (status, _, log) = try? Self.run(script, ["stop", "\(pid)"]), status != 0 {
            printError("warning: stopping Kinto (pid \(pid)) failed: \(log)")
        }
    }

    /// A service on `bucket`, as an app would make it.
    func service(bucket: String) -> KintoService {
        KintoService(url: url, bucket: bucket, user: user, password: password, timeout: .seconds(300))
    }

    /// Makes a new bucket with the given collections and returns its name.
    func makeBucket(collections: [String]) async throws -> String {
        let bucket = "b" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        let paths = ["/buckets/\(bucket)"] + collections.map { "/buckets/\(bucket)/collections/\($0)" }
        let requests = paths.map { #"{"path":"\#($0)"}"# }.joined(separator: ",")
        let body = #"{"defaults":{"method":"PUT","headers":{"If-None-Match":"*"}},"requests":[\#(requests)]}"#
        let (status, data) = try await request("POST", "/batch", body: Data(body.utf8))
        var created = false
        if case .array(let responses)? = (try? ModelValue(json: data))?["responses"] {
            created = responses.allSatisfy { $0["status"] == 201 }
        }
        guard status == 200, created else {
            throw ServiceBenchmarkError(
                description: "creating bucket \(bucket) answered \(status): \(String(decoding: data.prefix(300), as: UTF8.self))")
        }
        return bucket
    }

    /// Deletes a bucket and everything in it.
    func deleteBucket(_ bucket: String) async throws {
        let (status, _) = try await request("DELETE", "/buckets/\(bucket)")
        guard status == 200 else { throw ServiceBenchmarkError(description: "deleting bucket \(bucket) answered \(status)") }
    }

    /// One request by hand, outside any timed region.
    func request(
        _ method: String, _ path: String, body: Data? = nil, headers: [String: String] = [:], authenticated: Bool = true
    ) async throws -> (status: Int, body: Data) {
        var request = URLRequest(url: URL(string: url.absoluteString + path)!, timeoutInterval: 300)
        request.httpMethod = method
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        for (key, value) in headers { request.setValue(value, forHTTPHeaderField: key) }
        if authenticated { request.setValue(authorization, forHTTPHeaderField: "Authorization") }
        let (data, response) = try await admin.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }
}

/// Reads a pipe to its end on a thread of its own.
private final class PipeReader: @unchecked Sendable {
    private var text = ""
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            text = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
            done.signal()
        }
    }

    func wait() -> String {
        done.wait()
        return text
    }
}

/// A service benchmark that could not run, or whose result is wrong.
struct ServiceBenchmarkError: Error, CustomStringConvertible {
    let description: String
}
