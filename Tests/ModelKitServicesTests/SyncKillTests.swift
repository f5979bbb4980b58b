import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@testable import ModelKitServices

#if canImport(Glibc)
    import Glibc
#endif

/// A process that changes, saves and syncs a store, killed with SIGKILL at random moments over
/// and over (Tests/SyncKillChild; issue #34). After each kill the test opens the store, syncs it,
/// and checks that the store and the server agree, and that every change a save returned for is
/// there (the change whose save was cut short may or may not be), none applied twice.
@Suite("Offline sync: killed while syncing", .enabled(if: serviceTestsEnabled, serviceTestsSkipped), .hangBackstop)
struct SyncKillTests {
    static var childExecutable: URL? { ChildProcess.builtExecutable(named: "SyncKillChild") }

    /// How many times the child is killed: 100 (issue #34), or `MODELKIT_SYNC_KILLS` (at least
    /// 10), for a run where each round is slow (under AddressSanitizer, Scripts/asan-test).
    static var killCount: Int {
        ProcessInfo.processInfo.environment["MODELKIT_SYNC_KILLS"].flatMap { Int($0) }.map { max(10, $0) } ?? 100
    }

    /// What one child reported.
    struct Reports {
        var opened = false
        /// The changes of each save that returned, in order.
        var acknowledged: [[Substring]] = []
        /// The changes of the save under way when the child died.
        var inFlight: [Substring]?
        var syncing = false
        var synced = 0
        /// Why its syncs failed, in order.
        var failures: [String] = []
        /// Whether the child finished its rounds and a last sync got through.
        var done = false
        var errors: [String] = []

        mutating func read(_ line: Substring) {
            let words = line.split(separator: " ")
            switch words.first {
            case "opened": opened = true
            case "saving": inFlight = Array(words.dropFirst())
            case "saved":
                if let inFlight { acknowledged.append(inFlight) } else { errors.append("saved without saving") }
                inFlight = nil
            case "syncing": syncing = true
            case "synced", "sync-failed":
                syncing = false
                synced += 1
                if words.first == "sync-failed" { failures.append(words.dropFirst().joined(separator: " ")) }
            case "done": done = true
            default: errors.append(String(line))
            }
        }
    }

    /// Runs the child until `delay` after it opened its store, then kills it (a backstop kills
    /// it after two minutes, should it hang before); with no delay, until it ends by itself
    /// (a backstop of twenty minutes).
    static func runAndKill(_ child: URL, _ arguments: [String], delay: Duration?) async throws -> Reports {
        try await ChildProcess.offCooperativeThreads {
            let process = try ChildProcess(child, arguments, backstop: .seconds(delay == nil ? 1_200 : 120))
            var reports = Reports()
            // A child run to its end (no delay) is not killed.
            var killScheduled = delay == nil
            while let line = process.nextLine() {
                reports.read(line)
                if reports.opened, !killScheduled {
                    killScheduled = true
                    process.send(SIGKILL, after: delay ?? .zero)
                }
            }
            let (reason, status) = process.waitUntilExit()
            if delay == nil {
                if reason != .exit || status != 0 {
                    reports.errors.append("the child ended with \(reason) \(status)")
                }
            } else if reason != .uncaughtSignal {
                reports.errors.append("the child exited with status \(status)")
            }
            return reports
        }
    }

    /// The tracked value of each record (a writer's name, an article's title), by record.
    typealias State = [RecordID: String]

    /// `state` with `changes` applied.
    static func applying(_ changes: [Substring], to state: State) -> State {
        var state = state
        for change in changes {
            let parts = change.split(separator: ":", maxSplits: 2)
            guard parts.count >= 2 else { continue }
            let path = parts[1].split(separator: "/")
            let id = RecordID(collection: String(path[0]), id: String(path[1]))
            switch parts[0] {
            case "create": state[id] = state[id] ?? ""
            case "set": state[id] = String(parts[2].split(separator: "=", maxSplits: 1)[1])
            case "delete": state[id] = nil
            default: break
            }
        }
        return state
    }

    static func serverState(_ service: KintoService) async throws -> State {
        var state = State()
        for (collection, field) in [("Writer", "name"), ("Article", "title")] {
            var cursor: RecordCursor?
            repeat {
                let page = try await service.listRecords(RecordListRequest(collection: collection), after: cursor)
                for record in page.records {
                    if case .string(let value)? = record.fields[field] { state[record.id] = value }
                }
                cursor = page.next
            } while cursor != nil
        }
        return state
    }

