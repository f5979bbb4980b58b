import BlogFixture
import Foundation
import ModelKit
import ModelKitServices

#if canImport(Glibc)
    import Glibc
#endif

// The service benchmarks (issue #17): ModelKitServices against a real Kinto server that the suite
// starts itself, next to what an app without ModelKit writes (ServicePeers.swift). Each row reports
// wall time, requests, body bytes each way, models per second, and the client's own CPU time per
// model: `getrusage(RUSAGE_SELF)` around the timed region, so every thread of this process
// (URLSession's included) and none of the server's.
//
// They run only when a `--filter` part starts with "service": they need Python and Kinto, and take
// minutes. `n` is the number of models (records): a blog root, n/11 authors and the rest posts,
// each post referencing its author and each author holding its posts.

extension Benchmarks {
    /// Subjects of the service benchmarks besides ModelKit.
    static let perRecord = "URLSession per record"
    static let perRecordConcurrent = "URLSession per record, 8 in flight"
    /// Requests the concurrent peer keeps in flight: as many as a careful app would, twice the
    /// server's 4 worker threads.
    static let peerConcurrency = 8
    /// The reference row of `service-save`: the same creates in `/batch` requests whose bodies were
    /// made before the clock started, sent as ModelKit's save sends its requests: as many in
    /// flight as it keeps (`KintoService.batchesInFlight`, two), none while one in flight writes
    /// one of its collections.
    /// Its time is the server's own for those writes, about the least any client can take, so it
    /// about bounds the wall-time ratio any client could reach against the per-record peer.
    static let serverFloor = "/batch bodies made beforehand"
    /// The second reference row of `service-save`: as ``serverFloor``, but the records are
    /// ModelKit's own (a save's records read back from the server, its `modelId`, `createdAt`,
    /// `updatedAt` and `ModelPointer` references included), 25 to a request, in the order the save
    /// wrote them. Its time is the server's own for the records the save sends, so ModelKit's row
    /// over it is what the client adds (the pipeline's target), and it over ``serverFloor`` is what
    /// the richer records cost the server.
    static let serverFloorOwnRecords = "ModelKit's records in bodies made beforehand"

    // Every timed run of service-save and service-fetch sees a server holding its own records and
    // nothing else: its bucket is made (and, for a fetch, filled) before the clock starts and
    // deleted after it stops. Kinto's memory backend looks through every permission entry on the
    // server for each record it writes (inside a `/batch` too) or reads by id
    // (`get_object_permissions`), so a run that found another run's records there would be slower
    // for it, whichever subject it was. A fetch runs on the connections its filling opened, for
    // ModelKit and the peers alike.

