import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The HTTP transport of a service: one request at a time through `URLSession`, with a time limit,
/// a cap on the size of answers, retries of failed attempts, the server's `Backoff`, and counters.
///
/// Every request ModelKit sends is idempotent (reads, conditional writes, and batches of them),
/// so a request whose attempt failed in a way that may pass (a dropped connection, a 5xx, a 429,
/// an error answer with `Retry-After`, a 409 "please retry") is sent again, up to
/// ``RetryPolicy/maximumAttempts`` times.
final class HTTPClient: Sendable {
    struct Request: Sendable {
        var method: String
        var url: URL
        var headers: [String: String] = [:]
        var body: Data?
        /// A file whose bytes are the body, read as they are sent (an upload), instead of `body`.
        var bodyFile: URL?
        /// Where the answer's body goes instead of ``Response/body`` (a download), at most its
        /// `limit` bytes.
        var sink: ResponseSink?
        /// Told the body bytes sent so far (an upload's progress).
        var onSent: (@Sendable (Int64) -> Void)?
        /// Whether sending the request twice does no more than sending it once (a read, a write
        /// with a version precondition, a batch of them). Only such a request is retried.
        var isIdempotent = true

        /// "GET http://…", for messages.
        var line: String { "\(method) \(url.absoluteString)" }
    }

    struct Response: Sendable {
        let status: Int
        /// Header names as the server sent them; look them up with ``header(_:)``.
        let headers: [String: String]
        let body: Data
        /// How many attempts it took; more than one means an earlier attempt may have reached the
        /// server without its answer reaching us.
        let attempts: Int

        /// The value of header `name`, whatever the case of its letters.
        func header(_ name: String) -> String? {
            headers.first(where: { Self.sameName($0.key, name) })?.value
        }

        /// Whether two header names are the same but for the case of ASCII letters (header names
        /// are ASCII; Foundation's case-insensitive comparison costs microseconds per header).
        static func sameName(_ first: String, _ second: String) -> Bool {
            first.utf8.count == second.utf8.count
                && zip(first.utf8, second.utf8).allSatisfy { a, b in
                    a == b || (a | 0x20 == b | 0x20 && (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(a | 0x20))
                }
        }
    }

    let timeout: Duration
    let retry: RetryPolicy
    let maximumResponseBytes: Int
    private let configuration: URLSessionConfiguration
    /// The session every request goes through, so that connections are kept alive and reused.
    /// On Linux it is replaced after a transfer that did not complete (see ``retire(_:)``).
    private let session: Mutex<URLSession>
    private let delegate: SessionDelegate
    private let counters = Counters()
    /// Until when the server asked (`Backoff`) not to be sent anything.
    private let backoffUntil = Mutex<ContinuousClock.Instant?>(nil)

    init(timeout: Duration, retry: RetryPolicy, maximumResponseBytes: Int) {
        self.timeout = timeout
        self.retry = retry
        self.maximumResponseBytes = max(0, maximumResponseBytes)
        let seconds = timeout.seconds
        configuration = URLSessionConfiguration.ephemeral
        // The client enforces the limit itself (see ``SessionDelegate``); these are the session's
        // backstops, well after it so that the limit is the client's whatever the session does.
        // The whole-transfer backstop is a day: a file's transfer may take longer than the limit
        // as long as it is never silent (the limit then applies to silence; see `attemptOnce`).
        configuration.timeoutIntervalForRequest = Self.backstop(seconds)
        configuration.timeoutIntervalForResource = max(Self.backstop(seconds) + 5, 86_400)
        configuration.urlCache = nil
        // A service authenticates with a header on every request; it keeps no cookies (and the
        // session that would keep them is replaced after a failed transfer on Linux). Declining
        // them also spares swift-corelibs-foundation parsing every header line for cookies.
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpShouldSetCookies = false
        configuration.httpCookieStorage = nil
        delegate = SessionDelegate()
        session = Mutex(URLSession(configuration: configuration, delegate: delegate, delegateQueue: Self.callbackQueue()))
    }

