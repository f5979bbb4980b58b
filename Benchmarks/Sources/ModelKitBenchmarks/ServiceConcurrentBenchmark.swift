import Foundation
import ModelKit
import ModelKitServices
import Synchronization

// service-concurrent (issue #32): several clients saving into one collection at once, as the
// users of one app do. On Kinto's PostgreSQL backend concurrent transactions on one collection
// collide, and the server refuses some writes with 409 "please retry"; ModelKit retries them
// within its RetryPolicy. The row reports saves per second, retries, and refusals (saves that
// failed): the target is no refusal that is not a real conflict (there are none to have here:
// every client writes records of its own).

extension Benchmarks {
    /// Clients saving at once.
    static let concurrentClients = 8
    /// Models per save: a shelf and 24 items, one `/batch` at Kinto's default limit of 25.
    static let modelsPerSave = 25
    /// The floor row of service-concurrent: the same creates in `/batch` bodies made beforehand,
    /// as many in flight as there are clients.
    static let concurrentFloor = "/batch bodies made beforehand, 8 in flight"

    static let serviceConcurrent = Benchmark(name: "service-concurrent", needsServer: true) { n, session in
        let server = try await ServiceServer.shared()
        let saves = max(concurrentClients, n / modelsPerSave)
        let tally = ConcurrentTally()
        let modelKit = ServiceSubject(Report.modelKit) {
            let bucket = try await server.makeBucket(collections: ["Item", "Shelf"])
            // A service per client (its own connections and counters), its graphs built beforehand.
            // Retries as generous as the tests': 8 clients in one collection may collide repeatedly.
            let retry = RetryPolicy(maximumAttempts: 10, delay: .milliseconds(200))
            let services = (0..<concurrentClients).map { _ in
                KintoService(
                    url: server.url, bucket: bucket, user: server.user, password: server.password, timeout: .seconds(300),
                    retry: retry)
            }
            let combined = { services.reduce(ServiceMetrics()) { total, service in total + service.metrics } }
            let run = ConcurrentTally()
            let sample = try await timed(models: saves * modelsPerSave, metrics: combined) {
                await withTaskGroup(of: Void.self) { group in
                    for (index, service) in services.enumerated() {
                        let mine = (saves - index + concurrentClients - 1) / concurrentClients
                        group.addTask {
                            for _ in 0..<mine {
                                let context = ModelContext()
                                let shelf = ServiceShelf.instance(in: context)
                                shelf.items = ModelArray(
                                    (0..<(modelsPerSave - 1)).map { i in
                                        let item = ServiceItem.instance(in: context)
                                        item.name = "item \(i)"
                                        item.group = i % 100
                                        return item
                                    })
                                do {
                                    try await service.save(shelf)
                                } catch {
                                    run.note(refusal: error)
                                }
                            }
                        }
                    }
                }
            }
            tally.add(
                saves: saves, refused: run.totals.refused, retries: sample.metrics.retries, seconds: sample.seconds,
                errors: run.totals.errors)
            try await server.deleteBucket(bucket)
            return sample
        }
        let floor = ServiceSubject(concurrentFloor) {
            let bucket = try await server.makeBucket(collections: ["Item", "Shelf"])
            let client = PeerClient(server: server, bucket: bucket)
            let bodies = try client.itemBatchBodies(count: saves * modelsPerSave, limit: modelsPerSave)
            var answers: [Data] = []
            let sample = try await timed(models: saves * modelsPerSave, metrics: { client.metrics }) {
                answers = try await client.sendBatches(bodies, inFlight: concurrentClients)
            }
            try PeerClient.checkBatchAnswers(answers, writes: saves * modelsPerSave)
            try await server.deleteBucket(bucket)
            return sample
        }
        var result = try await measureService([modelKit, floor], n: saves * modelsPerSave, session: &session)
        let total = tally.totals
        if total.saves > 0 {
            result.notes.insert(
                "ModelKit: \(concurrentClients) clients, \(grouped(total.saves)) saves of \(modelsPerSave) models over the runs, "
                    + "\(fixed(Double(total.saves) / max(total.seconds, 1e-9), 1)) saves/s, \(total.retries) retries, "
                    + "\(total.refused) refused (target: 0)"
                    + (total.errors.isEmpty ? "" : "; first errors: \(total.errors.joined(separator: " | "))"),
                at: 0)
        }
        return result
    }
}

extension ServiceMetrics {
    /// Two clients' counters together.
    static func + (first: ServiceMetrics, second: ServiceMetrics) -> ServiceMetrics {
        ServiceMetrics(
            requests: first.requests + second.requests, retries: first.retries + second.retries,
            bytesSent: first.bytesSent + second.bytesSent, bytesReceived: first.bytesReceived + second.bytesReceived)
    }
}

/// What the runs of service-concurrent's ModelKit subject saw, summed.
final class ConcurrentTally: Sendable {
    typealias Totals = (saves: Int, refused: Int, retries: Int, seconds: Double, errors: [String])
    private let state = Mutex<Totals>((0, 0, 0, 0, []))

    var totals: Totals { state.withLock { $0 } }

    /// A save that failed: counted, and its error kept (the first three).
    func note(refusal error: any Error) {
        state.withLock {
            $0.refused += 1
            if $0.errors.count < 3 { $0.errors.append("\(error)") }
        }
    }

    func add(saves: Int, refused: Int, retries: Int, seconds: Double, errors: [String]) {
        state.withLock {
            $0.saves += saves
            $0.refused += refused
            $0.retries += retries
            $0.seconds += seconds
            $0.errors += errors.prefix(max(0, 3 - $0.errors.count))
        }
    }
}
