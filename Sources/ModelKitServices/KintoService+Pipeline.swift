import Foundation

// The save pipeline: a save's `/batch` requests go out while the server works on the ones before,
// as long as no request holds a record that references a record of a request still under way.

/// A backend that can have writes in flight at once when it knows which earlier writes each one
/// must follow (``SavePlan/dependencies``); ``ModelService/save(_:isolation:)`` uses it when the
/// service is one, and ``ModelService/perform(_:)`` (every write after every earlier one) when not.
protocol PipelinedWrites: ModelService {
    /// Like ``ModelService/perform(_:)``, but a write only follows the earlier writes
    /// `dependencies` names for it. Never throws for a failed request: its writes fail, and the
    /// writes not sent come back as ``ServiceError/Code/notAttempted`` (or cancelled).
    func perform(_ writes: [RecordWrite], dependencies: [[Int]]) async throws(ServiceError) -> [RecordWriteResult]
}

extension KintoService: PipelinedWrites {
    /// How many `/batch` requests of one save are in flight at most: two, so that the server
    /// always has the next one when it finishes one, without a save taking more of its workers.
    /// A request whose records reference records of a request still under way waits for its
    /// answer (see ``ModelService/save(_:isolation:)``).
    ///
    /// ```swift
    /// // 1,000 new models: 40 requests of 25 writes, at most 2 of them at once.
    /// print(KintoService.batchesInFlight)   // 2
    /// ```
    public static let batchesInFlight = 2

    /// Sends the writes in `/batch` requests, up to ``batchesInFlight`` at once, in order: a
    /// request goes out once the requests holding the writes its own writes depend on have
    /// answered (and room is free). After a request fails, no other goes out; those in flight
    /// are awaited, and their writes reported.
    ///
    /// - Complexity: O(*n*) for *n* writes and their dependencies, plus the requests.
    func perform(_ writes: [RecordWrite], dependencies: [[Int]]) async throws(ServiceError) -> [RecordWriteResult] {
        let limit = try await maximumBatchSize()
        let chunks = Self.chunks(writes, limit: limit, bytes: Self.preferredBatchBytes)
        let waits = Self.chunkWaits(chunks, writeCount: writes.count, dependencies: dependencies)
        let orders = Self.sendingOrders(chunks, writes, dependencies: dependencies)
        let progress = await withTaskGroup(of: (Int, [RecordWriteResult]).self) { group in
            var progress = Progress(orders: orders, writeCount: writes.count)
            for index in chunks.indices {
                while !progress.stopped,
                    progress.inFlight >= Self.batchesInFlight || waits[index].contains(where: { !progress.answered[$0] })
                {
                    guard let answer = await group.next() else { break }
                    progress.take(answer)
                }
                if progress.stopped || Task.isCancelled { break }
                let chunk = ArraySlice(orders[index].map { writes[$0] })
                group.addTask { (index, await self.results(sending: chunk)) }
                progress.inFlight += 1
            }
            while let answer = await group.next() { progress.take(answer) }
            return progress
        }
        let stopped = progress.stopped
        let results = progress.results
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
    /// flight, and whether a failure stopped it.
    private struct Progress {
        /// The writes of each request, in the order sent.
        let orders: [[Int]]
        var results: [RecordWriteResult?]
        var answered: [Bool]
        var inFlight = 0
        var stopped = false

        init(orders: [[Int]], writeCount: Int) {
            self.orders = orders
            results = Array(repeating: nil, count: writeCount)
            answered = Array(repeating: false, count: orders.count)
        }

        /// Takes an answer in, and stops the pipeline at a failure.
        mutating func take(_ answer: (Int, [RecordWriteResult])) {
            inFlight -= 1
            answered[answer.0] = true
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