    static func localState(_ context: ModelContext) -> State {
        var state = State()
        for writer in context.models(of: Writer.self) where writer.modelState != .needsData {
            state[RecordID(collection: "Writer", id: writer.objectId ?? "?")] = writer.name
        }
        for article in context.models(of: Article.self) where article.modelState != .needsData {
            state[RecordID(collection: "Article", id: article.objectId ?? "?")] = article.title
        }
        return state
    }

    /// The kills run in two lanes at once, each a store, a bucket and a child of its own, half
    /// of them each: a lane spends most of its time waiting (for the kill, for the server), and
    /// the whole test was the longest of the plain `swift test` run.
    static let lanes = [0, 1]

    @Test(
        "A store killed at random moments while it changes, saves and syncs loses no acknowledged change and applies none twice",
        arguments: lanes)
    func killedWhileSyncing(lane: Int) async throws {
        try? ModelRegistry.register(Writer.self, Article.self)
        let child = try #require(Self.childExecutable, "the SyncKillChild executable was not built")
        let server = try await KintoServer.shared.value
        let service = try await KintoServer.freshService()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("modelkit-synckill-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("device.store")
        var random = SplitMix64(seed: 17 + UInt64(lane))
        var expected = State()
        var kills = (saving: 0, syncing: 0, other: 0, inFlightKept: 0)
        var acknowledged = 0
        // The first lane takes the odd one out.
        let rounds = Self.killCount / Self.lanes.count + (lane == 0 ? Self.killCount % Self.lanes.count : 0)
        for round in 0..<rounds {
            let seed = random.next() % 1_000_000
            let delay = Duration.milliseconds(Int.random(in: 50...1_200, using: &random))
            let reports = try await Self.runAndKill(
                child, [url.path, server.url.absoluteString, service.bucket, server.user, server.password, String(seed)],
                delay: delay)
            let context = "lane \(lane), round \(round), child seed \(seed)"
            try #require(reports.errors.isEmpty, "\(context): \(reports.errors)")
            for changes in reports.acknowledged { expected = Self.applying(changes, to: expected) }
            acknowledged += reports.acknowledged.count
            if reports.inFlight != nil {
                kills.saving += 1
            } else if reports.syncing {
                kills.syncing += 1
            } else {
                kills.other += 1
            }
            // Relaunch: open the store and sync it, as the app would.
            let store = try ModelStore(url: url)
            let sync = ModelSync(store: store, service: service, models: [Writer.self, Article.self])
            try await sync.sync()
            let local = Self.localState(store.context)
            let remote = try await Self.serverState(service)
            #expect(local == remote, "\(context): the store and the server differ")
            #expect(sync.pendingChangeCount == 0, "\(context)")
            store.close()
            if let inFlight = reports.inFlight {
                let withIt = Self.applying(inFlight, to: expected)
                #expect(
                    remote == expected || remote == withIt,
                    "\(context): the server holds neither \(expected) nor \(withIt) but \(remote)")
                if remote == withIt, remote != expected {
                    kills.inFlightKept += 1
                    expected = withIt
                }
            } else {
                #expect(remote == expected, "\(context): expected \(expected), found \(remote)")
            }
            guard remote == expected else { break }
        }
        print(
            "sync kill, lane \(lane): \(kills.saving) kills while saving (\(kills.inFlightKept) kept), \(kills.syncing) while syncing, \(kills.other) otherwise; \(acknowledged) saves acknowledged; \(expected.count) records"
        )
        // At 50 rounds: at least 5 kills while syncing and 50 acknowledged saves.
        #expect(kills.syncing >= rounds / 10 && acknowledged >= rounds)
    }
}

/// Two devices in two processes (two `SyncKillChild`s run for a number of rounds, each through a
/// fault-injecting proxy of its own), changing, saving and syncing one bucket at the same time
/// (issue #34). At the end both stores equal the server, every record made and never deleted is
/// there, and every field that one device alone wrote holds its last acknowledged value.
///
/// On both backends: on PostgreSQL, two devices writing one collection at once make Kinto commit
/// changes out of timestamp order (see KintoService+ChangeVersions.swift), which the sync's
/// look-back and read-back catch.
@Suite(
    "Offline sync: two devices in two processes", .enabled(if: serviceTestsEnabled, serviceTestsSkipped), .hangBackstop)
