import Foundation
import ModelKitTestSupport
import Synchronization
import Testing

@testable import ModelKitServices

/// The save pipeline's schedule, with requests that only record when they start and end (no
/// server): the rules a real save follows (SavePipelineTests show them on Kinto).
@Suite("The save pipeline's schedule", .hangBackstop)
struct PipelineScheduleTests {
    /// What the requests saw: which are in flight, which have answered, and every broken rule.
    final class Watch: Sendable {
        struct State {
            var inFlight: Set<Int> = []
            var answered: Set<Int> = []
            var started: [Int] = []
            var mostInFlight = 0
            var broken: [String] = []
            /// Requests that started after the failing one had answered.
            var startedAfterFailure = 0
            var failureAnswered = false
        }
        let state = Mutex(State())
        let waits: [[Int]]
        let collections: [Set<String>]

        init(waits: [[Int]], collections: [Set<String>]) {
            self.waits = waits
            self.collections = collections
        }

        func start(_ index: Int) {
            state.withLock { state in
                for other in state.inFlight where !collections[other].isDisjoint(with: collections[index]) {
                    state.broken.append("request \(index) went out while \(other) was in flight, both writing \(collections[index].intersection(collections[other]).sorted())")
                }
                for wait in waits[index] where !state.answered.contains(wait) {
                    state.broken.append("request \(index) went out before \(wait), which it waits for, answered")
                }
                state.inFlight.insert(index)
                state.started.append(index)
                if state.failureAnswered { state.startedAfterFailure += 1 }
                state.mostInFlight = max(state.mostInFlight, state.inFlight.count)
                if state.inFlight.count > KintoService.batchesInFlight {
                    state.broken.append("\(state.inFlight.count) requests in flight: \(state.inFlight.sorted())")
                }
            }
        }

        func end(_ index: Int, failed: Bool = false) {
            state.withLock { state in
                state.inFlight.remove(index)
                state.answered.insert(index)
                if failed { state.failureAnswered = true }
            }
        }

        func hasStarted(_ index: Int) -> Bool { state.withLock { $0.started.contains(index) } }
    }

    /// Runs the pipeline over requests of one write each (as `orders`), each request yielding
    /// `yields(index)` times while in flight (so that others can start), or, when `before` names
    /// a request for it, waiting until that one has started (with a 60 s backstop).
    static func run(
        waits: [[Int]], collections: [Set<String>], failing: Int? = nil, yields: @escaping @Sendable (Int) -> Int = { _ in 3 },
        before: [Int: Int] = [:]
    ) async -> (watch: Watch, results: [RecordWriteResult?], stopped: Bool) {
        let watch = Watch(waits: waits, collections: collections)
        let orders = waits.indices.map { [$0] }
        let (results, stopped) = await KintoService.pipeline(
            orders: orders, waits: waits, collections: collections, writeCount: orders.count
        ) { index in
            watch.start(index)
            if let other = before[index] {
                let clock = ContinuousClock()
                let deadline = clock.now + .seconds(60)
                while !watch.hasStarted(other), clock.now < deadline { try? await Task.sleep(for: .milliseconds(1)) }
            } else {
                for _ in 0..<yields(index) { await Task.yield() }
            }
            watch.end(index, failed: index == failing)
            if index == failing { return [.failed(ServiceError(.notAttempted))] }
            return [.written(RemoteVersion(String(index)))]
        }
        return (watch, results, stopped)
    }

    @Test("Two requests writing different collections are in flight together")
    func disjointCollectionsOverlap() async {
        // The first request answers only once the second has started: with one at a time, it
        // would wait for the 60 s backstop instead.
        let (watch, results, stopped) = await Self.run(waits: [[], []], collections: [["Author"], ["Tag"]], before: [0: 1])
        let state = watch.state.withLock { $0 }
        #expect(state.mostInFlight == 2)
        #expect(state.broken.isEmpty, "\(state.broken)")
        #expect(!stopped && results.allSatisfy { $0 != nil })
    }

    @Test("A request writing a collection that a request in flight writes waits for its answer")
    func sharedCollectionWaits() async {
        // Each request yields 200 times while in flight: time enough for the next to start if
        // the rule let it.
        let (watch, results, stopped) = await Self.run(
            waits: [[], [], [], []], collections: [["Post"], ["Post"], ["Author", "Post"], ["Author"]], yields: { _ in 200 })
        let state = watch.state.withLock { $0 }
        #expect(state.broken.isEmpty, "\(state.broken)")
        #expect(state.started == [0, 1, 2, 3])
        #expect(state.mostInFlight == 1)
        #expect(!stopped && results.allSatisfy { $0 != nil })
    }

    @Test("Random schedules keep every rule, send every request in order, and stop after a failure")
    func randomSchedules() async {
        var generator = SplitMix64(seed: 0x5C4E_D01E)
        let names = ["Author", "Post", "Tag", "Comment"]
        var overlapped = 0
        for round in 0..<400 {
            let count = Int.random(in: 1...14, using: &generator)
            let collections = (0..<count).map { _ in
                Set(names.shuffled(using: &generator).prefix(Int.random(in: 1...2, using: &generator)))
            }
            let waits = (0..<count).map { index in (0..<index).filter { _ in Int.random(in: 0..<5, using: &generator) == 0 } }
            let failing = Int.random(in: 0..<4, using: &generator) == 0 ? Int.random(in: 0..<count, using: &generator) : nil
            let yields = (0..<count).map { _ in Int.random(in: 0...6, using: &generator) }
            let (watch, results, stopped) = await Self.run(waits: waits, collections: collections, failing: failing, yields: { yields[$0] })
            let state = watch.state.withLock { $0 }
            if state.mostInFlight > 1 { overlapped += 1 }
            #expect(state.broken.isEmpty, "round \(round): \(state.broken)")
            // Two requests sent with no wait between them may start in either order; what was
            // sent is always the first requests.
            #expect(Set(state.started) == Set(0..<state.started.count), "round \(round): sent \(state.started)")
            #expect(stopped == (failing != nil), "round \(round)")
            if let failing {
                // Nothing is sent once the failure is known, what was in flight then still
                // answers. Between the failing request's end (recorded in its task, just before
                // it returns) and the pipeline taking its answer in, the answer of the other
                // request in flight can free a place for one more (rarely two, if that one is
                // quick); a pipeline that ignored the failure would send all the rest.
                #expect(state.started.contains(failing), "round \(round)")
                #expect(
                    state.startedAfterFailure <= KintoService.batchesInFlight,
                    "round \(round): \(state.startedAfterFailure) sent after the failure")
                #expect(results.indices.allSatisfy { (results[$0] != nil) == state.started.contains($0) }, "round \(round)")
            } else {
                #expect(state.started.count == count && results.allSatisfy { $0 != nil }, "round \(round)")
            }
        }
        // The rules were checked with requests in flight together, not only one at a time.
        #expect(overlapped > 0)
    }
}
