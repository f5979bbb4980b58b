import Foundation
import ModelKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Seeding the sync benchmarks' records straight into Kinto's PostgreSQL tables (untimed set-up).
//
// Why: through `/batch` Kinto writes a record in a few milliseconds of Python (10,000 records took
// about 8 minutes on PostgreSQL on the shared machine), so the 100,000 records of issue #34 took
// far longer to load than to measure, once per row. One `INSERT ... SELECT` writes them in seconds.
//
// What is written is what the `/batch` creates write (read from Kinto's PostgreSQL storage and
// permission backends, and checked on every seeding, below):
// - `objects`: one row per record, `parent_id` the collection's path, `resource_name` "record",
//   `data` the record's JSON without `id` and `last_modified` (Kinto keeps those in columns),
//   `deleted` false. `last_modified` strictly increasing in the fixture's order, as the `/batch`
//   load's are, but set explicitly (Kinto's trigger keeps a value that is not the collection's
//   latest): one second apart, the last one a minute before the seeding, as if the records had
//   been written over the day before. Why not the trigger's values: it gives rows inserted
//   together a millisecond each, so the last 30,000 records would fall in the span that the
//   first pull after a first sync looks back over (`ModelSync.lookBack`, 30 s of versions before
//   the last pull), and `sync-incremental`, which documents 1,000 changes among 100,000 records,
//   would time listing 30,000 of the seeded ones too in its first run. (A `/batch` load writes a record every
//   few milliseconds: its last few thousand would be in that span.)
// - `access_control_entries`: `write` on each record for the account that created it, as Kinto
//   gives a record's creator.
// - `timestamps`: the collection's "empty" timestamp, which Kinto's first write also leaves,
//   before the first record's.
// The bucket and the collection are made through the API first, so their rows and permissions
// are Kinto's own.
//
// The check: the first records of the fixture are also loaded through `/batch` into a bucket of
// their own, and both buckets' records are read through the HTTP API: the bodies must be equal
// (key order included) but for `last_modified`, and so must the permissions of a record; the
// seeded collection must hold n records. The benchmarks' own checks then run on the seeded records.

extension SyncFixture {
    /// How many records the seeding check compares with `/batch`-loaded ones.
    static let seedingCheckCount = 100
    /// The milliseconds between seeded records' versions (see above).
    static let seedingSpacing: Int64 = 1_000
    /// The milliseconds from the last seeded record's version to the seeding: twice the look-back.
    static let seedingAge: Int64 = 60_000