    deinit {
        // Not invalidateAndCancel: a second cancel of a stopped task can trap in
        // swift-corelibs-foundation.
        session.withLock { $0.finishTasksAndInvalidate() }
    }

    var metrics: ServiceMetrics {
        ServiceMetrics(
            requests: counters.requests.load(ordering: .relaxed),
            retries: counters.retries.load(ordering: .relaxed),
            bytesSent: counters.bytesSent.load(ordering: .relaxed),
            bytesReceived: counters.bytesReceived.load(ordering: .relaxed))
    }

    /// Sends `request`, retrying as the policy says, and returns the last answer (whatever its
    /// status: the caller maps statuses to errors).
    ///
    /// - Throws: ``ServiceError``: unreachable (after the last attempt), timed out, cancelled,
    ///   an answer over the size limit (invalid response), or rate-limited when the server asked
    ///   for a longer wait than the policy allows.
    func send(_ request: Request) async throws(ServiceError) -> Response {
        let maximumAttempts = request.isIdempotent ? retry.maximumAttempts : 1
        var attempt = 1
        var request = request
        var redirects = 0
        while true {
            try await waitForBackoff(request)
            let outcome = await attemptOnce(request)
            let delay: Duration
            switch outcome {
            case .success(let response) where (300...399).contains(response.status) && response.status != 304:
                request = try Self.redirect(request, by: response, after: redirects)
                redirects += 1
                continue
            case .success(let response):
                noteBackoff(response)
                guard attempt < maximumAttempts, Self.asksForRetry(response) else {
                    return Response(status: response.status, headers: response.headers, body: response.body, attempts: attempt)
                }
                if let asked = response.header("Retry-After").flatMap(Self.seconds(from:)) {
                    // A longer wait than the policy allows is the app's call, not ours.
                    guard asked <= retry.maximumDelay else {
                        return Response(
                            status: response.status, headers: response.headers, body: response.body, attempts: attempt)
                    }
                    delay = asked + Self.jitter(response, retry)
                } else {
                    delay = retry.delay(before: attempt + 1) + Self.jitter(response, retry)
                }
            case .failure(let error):
                guard attempt < maximumAttempts, error.code == .unreachable else { throw error }
                delay = retry.delay(before: attempt + 1)
            }
            try await Self.sleep(for: delay, request)
            attempt += 1
            counters.retries.add(1, ordering: .relaxed)
        }
    }

    /// How many redirects one request follows at most.
    static let maximumRedirects = 5

    /// The most bytes kept of an error page answered to a download.
    static let errorPageLimit = 64 << 10

    /// The request that a redirect answer asks for instead of `request`, when the client follows
    /// it: within the request's origin only (same scheme, host and port), so that its credentials
    /// and body never reach another server. A 307 or 308 repeats the request, body included; a
    /// 301, 302 or 303 is followed by a read alone.
    ///
    /// - Throws: ``ServiceError`` invalid response: a redirect to another origin, without a
    ///   location, of a write by 301, 302 or 303, or more than ``maximumRedirects`` in a row.
    static func redirect(_ request: Request, by response: Response, after redirects: Int) throws(ServiceError) -> Request {
        let expected = "an answer from \(origin(of: request.url)) (redirects are followed within it only)"
        guard let text = response.header("Location"), let location = URL(string: text, relativeTo: request.url)?.absoluteURL
        else {
            throw ServiceError(.invalidResponse(expected: expected, found: "a \(response.status) without a location"))
        }
        guard SessionDelegate.sameOrigin(request.url, location) else {
            throw ServiceError(.invalidResponse(expected: expected, found: "a redirect to \(location.absoluteString)"))
        }
        guard redirects < maximumRedirects else {
            throw ServiceError(
                .invalidResponse(
                    expected: expected, found: "more than \(maximumRedirects) redirects, the last to \(location.absoluteString)"))
        }
        let repeats = response.status == 307 || response.status == 308
        guard repeats || request.method == "GET" || request.method == "HEAD" else {
            throw ServiceError(
                .invalidResponse(
                    expected: expected, found: "a \(response.status) redirect of a \(request.method), which would drop its body"))
        }
        var next = request
        next.url = location
        return next
    }

