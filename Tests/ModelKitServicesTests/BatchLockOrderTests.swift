import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@testable import ModelKitServices

/// Models in two collections whose names sort in the opposite order of the graph's walk.
final class LockZebra: ModelObject<LockZebra.Properties>, RemoteModel {
    struct Properties: ModelProperties {
        var name = ""
        var zebras = ModelArray<LockZebra>()
        var ants = ModelArray<LockAnt>()
    }
}

final class LockAnt: ModelObject<LockAnt.Properties>, RemoteModel {
    struct Properties: ModelProperties {
        var name = ""
        var friend = ModelRef<LockZebra>()
        var ants = ModelArray<LockAnt>()
    }
}

/// The order of the writes inside each `/batch` of a save (no server): every request takes
/// Kinto's per-collection locks in the order of the collections' names, as far as the writes'
/// dependencies allow, so that two requests in flight cannot wait for each other's locks.
@Suite("Writes inside a batch go in the order of their collections")
struct BatchLockOrderTests {
    /// The collections of a body's requests, in order, read from their paths.
    static func collections(in body: BatchBody) throws -> [String] {
        let json = try JSONSerialization.jsonObject(with: body.data) as? [String: Any]
        let requests = try #require(json?["requests"] as? [[String: Any]])
        return try requests.map { request in
            let path = try #require(request["path"] as? String)
            let parts = path.split(separator: "/")
            let index = try #require(parts.firstIndex(of: "collections"))
            return String(parts[index + 1])
        }
    }

    /// The collections in the order a body first writes to them.
    static func firstTouches(_ collections: [String]) -> [String] {
        var seen = Set<String>()
        return collections.filter { seen.insert($0).inserted }
    }

    @Test("Each batch body of a save spanning two collections writes the first collection by name first")
    @MainActor
    func bodiesOfASaveTakeLocksInNameOrder() throws {
        let context = ModelContext()
        let root = LockZebra.instance(in: context)
        root.name = "root"
        // 40 cycles of a zebra and an ant, which reference each other: the save writes each
        // cycle's members next to each other, zebra first (the walk's order), with no dependency
        // between them. 81 writes, 4 batches of at most 25.
        for index in 0..<40 {
            let zebra = LockZebra.instance(in: context)
            zebra.name = "zebra \(index)"
            root.zebras.append(zebra)
            let ant = LockAnt.instance(in: context)
            ant.name = "ant \(index)"
            ant.friend = zebra
            zebra.ants.append(ant)
        }
        let plan = try SavePlan(root: root, context: context, store: "test")
        let chunks = KintoService.chunks(plan.writes, limit: 25, bytes: .max)
        let orders = KintoService.sendingOrders(chunks, plan.writes, dependencies: plan.dependencies)
        #expect(chunks.count == 4)
        var mixed = 0
        for (chunk, order) in zip(chunks, orders) {
            #expect(order.sorted() == Array(chunk), "a batch sends exactly its own writes")
            let body = BatchBody(
                order.map { plan.writes[$0] }, path: { "/buckets/b/collections/\($0.collection)/records/\($0.id)" })
            let collections = try Self.collections(in: body)
            let touched = Self.firstTouches(collections)
            if touched.count > 1 { mixed += 1 }
            #expect(touched == touched.sorted(), "collections first written in \(touched)")
            // No write goes before one of the same batch it depends on.
            let position = Dictionary(uniqueKeysWithValues: order.enumerated().map { ($1, $0) })
            for write in order {
                for dependency in plan.dependencies[write] {
                    if let before = position[dependency] { #expect(before < position[write]!) }
                }
            }
        }
        // Not vacuous: the walk interleaved the two collections in batches.
        #expect(mixed >= 3)
    }

    @Test("A dependency inside a batch still comes first, even when its collection sorts later")
    func dependencyWins() {
        let names = ["b", "a", "b", "a"]
        // Write 1 (a) depends on write 0 (b); write 3 (a) on nothing; write 2 (b) on write 3.
        let order = WriteOrder.lockOrder(
            [0, 1, 2, 3], collection: { names[$0] }, dependencies: [[], [0], [3], []])
        #expect(order == [3, 0, 1, 2])
    }

    @Test("One collection, one write, or no collection change keep the given order")
    func trivialBatches() {
        #expect(WriteOrder.lockOrder([], collection: { _ in "a" }, dependencies: []) == [])
        #expect(WriteOrder.lockOrder([7], collection: { _ in "a" }, dependencies: []) == [7])
        #expect(
            WriteOrder.lockOrder([3, 4, 5], collection: { _ in "z" }, dependencies: [[], [], [], [], [3], [4]]) == [3, 4, 5])
    }

