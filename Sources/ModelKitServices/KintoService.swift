import Foundation
import ModelKit
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A ``ModelService`` on a Kinto server (Mozilla's JSON storage service; tested with 26.5).
///
/// Each model type is a collection of a bucket, each model a record whose id is the model's
/// object id. Writes go in `POST /batch` requests of at most the server's `batch_max_requests`;
/// a create is a `PUT` with `If-None-Match: *`, an update a `PUT` with `If-Match`, a delete a
/// `DELETE` with `If-Match`. Several services (servers, buckets, users) can be used at once.
///
/// ```swift
/// let service = KintoService(url: URL(string: "http://127.0.0.1:8888/v1")!, user: "alice", password: "s3cret")
/// try await service.save(author)
/// ```
public final class KintoService: ModelService {
    /// The server's API root, such as `http://127.0.0.1:8888/v1`.
    public let baseURL: URL
    /// The bucket the collections are in; `default` is each user's personal bucket, whose
    /// collections the server makes on first write. Another bucket must exist, with a collection
    /// per model type.
    public let bucket: String
    /// The account name, if any.
    public let user: String?
    private let authorization: String?
    private let timeout: TimeInterval
    private let session: URLSession
    /// The server's batch limit, read once.
    private let batchLimit = Mutex<Int?>(nil)
    /// How many HTTP requests this service has sent (the tests check batching with it).
    let requestCount = Atomic<Int>(0)

    /// - Parameters:
    ///   - url: The API root, ending in `/v1`.
    ///   - bucket: The bucket; by default the user's personal one.
    ///   - user, password: Basic credentials (Kinto's accounts plugin), or none.
    ///   - timeout: How long one request may take.
    public init(url: URL, bucket: String = "default", user: String? = nil, password: String? = nil, timeout: Duration = .seconds(30)) {
        baseURL = url
        self.bucket = bucket
        self.user = user
        if let user, let password {
            authorization = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        } else {
            authorization = nil
        }
        self.timeout = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = self.timeout
        configuration.timeoutIntervalForResource = self.timeout
        session = URLSession(configuration: configuration)
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    public var storeIdentifier: String { "kinto \(baseURL.absoluteString) bucket=\(bucket) user=\(user ?? "")" }

    // MARK: Records

    public func read(_ id: RecordID) async throws(ServiceError) -> RemoteRecord {
        let response = try await send("GET", path: recordPath(id), body: nil)
        switch response.status {
        case 200:
            let body = try Self.json(response.body, record: id)
            guard case .object(let data)? = body["data"] else {
                throw ServiceError(.invalidResponse(expected: "an object 'data'", found: Self.describe(body["data"])), record: id)
            }
            guard case .string(let recordId)? = data["id"] else {
                throw ServiceError(.invalidResponse(expected: "a string 'id'", found: Self.describe(data["id"])), record: id)
            }
            let version = try Self.version(data["last_modified"], record: id)
            return RemoteRecord(id: RecordID(collection: id.collection, id: recordId), version: version, fields: data)
        default:
            throw Self.failure(status: response.status, body: response.body, headers: response.headers).about(id)
        }
    }

    public func perform(_ writes: [RecordWrite]) async throws(ServiceError) -> [RecordWriteResult] {
        let limit = try await maximumBatchSize()
        var results: [RecordWriteResult] = []
        results.reserveCapacity(writes.count)
        var start = 0
        while start < writes.count {
            let chunk = writes[start..<min(start + limit, writes.count)]
            let chunkResults = try await send(chunk)
            results += chunkResults
            start += chunk.count
            if chunkResults.contains(where: { if case .failed = $0 { true } else { false } }) { break }
        }
        for write in writes[results.count...] {
            results.append(.failed(ServiceError(.notAttempted, record: write.record)))
        }
        return results
    }

    /// The most sub-requests the server takes in one `/batch` (`settings.batch_max_requests`).
    func maximumBatchSize() async throws(ServiceError) -> Int {
        if let known = batchLimit.withLock({ $0 }) { return known }
        let response = try await send("GET", path: "/", body: nil)
        guard response.status == 200 else {
            throw Self.failure(status: response.status, body: response.body, headers: response.headers)
        }
        let root = try Self.json(response.body, record: nil)
        var limit = 25
        if case .int(let value)? = root["settings"]?["batch_max_requests"], value > 0 { limit = Int(clamping: value) }
        batchLimit.withLock { $0 = limit }
        return limit
    }

    private func send(_ chunk: ArraySlice<RecordWrite>) async throws(ServiceError) -> [RecordWriteResult] {
        var requests: [ModelValue] = []
        for write in chunk {
            switch write {
            case .create(let id, let fields):
                requests.append([
                    "method": "PUT", "path": .string(recordPath(id)), "headers": ["If-None-Match": "*"],
                    "body": ["data": .object(fields)],
                ])
            case .update(let id, let fields, let expected):
                requests.append([
                    "method": "PUT", "path": .string(recordPath(id)), "headers": ["If-Match": .string("\"\(expected.rawValue)\"")],
                    "body": ["data": .object(fields)],
                ])
            case .delete(let id, let expected):
                let headers: ModelValue = expected.map { ["If-Match": .string("\"\($0.rawValue)\"")] } ?? [:]
                requests.append(["method": "DELETE", "path": .string(recordPath(id)), "headers": headers])
            }
        }
        let body: ModelValue = ["requests": .array(requests)]
        let response = try await send("POST", path: "/batch", body: body.jsonData())
        guard response.status == 200 else {
            throw Self.failure(status: response.status, body: response.body, headers: response.headers)
        }
        let answer = try Self.json(response.body, record: nil)
        guard case .array(let responses)? = answer["responses"], responses.count == chunk.count else {
            throw ServiceError(
                .invalidResponse(expected: "'responses', one per request (\(chunk.count))", found: Self.describe(answer["responses"])))
        }
        var results: [RecordWriteResult] = []
        for (write, sub) in zip(chunk, responses) {
            results.append(Self.result(of: write, sub))
        }
        return results
    }

    private static func result(of write: RecordWrite, _ response: ModelValue) -> RecordWriteResult {
        let id = write.record
        guard case .int(let status)? = response["status"] else {
            return .failed(ServiceError(.invalidResponse(expected: "an integer 'status'", found: describe(response["status"])), record: id))
        }
        let body = response["body"] ?? .null
        switch status {
        case 200, 201:
            do throws(ServiceError) {
                return .written(try version(body["data"]?["last_modified"], record: id))
            } catch {
                return .failed(error)
            }
        default:
            var headers: [String: String] = [:]
            if case .object(let object)? = response["headers"] {
                for (key, value) in object { if let text = value.stringValue { headers[key] = text } }
            }
            return .failed(failure(status: Int(clamping: status), body: body, headers: headers).about(id))
        }
    }

    // MARK: HTTP

    private struct Response: Sendable {
        let status: Int
        let headers: [String: String]
        let body: Data
    }

    private func recordPath(_ id: RecordID) -> String {
        "/buckets/\(bucket)/collections/\(id.collection)/records/\(id.id)"
    }

    private func send(_ method: String, path: String, body: Data?) async throws(ServiceError) -> Response {
        guard let url = URL(string: baseURL.absoluteString + path) else {
            throw ServiceError(.invalidModel(expected: "a URL", found: "'\(baseURL.absoluteString + path)'"))
        }
        var request = URLRequest(url: url, timeoutInterval: timeout)
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let authorization { request.setValue(authorization, forHTTPHeaderField: "Authorization") }
        let data: Data
        let response: URLResponse
        requestCount.add(1, ordering: .relaxed)
        do {
            (data, response) = try await session.data(for: request)
        } catch let error as URLError where error.code == .timedOut {
            throw ServiceError(.timedOut("\(method) \(url.absoluteString)"))
        } catch {
            throw ServiceError(.unreachable("\(method) \(url.absoluteString): \(error.localizedDescription)"))
        }
        guard let http = response as? HTTPURLResponse else {
            throw ServiceError(.invalidResponse(expected: "an HTTP response", found: "\(type(of: response))"))
        }
        var headers: [String: String] = [:]
        for (key, value) in http.allHeaderFields {
            if let key = key as? String, let value = value as? String { headers[key] = value }
        }
        return Response(status: http.statusCode, headers: headers, body: data)
    }

    // MARK: Reading answers

    static func json(_ data: Data, record: RecordID?) throws(ServiceError) -> ModelValue {
        do {
            return try ModelValue(json: data)
        } catch {
            let preview = String(decoding: data.prefix(80), as: UTF8.self)
            throw ServiceError(.invalidResponse(expected: "JSON", found: "'\(preview)' (\(error))"), record: record)
        }
    }

    static func version(_ value: ModelValue?, record: RecordID) throws(ServiceError) -> RemoteVersion {
        switch value {
        case .int(let number)?: return RemoteVersion(String(number))
        case .uint(let number)?: return RemoteVersion(String(number))
        default:
            throw ServiceError(.invalidResponse(expected: "an integer 'last_modified'", found: describe(value)), record: record)
        }
    }

    /// The error for a failed request: a conflict, a missing record, or another status.
    static func failure(status: Int, body: Data, headers: [String: String]) -> ServiceError {
        failure(status: status, body: (try? ModelValue(json: body)) ?? .null, headers: headers)
    }

    static func failure(status: Int, body: ModelValue, headers: [String: String]) -> ServiceError {
        switch status {
        case 404:
            return ServiceError(.notFound)
        case 412:
            var current: RemoteVersion?
            if case .int(let number)? = body["details"]?["existing"]?["last_modified"] {
                current = RemoteVersion(String(number))
            } else if let etag = headers.first(where: { $0.key.lowercased() == "etag" })?.value {
                current = RemoteVersion(etag.trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
            }
            return ServiceError(.conflict(current: current))
        case 401:
            return ServiceError(.unauthorized(body["message"]?.stringValue ?? ""))
        case 403:
            return ServiceError(.forbidden(body["message"]?.stringValue ?? ""))
        default:
            let message = body["message"]?.stringValue ?? ""
            let retryAfter = headers.first(where: { $0.key.lowercased() == "retry-after" }).flatMap { Int($0.value) }
            if status == 429 || (status == 503 && retryAfter != nil) {
                return ServiceError(.rateLimited(retryAfter: retryAfter.map { .seconds($0) }, status: status))
            }
            if (500...599).contains(status) { return ServiceError(.serverError(status, message)) }
            return ServiceError(.httpStatus(status, message))
        }
    }

    static func describe(_ value: ModelValue?) -> String {
        guard let value else { return "nothing" }
        let text = value.jsonString()
        return text.count > 80 ? String(text.prefix(80)) + "…" : text
    }
}