    static let serviceSave = Benchmark(name: "service-save", needsServer: true) { n, session in
        let server = try await ServiceServer.shared()
        let data = serviceBlogData(models: n)
        let modelKit = ServiceSubject(Report.modelKit) {
            let bucket = try await server.makeBucket(collections: ["Blog", "Author", "Post"])
            let service = server.service(bucket: bucket)
            let context = ModelContext()
            let blog = buildModelKitBlog(data, in: context)
            let sample = try await timed(models: context.count, metrics: { service.metrics }) {
                try await service.save(blog)
            }
            let unsaved = context.models(of: BenchPost.self).count { $0.objectId == nil || $0.hasChanges }
            _ = try expect(unsaved, 0, "posts not saved")
            try await server.deleteBucket(bucket)
            return sample
        }
        func peer(_ name: String, concurrency: Int) -> ServiceSubject {
            ServiceSubject(name) {
                let bucket = try await server.makeBucket(collections: ["Blog", "Author", "Post"])
                let client = PeerClient(server: server, bucket: bucket)
                let records = PeerBlogData(data)
                let sample = try await timed(models: records.count, metrics: { client.metrics }) {
                    try await client.save(records, concurrency: concurrency)
                }
                _ = try expect(sample.metrics.requests - sample.metrics.retries, records.count, "\(name) requests (retries aside)")
                try await server.deleteBucket(bucket)
                return sample
            }
        }
        // The reference rows: writes made untimed (`prepare` gets the bucket's client), sent as
        // `/batch` bodies made beforehand, 25 to a request, as the save's pipeline sends them.
        func floor(_ name: String, prepare: @escaping @Sendable (PeerClient) async throws -> [PeerWrite]) -> ServiceSubject {
            ServiceSubject(name) {
                let bucket = try await server.makeBucket(collections: ["Blog", "Author", "Post"])
                let client = PeerClient(server: server, bucket: bucket)
                let writes = try await prepare(client)
                let batches = client.batchBodies(writes, limit: ServiceServer.batchLimit)
                var answers: [Data] = []
                let sample = try await timed(models: writes.count, metrics: { client.metrics }) {
                    answers = try await client.sendBatches(batches)
                }
                try PeerClient.checkBatchAnswers(answers, writes: writes.count)
                try await server.deleteBucket(bucket)
                return sample
            }
        }
        let peerFloor = floor(serverFloor) { client in try client.blogWrites(PeerBlogData(data)) }
        let ownFloor = floor(serverFloorOwnRecords) { client in
            // A save into a scratch bucket, whose records are then read back.
            let scratch = try await server.makeBucket(collections: ["Blog", "Author", "Post"])
            let context = ModelContext()
            try await server.service(bucket: scratch).save(buildModelKitBlog(data, in: context))
            let writes = try await PeerClient.storedWrites(of: scratch, ["Blog", "Author", "Post"], on: server, into: client)
            try await server.deleteBucket(scratch)
            _ = try expect(writes.count, context.count, "records read back")
            return writes
        }
        return try await measureService(
            [modelKit, peer(perRecord, concurrency: 1), peer(perRecordConcurrent, concurrency: peerConcurrency), peerFloor, ownFloor],
            n: n, session: &session)
    }

    static let serviceFetch = Benchmark(name: "service-fetch", needsServer: true) { n, session in
        let server = try await ServiceServer.shared()
        let data = serviceBlogData(models: n)
        // ModelKit fetches the blog with everything it references (authors, then their posts),
        // in place: one list request per collection and hundred records on each level. The blog
        // is saved by ModelKit, untimed.
        let modelKit = ServiceSubject(Report.modelKit) {
            let bucket = try await server.makeBucket(collections: ["Blog", "Author", "Post"])
            let service = server.service(bucket: bucket)
            let blogId: String
            let expected: Int
            do {
                let context = ModelContext()
                let blog = buildModelKitBlog(data, in: context)
                try await service.save(blog)
                blogId = blog.objectId!
                expected = context.count
            }
            let context = ModelContext()
            let blog = BenchBlog.instance(objectId: blogId, in: context)
            let sample = try await timed(models: expected, metrics: { service.metrics }) {
                try await service.fetch(blog, referenceDepth: .max)
            }
            let loaded = context.models(of: BenchPost.self).count { $0.modelState == .loaded && !$0.title.isEmpty && $0.author != nil }
            _ = try expect(context.count, expected, "models fetched")
            _ = try expect(loaded, expected - 1 - blog.authors.count, "posts loaded")
            try await server.deleteBucket(bucket)
            return sample
        }
        // The peers' blog is written in `/batch` requests beforehand, untimed.
        func peer(_ name: String, concurrency: Int) -> ServiceSubject {
            ServiceSubject(name) {
                let bucket = try await server.makeBucket(collections: ["Blog", "Author", "Post"])
                let client = PeerClient(server: server, bucket: bucket)
                let records = PeerBlogData(data)
                let answers = try await client.sendBatches(client.batchBodies(try client.blogWrites(records), limit: ServiceServer.batchLimit))
                try PeerClient.checkBatchAnswers(answers, writes: records.count)
                var fetched: PeerBlogData.Fetched?
                let sample = try await timed(models: records.count, metrics: { client.metrics }) {
                    fetched = try await client.fetchBlog(id: records.blog.id, concurrency: concurrency)
                }
                _ = try expect(fetched?.count ?? 0, records.count, "\(name) records fetched")
                _ = try expect(fetched?.posts.count { !$0.title.isEmpty } ?? 0, records.posts.count, "posts")
                try await server.deleteBucket(bucket)
                return sample
            }
        }
        return try await measureService(
            [modelKit, peer(perRecord, concurrency: 1), peer(perRecordConcurrent, concurrency: peerConcurrency)], n: n,
            session: &session)
    }