    @Test("Random batches: a permutation that keeps every dependency and, without dependencies inside, sorts by collection")
    func randomBatches() {
        var random = SplitMix64(seed: 0xB47C4)
        for round in 0..<500 {
            let count = Int.random(in: 0...30, using: &random)
            let start = Int.random(in: 0...5, using: &random)
            let names = (0..<(start + count)).map { _ in
                ["a", "b", "c", "B", "a-b", "a_b"][Int.random(in: 0..<6, using: &random)]
            }
            let free = random.chance(0.3)
            // Dependencies only on earlier writes (as SavePlan makes them), some before the batch.
            let dependencies: [[Int]] = (0..<(start + count)).map { write in
                guard !free, write > 0 else { return [] }
                return (0..<Int.random(in: 0...2, using: &random)).map { _ in Int.random(in: 0..<write, using: &random) }
            }
            let batch = Array(start..<(start + count))
            let order = WriteOrder.lockOrder(batch, collection: { names[$0] }, dependencies: dependencies)
            #expect(order.sorted() == batch, "round \(round)")
            let position = Dictionary(uniqueKeysWithValues: order.enumerated().map { ($1, $0) })
            for write in batch {
                for dependency in dependencies[write] {
                    if let before = position[dependency] { #expect(before < position[write]!, "round \(round)") }
                }
            }
            if free {
                let sorted = order.map { names[$0] }
                #expect(sorted == sorted.sorted(), "round \(round)")
                // Within a collection, the given order.
                for name in Set(sorted) {
                    let mine = order.filter { names[$0] == name }
                    #expect(mine == mine.sorted(), "round \(round)")
                }
            }
        }
    }
}

/// Clients saving graphs that span two collections, half of them reaching the collections in one
/// order and half in the other, into one bucket at once: on PostgreSQL, requests that took
/// Kinto's per-collection locks in opposite orders deadlocked (503, retried after a wait).
@Suite(
    "Concurrent saves spanning two collections in opposite orders", .enabled(if: serviceTestsEnabled, serviceTestsSkipped),
    .hangBackstop)
struct OppositeOrderSavesTests {
    /// `pairs` cycles of a zebra and an ant under a root: a zebra root reaches each zebra
    /// before its ant, an ant root each ant before its zebra.
    static func graph(zebraFirst: Bool, pairs: Int, name: String, in context: ModelContext) -> any RemoteModel {
        var zebras: [LockZebra] = []
        var ants: [LockAnt] = []
        for index in 0..<pairs {
            let zebra = LockZebra.instance(in: context)
            zebra.name = "\(name) zebra \(index)"
            let ant = LockAnt.instance(in: context)
            ant.name = "\(name) ant \(index)"
            ant.friend = zebra
            zebra.ants.append(ant)
            zebras.append(zebra)
            ants.append(ant)
        }
        if zebraFirst {
            let root = LockZebra.instance(in: context)
            root.name = name
            root.zebras = ModelArray(zebras)
            return root
        }
        let root = LockAnt.instance(in: context)
        root.name = name
        root.ants = ModelArray(ants)
        return root
    }

    struct Outcome: Sendable {
        let requests: Int
        let retries: Int
    }

    @Test("Eight clients, each saving five graphs of two collections in opposite orders, all succeed and lose nothing")
    func oppositeOrdersAllSucceed() async throws {
        let fresh = try await KintoServer.freshService(collections: ["LockZebra", "LockAnt"])
        let bucket = fresh.bucket
        let server = try await KintoServer.shared.value
        let clients = 8
        let rounds = 5
        let pairs = 12
        let outcomes = try await withThrowingTaskGroup(of: Outcome.self) { group in
            for client in 0..<clients {
                group.addTask {
                    let service = ConcurrentClientsTests.client(server, bucket: bucket)
                    let context = ModelContext()
                    for round in 0..<rounds {
                        let root = OppositeOrderSavesTests.graph(
                            zebraFirst: client % 2 == 0, pairs: pairs, name: "c\(client) r\(round)", in: context)
                        if let zebra = root as? LockZebra { try await service.save(zebra) }
                        if let ant = root as? LockAnt { try await service.save(ant) }
                    }
                    return Outcome(requests: service.metrics.requests, retries: service.metrics.retries)
                }
            }
            var all: [Outcome] = []
            for try await outcome in group { all.append(outcome) }
            return all
        }
        let retries = outcomes.map(\Outcome.retries).reduce(0, +)
        print(
            "Opposite-order saves on \(server.backend ?? "a given server"): \(clients * rounds) saves, "
                + "\(outcomes.map(\Outcome.requests).reduce(0, +)) requests, \(retries) retries")
        let zebras = try await ConcurrentClientsTests.recordIds("LockZebra", bucket: bucket, on: server)
        let ants = try await ConcurrentClientsTests.recordIds("LockAnt", bucket: bucket, on: server)
        // Each graph: its pairs and its root.
        #expect(zebras.count + ants.count == clients * rounds * (2 * pairs + 1))
        #expect(Set(zebras).count == zebras.count && Set(ants).count == ants.count)
    }
}