    /// "scheme://host[:port]" of `url`, for messages.
    static func origin(of url: URL) -> String {
        "\(url.scheme ?? "http")://\(url.host ?? "")\(url.port.map { ":\($0)" } ?? "")"
    }

    /// The session's own time limit for a request the client limits to `seconds`: a safety net
    /// only, twice as long and 5 s more. Capped at a billion seconds (about 32 years) for a
    /// longer limit: swift-corelibs-foundation turns it into whole milliseconds in an `Int`, and
    /// traps when that overflows (a limit of `.seconds(Int64.max)`, meaning "no limit", did).
    static func backstop(_ seconds: TimeInterval) -> TimeInterval { min(max(seconds, 0), 1e9) * 2 + 5 }

    /// 5xx other than "not implemented", "version not supported" and "insufficient storage" (a
    /// quota used up stays used up), and 429: statuses that say "not now" rather than "never".
    static func isRetryable(status: Int) -> Bool {
        status == 429 || ((500...599).contains(status) && status != 501 && status != 505 && status != 507)
    }

    /// Whether an answer says "try again": a retryable status (``isRetryable(status:)``), any
    /// error status with `Retry-After`, or a 409 whose message says "please retry" (Kinto on
    /// PostgreSQL answers `409 "Integrity constraint violated, please retry."` when concurrent
    /// transactions collide; the write did not happen). A 412, a real conflict, is never retried.
    static func asksForRetry(_ response: Response) -> Bool {
        if isRetryable(status: response.status) { return true }
        guard response.status >= 400, response.status != 412 else { return false }
        return response.header("Retry-After") != nil || (response.status == 409 && saysPleaseRetry(response.body))
    }

    /// Whether an error body's text asks for a retry ("…, please retry."), in any case of letters.
    static func saysPleaseRetry(_ body: Data) -> Bool {
        String(decoding: body.prefix(4_096), as: UTF8.self).lowercased().contains("please retry")
    }

    /// A random extra wait, up to the policy's first delay, before retrying a 409: clients that
    /// collided would collide again if they all came back after the same wait.
    static func jitter(_ response: Response, _ retry: RetryPolicy) -> Duration {
        guard response.status == 409, retry.delay > .zero else { return .zero }
        return retry.delay * Double.random(in: 0..<1)
    }

    /// For refusals a caller finds inside an answer (the sub-answers of a `/batch`): whether one
    /// more attempt is allowed after `attempts`, and after how long (the server's `Retry-After`
    /// when it is within ``RetryPolicy/maximumDelay``, else the policy's delay, with jitter).
    /// Nil: the policy says stop.
    func delayBeforeRetry(after attempts: Int, asked: Duration?) -> Duration? {
        guard attempts < retry.maximumAttempts else { return nil }
        if let asked, asked > retry.maximumDelay { return nil }
        let jitter = retry.delay > .zero ? retry.delay * Double.random(in: 0..<1) : .zero
        return (asked ?? retry.delay(before: attempts + 1)) + jitter
    }

    /// Waits `delay` before a retry that ``delayBeforeRetry(after:asked:)`` allowed, and counts it.
    ///
    /// - Throws: ``ServiceError`` cancelled, when the task is cancelled during the wait.
    func pauseBeforeRetry(_ delay: Duration, _ request: Request) async throws(ServiceError) {
        try await Self.sleep(for: delay, request)
        counters.retries.add(1, ordering: .relaxed)
    }