    /// Writes every record into `client`'s bucket through `database` (untimed), checks them against
    /// `/batch`-loaded ones through the API, and returns their versions by id.
    func seed(into client: PeerClient, server: ServiceServer, database: String) async throws -> [String: Int64] {
        let clock = ContinuousClock()
        let start = clock.now
        let folder = ScratchDirectory.shared.url.appendingPathComponent("seed-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // psql's text format: tab-separated columns. The data holds no tab, newline or backslash.
        var rows = Data()
        for i in ids.indices { rows.append(contentsOf: Array("\(i)\t\(ids[i])\t\(recordData(i, round: 0))\n".utf8)) }
        let rowsFile = folder.appendingPathComponent("records.tsv")
        try rows.write(to: rowsFile)
        let parent = "/buckets/\(client.bucket)/collections/Item"
        let script = """
            \\set ON_ERROR_STOP on
            BEGIN;
            CREATE TEMPORARY TABLE seed (n INTEGER, id TEXT, data JSONB) ON COMMIT DROP;
            \\copy seed FROM '\(rowsFile.path)'
            SELECT as_epoch(clock_timestamp()::TIMESTAMP) - \(Self.seedingAge) - \(count - 1) * \(Self.seedingSpacing) AS base \\gset
            INSERT INTO timestamps (parent_id, resource_name, last_modified) VALUES (:'parent', 'record', from_epoch(:base - 1))
                ON CONFLICT (parent_id, resource_name)
                DO UPDATE SET last_modified = LEAST(timestamps.last_modified, EXCLUDED.last_modified);
            INSERT INTO objects (id, parent_id, resource_name, data, last_modified, deleted)
                SELECT id, :'parent', 'record', data, from_epoch(:base + n * \(Self.seedingSpacing)), FALSE FROM seed ORDER BY n;
            INSERT INTO access_control_entries (object_id, permission, principal)
                SELECT :'parent' || '/records/' || id, 'write', :'principal' FROM seed;
            COMMIT;
            SELECT id, as_epoch(last_modified) FROM objects WHERE parent_id = :'parent' AND resource_name = 'record';

            """
        let scriptFile = folder.appendingPathComponent("seed.sql")
        try Data(script.utf8).write(to: scriptFile)
        let (status, output, log) = try ServiceServer.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "psql", database, "-X", "-q", "-A", "-t", "-F", "\t", "-v", "parent=\(parent)", "-v",
                "principal=account:\(server.user)",
                "-f", scriptFile.path,
            ])
        guard status == 0 else {
            throw ServiceBenchmarkError(
                description: "seeding \(grouped(count)) records with psql answered \(status) (psql must be on PATH): \(log)")
        }
        var versions: [String: Int64] = [:]
        for line in output.split(separator: "\n") {
            let columns = line.split(separator: "\t")
            guard columns.count == 2, let version = Int64(columns[1]) else {
                throw ServiceBenchmarkError(description: "psql's versions: unexpected line \"\(line.prefix(100))\"")
            }
            versions[String(columns[0])] = version
        }
        _ = try expect(versions.count, count, "seeded records")
        for i in ids.indices.dropFirst() where versions[ids[i]]! <= versions[ids[i - 1]]! {
            throw ServiceBenchmarkError(description: "seeded record \(i)'s version is not after record \(i - 1)'s")
        }
        let seeded = seconds(clock.now - start)
        try await checkSeeding(client, server: server)
        printError(
            "  seeded \(grouped(count)) records into PostgreSQL in \(duration(seeded)); the API serves \(Self.seedingCheckCount) of them "
                + "as it serves the same records written by /batch (checked in \(duration(seconds(clock.now - start) - seeded)))")
        return versions
    }

    /// Checks that the API serves `client`'s seeded records as it serves the same records loaded by
    /// `/batch` into a bucket of their own: the bodies but `last_modified`, a record's permissions,
    /// and the collection's count.
    private func checkSeeding(_ client: PeerClient, server: ServiceServer) async throws {
        let sample = Array(0..<min(count, Self.seedingCheckCount))
        let bucket = try await server.makeBucket(collections: ["Item"])
        do {
            try await compare(client, PeerClient(server: server, bucket: bucket), sample: sample)
        } catch {
            try? await server.deleteBucket(bucket)
            throw error
        }
        try await server.deleteBucket(bucket)
    }

    /// Loads the records at `sample` into `loaded`'s (empty) bucket by `/batch` and compares what
    /// the API serves of them and of `client`'s seeded bucket.
    private func compare(_ client: PeerClient, _ loaded: PeerClient, sample: [Int]) async throws {
        _ = try Self.results(
            try await loaded.sendBatches(createBodies(loaded, indices: sample)), expecting: 201, count: sample.count)
        let seededRecords = try await client.records(ids: sample.map { ids[$0] })
        let loadedRecords = try await loaded.records(ids: sample.map { ids[$0] })
        _ = try expect(seededRecords.count, sample.count, "seeded records read back")
        _ = try expect(loadedRecords.count, sample.count, "/batch-loaded records read back")
        guard seededRecords == loadedRecords else {
            let first = seededRecords.indices.first { seededRecords[$0] != loadedRecords[$0] } ?? 0
            throw ServiceBenchmarkError(
                description: "the API serves seeded records unlike /batch-loaded ones, first record \(first): seeded "
                    + "\(String(describing: seededRecords[first])), /batch \(String(describing: loadedRecords[first]))")
        }
        if let id = ids.first {
            let seededPermissions = try await client.permissions(of: id)
            let loadedPermissions = try await loaded.permissions(of: id)
            guard seededPermissions == loadedPermissions else {
                throw ServiceBenchmarkError(
                    description: "a seeded record's permissions \(String(describing: seededPermissions)), "
                        + "/batch's \(String(describing: loadedPermissions))")
            }
        }
        // Kinto counts a collection's records only for HEAD.
        var head = URLRequest(url: client.recordsURL("_limit=1"))
        head.httpMethod = "HEAD"
        let (_, response) = try await client.send(head, expecting: [200])
        _ = try expect(
            response.value(forHTTPHeaderField: "Total-Records").flatMap { Int($0) } ?? -1, count, "records on the server")
    }
}

extension PeerClient {
    /// The URL of collection "Item"'s records with `query`.
    func recordsURL(_ query: String) -> URL {
        URL(string: "\(baseURL)/buckets/\(bucket)/collections/Item/records?\(query)")!
    }

    /// The records of collection "Item" with the given ids, sorted by id, without `last_modified`.
    func records(ids: [String]) async throws -> [ModelValue] {
        let (data, _) = try await send(
            URLRequest(url: recordsURL("in_id=\(ids.joined(separator: ","))&_sort=id")), expecting: [200])
        guard case .array(let records)? = try ModelValue(json: data)["data"] else {
            throw ServiceBenchmarkError(description: "a records list without data")
        }
        return records.map { record in
            guard case .object(var object) = record else { return record }
            object["last_modified"] = nil
            return .object(object)
        }
    }

    /// The `permissions` of record `id` of collection "Item".
    func permissions(of id: String) async throws -> ModelValue? {
        let url = URL(string: "\(baseURL)\(recordPath("Item", id))")!
        let (data, _) = try await send(URLRequest(url: url), expecting: [200])
        return try ModelValue(json: data)["permissions"]
    }
}
