import Foundation
import ModelKit
import ModelKitServices

// The sync benchmarks (issue #34): `ModelSync` against the real Kinto server of the service rows.
// `n` is the number of records (items, one collection) on the server, written there untimed by
// `/batch` bodies made beforehand (SyncFixture.swift), or on PostgreSQL straight into Kinto's
// tables, checked against `/batch`-loaded ones (SyncSeeding.swift). Each benchmark uses one bucket holding its
// own records and nothing else, deleted at its end. They run with `--filter sync`.
//
// - sync-first: an empty store (a new `ModelStore` in a folder of its own) syncs the n records,
//   next to the paged download an app without ModelKit writes (`URLSession`, `JSONDecoder`).
// - sync-incremental: a store synced with the n records; another client changes n/100 of them
//   (`/batch` `PATCH`es, untimed); the sync that pulls them is timed. Its requests and bytes are
//   printed next to the first sync's.
// - sync-push: a synced store; n/10 items edited and saved (untimed); the sync that pushes them,
//   next to the server's own time for the same updates (`PUT` with `If-Match`) in `/batch`
//   bodies made beforehand, sent as the push sends them (one at a time: one collection).

extension Benchmarks {
    /// The peer of `sync-first`.
    static let pagedDownload = "URLSession paged download"

    static let syncFirst = Benchmark(name: "sync-first", needsServer: true) { n, session in
        let server = try await ServiceServer.shared()
        let fixture = SyncFixture(count: n)
        let bucket = try await server.makeBucket(collections: ["Item"])
        _ = try await fixture.load(into: PeerClient(server: server, bucket: bucket), server: server)
        let pageSize = server.service(bucket: bucket).pageSize
        let modelKit = ServiceSubject(Report.modelKit) {
            let device = try SyncDevice(server: server, bucket: bucket)
            defer { device.close() }
            var report = SyncReport()
            let sample = try await timed(models: n, metrics: { device.service.metrics }) {
                report = try await device.sync.sync()
            }
            _ = try expect(report.pulled, n, "records pulled")
            try device.check(fixture)
            return sample
        }
        let peer = ServiceSubject(pagedDownload) {
            let client = PeerClient(server: server, bucket: bucket)
            var items: [PeerItem] = []
            let sample = try await timed(models: n, metrics: { client.metrics }) {
                items = try await client.download("Item", pageSize: pageSize)
            }
            _ = try expect(Set(items.map(\.id)).count, n, "records downloaded")
            return sample
        }
        var result = try await measureService([modelKit, peer], n: n, session: &session, targets: false)
        if let ratio = result.ratio(of: Report.modelKit, to: pagedDownload) {
            result.notes.append(
                "target within 1.5x of the paged download: \(fixed(ratio, 2))x " + (ratio <= 1.5 ? "(met)" : "(not met)")
                    + " (ModelKit also writes the store; \(grouped(pageSize)) records a page for both)")
        }
        try await server.deleteBucket(bucket)
        return result
    }

    static let syncIncremental = Benchmark(name: "sync-incremental", needsServer: true) { n, session in
        let server = try await ServiceServer.shared()
        let fixture = SyncFixture(count: n)
        let bucket = try await server.makeBucket(collections: ["Item"])
        let client = PeerClient(server: server, bucket: bucket)
        _ = try await fixture.load(into: client, server: server)
        let device = try SyncDevice(server: server, bucket: bucket)
        defer { device.close() }
        let first = try await timed(models: n, metrics: { device.service.metrics }) { try await device.sync.sync() }
        let round = RunCounter()
        // Run r changes the records whose index is r modulo 100: n/100 of them, others each run.
        let modelKit = ServiceSubject(Report.modelKit) {
            let r = round.next()
            let changed = Array(stride(from: r % 100, to: n, by: 100))
            let answers = try await client.sendBatches(fixture.patchBodies(changed, round: r, client))
            _ = try SyncFixture.results(answers, expecting: 200, count: changed.count)
            var report = SyncReport()
            let sample = try await timed(models: changed.count, metrics: { device.service.metrics }) {
                report = try await device.sync.sync()
            }
            _ = try expect(report.pulled, changed.count, "records pulled")
            _ = try expect(report.pushed, 0, "records pushed")
            try device.check(fixture, edited: changed, round: r)
            return sample
        }
        var result = try await measureService([modelKit], n: n, session: &session, targets: false)
        if let stats = result.serviceStats[Report.modelKit] {
            let metrics = first.metrics
            result.notes.append(
                "first sync of the \(grouped(n)) records: \(grouped(metrics.requests)) requests, \(grouped(metrics.bytesSent)) bytes sent, "
                    + "\(grouped(metrics.bytesReceived)) received, \(fixed(first.seconds, 3)) s")
            result.notes.append(
                "this sync of \(grouped(stats.models)) changes: \(grouped(stats.requests)) requests, \(grouped(stats.bytesSent)) sent, "
                    + "\(grouped(stats.bytesReceived)) received: \(fixed(Double(stats.bytesReceived) / Double(max(1, metrics.bytesReceived)), 4))"
                    + " of the first sync's bytes for \(fixed(Double(stats.models) / Double(max(1, n)), 4)) of its records")
        }
        try await server.deleteBucket(bucket)
        return result
    }