    /// A `Retry-After` or `Backoff` value in whole seconds (the HTTP-date form is not used by Kinto).
    static func seconds(from text: String) -> Duration? {
        guard let value = Int(text.trimmingCharacters(in: .whitespaces)), value >= 0 else { return nil }
        return .seconds(value)
    }

    private func noteBackoff(_ response: Response) {
        guard let asked = response.header("Backoff").flatMap(Self.seconds(from:)), asked > .zero else { return }
        let until = ContinuousClock.now + min(asked, retry.maximumDelay)
        backoffUntil.withLock { current in
            if current.map({ $0 < until }) ?? true { current = until }
        }
    }

    private func waitForBackoff(_ request: Request) async throws(ServiceError) {
        guard let until = backoffUntil.withLock({ $0 }) else { return }
        let now = ContinuousClock.now
        guard until > now else { return }
        try await Self.sleep(for: until - now, request)
    }

    private static func sleep(for delay: Duration, _ request: Request) async throws(ServiceError) {
        do {
            try await Task.sleep(for: delay)
        } catch {
            throw ServiceError(.cancelled(request.line))
        }
    }

    // MARK: One attempt

    private func attemptOnce(_ request: Request) async -> Result<Response, ServiceError> {
        if Task.isCancelled { return .failure(ServiceError(.cancelled(request.line))) }
        var urlRequest = URLRequest(url: request.url, timeoutInterval: Self.backstop(timeout.seconds))
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        urlRequest.httpBody = request.body
        var sent = request.body?.count ?? 0
        if let file = request.bodyFile {
            guard let size = (try? FileManager.default.attributesOfItem(atPath: file.path))?[.size] as? NSNumber else {
                return .failure(ServiceError(.fileFailed(expected: "a file to send", found: "none at '\(file.path)'")))
            }
            sent = size.intValue
            urlRequest.setValue(String(sent), forHTTPHeaderField: "Content-Length")
        }
        if let sink = request.sink {
            do throws(ServiceError) {
                try sink.start()
            } catch {
                return .failure(error)
            }
        }
        // Made under the lock: a session that ``retire(_:)`` replaced is invalidated, and making a
        // task in it traps in swift-corelibs-foundation.
        let (session, task) = self.session.withLock { session -> (URLSession, URLSessionTask) in
            if let file = request.bodyFile { return (session, session.uploadTask(with: urlRequest, fromFile: file)) }
            return (session, session.dataTask(with: urlRequest))
        }
        #if canImport(FoundationNetworking)
            // When a kept-alive connection turns out to be closed as a request goes out (a
            // server's idle timeout, a restart, a proxy), libcurl sends the request again on a new
            // connection. A body given as data cannot be sent twice by swift-corelibs-foundation:
            // the resend would go out empty and wait for its time limit. Before resending, it asks
            // the task's delegate for the body again; the delegate ends the attempt there instead,
            // as a dropped connection, and ``send(_:)`` retries it whole (every request with a body
            // that ModelKit sends may be repeated). So requests with a body share the kept-alive
            // connections too: a connection per request costs about as much processor time as the
            // request takes there (see ``retire(_:)``).
            if request.body != nil || request.bodyFile != nil { task.delegate = delegate }
        #endif
        let box = TaskBox(task)
        counters.requests.add(1, ordering: .relaxed)
        counters.bytesSent.add(sent, ordering: .relaxed)
        // A sink takes a successful answer's body, up to its own limit; any other answer's body
        // (an error page) is kept, up to the client's.
        let limit = request.sink.map { max(Int(clamping: $0.limit), maximumResponseBytes) } ?? maximumResponseBytes
        let delegate = delegate
        // The time limit is the client's own: the session's timeouts only catch silence. A file's
        // transfer may take longer than the limit, as long as it is never silent that long.
        let deadline = DispatchTime.now() + timeout.seconds
        let isFile = request.sink != nil || request.bodyFile != nil
        let idleLimit = isFile ? timeout.seconds : nil
        // A download's error page is small: a large one is not kept.
        let dataLimit = request.sink == nil ? maximumResponseBytes : min(maximumResponseBytes, Self.errorPageLimit)
        let outcome: SessionDelegate.Outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                delegate.register(
                    box, limit: limit, dataLimit: dataLimit, sent: sent, deadline: deadline, idleLimit: idleLimit,
                    sink: request.sink, onSent: request.onSent, continuation: continuation)
                // A cancellation that came before the registration found nothing to stop.
                if Task.isCancelled {
                    delegate.stop(task, because: .cancelled)
                } else {
                    task.resume()
                }
            }
        } onCancel: {
            delegate.stop(box.task, because: .cancelled)
        }
        counters.bytesReceived.add(outcome.received, ordering: .relaxed)
        #if canImport(FoundationNetworking)
            if case .completed = outcome.ending {
            } else {
                retire(session)
            }
        #else
            _ = session
        #endif
        switch outcome.ending {
        case .completed(let status, let headers, let body):
            return .success(Response(status: status, headers: headers, body: body, attempts: 1))
        case .stopped(.timedOut):
            return .failure(ServiceError(.timedOut("\(request.line) (limit \(timeout))")))
        case .stopped(.cancelled):
            return .failure(ServiceError(.cancelled(request.line)))
        case .stopped(.connectionDropped):
            return .failure(
                ServiceError(
                    .unreachable(
                        "\(request.line): libcurl started to send it again (its kept-alive connection was probably closed)")))
        case .stopped(.sinkFailed(let reason)):
            return .failure(ServiceError(.fileFailed(expected: "a file that can be written", found: reason)))
        case .stopped(.tooLarge(let declared)) where request.sink != nil:
            let found = declared.map { "a Content-Length of \($0) bytes" } ?? "more (cut off)"
            return .failure(
                ServiceError(.fileFailed(expected: "at most \(request.sink!.limit) bytes (the file's length)", found: found)))
        case .stopped(.tooLarge(let declared)):
            let found = declared.map { "a Content-Length of \($0) bytes" } ?? "more than \(limit) bytes (cut off)"
            return .failure(ServiceError(.invalidResponse(expected: "an answer of at most \(limit) bytes", found: found)))
        case .failed(.timedOut?, _):
            // The session's backstop, which only a client limit that failed to fire lets through:
            // said apart from the limit, so that a test can tell which one ended the request.
            let backstop = Self.backstop(timeout.seconds)
            return .failure(
                ServiceError(.timedOut("\(request.line) (the session's backstop of \(backstop) s; limit \(timeout))")))
        case .failed(.cancelled?, _):
            return .failure(ServiceError(.cancelled(request.line)))
        case .failed(_, let message):
            return .failure(ServiceError(.unreachable("\(request.line): \(message)")))
        case .refusedCredentials:
            // The server's answer was a 401; the session only kept it from us.
            return .success(Response(status: 401, headers: [:], body: Data(), attempts: 1))
        case .notHTTP(let type):
            return .failure(ServiceError(.invalidResponse(expected: "an HTTP response", found: type)))
        }
    }

    #if canImport(FoundationNetworking)
        /// Puts a new session in place of `used`, after a transfer in it that did not complete.
        ///
        /// swift-corelibs-foundation may go on reading a transfer the client stopped (a body over
        /// the limit) to its end while its session runs other tasks, and a failed transfer may
        /// leave a dead connection in the session's pool. The next attempt (a retry) starts from
        /// a new session and new connections instead; the old one ends when its tasks have.
        /// A session per request would avoid both, but then every request opens a connection,
        /// and swift-corelibs-foundation spends about as much processor time as a request on a
        /// new connection takes (measured: 8 ms per request, against 0.9 ms on a kept-alive
        /// connection, for a 10 ms request to a local server).
        ///
        /// Requests already running in the old session go on there (a transfer the client
        /// stopped may still be read to its end meanwhile; what it reads is dropped). Tasks are
        /// made under the same lock, so none is made in the old session once it is invalidated.
        private func retire(_ used: URLSession) {
            let replaced = session.withLock { current -> Bool in
                guard current === used else { return false }
                current = URLSession(configuration: configuration, delegate: delegate, delegateQueue: Self.callbackQueue())
                return true
            }
            if replaced { used.finishTasksAndInvalidate() }
        }
    #endif

    /// The queue a session calls the delegate on: on Linux, a serial dispatch queue behind the
    /// `OperationQueue` that `URLSession` takes; elsewhere, one the session makes (nil).
    private static func callbackQueue() -> OperationQueue? {
        #if canImport(FoundationNetworking)
            CallbackQueue()
        #else
            nil
        #endif
    }

    private final class Counters: Sendable {
        let requests = Atomic<Int>(0)
        let retries = Atomic<Int>(0)
        let bytesSent = Atomic<Int>(0)
        let bytesReceived = Atomic<Int>(0)
    }

    /// Carries a task into the cancellation handler, the time limit and the delegate's deferred
    /// cancel.
    // Unchecked: the one stored property is a `let`, and all that is done with the task from
    // another thread is `cancel()`, which swift-corelibs-foundation synchronizes on the task's own
    // queue (as Foundation does on Apple platforms); `URLSessionTask` is just not marked
    // `Sendable` in swift-corelibs-foundation.
    final class TaskBox: @unchecked Sendable {
        let task: URLSessionTask
        init(_ task: URLSessionTask) { self.task = task }
    }
}

