import Foundation
import Synchronization

/// What a service has sent and received so far: for benchmarks, and for apps that want to see
/// what their model layer costs on the network.
///
/// ```swift
/// let before = service.metrics
/// try await service.save(blog)
/// let used = service.metrics - before
/// print("\(used.requests) requests, \(used.bytesSent) bytes sent")
/// ```
public struct ServiceMetrics: Sendable, Hashable {
    /// HTTP requests sent (a `/batch` counts once, whatever it holds).
    public var requests: Int
    /// Bytes of request bodies sent. Headers are not counted: the HTTP client adds some of its own.
    public var bytesSent: Int
    /// Bytes of response bodies received (headers not counted).
    public var bytesReceived: Int

    public init(requests: Int = 0, bytesSent: Int = 0, bytesReceived: Int = 0) {
        self.requests = requests
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
    }

    /// What was used between two readings: `after - before`.
    public static func - (after: ServiceMetrics, before: ServiceMetrics) -> ServiceMetrics {
        ServiceMetrics(
            requests: after.requests - before.requests, bytesSent: after.bytesSent - before.bytesSent,
            bytesReceived: after.bytesReceived - before.bytesReceived)
    }
}

/// The running totals behind ``KintoService/metrics``: atomics, since requests run concurrently
/// off the caller's actor.
final class MetricsCounters: Sendable {
    private let requests = Atomic<Int>(0)
    private let sent = Atomic<Int>(0)
    private let received = Atomic<Int>(0)

    /// Counts a request about to be sent with a body of `bodyBytes`.
    func recordRequest(bodyBytes: Int) {
        requests.add(1, ordering: .relaxed)
        sent.add(bodyBytes, ordering: .relaxed)
    }

    /// Counts a response body of `bytes`.
    func recordResponse(bytes: Int) {
        received.add(bytes, ordering: .relaxed)
    }

    var snapshot: ServiceMetrics {
        ServiceMetrics(
            requests: requests.load(ordering: .relaxed), bytesSent: sent.load(ordering: .relaxed),
            bytesReceived: received.load(ordering: .relaxed))
    }
}

extension KintoService {
    /// The requests and body bytes this service has sent and received since it was made.
    ///
    /// Each field is read on its own, so a reading taken while requests are in flight may count
    /// a request without its response; read it around a finished operation.
    public var metrics: ServiceMetrics { counters.snapshot }
}