struct SyncTwoProcessTests {
    @Test("Two processes changing and syncing one bucket at once, through faults, end equal and lose no acknowledged change")
    func twoProcessesConverge() async throws {
        try? ModelRegistry.register(Writer.self, Article.self)
        let child = try #require(SyncKillTests.childExecutable, "the SyncKillChild executable was not built")
        let server = try await KintoServer.shared.value
        let bucket = try await KintoServer.freshService().bucket
        let proxies = [try await FaultProxy.start(), try await FaultProxy.start()]
        defer { for proxy in proxies { proxy.stop() } }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("modelkit-twoproc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let stores = [folder.appendingPathComponent("a.store"), folder.appendingPathComponent("b.store")]
        func arguments(_ index: Int) -> [String] {
            [
                stores[index].path, proxies[index].url.absoluteString, bucket, server.user, server.password, String(11 + index),
                "120",
            ]
        }
        // Faults while both run: a few, at random moments, on either device.
        let faults = Task {
            var random = SplitMix64(seed: 5)
            for _ in 0..<12 {
                try await Task.sleep(for: .milliseconds(Int.random(in: 100...600, using: &random)))
                let fault: ModelValue = random.pick([
                    ["match": "POST /v1/batch", "action": "drop"],
                    ["match": "POST /v1/batch", "action": "drop_after"],
                    ["match": "GET /v1/buckets", "action": "status", "status": 503],
                    ["match": "GET /v1/buckets", "action": "status", "status": 429, "headers": ["Retry-After": "0"]],
                    ["match": "GET /v1/buckets", "action": "cut"],
                ])
                try await proxies[Int.random(in: 0...1, using: &random)].inject([fault])
            }
        }
        async let first = SyncKillTests.runAndKill(child, arguments(0), delay: nil)
        async let second = SyncKillTests.runAndKill(child, arguments(1), delay: nil)
        let reports = try await [first, second]
        try await faults.value
        for (index, report) in reports.enumerated() {
            try #require(
                report.errors.isEmpty && report.done,
                "device \(index): \(report.errors); last failures \(report.failures.suffix(5))")
        }
        // Both settle: A, B, A (B's last sync pulled A's; A's pulls B's).
        var states: [SyncKillTests.State] = [[:], [:]]
        for index in [0, 1, 0, 1] {
            let store = try ModelStore(url: stores[index])
            let sync = ModelSync(
                store: store, service: proxies[index].service(bucket: bucket), models: [Writer.self, Article.self])
            var attempts = 0
            while (try? await sync.sync()) == nil {
                attempts += 1
                try #require(attempts < 20, "device \(index) does not sync")
            }
            states[index] = SyncKillTests.localState(store.context)
            store.close()
        }
        let remote = try await SyncKillTests.serverState(server.service(bucket: bucket))
        #expect(states[0] == remote && states[1] == remote)

        // What each device's acknowledged saves did.
        var created = Set<RecordID>()
        var deleted = Set<RecordID>()
        var writes: [RecordID: [(device: Int, value: String)]] = [:]
        for (device, report) in reports.enumerated() {
            for change in report.acknowledged.joined() {
                let parts = change.split(separator: ":", maxSplits: 2)
                let path = parts[1].split(separator: "/")
                let id = RecordID(collection: String(path[0]), id: String(path[1]))
                switch parts[0] {
                case "create": created.insert(id)
                case "delete": deleted.insert(id)
                case "set": writes[id, default: []].append((device, String(parts[2].split(separator: "=", maxSplits: 1)[1])))
                default: break
                }
            }
        }
        for id in created.subtracting(deleted) { #expect(remote[id] != nil, "\(id) was lost") }
        for id in deleted { #expect(remote[id] == nil, "\(id) came back") }
        var checked = 0
        for (id, list) in writes where !deleted.contains(id) && Set(list.map(\.device)).count == 1 {
            checked += 1
            #expect(
                remote[id] == list.last?.value, "\(id): expected \(list.last?.value ?? "?"), found \(remote[id] ?? "nothing")")
        }
        let both = writes.count { !deleted.contains($0.key) && Set($0.value.map(\.device)).count == 2 }
        print(
            "two processes: \(reports.map(\.acknowledged.count)) saves, \(reports.map(\.synced)) syncs, \(remote.count) records, \(checked) fields written by one device, \(both) by both"
        )
        #expect(checked >= 3 && checked + both >= 10)
    }
}