#if canImport(FoundationNetworking)
    /// Runs a session's delegate calls in order on a serial dispatch queue, on the same threads as
    /// before (the shared pool, not a thread of its own), without an `Operation` for each.
    ///
    /// swift-corelibs-foundation hands every delegate call (the response, each piece of the body,
    /// the completion: four or more per request) to the session's `OperationQueue` as a block,
    /// and its `OperationQueue` makes, schedules and observes an `Operation` for each: the largest
    /// part of the processor time a request cost the calling process outside libcurl. A serial
    /// queue keeps the order the session relies on (one call at a time, in the order made).
    /// swift-corelibs-foundation's `URLSession` adds only blocks; an `Operation` added to this
    /// queue would still run, through `OperationQueue`'s own scheduling.
    // Unchecked, as its superclass is declared by Foundation: the properties added are `let`s
    // holding a dispatch queue, a semaphore and a key, each safe to use from any thread.
    final class CallbackQueue: OperationQueue, @unchecked Sendable {
        /// How many calls may wait to run before the session's thread that adds one waits too.
        ///
        /// A body arrives as a call per piece (up to 16 KB each, decompressed), added by libcurl's
        /// thread as fast as the connection (or the decompressor) delivers. Were the calls not
        /// bounded, an answer over the size limit, streamed fast or compressed, would pile up in
        /// this queue faster than the delegate can see that it is over the limit and stop it
        /// (gigabytes, measured). Waiting here slows libcurl to the delegate's pace, so a transfer
        /// holds at most this many pieces besides the bytes under the limit.
        static let maximumWaiting = 16
        /// How long the session's thread waits for room at most: should the delegate's calls ever
        /// be held up behind the session's own queue (the delegate hands every cancel to another
        /// queue, so none is known), that delays them rather than stopping them.
        static let longestWait: DispatchTimeInterval = .seconds(1)

        // A thread of its own (not the shared pool, which is as wide as the processors on Linux):
        // libcurl's thread may wait for this queue, and must not wait behind work that waits for
        // libcurl.
        private let calls = DispatchQueue(label: "ModelKitServices.HTTPClient.callbacks")
        private let room = DispatchSemaphore(value: CallbackQueue.maximumWaiting)
        private let key = DispatchSpecificKey<Bool>()

        override init() {
            super.init()
            calls.setSpecific(key: key, value: true)
            // Should an `Operation` ever be added, it runs one at a time too.
            maxConcurrentOperationCount = 1
        }

        override func addOperation(_ block: @escaping @Sendable () -> Void) {
            // A call added from a call (none is, today) never waits for the queue it runs on.
            let holdsRoom =
                DispatchQueue.getSpecific(key: key) == nil && room.wait(timeout: .now() + Self.longestWait) == .success
            calls.async { [room] in
                block()
                if holdsRoom { room.signal() }
            }
        }
    }
