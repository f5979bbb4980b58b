import Foundation

// The save pipeline: a save's `/batch` requests go out while the server works on the ones before,
// as long as no request holds a record that references a record of a request still under way.

/// What each write of a ``PipelinedWrites/perform(_:after:)`` must follow.
enum WriteSchedule: Sendable {
    /// Each write follows the one before it: one request at a time, its writes as given.
    case inOrder
    /// For each write, the earlier writes it must follow (``SavePlan/dependencies``).
    case dependencies([[Int]])
}

/// A backend that can have writes in flight at once when it knows which earlier writes each one
/// must follow (``SavePlan/dependencies``); ``ModelService/save(_:isolation:)`` uses it when the
/// service is one, and ``ModelService/perform(_:)`` (every write after every earlier one) when not.
protocol PipelinedWrites: ModelService {
    /// Like ``ModelService/perform(_:)``, but a write only follows the earlier writes `schedule`
    /// names for it. Never throws for a failed request: its writes fail, and the writes not sent
    /// come back as ``ServiceError/Code/notAttempted`` (or cancelled).
    func perform(_ writes: [RecordWrite], after schedule: WriteSchedule) async throws(ServiceError) -> [RecordWriteResult]
}

extension KintoService: PipelinedWrites {
    /// How many `/batch` requests of one save are in flight at most: two, so that the server
    /// always has the next one when it finishes one, without a save taking more of its workers.
    /// A request whose records reference records of a request still under way waits for its
    /// answer (see ``ModelService/save(_:isolation:)``), and so does a request writing a
    /// collection that a request in flight writes too.
    ///
    /// Why collections: on PostgreSQL, Kinto gives each record of a collection a `last_modified`
    /// one millisecond past the collection's newest, inside the request's transaction, and keeps
    /// them unique. Two transactions writing one collection at once count from the same newest
    /// record and collide: one is refused with 409 "please retry" and `Retry-After` (30 s by
    /// Kinto's default). Requests in flight for different collections never collide that way, and
    /// take the collections' locks in one order (``WriteOrder/lockOrder(_:collection:dependencies:)``).
    /// Saves running at once can still collide, and so can different collections of one bucket
    /// when Kinto's history plugin keeps entries for it: those refusals are retried.
    ///
    /// ```swift
    /// // 1,000 new models of one type: 40 requests of 25 writes, one at a time.
    /// // 500 authors and 500 tags that reference none of each other: two at a time.
    /// print(KintoService.batchesInFlight)   // 2
    /// ```
    public static let batchesInFlight = 2

    /// Sends the writes in `/batch` requests, up to ``batchesInFlight`` at once, in order: a
    /// request goes out once the requests holding the writes its own writes follow have answered,
    /// no request in flight writes one of its collections, and room is free. After a request
    /// fails, no other goes out; those in flight are awaited, and their writes reported.
    ///
    /// - Complexity: O(*n*) for *n* writes and their dependencies, plus the requests.
    func perform(_ writes: [RecordWrite], after schedule: WriteSchedule) async throws(ServiceError) -> [RecordWriteResult] {
        let limit = try await maximumBatchSize()
        let chunks = Self.chunks(writes, limit: limit, bytes: Self.preferredBatchBytes)
        let waits: [[Int]]
        let orders: [[Int]]
        switch schedule {
        case .inOrder:
            waits = chunks.indices.map { $0 == 0 ? [] : [$0 - 1] }
            orders = chunks.map { Array($0) }
        case .dependencies(let dependencies):
            waits = Self.chunkWaits(chunks, writeCount: writes.count, dependencies: dependencies)
            orders = Self.sendingOrders(chunks, writes, dependencies: dependencies)
        }
        let collections = chunks.map { range in Set(writes[range].lazy.map(\.record.collection)) }
        let (results, stopped) = await Self.pipeline(orders: orders, waits: waits, collections: collections, writeCount: writes.count) {
            index in await self.results(sending: ArraySlice(orders[index].map { writes[$0] }))
        }
        let cancelled = !stopped && Task.isCancelled
        return results.enumerated().map { index, result in
            if let result { return result }
            let record = writes[index].record
            return .failed(
                cancelled
                    ? ServiceError(.cancelled("the save's batch holding \(record)"), record: record)
                    : ServiceError(.notAttempted, record: record))
        }
    }

    /// Sends requests `0..<orders.count` through `send`, in order, up to ``batchesInFlight`` at
    /// once: request *i* goes out once the requests `waits[i]` have answered and no request in
    /// flight writes one of `collections[i]`. After a write fails, no other request goes out; those
    /// in flight are awaited.
    ///
    /// - Parameters:
    ///   - orders: The writes of each request, as indices into `0..<writeCount`.
    ///   - send: Sends request *i*, returning a result for each of `orders[i]`, in that order.
    /// - Returns: Each write's result, nil for the writes of requests not sent; and whether a
    ///   failure stopped the pipeline.
    /// - Complexity: O(*n* + *w*) for *n* writes and *w* waits, plus the requests.
    static func pipeline(
        orders: [[Int]], waits: [[Int]], collections: [Set<String>], writeCount: Int,
        send: @escaping @Sendable (Int) async -> [RecordWriteResult]
    ) async -> (results: [RecordWriteResult?], stopped: Bool) {
        await withTaskGroup(of: (Int, [RecordWriteResult]).self) { group in
            var progress = Progress(orders: orders, collections: collections, writeCount: writeCount)
            for index in orders.indices {
                while !progress.stopped, !progress.canSend(index, waits: waits[index]) {
                    guard let answer = await group.next() else { break }
                    progress.take(answer)
                }
                if progress.stopped || Task.isCancelled { break }
                group.addTask { (index, await send(index)) }
                progress.sent(index)
            }
            while let answer = await group.next() { progress.take(answer) }
            return (progress.results, progress.stopped)
        }
    }

