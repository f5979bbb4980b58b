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
        let continuation: CheckedContinuation<Outcome, Never>
        let limit: Int
        let onFinish: @Sendable () -> Void
        var data = Data()
        var received = 0
        var challenged = false
    }

    private let transfers = Mutex<[ObjectIdentifier: Transfer]>([:])

    /// Starts following `task`; `continuation` is resumed once, when it ends.
    func register(
        _ task: URLSessionTask, limit: Int, continuation: CheckedContinuation<Outcome, Never>,
        onFinish: @escaping @Sendable () -> Void
    ) {
        transfers.withLock {
            $0[ObjectIdentifier(task)] = Transfer(continuation: continuation, limit: limit, onFinish: onFinish)
        }
    }

    /// Stops `task` for `reason`, and ends its transfer at once: the caller does not wait for
    /// the session to let go of the connection (swift-corelibs-foundation reads the rest of a
    /// body that streams in fast before it reports a cancelled task; what it reads then is
    /// dropped, not kept).
    func stop(_ task: URLSessionTask, because reason: Stop) {
        // Cancelled once, and only while the session has not reported the task complete:
        // swift-corelibs-foundation can trap on a cancel that races with a task's completion.
        if finish(ObjectIdentifier(task), with: .stopped(reason)) {
            task.cancel()
        }
    }

    /// Ends the transfer of task `identifier`; false when it had ended already.
    @discardableResult
    private func finish(_ identifier: ObjectIdentifier, with ending: Ending) -> Bool {
        guard let transfer = transfers.withLock({ $0.removeValue(forKey: identifier) }) else { return false }
        transfer.onFinish()
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
            transfers.withLock { $0[ObjectIdentifier(task)]?.challenged = true }
            // The credentials are in the request's own header; the session has none to offer.
            completionHandler(.cancelAuthenticationChallenge, nil)
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
            let box = HTTPClient.TaskBox(task)
            DispatchQueue.global().async { box.task.cancel() }
        }
    #endif

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let declared = dataTask.response?.expectedContentLength ?? -1
        let over: Stop? = transfers.withLock { transfers -> Stop? in
            // Mutated in place through the dictionary: a copy of the transfer taken out and put
            // back would share its body's buffer, and each append would copy the whole body.
            let identifier = ObjectIdentifier(dataTask)
            guard let (limit, before) = transfers[identifier].map({ ($0.limit, $0.received) }) else { return nil }
            let received = before + data.count
            transfers[identifier]?.received = received
            if declared > Int64(limit) { return .tooLarge(declared: declared) }
            if received > limit { return .tooLarge(declared: nil) }
            transfers[identifier]?.data.append(data)
            return nil
        }
        if let over {
            stop(dataTask, because: over)
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        // Nil when the client stopped the transfer already.
        guard let (data, challenged) = transfers.withLock({ $0[ObjectIdentifier(task)].map { ($0.data, $0.challenged) } })
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