#endif

/// How a service retries a request whose attempt failed in a way that may pass: a connection
/// that could not be made or was dropped, a server error (5xx), "too many requests" (429), any
/// other error answer with `Retry-After`, or a 409 whose message says "please retry" (Kinto on
/// PostgreSQL, when concurrent transactions collide; inside a `/batch` too, which is then sent
/// again whole). A 412 is a real conflict and is never retried.
///
/// Every request ModelKit sends may be repeated safely: reads, writes with a version
/// precondition (`If-Match`, `If-None-Match`), and batches of them.
///
/// ```swift
/// let service = KintoService(url: url, retry: RetryPolicy(maximumAttempts: 5, delay: .seconds(1)))
/// // Many clients writing into one collection on PostgreSQL: room for several collisions.
/// let busy = KintoService(url: url, retry: RetryPolicy(maximumAttempts: 10, delay: .milliseconds(200)))
/// ```
public struct RetryPolicy: Sendable, Hashable {
    /// How many times a request is sent at most, the first time included (1: no retries).
    public var maximumAttempts: Int
    /// The wait before the first retry when the server did not say how long to wait; each further
    /// retry waits twice as long as the one before. A retry of a 409 "please retry" also waits a
    /// random part of it on top, so that clients that collided do not collide again.
    public var delay: Duration
    /// The longest wait the service accepts from the server (`Retry-After`, `Backoff`). An answer
    /// that asks for longer is not retried: its error carries the wait
    /// (``ServiceError/retryAfter``), for the app to decide.
    public var maximumDelay: Duration

