import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Requests to the Kinto server: every request of the service goes through
// send(_:path:body:headers:idempotent:), the one place that builds URLs and reads the Authorization header.

extension KintoService {
    typealias Response = HTTPClient.Response

    func recordPath(_ id: RecordID) -> String {
        "/buckets/\(bucket)/collections/\(id.collection)/records/\(id.id)"
    }

    /// Whether `path` (as a batch answer echoes it, with the API's prefix) ends with
    /// ``recordPath(_:)`` of `id`, compared byte by byte without building that path: a batch
    /// answer has one per write.
    func echoes(_ path: String, _ id: RecordID) -> Bool {
        var path = path
        return path.withUTF8 { bytes in
            var end = bytes.count
            // Each part, from the last, must end where the one after it starts.
            func endsWith(_ part: String) -> Bool {
                var part = part
                return part.withUTF8 { part in
                    guard part.count <= end else { return false }
                    let start = end - part.count
                    guard bytes[start..<end].elementsEqual(part) else { return false }
                    end = start
                    return true
                }
            }
            return endsWith(id.id) && endsWith("/records/") && endsWith(id.collection) && endsWith("/collections/")
                && endsWith(bucket) && endsWith("/buckets/")
        }
    }

    /// Sends a request to `path` under ``baseURL`` and returns the answer, whatever its status.
    ///
    /// An `idempotent` request (the default: every request of save, fetch and delete is) is
    /// retried as the service's ``RetryPolicy`` says; pass `false` for one that must not be
    /// repeated, such as a write without a version precondition.
    ///
    /// `headers` go with the request (preconditions: `If-Match`, `If-None-Match`).
    ///
    /// - Throws: ``ServiceError``: unreachable, timed out, cancelled, or an answer too large.
    func send(
        _ method: String, path: String, body: Data?, headers: [String: String] = [:], idempotent: Bool = true
    ) async throws(ServiceError) -> Response {
        guard let url = URL(string: baseURL.absoluteString + path) else {
            throw ServiceError(.invalidModel(expected: "a URL", found: "'\(baseURL.absoluteString + path)'"))
        }
        var request = HTTPClient.Request(
            method: method, url: url, headers: ["Accept": "application/json"], body: body, isIdempotent: idempotent)
        if body != nil { request.headers["Content-Type"] = "application/json" }
        for (name, value) in headers { request.headers[name] = value }
        if let authorization = account.withLock({ $0.authorization }) { request.headers["Authorization"] = authorization }
        return try await http.send(request)
    }
}
