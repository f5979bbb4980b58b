import Foundation
import ModelKit
import ModelKitServices

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// The records of the sync benchmarks (issue #34) and the hand-made requests around them: the
// server is filled with `/batch` bodies made beforehand, or on PostgreSQL seeded straight into
// its tables (SyncSeeding.swift) (100,000 records through the library would take minutes of the
// suite's time for nothing it measures), another client's edits are
// `/batch` bodies too, and the peer of `sync-first` is a paged download into Codable structs.

/// `n` items (`ServiceItem`, collection "Item") as ModelKit writes their records: the header
/// (`modelId`, `createdAt`, `updatedAt`) and the properties, under client-chosen ids.
struct SyncFixture: Sendable {
    let ids: [String]
    let modelIds: [String]
    /// Every record's `createdAt` and `updatedAt` (the content does not depend on them).
    static let date = #"{"__type":"Date","iso":"2026-01-01T00:00:00.000Z"}"#

    init(count: Int) {
        ids = (0..<count).map { _ in UUID().uuidString.lowercased() }
        modelIds = (0..<count).map { _ in UUID().uuidString }
    }

    var count: Int { ids.count }

    static func name(_ index: Int, round: Int) -> String { round == 0 ? "item \(index)" : "item \(index) edit \(round)" }
    static func score(_ index: Int, round: Int) -> Int { (index * 7_919 + round) % 10_000 }

    /// The `data` of record `index` as edited in `round` (0: as first written).
    func recordData(_ index: Int, round: Int) -> String {
        #"{"modelId":"\#(modelIds[index])","createdAt":\#(Self.date),"updatedAt":\#(Self.date),"name":"\#(Self.name(index, round: round))","#
            + #""group":\#(index % 100),"score":\#(Self.score(index, round: round)),"tags":["t\#(index % 7)","u\#(index % 13)"]}"#
    }