    /// - Parameters:
    ///   - maximumAttempts: Attempts per request, at least 1 (3 by default: two retries).
    ///   - delay: The first retry's wait when the server names none (0.5 s by default).
    ///   - maximumDelay: The longest server-requested wait honoured (60 s by default).
    public init(maximumAttempts: Int = 3, delay: Duration = .milliseconds(500), maximumDelay: Duration = .seconds(60)) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.delay = max(.zero, delay)
        self.maximumDelay = max(.zero, maximumDelay)
    }

    /// Each request is sent once.
    public static let never = RetryPolicy(maximumAttempts: 1)

    /// The wait before attempt `attempt` (2 or more): `delay`, doubled for each retry before it,
    /// and never more than ``maximumDelay``.
    func delay(before attempt: Int) -> Duration {
        let doublings = min(max(0, attempt - 2), 16)
        return min(delay * (1 << doublings), maximumDelay)
    }
}

/// What a service has sent and received so far: for checking how many requests an operation
/// took, and for benchmarks.
///
/// ```swift
/// let before = service.metrics
/// try await service.save(author)
/// print(service.metrics.requests - before.requests)   // 2: the batch limit, then one /batch
/// ```
public struct ServiceMetrics: Sendable, Hashable {
    /// HTTP requests sent, each retry counted.
    public var requests: Int
    /// Of ``requests``, how many were retries.
    public var retries: Int
    /// Bytes of request bodies sent (headers not counted).
    public var bytesSent: Int
    /// Bytes of response bodies received, including bodies cut off for being too large.
    public var bytesReceived: Int

    /// Counters with the given values (all zero by default).
    public init(requests: Int = 0, retries: Int = 0, bytesSent: Int = 0, bytesReceived: Int = 0) {
        self.requests = requests
        self.retries = retries
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
    }
}

extension Duration {
    /// The duration in seconds, as `TimeInterval` for Foundation.
    var seconds: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
