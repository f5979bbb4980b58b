import BlogFixture
import Foundation
import ModelKit
import ModelKitServices
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// The peer of the service benchmarks: what an app without ModelKit writes against the same Kinto
// server. Codable structs whose references are ids, `JSONEncoder`/`JSONDecoder` with ISO 8601
// dates, and one `URLSession` request per record with async/await: a `PUT` per record to save,
// a `GET` per record to fetch, and for a query a hand-written filter URL whose `Next-Page`
// links it follows. The structs hold the app's fields only (no ModelKit ids or timestamps), so
// the peer sends less than ModelKit does.

// MARK: - ModelKit's side: the bench blog as remote models

extension BenchBlog: RemoteModel {}
extension BenchAuthor: RemoteModel {}
extension BenchPost: RemoteModel {}

/// The queried records of `service-query`: 1% of them are in each group.
final class ServiceItem: ModelObject<ServiceItem.Properties>, RemoteModel {
    struct Properties: ModelProperties {
        var name = ""
        var group = 0
        var score = 0
        var tags: [String] = []
    }
    override class var modelName: String { "Item" }
}

/// Holds a slice of the items, so that one `save` writes them (setup of `service-query` only).
final class ServiceShelf: ModelObject<ServiceShelf.Properties>, RemoteModel {
    struct Properties: ModelProperties {
        var items = ModelArray<ServiceItem>()
    }
    override class var modelName: String { "Shelf" }
}

// MARK: - The peer's records

struct PeerBlog: Codable, Sendable {
    var id: String
    var authorIds: [String]
}

struct PeerAuthor: Codable, Sendable {
    var id: String
    var name: String
    var email: String
    var age: Int
    var postIds: [String]
}

struct PeerPost: Codable, Sendable {
    var id: String
    var title: String
    var body: String
    var publishedAt: Date
    var authorId: String
    var tags: [String]
}

struct PeerItem: Codable, Sendable {
    var id: String
    var name: String
    var group: Int
    var score: Int
    var tags: [String]
}

/// Kinto's envelope: `{"data": …}` both ways.
struct Envelope<Value: Codable & Sendable>: Codable, Sendable {
    var data: Value
}

/// The peer's copy of the blog: records with ids, made before the clock starts.
struct PeerBlogData: Sendable {
    var blog: PeerBlog
    var authors: [PeerAuthor]
    var posts: [PeerPost]

    init(_ data: BlogData) {
        let postIds = (0..<data.n).map { _ in UUID().uuidString }
        let authorIds = (0..<data.authorCount).map { _ in UUID().uuidString }
        blog = PeerBlog(id: UUID().uuidString, authorIds: authorIds)
        authors = (0..<data.authorCount).map { a in
            PeerAuthor(
                id: authorIds[a], name: data.authorNames[a], email: data.authorEmails[a], age: data.authorAges[a],
                postIds: data.posts(ofAuthor: a).map { postIds[$0] })
        }
        posts = (0..<data.n).map { i in
            PeerPost(
                id: postIds[i], title: data.titles[i], body: data.bodies[i], publishedAt: data.dates[i],
                authorId: authorIds[data.author(ofPost: i)], tags: data.tags[i])
        }
    }

    var count: Int { 1 + authors.count + posts.count }
}

// MARK: - The peer's client

/// One request per record over URLSession, counting requests and body bytes as
/// ``ModelKitServices/KintoService/metrics`` does.
final class PeerClient: Sendable {
    let baseURL: String
    let bucket: String
    let authorization: String
    let session: URLSession
    private let requests = Atomic<Int>(0)
    private let sent = Atomic<Int>(0)
    private let received = Atomic<Int>(0)
    private let retries = Atomic<Int>(0)

