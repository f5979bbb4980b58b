import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Receives the answers of an ``HTTPClient``'s session piece by piece, so that an answer larger
/// than the limit is cut off as soon as it says (`Content-Length`) or shows it is, instead of
/// being buffered whole, and ends each transfer exactly once: completed, failed, or stopped by the
/// client (time limit, cancellation, size).
final class SessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    /// Why the client stopped a transfer.
    enum Stop: Sendable {
        case timedOut
        case cancelled
        /// The answer is over the limit; `declared` is its `Content-Length` when that said so.
        case tooLarge(declared: Int64?)
    }

    enum Ending: Sendable {
        case completed(status: Int, headers: [String: String], body: Data)
        case stopped(Stop)
        /// The session's error: its `URLError` code when it has one, and its description.
        case failed(URLError.Code?, String)
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
        var stop: Stop?
    }

    private let transfers = Mutex<[Int: Transfer]>([:])

    /// Starts following `task`; `continuation` is resumed once, when it ends.
    func register(
        _ task: URLSessionTask, limit: Int, continuation: CheckedContinuation<Outcome, Never>,
        onFinish: @escaping @Sendable () -> Void
    ) {
        transfers.withLock {
            $0[task.taskIdentifier] = Transfer(continuation: continuation, limit: limit, onFinish: onFinish)
        }
    }

    /// Stops `task` for `reason`; the first reason given is the one reported.
    func stop(_ task: URLSessionTask, because reason: Stop) {
        transfers.withLock {
            if $0[task.taskIdentifier] != nil, $0[task.taskIdentifier]?.stop == nil { $0[task.taskIdentifier]?.stop = reason }
        }
        task.cancel()
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let over: Stop? = transfers.withLock { transfers -> Stop? in
            guard var transfer = transfers[dataTask.taskIdentifier], transfer.stop == nil else { return nil }
            transfer.received += data.count
            let declared = dataTask.response?.expectedContentLength ?? -1
            if declared > Int64(transfer.limit) {
                transfer.stop = .tooLarge(declared: declared)
            } else if transfer.received > transfer.limit {
                transfer.stop = .tooLarge(declared: nil)
            } else {
                transfer.data.append(data)
            }
            transfers[dataTask.taskIdentifier] = transfer
            return transfer.stop
        }
        if over != nil {
            dataTask.cancel()
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let transfer = transfers.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        transfer.onFinish()
        let ending: Ending
        if let stop = transfer.stop {
            ending = .stopped(stop)
        } else if let error {
            ending = .failed((error as? URLError)?.code, error.localizedDescription)
        } else if let http = task.response as? HTTPURLResponse {
            var headers: [String: String] = [:]
            for (key, value) in http.allHeaderFields {
                if let key = key as? String, let value = value as? String { headers[key] = value }
            }
            ending = .completed(status: http.statusCode, headers: headers, body: transfer.data)
        } else {
            ending = .notHTTP(task.response.map { "\(type(of: $0))" } ?? "no response")
        }
        transfer.continuation.resume(returning: Outcome(ending: ending, received: transfer.received))
    }
}