    static let serviceQuery = Benchmark(name: "service-query", needsServer: true) { n, session in
        let server = try await ServiceServer.shared()
        let bucket = try await server.makeBucket(collections: ["Item", "Shelf"])
        try await insertItems(n, bucket: bucket, server: server)
        let group = 42
        let expected = (0..<n).count { $0 % 100 == group }
        // ModelKit: the query an app writes, run on the server (`group` is an exact filter, so
        // only the matches travel), its matches merged into a fresh context.
        let modelKit = ServiceSubject(Report.modelKit) {
            let service = server.service(bucket: bucket)
            let context = ModelContext()
            var items: [ServiceItem] = []
            let sample = try await timed(models: expected, metrics: { service.metrics }) {
                items = try await service.fetch(ServiceItem.query(in: context).where("group", .equals(group)))
            }
            _ = try expect(items.count { $0.group == group && $0.modelState == .loaded }, expected, "items matched")
            _ = try expect(context.count, expected, "models in the context")
            return sample
        }
        let peer = ServiceSubject(perRecord) {
            let client = PeerClient(server: server, bucket: bucket)
            var items: [PeerItem] = []
            let sample = try await timed(models: expected, metrics: { client.metrics }) {
                items = try await client.query("Item", field: "group", equals: group)
            }
            _ = try expect(items.count { $0.group == group }, expected, "items matched")
            return sample
        }
        var result = try await measureService([modelKit, peer], n: n, session: &session)
        result.notes.insert("\(expected) of \(n) records match (group = \(group))", at: 0)
        try await server.deleteBucket(bucket)
        return result
    }

    /// Inserts `n` items (ModelKit records) through `/batch`, 1,000 per save; outside any timing.
    private static func insertItems(_ n: Int, bucket: String, server: ServiceServer) async throws {
        let service = server.service(bucket: bucket)
        let clock = ContinuousClock()
        let start = clock.now
        var next = 0
        while next < n {
            let context = ModelContext()
            let shelf = ServiceShelf.instance(in: context)
            var items: [ServiceItem] = []
            for i in next..<min(next + 1_000, n) {
                let item = ServiceItem.instance(in: context)
                item.name = "item \(i)"
                item.group = i % 100
                item.score = (i * 7_919) % 10_000
                item.tags = ["t\(i % 7)", "u\(i % 13)"]
                items.append(item)
            }
            shelf.items = ModelArray(items)
            try await service.save(shelf)
            next += items.count
            if next % 10_000 == 0 || next == n {
                printError("  inserted \(grouped(next)) of \(grouped(n)) records (\(duration(seconds(clock.now - start))))")
            }
        }
    }

    /// The blog of `service-save` and `service-fetch`: `models` records in all.
    static func serviceBlogData(models n: Int) -> BlogData {
        // 1 blog + p posts + p/10 authors = n when n - 1 is a multiple of 11 (1,000 and 10,000 are).
        BlogData(posts: max(10, (n - 1) - (n - 1) / 11))
    }
}

// MARK: - Measuring

/// What one timed run of a service subject used.
struct ServiceSample {
    var seconds: Double
    var cpuSeconds: Double
    /// CPU of the threads that run Swift tasks (see ``taskThreadsCPUSeconds()``), when known.
    var taskCPUSeconds: Double?
    var metrics: ServiceMetrics
    var models: Int
}