    /// The results of sending `chunk` as one `/batch`: a request that fails fails each write.
    ///
    /// A method rather than a typed `do`/`catch` in the child task's closure: built that way with
    /// Swift 6.3 in release, the child's index came back corrupt (an out-of-range trap in the
    /// benchmark; debug builds and tests were fine).
    ///
    /// An answer that is invalid for one write is trusted for none: its other writes are not
    /// reported written either (the save then counts none of them), as a save whose answer
    /// cannot be read leaves the context as it was.
    private func results(sending chunk: ArraySlice<RecordWrite>) async -> [RecordWriteResult] {
        let results: [RecordWriteResult]
        do {
            results = try await send(chunk)
        } catch {
            return chunk.map { .failed(error.about($0.record)) }
        }
        for result in results {
            if case .failed(let error) = result, error.code == .invalidResponse {
                return chunk.map { write in .failed(error.record == nil ? error.about(write.record) : error) }
            }
        }
        return results
    }

    /// What the pipeline knows so far: the results that came back, the requests answered and in
    /// flight with the collections they write, and whether a failure stopped it.
    private struct Progress {
        /// The writes of each request, in the order sent.
        let orders: [[Int]]
        /// The collections each request writes.
        let collections: [Set<String>]
        var results: [RecordWriteResult?]
        var answered: [Bool]
        var inFlight = 0
        /// The collections requests in flight write, each with how many of them do.
        var busy: [String: Int] = [:]
        var stopped = false

        init(orders: [[Int]], collections: [Set<String>], writeCount: Int) {
            self.orders = orders
            self.collections = collections
            results = Array(repeating: nil, count: writeCount)
            answered = Array(repeating: false, count: orders.count)
        }

        /// Whether request `index` may go out now: room is free, the requests it `waits` for
        /// have answered, and none in flight writes one of its collections.
        func canSend(_ index: Int, waits: [Int]) -> Bool {
            inFlight < KintoService.batchesInFlight && waits.allSatisfy { answered[$0] }
                && collections[index].allSatisfy { busy[$0] == nil }
        }

        mutating func sent(_ index: Int) {
            inFlight += 1
            for collection in collections[index] { busy[collection, default: 0] += 1 }
        }

        /// Takes an answer in, and stops the pipeline at a failure.
        mutating func take(_ answer: (Int, [RecordWriteResult])) {
            inFlight -= 1
            answered[answer.0] = true
            for collection in collections[answer.0] {
                let count = busy[collection, default: 1] - 1
                busy[collection] = count == 0 ? nil : count
            }
            for (offset, result) in answer.1.enumerated() {
                results[orders[answer.0][offset]] = result
                if case .failed = result { stopped = true }
            }
        }
    }

    /// The writes cut into requests, in order: at most `limit` writes and about `bytes` of body
    /// each (``chunkEnd(_:from:limit:bytes:)``).
    static func chunks(_ writes: [RecordWrite], limit: Int, bytes: Int) -> [Range<Int>] {
        var chunks: [Range<Int>] = []
        var start = 0
        while start < writes.count {
            let end = chunkEnd(writes, from: start, limit: limit, bytes: bytes)
            chunks.append(start..<end)
            start = end
        }
        return chunks
    }

    /// For each chunk, the indices of its writes in the order its request holds them: by
    /// collection, so that every request in flight takes Kinto's per-collection locks in the same
    /// order (see ``WriteOrder/lockOrder(_:collection:dependencies:)``).
    static func sendingOrders(_ chunks: [Range<Int>], _ writes: [RecordWrite], dependencies: [[Int]]) -> [[Int]] {
        chunks.map { range in
            WriteOrder.lockOrder(Array(range), collection: { writes[$0].record.collection }, dependencies: dependencies)
        }
    }

    /// For each chunk, the earlier chunks holding writes its writes depend on.
    private static func chunkWaits(_ chunks: [Range<Int>], writeCount: Int, dependencies: [[Int]]) -> [[Int]] {
        var chunkOf = [Int](repeating: 0, count: writeCount)
        for (index, range) in chunks.enumerated() {
            for write in range { chunkOf[write] = index }
        }
        return chunks.enumerated().map { index, range in
            var waits = Set<Int>()
            for write in range where write < dependencies.count {
                for dependency in dependencies[write] where dependency < writeCount && chunkOf[dependency] < index {
                    waits.insert(chunkOf[dependency])
                }
            }
            return waits.sorted()
        }
    }
}
