import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@testable import ModelKitServices

/// Two devices making random creates, edits (same and different fields), deletes and reference
/// changes, syncing in random order through fault-injecting proxies, relaunching at random
/// (issue #34). At the end both equal the server and each other, every record made and never
/// deleted is there, and every field that only one device wrote holds that device's last value.
@Suite("Offline sync, randomized, on a real Kinto server", .enabled(if: serviceTestsEnabled, serviceTestsSkipped), .hangBackstop)
struct SyncRandomTests {
    /// A record's field as written by a device.
    struct Write {
        let device: Int
        let value: ModelValue
    }

    /// What the devices did, to check the end against.
    struct Ledger {
        var created: Set<RecordID> = []
        var deleted: Set<RecordID> = []
        /// Scalar fields' writes, in order.
        var writes: [RecordID: [String: [Write]]] = [:]

        mutating func wrote(_ value: ModelValue, _ field: String, of record: RecordID, by device: Int) {
            writes[record, default: [:]][field, default: []].append(Write(device: device, value: value))
        }
    }

    static let seed = UInt64(ProcessInfo.processInfo.environment["MODELKIT_SYNC_SEED"] ?? "") ?? 4

    @Test("Two devices' random edits, syncs, faults and relaunches converge, losing no edit that was not in conflict")
    func twoDevicesConverge() async throws {
        var random = SplitMix64(seed: Self.seed)
        let bucketService = try await KintoServer.freshService()
        let proxies = [try await FaultProxy.start(), try await FaultProxy.start()]
        defer { for proxy in proxies { proxy.stop() } }
        let devices = try proxies.map { try SyncTests.Device(service: $0.service(bucket: bucketService.bucket)) }
        var ledger = Ledger()
        var made = 0
        var failedSyncs = 0
        var conflicts = 0
        for round in 0..<40 {
            for (index, device) in devices.enumerated() {
                for _ in 0..<Int.random(in: 0...4, using: &random) {
                    Self.randomChange(on: device, index: index, random: &random, ledger: &ledger, made: &made)
                }
                if random.chance(0.7) { try await device.store.save() }
                if random.chance(0.1) {
                    try await device.store.save()
                    try device.relaunch()
                }
            }
            for index in devices.indices.shuffled(using: &random) where random.chance(0.7) {
                if random.chance(0.3) {
                    let fault: ModelValue = random.pick([
                        ["match": "POST /v1/batch", "action": "drop"],
                        ["match": "POST /v1/batch", "action": "drop_after"],
                        ["match": "GET /v1/buckets", "action": "status", "status": 503],
                        ["match": "POST /v1/batch", "action": "status", "status": 500],
                        [
                            "match": "GET /v1/buckets", "action": "status", "status": 429,
                            "headers": ["Retry-After": "0"],
                        ],
                        ["match": "GET /v1/buckets", "action": "cut"],
                        ["match": "POST /v1/batch", "action": "drop", "times": 6],
                    ])
                    try await proxies[index].inject([fault])
                }
                do {
                    let report = try await devices[index].sync.sync()
                    conflicts += report.conflicts.count
                    #expect(report.skipped.isEmpty, "round \(round), seed \(Self.seed): \(report.skipped)")
                } catch let error as ServiceError {
                    // A fault the retries did not get past: the changes wait for the next sync.
                    failedSyncs += 1
                    _ = error
                }
            }
        }
        // The last syncs get through once any fault rule still queued is used up.
        for index in [0, 1, 0, 1] {
            var attempts = 0
            while true {
                do {
                    try await devices[index].sync.sync()
                    break
                } catch {
                    // A fault rule still queued from the rounds.
                    attempts += 1
                    if attempts > 8 { throw error }
                }
            }
        }
        let server = try await Self.serverRecords(bucketService)
        for (index, device) in devices.enumerated() {
            let local = try Self.localRecords(device)
            #expect(local == server, "device \(index) differs from the server (seed \(Self.seed))")
            #expect(device.sync.pendingChangeCount == 0)
        }
        for record in ledger.created.subtracting(ledger.deleted) {
            #expect(server[record] != nil, "\(record) was lost (seed \(Self.seed))")
        }
        var checkedFields = 0
        for (record, fields) in ledger.writes {
            guard let values = server[record] else { continue }
            for (field, writes) in fields where Set(writes.map(\.device)).count == 1 {
                checkedFields += 1
                #expect(values[field] == writes.last?.value, "\(record).\(field) (seed \(Self.seed))")
            }
        }
        // The run did what it is for.
        #expect(
            made >= 15 && checkedFields >= 8 && conflicts >= 1, "made \(made), checked \(checkedFields), conflicts \(conflicts)")
        print(
            "sync random: seed \(Self.seed), \(made) made, \(server.count) on the server, \(conflicts) conflicts, \(failedSyncs) syncs failed, \(checkedFields) single-writer fields checked"
        )
    }

    static func randomChange(
        on device: SyncTests.Device, index: Int, random: inout SplitMix64, ledger: inout Ledger, made: inout Int
    ) {
        let writers = device.context.models(of: Writer.self).filter { $0.modelState != .needsData }
        let articles = device.context.models(of: Article.self).filter { $0.modelState != .needsData }
        var operation = Int.random(in: 0..<9, using: &random)
        if writers.isEmpty { operation = 0 }
        switch operation {
        case 0 where writers.count < 6, 1 where writers.count < 6:
            made += 1
            let writer = Writer.instance(objectId: "w\(index)-\(made)", in: device.context)
            writer.name = "writer \(made)"
            let record = RecordID(collection: "Writer", id: "w\(index)-\(made)")
            ledger.created.insert(record)
            ledger.wrote(.string(writer.name), "name", of: record, by: index)
        case 2 where articles.count < 10, 8 where articles.count < 10:
            made += 1
            let article = Article.instance(objectId: "a\(index)-\(made)", in: device.context)
            article.title = "article \(made)"
            let record = RecordID(collection: "Article", id: "a\(index)-\(made)")
            ledger.created.insert(record)
            ledger.wrote(.string(article.title), "title", of: record, by: index)
            if let writer = writers.randomElement(using: &random) {
                article.author = writer
                writer.articles.append(article)
            }
        case 3 where !writers.isEmpty:
            let writer = writers.randomElement(using: &random)!
            writer.name = random.pick(["Ann", "Bo", "Cy", "Di"]) + " \(index)"
            ledger.wrote(.string(writer.name), "name", of: Self.record(of: writer), by: index)
        case 4 where !writers.isEmpty:
            let writer = writers.randomElement(using: &random)!
            writer.age = Int.random(in: 0...3, using: &random)
            ledger.wrote(.int(Int64(writer.age)), "age", of: Self.record(of: writer), by: index)
        case 5 where !articles.isEmpty:
            let article = articles.randomElement(using: &random)!
            article.title = random.pick(["One", "Two", "Three"]) + " \(index)"
            ledger.wrote(.string(article.title), "title", of: Self.record(of: article), by: index)
        case 6 where !articles.isEmpty && !writers.isEmpty:
            let article = articles.randomElement(using: &random)!
            let writer = writers.randomElement(using: &random)!
            if writer.articles.contains(where: { $0 === article }) {
                writer.articles.removeAll { $0 === article }
            } else {
                writer.articles.append(article)
            }
        case 7 where writers.count + articles.count > 4 && random.chance(0.5):
            let victim: any Model =
                random.chance(0.5) && !articles.isEmpty
                ? articles.randomElement(using: &random)! : writers.randomElement(using: &random) ?? articles[0]
            ledger.deleted.insert(Self.record(of: victim))
            victim.removeFromContext()
        default:
            break
        }
    }

    static func record(of model: any Model) -> RecordID {
        RecordID(collection: type(of: model).modelName, id: model.objectId ?? "")
    }

    /// Every record on the server, fields in the record form, `null`s left out.
    static func serverRecords(_ service: KintoService) async throws -> [RecordID: ModelValue.Object] {
        var records: [RecordID: ModelValue.Object] = [:]
        for collection in ["Writer", "Article"] {
            var cursor: RecordCursor?
            repeat {
                let page = try await service.listRecords(RecordListRequest(collection: collection), after: cursor)
                for record in page.records { records[record.id] = RecordForm.fields(of: record) }
                cursor = page.next
            } while cursor != nil
        }
        // A pointer to a deleted record reads as none, as on a device.
        let ids = Set(records.keys)
        return records.mapValues { fields in
            var result = ModelValue.Object()
            for (key, value) in fields {
                switch value {
                case .array(let elements):
                    result[key] = .array(elements.filter { pointerTarget($0).map(ids.contains) ?? true })
                default:
                    result[key] = pointerTarget(value).map(ids.contains) == false ? .null : value
                }
            }
            return withoutNulls(result)
        }
    }

    /// The device's loaded models of the synced types as records.
    static func localRecords(_ device: SyncTests.Device) throws -> [RecordID: ModelValue.Object] {
        var records: [RecordID: ModelValue.Object] = [:]
        let models: [any Model] =
            device.context.models(of: Writer.self).filter { $0.modelState != .needsData }
            + device.context.models(of: Article.self).filter { $0.modelState != .needsData }
        for model in models {
            records[record(of: model)] = withoutNulls(
                try RecordForm.values(of: model) { device.context.model(withId: $0)?.objectId })
        }
        return records
    }

    /// The record a pointer names, or nil for another value.
    static func pointerTarget(_ value: ModelValue) -> RecordID? {
        guard case .object(let pointer) = value, pointer["__type"] == "ModelPointer", case .string(let model)? = pointer["model"],
            case .string(let id)? = pointer["objectId"]
        else { return nil }
        return RecordID(collection: model, id: id)
    }

    static func withoutNulls(_ object: ModelValue.Object) -> ModelValue.Object {
        var result = ModelValue.Object()
        for (key, value) in object where value != .null { result[key] = value }
        return result
    }
}