/// One subject of a service benchmark: each call makes its own setup, one timed run, its checks.
struct ServiceSubject {
    let name: String
    let run: () async throws -> ServiceSample

    init(_ name: String, run: @escaping () async throws -> ServiceSample) {
        self.name = name
        self.run = run
    }
}

/// The process's CPU time so far (user and system, every thread).
func processCPUSeconds() -> Double {
    var usage = rusage()
    #if canImport(Glibc)
        getrusage(RUSAGE_SELF.rawValue, &usage)
    #else
        getrusage(RUSAGE_SELF, &usage)
    #endif
    func value(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return value(usage.ru_utime) + value(usage.ru_stime)
}

/// The CPU time so far of each of this process's threads other than libdispatch's overcommit
/// threads, by thread id: the main thread and the pool that runs Swift tasks, where the subjects'
/// own code runs (planning, encoding, decoding, merging) and also URLSession's delegate callbacks,
/// but not the serial queues where swift-corelibs-foundation's URLSession drives libcurl and waits
/// on sockets. Linux only (from `/proc/self/task`): each thread's scheduler run time
/// (`se.sum_exec_runtime` in `sched`, to the microsecond) where the kernel shows it, else its user
/// and system time in clock ticks (10 ms), too coarse for the few milliseconds a small run takes.
func taskThreadsCPUSeconds() -> [String: Double]? {
    #if os(Linux)
        guard let threads = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        var times: [String: Double] = [:]
        for thread in threads {
            guard let name = try? String(contentsOfFile: "/proc/self/task/\(thread)/comm", encoding: .utf8),
                !name.contains("overcommit")
            else { continue }
            if let milliseconds = scheduledMilliseconds(thread: thread) {
                times[thread] = milliseconds / 1e3
                continue
            }
            guard let stat = try? String(contentsOfFile: "/proc/self/task/\(thread)/stat", encoding: .utf8),
                let end = stat.lastIndex(of: ")")
            else { continue }
            // After the name: state, then 10 fields, then utime and stime (fields 14 and 15).
            let fields = stat[stat.index(after: end)...].split(separator: " ")
            guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { continue }
            times[thread] = (user + system) / ticks
        }
        return times
    #else
        return nil
    #endif
}

/// The CPU time the task threads used between two readings of ``taskThreadsCPUSeconds()``: each
/// thread alive at the end, from its time at the start (0 for a thread started meanwhile). A
/// thread that exited meanwhile (libdispatch lets idle workers go) takes its time with it, so it
/// is left out rather than subtracted.
func taskThreadsCPUSeconds(from before: [String: Double], to after: [String: Double]) -> Double {
    after.reduce(0) { total, thread in total + max(0, thread.value - (before[thread.key] ?? 0)) }
}

/// The time thread `thread` of this process has run, in milliseconds, from the `se.sum_exec_runtime`
/// line of `/proc/self/task/<thread>/sched` (kernels with scheduler debugging), or nil.
private func scheduledMilliseconds(thread: String) -> Double? {
    // Found, not split into lines: the reading runs partly inside the timed region.
    guard let text = try? String(contentsOfFile: "/proc/self/task/\(thread)/sched", encoding: .utf8),
        let key = text.range(of: "se.sum_exec_runtime"), let colon = text[key.upperBound...].firstIndex(of: ":")
    else { return nil }
    let rest = text[text.index(after: colon)...]
    return Double(rest.prefix { $0 != "\n" }.trimmingCharacters(in: .whitespaces))
}

/// Times `body`: wall clock, this process's CPU, and what `metrics` counted meanwhile.
func timed(models: Int, metrics: () -> ServiceMetrics, _ body: () async throws -> Void) async throws -> ServiceSample {
    let clock = ContinuousClock()
    let before = metrics()
    let cpu = processCPUSeconds()
    let taskCPU = taskThreadsCPUSeconds()
    let start = clock.now
    try await body()
    let end = clock.now
    let cpuAfter = processCPUSeconds()
    let taskCPUAfter = taskThreadsCPUSeconds()
    return ServiceSample(
        seconds: seconds(end - start), cpuSeconds: cpuAfter - cpu,
        taskCPUSeconds: taskCPU.flatMap { before in taskCPUAfter.map { taskThreadsCPUSeconds(from: before, to: $0) } }, metrics: metrics() - before,
        models: models)
}

/// Runs every subject `session.runs` times, interleaved as ``measure(_:session:)`` does, and
/// returns their medians (each column's median on its own) in a table; with `--subjects`, only
/// the subjects named. `targets`: whether to add the notes of issue #17's targets (the save's).
func measureService(_ subjects: [ServiceSubject], n: Int, session: inout Session, targets: Bool = true) async throws
    -> BenchmarkResult
{
    let subjects = subjects.filter { session.includes(subject: $0.name) }
    var samples = [[ServiceSample]](repeating: [], count: subjects.count)
    for round in 0..<session.runs {
        for offset in subjects.indices {
            let index = (round + offset) % subjects.count
            let sample = try await subjects[index].run()
            session.checksum.add(sample.metrics.requests &+ sample.models)
            samples[index].append(sample)
            if session.verbose {
                printError(
                    "\(session.label) \(subjects[index].name): \(fixed(sample.seconds, 3)) s, CPU \(fixed(sample.cpuSeconds, 3)) s, "
                        + "\(sample.metrics.requests) requests")
            }
        }
    }
    var result = BenchmarkResult(rows: [])
    for (subject, list) in zip(subjects, samples) {
        let stats = ServiceStats(
            models: list[0].models,
            requests: Int(median(list.map { Double($0.metrics.requests) })),
            bytesSent: Int(median(list.map { Double($0.metrics.bytesSent) })),
            bytesReceived: Int(median(list.map { Double($0.metrics.bytesReceived) })),
            cpuSeconds: median(list.map(\.cpuSeconds)),
            taskCPUSeconds: list.allSatisfy { $0.taskCPUSeconds != nil } ? median(list.compactMap(\.taskCPUSeconds)) : nil)
        result.rows.append((subject.name, median(list.map(\.seconds))))
        result.serviceStats[subject.name] = stats
    }
    if targets { result.notes += targetNotes(result, n: n) }
    return result
}

/// The issue's targets, read against ModelKit's row.
private func targetNotes(_ result: BenchmarkResult, n: Int) -> [String] {
    guard let modelKit = result.serviceStats[Report.modelKit],
        let modelKitSeconds = result.rows.first(where: { $0.subject == Report.modelKit })?.seconds
    else { return [] }
    var notes: [String] = []
    let allowed = modelKit.models / 20
    notes.append(
        "target requests <= n/20 = \(grouped(allowed)): ModelKit made \(grouped(modelKit.requests)) "
            + (modelKit.requests <= allowed ? "(met)" : "(not met)"))
    if let peer = result.rows.first(where: { $0.subject == Benchmarks.perRecord })?.seconds, modelKitSeconds > 0 {
        let ratio = peer / modelKitSeconds
        notes.append("target wall >= 5x faster than per record (at 10k): \(fixed(ratio, 2))x " + (ratio >= 5 ? "(met)" : "(not met)"))
        if let floor = result.rows.first(where: { $0.subject == Benchmarks.serverFloor })?.seconds, floor > 0 {
            notes.append(
                "the server alone took \(fixed(floor, 3)) s for these creates in /batch requests (bodies made beforehand): "
                    + "per record is \(fixed(peer / floor, 2))x that, about the most any client could reach here")
        }
    }
    if let own = result.rows.first(where: { $0.subject == Benchmarks.serverFloorOwnRecords })?.seconds, own > 0 {
        let ratio = modelKitSeconds / own
        var note =
            "target save within 1.10x of the server's own time for its records: \(fixed(ratio, 2))x "
            + (ratio <= 1.10 ? "(met)" : "(not met)")
        if let floor = result.rows.first(where: { $0.subject == Benchmarks.serverFloor })?.seconds, floor > 0 {
            note += "; ModelKit's records took the server \(fixed(own / floor, 2))x the peer's leaner ones (\(fixed(modelKitSeconds / floor, 2))x for the save)"
        }
        notes.append(note)
    }
    let perModel = modelKit.cpuSeconds / Double(max(1, modelKit.models)) * 1e6
    var cpuNote = "target client CPU <= 20 us per model: \(fixed(perModel, 1)) us for the process " + (perModel <= 20 ? "(met)" : "(not met)")
    if let own = modelKit.taskCPUMicrosecondsPerModel { cpuNote += ", \(fixed(own, 1)) us in ModelKit's tasks" }
    notes.append(cpuNote)
    return notes
}

/// The columns a service row has beyond its seconds.
struct ServiceStats {
    var models: Int
    var requests: Int
    var bytesSent: Int
    var bytesReceived: Int
    var cpuSeconds: Double
    var taskCPUSeconds: Double?

    var cpuMicrosecondsPerModel: Double { cpuSeconds / Double(max(1, models)) * 1e6 }
    var taskCPUMicrosecondsPerModel: Double? { taskCPUSeconds.map { $0 / Double(max(1, models)) * 1e6 } }
}

extension Report {
    /// The table of a service benchmark: seconds and ratio as elsewhere, then what the network and
    /// the client's CPU did.
    static func serviceTable(benchmark: String, n: Int, runs: Int, rows: [Measurement], stats: [String: ServiceStats], notes: [String])
        -> String
    {
        let base = (rows.first { $0.subject == modelKit } ?? rows.first)?.seconds
        let width = max(34, rows.map(\.subject.count).max() ?? 0)
        var lines = ["\(benchmark)  n=\(grouped(n)) models  (median of \(runs) run\(runs == 1 ? "" : "s"))"]
        let headings = ["seconds", "ratio", "requests", "sent", "received", "models/s", "CPU us/model", "tasks us/model"]
        let widths = [10, 7, 9, 12, 12, 10, 13, 15]
        lines.append(pad("subject", width) + zip(headings, widths).map { "  " + pad($0, $1, right: true) }.joined())
        lines.append(String(repeating: "-", count: width + widths.reduce(0, +) + 2 * widths.count))
        for row in rows {
            var values = [fixed(row.seconds, 3), "-", "-", "-", "-", "-", "-", "-"]
            if let base, base > 0 { values[1] = fixed(row.seconds / base, 2) }
            if let stat = stats[row.subject] {
                values[2] = grouped(stat.requests)
                values[3] = grouped(stat.bytesSent)
                values[4] = grouped(stat.bytesReceived)
                if row.seconds > 0 { values[5] = grouped(Int((Double(stat.models) / row.seconds).rounded())) }
                values[6] = fixed(stat.cpuMicrosecondsPerModel, 1)
                if let task = stat.taskCPUMicrosecondsPerModel { values[7] = fixed(task, 1) }
            }
            lines.append(pad(row.subject, width) + zip(values, widths).map { "  " + pad($0, $1, right: true) }.joined())
        }
        lines.append("  ratio = subject seconds / ModelKit seconds; bytes are HTTP bodies (headers not counted)")
        lines.append(
            "  CPU = the whole process; tasks = threads other than libdispatch's overcommit ones (Swift tasks and URLSession's "
                + "delegate callbacks, not libcurl's I/O)")
        for note in notes { lines.append("  " + note) }
        return lines.joined(separator: "\n") + "\n"
    }
}

extension ServiceMetrics {
    /// What was used between two readings.
    static func - (after: ServiceMetrics, before: ServiceMetrics) -> ServiceMetrics {
        ServiceMetrics(
            requests: after.requests - before.requests, retries: after.retries - before.retries,
            bytesSent: after.bytesSent - before.bytesSent, bytesReceived: after.bytesReceived - before.bytesReceived)
    }
}
