import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Receives the answers of an ``HTTPClient``'s session piece by piece, so that an answer larger
/// than the limit is cut off as soon as it says (`Content-Length`) or shows it is, instead of
/// being buffered whole, and ends each transfer exactly once: completed, failed, or stopped by the
/// client (time limit, cancellation, size) or by the delegate itself (a dropped kept-alive
/// connection, on Linux).
final class SessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    /// Why the client (or the delegate) stopped a transfer.
    enum Stop: Sendable {
        case timedOut
        case cancelled
        /// The answer is over the limit; `declared` is its `Content-Length` when that said so.
        case tooLarge(declared: Int64?)
        /// The kept-alive connection closed as the request went out, and libcurl was about to
        /// send it again without its body (Linux).
        case connectionDropped
        /// The answer's sink could not write a piece (a full disk, say).
        case sinkFailed(String)
    }

    enum Ending: Sendable {
        case completed(status: Int, headers: [String: String], body: Data)
        case stopped(Stop)
        /// The session's error: its `URLError` code when it has one, and its description.
        case failed(URLError.Code?, String)
        /// The server asked for credentials (401 with `WWW-Authenticate`), and the challenge was
        /// declined: the ones sent were refused.
        case refusedCredentials
        case notHTTP(String)
    }

    struct Outcome: Sendable {
        let ending: Ending
        /// Body bytes that arrived, also those of a transfer cut off.
        let received: Int
    }

    private struct Transfer {
        let task: HTTPClient.TaskBox
        let continuation: CheckedContinuation<Outcome, Never>
        /// The most bytes of the answer's body, as the session counts them.
        let limit: Int
        /// The most bytes kept in `data` (less than `limit` when a sink takes a successful body).
        let dataLimit: Int
        /// When the client's time limit stops the transfer.
        var deadline: DispatchTime
        /// For a file's transfer: the deadline moves this many seconds past each piece of body
        /// sent or received (the limit is then on silence, not on the whole transfer).
        let idleLimit: Double?
        /// The body bytes sent with the request, which the session's progress counts too.
        let sent: Int64
        /// Where the body goes instead of `data`.
        let sink: ResponseSink?
        let onSent: (@Sendable (Int64) -> Void)?
        var data = Data()
        var received = 0
        var challenged = false
    }

    private struct State {
        var transfers: [ObjectIdentifier: Transfer] = [:]
        /// One timer for the time limits of all transfers, set for the earliest deadline. A timer
        /// per request (a task that sleeps, cancelled when the request ends) cost a task, a timer
        /// registration and two thread wake-ups per request, whereas requests nearly always end
        /// long before their limit: this one fires about once per limit while requests are under
        /// way.
        let deadlines = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "ModelKitServices.HTTPClient.deadlines"))
        /// When ``deadlines`` fires next, or nil when it waits for no transfer.
        var armed: DispatchTime?

        mutating func arm(at deadline: DispatchTime?) {
            armed = deadline
            // A little leeway lets the system fire it along with other timers.
            deadlines.schedule(deadline: deadline ?? .distantFuture, leeway: .milliseconds(10))
        }
    }

    private let state = Mutex(State())

    override init() {
        super.init()
        state.withLock { state in
            state.deadlines.setEventHandler { [weak self] in self?.stopOverdueTransfers() }
            state.arm(at: nil)
            state.deadlines.resume()
        }
    }

    deinit {
        state.withLock { $0.deadlines.cancel() }
    }

    /// Starts following `task`; `continuation` is resumed once, when it ends (at the latest when
    /// `deadline` passes: then as ``Stop/timedOut``).
    func register(
        _ task: HTTPClient.TaskBox, limit: Int, dataLimit: Int, sent: Int, deadline: DispatchTime, idleLimit: Double?,
        sink: ResponseSink?, onSent: (@Sendable (Int64) -> Void)?, continuation: CheckedContinuation<Outcome, Never>
    ) {
        state.withLock { state in
            state.transfers[ObjectIdentifier(task.task)] = Transfer(
                task: task, continuation: continuation, limit: limit, dataLimit: dataLimit, deadline: deadline,
                idleLimit: idleLimit, sent: Int64(sent), sink: sink, onSent: onSent)
            let check = Self.nextCheck(before: deadline)
            if state.armed.map({ check < $0 }) ?? true { state.arm(at: check) }
        }
    }

    /// How often transfers under way are looked at for bytes the delegate is never shown.
    ///
    /// swift-corelibs-foundation keeps the body of a redirect (3xx) answer to itself until the
    /// answer ends (it is never handed to the delegate), so such a body is watched through the
    /// session's own count of bytes received, at this interval, while any transfer is under way.
    static let sizeCheckInterval: DispatchTimeInterval = .milliseconds(250)
    /// The most bytes of an answer the session may take in before it shows the delegate the
    /// answer's head: a redirect's body, which ModelKit never needs (a page saying "moved"). The
    /// session keeps it decompressed and copies it whole for each piece, so it is cut short.
    static let unseenBodyLimit: Int64 = 16 << 10

    /// When the timer should fire next for a transfer with `deadline`.
    private static func nextCheck(before deadline: DispatchTime) -> DispatchTime {
        min(deadline, DispatchTime.now() + sizeCheckInterval)
    }

    /// Stops the transfers whose deadline has passed or whose answer has grown past the limit
    /// unseen, and sets the timer for the next look.
    private func stopOverdueTransfers() {
        let now = DispatchTime.now()
        let (overdue, running) = state.withLock {
            state -> ([HTTPClient.TaskBox], [(box: HTTPClient.TaskBox, sent: Int64, limit: Int64)]) in
            var overdue: [HTTPClient.TaskBox] = []
            var running: [(box: HTTPClient.TaskBox, sent: Int64, limit: Int64)] = []
            var next: DispatchTime?
            for transfer in state.transfers.values {
                if transfer.deadline <= now {
                    overdue.append(transfer.task)
                    continue
                }
                running.append((transfer.task, transfer.sent, Int64(transfer.limit)))
                if next.map({ transfer.deadline < $0 }) ?? true { next = transfer.deadline }
            }
            state.arm(at: next.map(Self.nextCheck(before:)))
            return (overdue, running)
        }
        // Read outside the lock: the task's response is behind a queue of the session's. The
        // progress count is written by libcurl's thread without a lock (in
        // swift-corelibs-foundation), so this reads a recent value, which is all a backstop needs.
        let oversize = running.filter { transfer in
            let task = transfer.box.task
            // Bytes in and out as the session counts them, headers excepted, less the body sent.
            let received = task.progress.completedUnitCount - transfer.sent
            return received > transfer.limit || (received > Self.unseenBodyLimit && task.response == nil)
        }
        // All of them end first; then their tasks are cancelled (a cancel waits for the task's own
        // queue, which must not hold up the other requests' endings).
        let ended =
            overdue.filter { finish(ObjectIdentifier($0.task), with: .stopped(.timedOut)) }
            + oversize.map(\.box).filter { finish(ObjectIdentifier($0.task), with: .stopped(.tooLarge(declared: nil))) }
        for box in ended { Self.cancel(box) }
    }

    /// Stops `task` for `reason`, and ends its transfer at once: the caller does not wait for
    /// the session to let go of the connection (swift-corelibs-foundation reads the rest of a
    /// body that streams in fast before it reports a cancelled task; what it reads then is
    /// dropped, not kept).
    func stop(_ task: URLSessionTask, because reason: Stop) {
        // Cancelled once, and only while the session has not reported the task complete:
        // swift-corelibs-foundation can trap on a cancel that races with a task's completion.
        guard finish(ObjectIdentifier(task), with: .stopped(reason)) else { return }
        Self.cancel(HTTPClient.TaskBox(task))
    }

    /// Cancels `task` on a thread of its own. swift-corelibs-foundation's `cancel()` waits for the
    /// queue that all of a process's sessions share, where libcurl runs; libcurl's thread in turn
    /// may be waiting for room in the delegate's queue (see `CallbackQueue`). Cancelling from the
    /// delegate's queue would then wait for ever, and from anywhere else it would hold up the
    /// caller until libcurl lets go of that queue.
    static func cancel(_ task: HTTPClient.TaskBox) {
        cancels.async { task.task.cancel() }
    }

    /// Where tasks are cancelled (and authentication challenges declined, which cancels too), one
    /// at a time: a serial queue with a thread of its own, so that a cancel waiting for the
    /// sessions' shared queue ties up none of the threads that the delegate's calls (which make
    /// room for libcurl's thread, see `CallbackQueue`) or Swift's tasks run on.
    static let cancels = DispatchQueue(label: "ModelKitServices.HTTPClient.cancels")

    /// Ends the transfer of task `identifier`; false when it had ended already.
    @discardableResult
    private func finish(_ identifier: ObjectIdentifier, with ending: Ending) -> Bool {
        // The timer is left as it is: it finds nothing overdue when it fires, and sets itself for
        // the next deadline then.
        guard let transfer = state.withLock({ $0.transfers.removeValue(forKey: identifier) }) else { return false }
        transfer.continuation.resume(returning: Outcome(ending: ending, received: transfer.received))
        return true
    }

    #if canImport(FoundationNetworking)
        /// Declines authentication challenges, so that a 401 ends the request. A 401 with
        /// `WWW-Authenticate: Basic` (Kinto's answer to wrong credentials) raises a challenge in
        /// swift-corelibs-foundation, and unless a session delegate answers it the task neither
        /// completes nor times out (swift-corelibs-foundation#5456). Declining cancels the task;
        /// the transfer remembers why.
        func urlSession(
            _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
            completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
        ) {
            state.withLock { $0.transfers[ObjectIdentifier(task)]?.challenged = true }
            // The credentials are in the request's own header; the session has none to offer.
            // Declining cancels the task, which waits for the sessions' shared queue: not here,
            // on the delegate's queue, which libcurl's thread may be waiting on (`CallbackQueue`).
            Self.cancels.async { completionHandler(.cancelAuthenticationChallenge, nil) }
        }
    #endif

    #if canImport(FoundationNetworking)
        /// Ends the attempt of a request with a body that libcurl is about to send again by
        /// itself (its kept-alive connection closed as it went out; see
        /// ``HTTPClient``'s `attemptOnce`). swift-corelibs-foundation asks here for the body
        /// again before the resend, and can take none for a body given as data: without a stream
        /// (nil) it goes on with an empty body. The client retries the request itself instead.
        ///
        /// This runs on the session's own queue, inside libcurl, and cancelling a task waits for
        /// that queue: the task is cancelled from another one. (As with ``stop(_:because:)``, the
        /// cancel may meet the task's completion; the transfer has ended before either.)
        func urlSession(
            _ session: URLSession, task: URLSessionTask,
            needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void
        ) {
            completionHandler(nil)
            guard finish(ObjectIdentifier(task), with: .stopped(.connectionDropped)) else { return }
            Self.cancel(HTTPClient.TaskBox(task))
        }
    #endif

    /// Follows no redirect: the task then ends with the redirect answer itself (its status and
    /// headers; the session keeps its body), for ``HTTPClient/send(_:)`` to decide with the
    /// answer's own `Location`. swift-corelibs-foundation would follow one to any origin with the
    /// request's `Authorization` header, would send a 307's or 308's body again as nothing, and
    /// resolves a relative `Location` against the host alone.
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    /// Whether two URLs have the same origin: scheme, host and port (the scheme's default port
    /// when none is written), compared without regard to case where case does not matter.
    static func sameOrigin(_ first: URL, _ second: URL) -> Bool {
        func origin(_ url: URL) -> (String, String, Int)? {
            guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
            let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : -1)
            return (scheme, host, port)
        }
        guard let a = origin(first), let b = origin(second) else { return false }
        return a == b
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        let onSent = state.withLock { state -> (@Sendable (Int64) -> Void)? in
            Self.moved(&state, ObjectIdentifier(task))
            return state.transfers[ObjectIdentifier(task)]?.onSent
        }
        onSent?(totalBytesSent)
    }

    /// Moves the deadline of a file's transfer past the piece that just moved.
    private static func moved(_ state: inout State, _ identifier: ObjectIdentifier) {
        guard let idle = state.transfers[identifier]?.idleLimit else { return }
        state.transfers[identifier]?.deadline = DispatchTime.now() + idle
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let declared = dataTask.response?.expectedContentLength ?? -1
        let status = (dataTask.response as? HTTPURLResponse)?.statusCode ?? 0
        if (200...299).contains(status), let sink = state.withLock({ $0.transfers[ObjectIdentifier(dataTask)]?.sink }) {
            // Written outside the lock (a file write can take a while); the delegate's calls for
            // one task come one at a time.
            let (running, over) = state.withLock { state -> (Bool, Stop?) in
                let identifier = ObjectIdentifier(dataTask)
                guard let before = state.transfers[identifier]?.received else { return (false, nil) }
                state.transfers[identifier]?.received = before + data.count
                Self.moved(&state, identifier)
                if declared > sink.limit { return (true, .tooLarge(declared: declared)) }
                return (true, nil)
            }
            // Ended already (stopped by the client): the piece is dropped.
            guard running else { return }
            if let over { return stop(dataTask, because: over) }
            if !sink.write(data) {
                stop(dataTask, because: sink.failure.map(Stop.sinkFailed) ?? .tooLarge(declared: nil))
            }
            return
        }
        let over: Stop? = state.withLock { state -> Stop? in
            // Mutated in place through the dictionary: a copy of the transfer taken out and put
            // back would share its body's buffer, and each append would copy the whole body.
            let identifier = ObjectIdentifier(dataTask)
            guard let (limit, before) = state.transfers[identifier].map({ ($0.dataLimit, $0.received) }) else { return nil }
            let received = before + data.count
            state.transfers[identifier]?.received = received
            if declared > Int64(limit) { return .tooLarge(declared: declared) }
            if received > limit { return .tooLarge(declared: nil) }
            // A declared length (within the limit) is the buffer's size from the first piece on,
            // instead of growing it piece by piece.
            if before == 0, declared > Int64(data.count) { state.transfers[identifier]?.data.reserveCapacity(Int(declared)) }
            state.transfers[identifier]?.data.append(data)
            return nil
        }
        if let over {
            stop(dataTask, because: over)
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        // Nil when the client stopped the transfer already.
        guard let (data, challenged) = state.withLock({ $0.transfers[ObjectIdentifier(task)].map { ($0.data, $0.challenged) } })
        else { return }
        let ending: Ending
        if let error, challenged, (error as? URLError)?.code == .cancelled {
            ending = .refusedCredentials
        } else if let error {
            ending = .failed((error as? URLError)?.code, error.localizedDescription)
        } else if let http = task.response as? HTTPURLResponse {
            var headers: [String: String] = [:]
            for (key, value) in http.allHeaderFields {
                if let key = key as? String, let value = value as? String { headers[key] = value }
            }
            ending = .completed(status: http.statusCode, headers: headers, body: data)
        } else {
            ending = .notHTTP(task.response.map { "\(type(of: $0))" } ?? "no response")
        }
        finish(ObjectIdentifier(task), with: ending)
    }
}