    /// `/batch` bodies of `requests` (each a sub-request's JSON), `ServiceServer.batchLimit` to a
    /// body, all writing the collection "Item".
    static func batches(_ requests: [String]) -> [PreparedBatch] {
        stride(from: 0, to: requests.count, by: ServiceServer.batchLimit).map { start in
            let part = requests[start..<min(start + ServiceServer.batchLimit, requests.count)]
            return PreparedBatch(body: Data((#"{"requests":["# + part.joined(separator: ",") + "]}").utf8), collections: ["Item"])
        }
    }

    /// Creates of the records at `indices`, every record by default (`PUT` with
    /// `If-None-Match: *`, as a save's creates).
    func createBodies(_ client: PeerClient, indices: [Int]? = nil) -> [PreparedBatch] {
        Self.batches(
            (indices ?? Array(ids.indices)).map { i in
                #"{"method":"PUT","path":"\#(client.recordPath("Item", ids[i]))","headers":{"If-None-Match":"*"},"#
                    + #""body":{"data":\#(recordData(i, round: 0))}}"#
            })
    }

    /// Another client's edits of the records at `indices`: a `PATCH` of the name and the score.
    func patchBodies(_ indices: [Int], round: Int, _ client: PeerClient) -> [PreparedBatch] {
        Self.batches(
            indices.map { i in
                #"{"method":"PATCH","path":"\#(client.recordPath("Item", ids[i]))","#
                    + #""body":{"data":{"name":"\#(Self.name(i, round: round))","score":\#(Self.score(i, round: round))}}}"#
            })
    }

    /// Updates of the records at `indices` as a push sends them: `PUT` of the whole record with
    /// `If-Match` the version last seen (`versions`, by record id).
    func updateBodies(_ indices: [Int], round: Int, versions: [String: Int64], _ client: PeerClient) -> [PreparedBatch] {
        Self.batches(
            indices.map { i in
                #"{"method":"PUT","path":"\#(client.recordPath("Item", ids[i]))","headers":{"If-Match":"\"\#(versions[ids[i]] ?? 0)\""},"#
                    + #""body":{"data":\#(recordData(i, round: round))}}"#
            })
    }

    /// Writes every record into `client`'s bucket (untimed) and returns their versions by id:
    /// seeded into the database when `server` runs on a PostgreSQL of its own (SyncSeeding.swift:
    /// `/batch` took minutes for 100,000 records there), else through `/batch`.
    func load(into client: PeerClient, server: ServiceServer) async throws -> [String: Int64] {
        if let database = server.databaseURL { return try await seed(into: client, server: server, database: database) }
        let clock = ContinuousClock()
        let start = clock.now
        let batches = createBodies(client)
        // 10,000 records at a time, so that a long load says how far it is.
        let step = 10_000 / ServiceServer.batchLimit
        var answers: [Data] = []
        for first in stride(from: 0, to: batches.count, by: step) {
            answers += try await client.sendBatches(Array(batches[first..<min(first + step, batches.count)]))
            if count >= 10_000 {
                printError(
                    "  loaded \(grouped(min(count, (first + step) * ServiceServer.batchLimit))) of \(grouped(count)) records "
                        + "(\(duration(seconds(clock.now - start))))")
            }
        }
        return try Self.results(answers, expecting: 201, count: count)
    }

    /// The versions of the records written by `answers` (by id), after checking that there are
    /// `count` sub-responses, each with `status`.
    static func results(_ answers: [Data], expecting status: Int, count: Int) throws -> [String: Int64] {
        var versions: [String: Int64] = [:]
        var seen = 0
        for answer in answers {
            guard case .array(let responses)? = try ModelValue(json: answer)["responses"] else {
                throw ServiceBenchmarkError(description: "a /batch answer without responses")
            }
            for response in responses {
                seen += 1
                guard response["status"] == .int(Int64(status)), case .string(let id)? = response["body"]?["data"]?["id"],
                    case .int(let version)? = response["body"]?["data"]?["last_modified"]
                else {
                    throw ServiceBenchmarkError(
                        description: "a /batch write answered \(String(describing: response["status"])), expected \(status)")
                }
                versions[id] = version
            }
        }
        guard seen == count else { throw ServiceBenchmarkError(description: "/batch answered \(seen) writes of \(count)") }
        return versions
    }
}

/// A device of the sync benchmarks: a new store in a folder of its own, synced with the items of
/// one bucket.
final class SyncDevice {
    let folder: URL
    let service: KintoService
    let store: ModelStore
    let sync: ModelSync

    init(server: ServiceServer, bucket: String) throws {
        folder = ScratchDirectory.shared.url.appendingPathComponent("sync-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        service = server.service(bucket: bucket)
        store = try ModelStore(url: folder.appendingPathComponent("device.store"))
        sync = ModelSync(store: store, service: service, models: [ServiceItem.self])
    }

    /// The items by record id.
    func items() -> [String: ServiceItem] {
        var byId: [String: ServiceItem] = [:]
        for item in store.context.models(of: ServiceItem.self) {
            if let id = item.objectId { byId[id] = item }
        }
        return byId
    }

    /// Checks that the device holds `fixture`'s records, those at `edited` as edited in `round`.
    func check(_ fixture: SyncFixture, edited: [Int] = [], round: Int = 0) throws {
        let items = items()
        _ = try expect(items.count, fixture.count, "items in the store")
        for i in fixture.ids.indices {
            guard let item = items[fixture.ids[i]], item.modelState == .loaded, item.group == i % 100 else {
                throw ServiceBenchmarkError(description: "item \(i) missing or not loaded")
            }
        }
        for i in edited {
            let item = items[fixture.ids[i]]
            _ = try expect(item?.name == SyncFixture.name(i, round: round) ? 1 : 0, 1, "item \(i) edited in round \(round)")
        }
    }

    func close() {
        store.close()
        try? FileManager.default.removeItem(at: folder)
    }
}

extension PeerClient {
    /// Every record of `collection` the way an app without ModelKit downloads them: `_limit`
    /// pages, each decoded by `JSONDecoder` into plain structs, following `Next-Page`.
    func download(_ collection: String, pageSize: Int) async throws -> [PeerItem] {
        let decoder = JSONDecoder()
        var next = URL(string: "\(baseURL)/buckets/\(bucket)/collections/\(collection)/records?_limit=\(pageSize)")
        var items: [PeerItem] = []
        while let url = next {
            let (data, response) = try await send(URLRequest(url: url), expecting: [200])
            items += try decoder.decode(Envelope<[PeerItem]>.self, from: data).data
            next = response.value(forHTTPHeaderField: "Next-Page").flatMap(URL.init(string:))
        }
        return items
    }
}
