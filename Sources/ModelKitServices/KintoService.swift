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
/// Requests that fail in a way that may pass are retried (see ``RetryPolicy``); each attempt has
/// a time limit, and answers a size limit. ``metrics`` counts what was sent and received.
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
    /// Who the service acts as, and where it remembers that (KintoService+Users.swift); its
    /// `Authorization` header is read only by ``send(_:path:body:headers:idempotent:)``.
    let account = Mutex(AccountState())
    /// The transport: time limit, size limit, retries, `Backoff`, counters.
    let http: HTTPClient
    /// Files made on this device and not uploaded yet (see ``pendingFilesFolder``); made on
    /// first use.
    let pendingStore = Mutex<PendingFiles?>(nil)
    /// Where each file's bytes are served, as learnt from uploads and look-ups, by file id.
    let fileLocations = Mutex<[String: URL]>([:])
    /// The server's batch limit, read once.
    private let batchLimit = Mutex<Int?>(nil)
    /// How many records a query asks for per page (`_limit`).
    public let pageSize: Int
    /// Whether queries send string patterns (begins with, ends with, contains, LIKE) as Kinto's
    /// `like_` filter; see ``init(url:bucket:user:password:timeout:retry:maximumResponseBytes:pageSize:patternFilters:)``.
    public let patternFilters: Bool

    /// The default ``init(url:bucket:user:password:timeout:retry:maximumResponseBytes:pageSize:patternFilters:)``
    /// limit on the size of one answer: 64 MiB.
    public static let defaultMaximumResponseBytes = 64 << 20

    /// - Parameters:
    ///   - url: The API root, ending in `/v1`.
    ///   - bucket: The bucket; by default the user's personal one.
    ///   - user, password: Basic credentials (Kinto's accounts plugin), or none. To keep a user
    ///     logged in across launches, use ``init(url:bucket:credentialStore:timeout:)`` instead.
    ///   - timeout: How long one attempt of a request may take; a slower one fails with
    ///     ``ServiceError/Code/timedOut`` and is not retried.
    ///   - retry: How often, and after which waits, a request that failed in a way that may pass
    ///     is sent again (see ``RetryPolicy``).
    ///   - maximumResponseBytes: The largest answer accepted; a larger one is cut off as soon as
    ///     it shows it is and fails with ``ServiceError/Code/invalidResponse``.
    ///   - pageSize: How many records a query asks for per request (at most the server's
    ///     `storage_max_fetch_size`, 10,000 by default).
    ///   - patternFilters: Whether queries send string patterns on non-optional strings as
    ///     `like_` filters (the client still checks each candidate). Off by default: Kinto's
    ///     memory backend matches `like_` with a regular expression whose `.` stops at a line
    ///     break, so a string with a `\n` can be missing from its answer. Turn it on when the
    ///     strings queried by pattern hold no line breaks.
    public init(
        url: URL, bucket: String = "default", user: String? = nil, password: String? = nil, timeout: Duration = .seconds(30),
        retry: RetryPolicy = RetryPolicy(), maximumResponseBytes: Int = KintoService.defaultMaximumResponseBytes,
        pageSize: Int = 1_000, patternFilters: Bool = false
    ) {
        baseURL = url
        self.pageSize = max(1, pageSize)
        self.patternFilters = patternFilters
        self.bucket = bucket
        http = HTTPClient(timeout: timeout, retry: retry, maximumResponseBytes: maximumResponseBytes)
        if let user, let password {
            account.withLock { $0.credentials = Credentials(username: user, password: password) }
        }
    }

    /// What this service has sent and received so far (requests, retries, body bytes).
    ///
    /// ```swift
    /// let before = service.metrics.requests
    /// try await service.save(author)
    /// print(service.metrics.requests - before)
    /// ```
    public var metrics: ServiceMetrics { http.metrics }

    public var storeIdentifier: String { "kinto \(baseURL.absoluteString) bucket=\(bucket) user=\(user ?? "")" }

    // MARK: Records

    public func read(_ id: RecordID) async throws(ServiceError) -> RemoteRecord {
        let response = try await send("GET", path: recordPath(id), body: nil)
        switch response.status {
        case 200:
            let text = try Self.jsonText(response.body, record: id)
            guard let data = text.member(text.root, "data"), text.isObject(data) else {
                throw .invalidResponse(
                    at: "data", expected: "an object", found: Self.describe(text.member(text.root, "data"), in: text), record: id)
            }
            guard let recordId = text.member(data, "id").flatMap(text.string) else {
                throw .invalidResponse(
                    at: "data.id", expected: "a string", found: Self.describe(text.member(data, "id"), in: text), record: id)
            }
            let version = try Self.version(text.member(data, "last_modified"), in: text, at: "data.last_modified", record: id)
            return RemoteRecord(
                id: RecordID(collection: id.collection, id: recordId), version: version, text: text, node: data)
        default:
            throw Self.failure(status: response.status, body: response.body, headers: response.headers).about(id)
        }
    }

    /// Sends the writes in order, one `/batch` request at a time: the save pipeline's engine,
    /// with each write following the one before it. A request that
    /// fails fails its writes, with the reason, and the writes after it come back
    /// ``ServiceError/Code/notAttempted``; it does not throw.
    ///
    /// ```swift
    /// let results = try await service.perform([.create(RecordID(collection: "Post", id: "p1"), fields: ["title": "Hi"])])
    /// ```
    ///
    /// - Throws: ``ServiceError`` only when the server's batch limit cannot be read (the first
    ///   call asks the server for it), before any write is sent.
    /// - Complexity: O(*n*) for *n* writes, plus the requests.
    public func perform(_ writes: [RecordWrite]) async throws(ServiceError) -> [RecordWriteResult] {
        try await perform(writes, after: .inOrder)
    }

    /// The size a `/batch` body is kept under where possible (a write larger than it goes alone).
    ///
    /// On Linux, swift-corelibs-foundation hands libcurl a body in pieces of its 64 KB upload
    /// buffer, and once a body takes more than one piece it polls the socket until the answer
    /// comes, costing about as much processor time as the request takes (measured: 2,100 µs per
    /// saved model for bodies of 110 KB). A few more requests cost far less. Elsewhere the server's
    /// count limit is the only one.
    #if canImport(FoundationNetworking)
        static let preferredBatchBytes = 60_000
    #else
        static let preferredBatchBytes = Int.max
    #endif

    /// The end of the batch that starts at `start`: at most `limit` writes, and no more than
    /// `bytes` of body (estimated: each write's fields and 256 bytes for its request) unless
    /// a single write is larger.
    ///
    /// - Complexity: O(*k*) for a batch of *k* writes.
    static func chunkEnd(_ writes: [RecordWrite], from start: Int, limit: Int, bytes: Int) -> Int {
        var end = start
        var size = 0
        while end < writes.count, end - start < limit {
            let next = 256 + (writes[end].fields?.jsonData.count ?? 0)
            if end > start, size + next > bytes { break }
            size += next
            end += 1
        }
        return end
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

    /// Sends one `/batch` of writes, again while the server answers a write with a 409 that asks
    /// for a retry (within the ``RetryPolicy``, the attempts of the HTTP requests included).
    ///
    /// Kinto runs a batch in one transaction and aborts it at a 409 (a collision of concurrent
    /// transactions on PostgreSQL): the writes answered before the 409 were rolled back though
    /// their answers say 201, and those after it were done. So a batch with a 409 is sent again
    /// whole, as a retry: the writes done the first time are then recognised as ours
    /// (``doneEarlier(_:status:body:at:)``), the others are made. When the policy says stop, every
    /// write of the batch fails, none is reported as written.
    func send(_ chunk: ArraySlice<RecordWrite>) async throws(ServiceError) -> [RecordWriteResult] {
        let body = BatchBody(chunk, path: recordPath)
        var attempts = 0
        while true {
            let response = try await send("POST", path: "/batch", body: body.data)
            attempts += response.attempts
            if let refusal = Self.rolledBack(response, count: chunk.count) {
                if refusal.asksForRetry, let delay = http.delayBeforeRetry(after: attempts, asked: refusal.retryAfter) {
                    let request = HTTPClient.Request(
                        method: "POST", url: URL(string: baseURL.absoluteString + "/batch") ?? baseURL)
                    try await http.pauseBeforeRetry(delay, request)
                    continue
                }
                return chunk.map { write in .failed(refusal.error.about(write.record)) }
            }
            return try results(of: chunk, response, retried: attempts > 1)
        }
    }

    /// The first 409 among the sub-answers of a batch's answer, which means that the server rolled
    /// the batch back: its error, and the wait the server asked for. Nil when there is none (or
    /// the answer is not a batch's, which ``results(of:_:retried:)`` then words).
    private static func rolledBack(_ response: Response, count: Int)
        -> (error: ServiceError, asksForRetry: Bool, retryAfter: Duration?)?
    {
        // Found without parsing: a sub-answer's status is written as "status":409 by Kinto.
        guard response.status == 200, response.body.range(of: Data("409".utf8)) != nil,
            let text = try? Self.jsonText(response.body, record: nil),
            let answers = try? Self.answers(in: text, count: count)
        else { return nil }
        for node in answers {
            guard let status = text.member(node, "status"), case .int(409)? = try? text.value(status) else { continue }
            let sub = Self.answer(node, in: text)
            var headers: [String: String] = [:]
            if case .object(let object)? = sub["headers"] {
                for (key, value) in object { if let text = value.stringValue { headers[key] = text } }
            }
            let retryAfter = headers.first(where: { HTTPClient.Response.sameName($0.key, "Retry-After") })
                .flatMap { HTTPClient.seconds(from: $0.value) }
            let error = failure(status: 409, body: sub["body"] ?? .null, headers: headers)
            // A 409 that does not ask for a retry is not retried, but the batch was rolled back all
            // the same.
            let message = sub["body"]?["message"]?.stringValue ?? ""
            return (error, retryAfter != nil || HTTPClient.saysPleaseRetry(Data(message.utf8)), retryAfter)
        }
        return nil
    }

    /// What became of each write of `chunk`, from the batch's answer.
    private func results(of chunk: ArraySlice<RecordWrite>, _ response: Response, retried: Bool) throws(ServiceError)
        -> [RecordWriteResult]
    {
        guard response.status == 200 else {
            throw Self.failure(status: response.status, body: response.body, headers: response.headers)
        }
        // A plain success needs only the id and version of each record the server echoes: the
        // rest of an echo (the whole record again) is checked but not recorded. An answer with
        // anything else in it is read again in full, to word what happened.
        let brief = try Self.jsonText(response.body, record: nil, keptKeys: Self.echoKeys)
        let answers: [Int]
        do {
            answers = try Self.answers(in: brief, count: chunk.count)
        } catch {
            // Worded from the whole answer: the brief reading lacks members deep down.
            _ = try Self.answers(in: try Self.jsonText(response.body, record: nil), count: chunk.count)
            throw error
        }
        var results: [RecordWriteResult] = []
        results.reserveCapacity(chunk.count)
        for (write, sub) in zip(chunk, answers) {
            guard let version = written(write, sub, in: brief) else { break }
            results.append(.written(version))
        }
        if results.count == chunk.count { return results }
        let text = try Self.jsonText(response.body, record: nil)
        for (index, (write, sub)) in zip(chunk, try Self.answers(in: text, count: chunk.count)).enumerated().dropFirst(
            results.count)
        {
            if let version = written(write, sub, in: text) {
                results.append(.written(version))
                continue
            }
            results.append(result(of: write, Self.answer(sub, in: text), at: "responses[\(index)]", retried: retried))
        }
        return results
    }

    /// What a plain success is read for in an echoed record (`responses[i].body.data`, four
    /// objects deep).
    private static let echoKeys = (depth: 4, keys: ["id", "last_modified"])

    /// The nodes of the `count` sub-answers of a batch answer.
    private static func answers(in text: JSONRecordText, count: Int) throws(ServiceError) -> [Int] {
        let list = text.member(text.root, "responses")
        guard let responses = list.flatMap(text.elements) else {
            throw .invalidResponse(at: "responses", expected: "an array", found: Self.describe(list, in: text))
        }
        guard responses.count == count else {
            throw .invalidResponse(at: "responses", expected: "\(count) answers, one per request", found: "\(responses.count)")
        }
        return responses
    }

    /// The new version of the record `write` wrote, when its answer at `node` says plainly that
    /// it was written: status 200 or 201, the record's path, and the record's id and an integer
    /// `last_modified` in `body.data`. Nil for anything else, which ``result(of:_:at:retried:)``
    /// then reads (and words the error for): this is the common case, read without building
    /// values or messages.
    private func written(_ write: RecordWrite, _ node: Int, in text: JSONRecordText) -> RemoteVersion? {
        let id = write.record
        guard let statusNode = text.member(node, "status"), case .int(let status)? = try? text.value(statusNode),
            status == 200 || status == 201,
            let echoed = text.member(node, "path").flatMap(text.string), echoes(echoed, id),
            let data = text.member(node, "body").flatMap({ text.member($0, "data") }),
            text.member(data, "id").flatMap(text.string) == id.id
        else { return nil }
        // No message is built unless the version is wrong, and then the slow path words it.
        return try? Self.version(text.member(data, "last_modified"), in: text, at: "", record: id)
    }

    /// The answer to one write of a batch, at `node` of the batch's answer, as a value: its
    /// `status` and `path`, and when the write succeeded, of its `body` only the record's `id`
    /// and `last_modified` (the record the server echoes is not read), else its `headers` and
    /// `body`.
    private static func answer(_ node: Int, in text: JSONRecordText) -> ModelValue {
        guard text.isObject(node) else { return (try? text.value(node)) ?? .null }
        var object = ModelValue.Object()
        for key in ["status", "path"] {
            if let member = text.member(node, key), let value = try? text.value(member) { object[key] = value }
        }
        var succeeded = false
        if case .int(let status)? = object["status"], status == 200 || status == 201 { succeeded = true }
        if !succeeded, let member = text.member(node, "headers"), let value = try? text.value(member) {
            object["headers"] = value
        }
        guard let body = text.member(node, "body") else { return .object(object) }
        if succeeded, let data = text.member(body, "data"), text.isObject(data) {
            var record = ModelValue.Object()
            for key in ["id", "last_modified"] {
                if let member = text.member(data, key), let value = try? text.value(member) { record[key] = value }
            }
            object["body"] = ["data": .object(record)]
        } else {
            object["body"] = (try? text.value(body)) ?? .null
        }
        return .object(object)
    }

    /// What became of `write`, from its answer in a batch (at `path`, for messages).
    ///
    /// When the batch was sent more than once (`retried`), an earlier attempt may have been
    /// carried out without its answer reaching us, and the precondition then fails against our
    /// own write: a create or update answered 412 whose record on the server holds exactly the
    /// fields sent, or a delete answered 404, was done, not refused.
    private func result(of write: RecordWrite, _ response: ModelValue, at path: String, retried: Bool) -> RecordWriteResult {
        let id = write.record
        guard case .object(let fields) = response else {
            return .failed(.invalidResponse(at: path, expected: "an object", found: Self.describe(response), record: id))
        }
        guard case .int(let status)? = fields["status"] else {
            return .failed(
                .invalidResponse(at: "\(path).status", expected: "an integer", found: Self.describe(fields["status"]), record: id)
            )
        }
        if case .string(let echoed)? = fields["path"], !echoes(echoed, id) {
            return .failed(
                .invalidResponse(at: "\(path).path", expected: "'…\(recordPath(id))'", found: "'\(echoed)'", record: id))
        }
        let body = fields["body"] ?? .null
        if status == 200 || status == 201 {
            let data = "\(path).body.data"
            guard case .string(let recordId)? = body["data"]?["id"], recordId == id.id else {
                return .failed(
                    .invalidResponse(
                        at: "\(data).id", expected: "'\(id.id)'", found: Self.describe(body["data"]?["id"]), record: id))
            }
            do throws(ServiceError) {
                return .written(try Self.version(body["data"]?["last_modified"], at: "\(data).last_modified", record: id))
            } catch {
                return .failed(error)
            }
        }
        if retried, let done = Self.doneEarlier(write, status: Int(clamping: status), body: body, at: path) {
            return done
        }
        var headers: [String: String] = [:]
        if case .object(let object)? = fields["headers"] {
            for (key, value) in object { if let text = value.stringValue { headers[key] = text } }
        }
        return .failed(Self.failure(status: Int(clamping: status), body: body, headers: headers).about(id))
    }

    /// For a batch sent more than once: the result of `write` if its refusal (`status`) shows that
    /// an earlier attempt did it, or nil.
    private static func doneEarlier(_ write: RecordWrite, status: Int, body: ModelValue, at path: String) -> RecordWriteResult? {
        switch (write, status) {
        case (.create(_, let sent), 412), (.update(_, let sent, _), 412):
            guard case .object(var existing)? = body["details"]?["existing"],
                let version = try? version(
                    existing["last_modified"], at: "\(path).body.details.existing.last_modified", record: write.record)
            else { return nil }
            existing["id"] = nil
            existing["last_modified"] = nil
            // Not `==`: a server may give a double back a unit in the last place away.
            return ModelValue.object(sent.values).matchesStored(.object(existing)) ? .written(version) : nil
        case (.delete(_, let expected), 404):
            // Gone, as asked; the tombstone's version did not reach us.
            return .written(expected ?? RemoteVersion("0"))
        default:
            return nil
        }
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

    /// An answer's JSON text, parsed to be read where it lies (records are loaded from it); with
    /// `keptKeys`, only those members of the objects at that depth are recorded (see
    /// `JSONRecordText.init(_:keptKeys:)`).
    static func jsonText(_ data: Data, record: RecordID?, keptKeys: (depth: Int, keys: [String])? = nil) throws(ServiceError)
        -> JSONRecordText
    {
        do {
            return try JSONRecordText(data, keptKeys: keptKeys)
        } catch {
            let preview = String(decoding: data.prefix(80), as: UTF8.self)
            throw ServiceError(.invalidResponse(expected: "JSON", found: "'\(preview)' (\(error))"), record: record)
        }
    }

    /// ``version(_:at:record:)`` of the value at `node` of `text`.
    static func version(_ node: Int?, in text: JSONRecordText, at path: String, record: RecordID) throws(ServiceError)
        -> RemoteVersion
    {
        try version(node.flatMap { try? text.value($0) }, at: path, record: record)
    }

    /// ``describe(_:)`` of the value at `node` of `text`.
    static func describe(_ node: Int?, in text: JSONRecordText) -> String {
        describe(node.flatMap { try? text.value($0) })
    }

    /// A record's version from its `last_modified` (at `path` in the answer, for messages).
    static func version(_ value: ModelValue?, at path: String, record: RecordID) throws(ServiceError) -> RemoteVersion {
        switch value {
        case .int(let number)?: return RemoteVersion(String(number))
        case .uint(let number)?: return RemoteVersion(String(number))
        default:
            throw .invalidResponse(at: path, expected: "an integer", found: describe(value), record: record)
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
        case 507:
            return ServiceError(.quotaExceeded(body["message"]?.stringValue ?? ""))
        default:
            let message = body["message"]?.stringValue ?? ""
            let retryAfter = headers.first(where: { $0.key.lowercased() == "retry-after" }).flatMap { Int($0.value) }
            let pleaseRetry = status == 409 && message.lowercased().contains("please retry")
            if status == 429 || (status == 503 && retryAfter != nil) || (status == 409 && (retryAfter != nil || pleaseRetry)) {
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