    static let syncPush = Benchmark(name: "sync-push", needsServer: true) { n, session in
        let server = try await ServiceServer.shared()
        let fixture = SyncFixture(count: n)
        let bucket = try await server.makeBucket(collections: ["Item"])
        let client = PeerClient(server: server, bucket: bucket)
        var versions = try await fixture.load(into: client, server: server)
        let device = try SyncDevice(server: server, bucket: bucket)
        defer { device.close() }
        try await device.sync.sync()
        // ModelKit edits the records whose index is 0 modulo 10, the floor those 5 modulo 10, so
        // that neither's writes meet the other's: n/10 each.
        let edited = Array(stride(from: 0, to: n, by: 10))
        let floorEdited = Array(stride(from: 5, to: n, by: 10))
        let round = RunCounter()
        let modelKit = ServiceSubject(Report.modelKit) {
            let r = round.next()
            // The floor's writes of the last run, pulled untimed, so that the timed sync only pushes.
            try await device.sync.sync()
            let items = device.items()
            for i in edited {
                guard let item = items[fixture.ids[i]] else { throw ServiceBenchmarkError(description: "item \(i) missing") }
                item.name = SyncFixture.name(i, round: r)
                item.score = SyncFixture.score(i, round: r)
            }
            try await device.store.save()
            var report = SyncReport()
            let sample = try await timed(models: edited.count, metrics: { device.service.metrics }) {
                report = try await device.sync.sync()
            }
            _ = try expect(report.pushed, edited.count, "records pushed")
            _ = try expect(report.pulled, 0, "records pulled")
            _ = try expect(device.sync.pendingChangeCount, 0, "changes pending")
            return sample
        }
        let floorRound = RunCounter()
        let floor = ServiceSubject(serverFloor) {
            let r = floorRound.next()
            let batches = fixture.updateBodies(floorEdited, round: r, versions: versions, client)
            var answers: [Data] = []
            let sample = try await timed(models: floorEdited.count, metrics: { client.metrics }) {
                answers = try await client.sendBatches(batches)
            }
            versions.merge(try SyncFixture.results(answers, expecting: 200, count: floorEdited.count)) { $1 }
            return sample
        }
        var result = try await measureService([modelKit, floor], n: n, session: &session, targets: false)
        if let ratio = result.ratio(of: Report.modelKit, to: serverFloor) {
            result.notes.append(
                "target push within 1.15x of the server's own time for its updates: \(fixed(ratio, 2))x "
                    + (ratio <= 1.15 ? "(met)" : "(not met)"))
        }
        try await server.deleteBucket(bucket)
        return result
    }
}

/// The runs of a benchmark, counted from 1 (a class: the subjects' closures share it).
final class RunCounter {
    private var value = 0

    func next() -> Int {
        value += 1
        return value
    }
}

extension BenchmarkResult {
    /// The seconds of `subject` over those of `other`.
    func ratio(of subject: String, to other: String) -> Double? {
        guard let seconds = rows.first(where: { $0.subject == subject })?.seconds,
            let base = rows.first(where: { $0.subject == other })?.seconds, base > 0
        else { return nil }
        return seconds / base
    }
}