    init(server: ServiceServer, bucket: String) {
        baseURL = server.url.absoluteString
        self.bucket = bucket
        authorization = server.authorization
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 300
        session = URLSession(configuration: configuration)
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    var metrics: ServiceMetrics {
        ServiceMetrics(
            requests: requests.load(ordering: .relaxed), retries: retries.load(ordering: .relaxed), bytesSent: sent.load(ordering: .relaxed),
            bytesReceived: received.load(ordering: .relaxed))
    }

    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    func recordURL(_ collection: String, _ id: String) -> URL {
        URL(string: "\(baseURL)/buckets/\(bucket)/collections/\(collection)/records/\(id)")!
    }

    /// Sends a request and returns its body, after checking the status. A refusal that asks for a
    /// retry (Kinto on PostgreSQL: 409 with `Retry-After` when concurrent transactions collide) is
    /// sent again after the wait asked for, as a careful app would, up to 10 times.
    func send(_ request: URLRequest, expecting statuses: Set<Int>) async throws -> (Data, HTTPURLResponse) {
        var request = request
        request.setValue(authorization, forHTTPHeaderField: "Authorization")
        var data = Data()
        var response: URLResponse?
        for attempt in 1...10 {
            requests.add(1, ordering: .relaxed)
            sent.add(request.httpBody?.count ?? 0, ordering: .relaxed)
            (data, response) = try await session.data(for: request)
            received.add(data.count, ordering: .relaxed)
            guard let http = response as? HTTPURLResponse, http.statusCode == 409 || http.statusCode == 503, attempt < 10,
                let wait = http.value(forHTTPHeaderField: "Retry-After").flatMap(Int.init)
            else { break }
            retries.add(1, ordering: .relaxed)
            try await Task.sleep(for: .seconds(wait))
        }
        guard let http = response as? HTTPURLResponse, statuses.contains(http.statusCode) else {
            throw ServiceBenchmarkError(
                description: "\(request.httpMethod ?? "?") \(request.url?.absoluteString ?? "?") answered "
                    + "\((response as? HTTPURLResponse)?.statusCode ?? 0): \(String(decoding: data.prefix(200), as: UTF8.self))")
        }
        return (data, http)
    }

    /// Creates one record: `PUT` with `If-None-Match: *`, as ModelKit's creates are.
    func create(_ collection: String, id: String, body: Data) async throws {
        var request = URLRequest(url: recordURL(collection, id))
        request.httpMethod = "PUT"
        request.httpBody = body
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("*", forHTTPHeaderField: "If-None-Match")
        _ = try await send(request, expecting: [201])
    }

    /// Reads one record and decodes it.
    func read<Value: Codable & Sendable>(_ type: Value.Type, _ collection: String, id: String, decoder: JSONDecoder) async throws -> Value {
        let (data, _) = try await send(URLRequest(url: recordURL(collection, id)), expecting: [200])
        return try decoder.decode(Envelope<Value>.self, from: data).data
    }

    // MARK: The operations

    /// Saves the blog one record at a time, `concurrency` requests in flight (1: a plain loop).
    func save(_ blog: PeerBlogData, concurrency: Int) async throws {
        let encoder = Self.encoder()
        // Posts, then authors, then the blog: what each references is written first.
        var jobs: [(collection: String, id: String, body: Data)] = []
        if concurrency == 1 {
            for post in blog.posts { try await create("Post", id: post.id, body: try encoder.encode(Envelope(data: post))) }
            for author in blog.authors { try await create("Author", id: author.id, body: try encoder.encode(Envelope(data: author))) }
            try await create("Blog", id: blog.blog.id, body: try encoder.encode(Envelope(data: blog.blog)))
            return
        }
        // Concurrent: encoding stays on this task (JSONEncoder is not Sendable), requests overlap.
        jobs.reserveCapacity(blog.count)
        for post in blog.posts { jobs.append(("Post", post.id, try encoder.encode(Envelope(data: post)))) }
        for author in blog.authors { jobs.append(("Author", author.id, try encoder.encode(Envelope(data: author)))) }
        let prepared = jobs
        try await inParallel(prepared.count, concurrency) { index in
            let job = prepared[index]
            try await self.create(job.collection, id: job.id, body: job.body)
        }
        try await create("Blog", id: blog.blog.id, body: try encoder.encode(Envelope(data: blog.blog)))
    }

    /// The blog's creates, made before the clock starts for the server-floor row of
    /// `service-save`: each record encoded by `JSONEncoder` as the per-record peer encodes it.
    func blogWrites(_ blog: PeerBlogData) throws -> [PeerWrite] {
        let encoder = Self.encoder()
        var writes: [PeerWrite] = []
        for post in blog.posts { writes.append(PeerWrite(self, "Post", post.id, try encoder.encode(Envelope(data: post)))) }
        for author in blog.authors { writes.append(PeerWrite(self, "Author", author.id, try encoder.encode(Envelope(data: author)))) }
        writes.append(PeerWrite(self, "Blog", blog.blog.id, try encoder.encode(Envelope(data: blog.blog))))
        return writes
    }

    /// `/batch` bodies creating `writes`, `limit` writes to a request, as a save's creates are
    /// sent (`PUT` with `If-None-Match: *`), each with the collections it writes.
    func batchBodies(_ writes: [PeerWrite], limit: Int) -> [PreparedBatch] {
        stride(from: 0, to: writes.count, by: limit).map { start in
            let part = writes[start..<min(start + limit, writes.count)]
            // Paths are ASCII letters, digits, dashes and slashes: nothing to escape.
            var body = Data(#"{"defaults":{"method":"PUT","headers":{"If-None-Match":"*"}},"requests":["#.utf8)
            for (offset, write) in part.enumerated() {
                body.append(contentsOf: Array((offset == 0 ? "" : ",").utf8) + Array(#"{"path":""#.utf8) + Array(write.path.utf8))
                body.append(contentsOf: Array(#"","body":"#.utf8))
                body.append(write.body)
                body.append(UInt8(ascii: "}"))
            }
            body.append(contentsOf: Array("]}".utf8))
            return PreparedBatch(body: body, collections: Set(part.map(\.collection)))
        }
    }

    /// The records of `collections` in `bucket` as the server holds them, as creates for this
    /// client's bucket, in the order the server wrote them (by `last_modified`): the writes of the
    /// floor row that sends ModelKit's own records.
    static func storedWrites(of bucket: String, _ collections: [String], on server: ServiceServer, into client: PeerClient)
        async throws -> [PeerWrite]
    {
        let limit = 10_000
        var records: [(modified: Int64, write: PeerWrite)] = []
        for collection in collections {
            let (status, data) = try await server.request(
                "GET", "/buckets/\(bucket)/collections/\(collection)/records?_sort=last_modified&_limit=\(limit)")
            guard status == 200, case .array(let list)? = try ModelValue(json: data)["data"], list.count < limit else {
                throw ServiceBenchmarkError(description: "listing \(collection) answered \(status) (or \(limit) records or more)")
            }
            for record in list {
                guard case .object(var fields) = record, case .string(let id)? = fields["id"],
                    case .int(let modified)? = fields["last_modified"]
                else { throw ServiceBenchmarkError(description: "a \(collection) record without id or last_modified") }
                fields["id"] = nil
                fields["last_modified"] = nil
                let body = ModelValue.object(ModelValue.Object([("data", .object(fields))])).jsonData()
                records.append((modified, PeerWrite(client, collection, id, body)))
            }
        }
        return records.sorted { $0.modified < $1.modified }.map(\.write)
    }

    /// Sends `/batch` bodies in order, `inFlight` at once (by default as many as a save keeps,
    /// so that the server always has the next one waiting), and returns the answers unread
    /// (checked after the clock stops, by ``checkBatchAnswers(_:writes:)``). As in a save's
    /// pipeline, a batch waits while one in flight writes one of its collections (see
    /// `KintoService.batchesInFlight`: Kinto on PostgreSQL refuses one of two such batches). A
    /// batch with a write refused with 409 (Kinto rolled it back) is sent again after the
    /// server's `Retry-After`, as a careful app would; its creates that were done after the 409
    /// then answer 412, which the check accepts.
    func sendBatches(_ batches: [PreparedBatch], inFlight: Int = KintoService.batchesInFlight) async throws -> [Data] {
        var answers = [Data?](repeating: nil, count: batches.count)
        try await withThrowingTaskGroup(of: (Int, Data).self) { group in
            var running = 0
            var busy: [String: Int] = [:]
            func take(_ answer: (Int, Data)) {
                answers[answer.0] = answer.1
                running -= 1
                for collection in batches[answer.0].collections { busy[collection, default: 1] -= 1 }
                busy = busy.filter { $0.value > 0 }
            }
            for index in batches.indices {
                while running >= inFlight || batches[index].collections.contains(where: { busy[$0] != nil }) {
                    guard let answer = try await group.next() else { break }
                    take(answer)
                }
                let body = batches[index].body
                group.addTask { (index, try await self.sendBatch(body)) }
                running += 1
                for collection in batches[index].collections { busy[collection, default: 0] += 1 }
            }
            while let answer = try await group.next() { take(answer) }
        }
        return answers.compactMap { $0 }
    }

    /// Sends one `/batch` body, again after Kinto's `Retry-After` while a write is refused.
    private func sendBatch(_ body: Data) async throws -> Data {
        var request = URLRequest(url: URL(string: "\(baseURL)/batch")!)
        request.httpMethod = "POST"
        request.httpBody = body
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        let refused = Data(#""status":409"#.utf8)
        var answer = try await send(request, expecting: [200]).0
        var attempts = 1
        while answer.range(of: refused) != nil, attempts < 10 {
            retries.add(1, ordering: .relaxed)
            try await Task.sleep(for: .seconds(3))  // Kinto's Retry-After on a 409
            answer = try await send(request, expecting: [200]).0
            attempts += 1
        }
        return answer
    }

    /// Checks that the answers of ``sendBatches(_:)`` report `writes` creates, each a 201.
    static func checkBatchAnswers(_ answers: [Data], writes: Int) throws {
        struct Answer: Decodable {
            struct Response: Decodable { var status: Int }
            var responses: [Response]
        }
        let statuses = try answers.flatMap { try JSONDecoder().decode(Answer.self, from: $0).responses.map(\.status) }
        // 412: created by an earlier attempt of a batch sent again (see sendBatches).
        guard statuses.count == writes, statuses.allSatisfy({ $0 == 201 || $0 == 412 }) else {
            throw ServiceBenchmarkError(
                description: "/batch answered \(statuses.count) writes of \(writes), \(statuses.count { $0 != 201 && $0 != 412 }) not created")
        }
    }

    /// `/batch` bodies creating `count` items (`PeerItem`s, of `limit` writes each), made before
    /// the clock starts, for the floor row of `service-concurrent`. Each stands for another
    /// client's save, so none waits for another's collections (their collisions are what the
    /// row measures).
    func itemBatchBodies(count: Int, limit: Int) throws -> [PreparedBatch] {
        let encoder = Self.encoder()
        return try stride(from: 0, to: count, by: limit).map { start in
            var body = Data(#"{"defaults":{"method":"PUT","headers":{"If-None-Match":"*"}},"requests":["#.utf8)
            for i in start..<min(start + limit, count) {
                let item = PeerItem(id: UUID().uuidString, name: "item \(i)", group: i % 100, score: i, tags: ["t\(i % 7)"])
                body.append(contentsOf: Array((i == start ? "" : ",").utf8) + Array(#"{"path":""#.utf8))
                body.append(contentsOf: Array(recordPath("Item", item.id).utf8) + Array(#"","body":"#.utf8))
                body.append(try encoder.encode(Envelope(data: item)))
                body.append(UInt8(ascii: "}"))
            }
            body.append(contentsOf: Array("]}".utf8))
            return PreparedBatch(body: body, collections: [])
        }
    }

    func recordPath(_ collection: String, _ id: String) -> String {
        "/buckets/\(bucket)/collections/\(collection)/records/\(id)"
    }

    /// Fetches the blog from its id, following the ids in each record: one `GET` per record.
    func fetchBlog(id: String, concurrency: Int) async throws -> PeerBlogData.Fetched {
        let decoder = Self.decoder()
        let blog = try await read(PeerBlog.self, "Blog", id: id, decoder: decoder)
        if concurrency == 1 {
            var authors: [PeerAuthor] = []
            for authorId in blog.authorIds { authors.append(try await read(PeerAuthor.self, "Author", id: authorId, decoder: decoder)) }
            var posts: [PeerPost] = []
            for author in authors {
                for postId in author.postIds { posts.append(try await read(PeerPost.self, "Post", id: postId, decoder: decoder)) }
            }
            return PeerBlogData.Fetched(blog: blog, authors: authors, posts: posts)
        }
        let authors = try await readAll(PeerAuthor.self, "Author", ids: blog.authorIds, concurrency: concurrency)
        let posts = try await readAll(PeerPost.self, "Post", ids: authors.flatMap(\.postIds), concurrency: concurrency)
        return PeerBlogData.Fetched(blog: blog, authors: authors, posts: posts)
    }

    private func readAll<Value: Codable & Sendable>(_ type: Value.Type, _ collection: String, ids: [String], concurrency: Int) async throws
        -> [Value]
    {
        let results = Mutex<[Int: Value]>([:])
        try await inParallel(ids.count, concurrency) { index in
            // A decoder per request: JSONDecoder is not Sendable.
            let value = try await self.read(type, collection, id: ids[index], decoder: Self.decoder())
            results.withLock { $0[index] = value }
        }
        return results.withLock { all in ids.indices.compactMap { all[$0] } }
    }

    /// The records of `collection` whose `field` equals `value`: a filter in the URL, then every
    /// `Next-Page` until there is none.
    func query(_ collection: String, field: String, equals value: Int) async throws -> [PeerItem] {
        let decoder = Self.decoder()
        var next: URL? = URL(string: "\(baseURL)/buckets/\(bucket)/collections/\(collection)/records?\(field)=\(value)")
        var items: [PeerItem] = []
        while let url = next {
            let (data, response) = try await send(URLRequest(url: url), expecting: [200])
            items += try decoder.decode(Envelope<[PeerItem]>.self, from: data).data
            next = (response.value(forHTTPHeaderField: "Next-Page")).flatMap(URL.init(string:))
        }
        return items
    }
}

extension PeerBlogData {
    /// What the peer's fetch returns.
    struct Fetched {
        var blog: PeerBlog
        var authors: [PeerAuthor]
        var posts: [PeerPost]
        var count: Int { 1 + authors.count + posts.count }
    }
}

/// Runs `body(0..<count)` with at most `width` calls in flight.
func inParallel(_ count: Int, _ width: Int, _ body: @escaping @Sendable (Int) async throws -> Void) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        var next = 0
        while next < min(width, count) {
            let index = next
            group.addTask { try await body(index) }
            next += 1
        }
        while try await group.next() != nil {
            if next < count {
                let index = next
                group.addTask { try await body(index) }
                next += 1
            }
        }
    }
}

/// A create made before the clock starts: its collection, its record's path, and its
/// `{"data": …}` body.
struct PeerWrite: Sendable {
    var collection: String
    var path: String
    var body: Data

    init(_ client: PeerClient, _ collection: String, _ id: String, _ body: Data) {
        self.collection = collection
        path = client.recordPath(collection, id)
        self.body = body
    }
}

/// A `/batch` body made before the clock starts, with the collections its writes go to.
struct PreparedBatch: Sendable {
    var body: Data
    /// A batch waits while one in flight writes one of these (none for another client's save).
    var collections: Set<String>
}
