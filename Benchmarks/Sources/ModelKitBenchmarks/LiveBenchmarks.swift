import Foundation
import ModelKit

// Live queries (issue #33): what keeping a query's results up to date costs, against what an app
// does without them: run the same query again (ModelKit's one-shot query, on a context indexing
// age: its fastest form) and diff the old and new arrays of model ids with
// `CollectionDifference`. Over n authors, `age BETWEEN` at about 1% and 15%, sorted by name.
//
// - live-edit: one rename of a matching author (it moves in the order).
// - live-insert: one new matching author (created, then named and given an age).
// - live-remove: one matching author removed from the context.
// - live-batch: 1,000 renames of matching authors, then the app's one update. ModelKit renames
//   them in one `context.batchChanges { … }`: the live query collects the renamed models and
//   places them all at the batch's end, with one change set; the peer re-runs and diffs once,
//   after them.
// - live-batch-few: the same with 100 renames: a batch of few changes among many results, whose
//   end places them by binary search where k * 8 log n < n (100 of 15,000 results), by a walk
//   where not (100 of 1,000).
//
// ModelKit and the peer each have their own context (a live query follows every change of its
// context, so one shared context would charge the peer with the live query's work). The single
// operations are timed many at a time and reported per operation; every run's change sets and
// differences are counted and checked. Setups (removing what the last run inserted, inserting
// what a run removes, the peer's first run of the query) are not timed.

extension Benchmarks {
    static let liveEdit = Benchmark(name: "live-edit") { data, session in try liveResults(.edit, n: data.n, session: &session) }
    static let liveInsert = Benchmark(name: "live-insert") { data, session in try liveResults(.insert, n: data.n, session: &session) }
    static let liveRemove = Benchmark(name: "live-remove") { data, session in try liveResults(.remove, n: data.n, session: &session) }
    static let liveBatch = Benchmark(name: "live-batch") { data, session in try liveResults(.batch, n: data.n, session: &session) }
    static let liveBatchFew = Benchmark(name: "live-batch-few") { data, session in
        try liveResults(.fewBatch, n: data.n, session: &session)
    }
}

/// The extra subject of the batch rows: the renames with no live query listening.
private let renamesAlone = "the renames alone, no live query"

/// What a live benchmark times.
enum LiveOperation {
    case edit, insert, remove
    /// 1,000 renames in one batch (live-batch).
    case batch
    /// 100 renames in one batch (live-batch-few).
    case fewBatch

    /// Operations per timed run of ModelKit and of the peer; rows are per operation (per batch).
    var perRun: (live: Int, peer: Int) {
        switch self {
        case .edit, .insert, .remove: (1_000, 20)
        case .batch, .fewBatch: (1, 1)
        }
    }

    /// The renames of one batch; `nil` for single operations.
    var batchSize: Int? {
        switch self {
        case .edit, .insert, .remove: nil
        case .batch: 1_000
        case .fewBatch: 100
        }
    }
}

/// One subject's authors, its query, and what its runs leave behind.
final class LiveBench {
    let fixture: QueryFixture
    var low = 0
    var high = 0
    /// The authors whose age is in range (ages never change here).
    var matching: [QueryAuthor] = []
    /// Authors inserted by the runs (removed again before the next one, and at the end).
    var inserted: [QueryAuthor] = []
    /// The peer's ids from its last run of the query.
    var ids: [ModelID] = []
    private var counter = 0

    init(n: Int) {
        // An index on age: the peer's fastest query. Not on name: every rename would pay for
        // keeping it sorted (about 0.1 ms a rename of 100,000 names, in a first run), on both
        // sides, and hide the rest.
        fixture = QueryFixture(n: n)
        fixture.context.addIndex(on: \.age, of: QueryAuthor.self)
    }

    var context: ModelContext { fixture.context }

    func select(low: Int, high: Int) {
        self.low = low
        self.high = high
        matching = fixture.authors.filter { $0.age >= low && $0.age <= high }
    }

    func query() -> Query<QueryAuthor> {
        QueryAuthor.query(in: context).where(\.age, .between(low, high)).sorted(by: \.name)
    }

    /// A new name, with one of the 100 prefixes, so that a renamed author moves in the order.
    func nextName() -> String {
        counter += 1
        return QueryFixture.prefix(counter &* 37 % 100) + "-e\(counter)"
    }

    /// The author renamed by edit number `k`.
    func author(_ k: Int) -> QueryAuthor { matching[k % matching.count] }

    /// A new author that matches: created, then named and given an age in range.
    func insertMatching() -> QueryAuthor {
        let author = QueryAuthor.instance(in: context)
        author.name = nextName()
        author.age = low + counter % (high - low + 1)
        inserted.append(author)
        return author
    }

    func removeInserted() {
        for author in inserted { context.remove(author) }
        inserted.removeAll()
    }

    /// The peer's update: the query again, and the difference of its ids from the last ones.
    /// Returns the number of removals and insertions.
    func rerunAndDiff() throws -> Int {
        let new = try query().results().map(\.modelId)
        let difference = new.difference(from: ids)
        ids = new
        return difference.count
    }
}

extension Benchmarks {
    fileprivate static func liveResults(_ operation: LiveOperation, n: Int, session: inout Session) throws -> [BenchmarkResult] {
        let mine = LiveBench(n: n)
        let peer = LiveBench(n: n)
        let results = try [(100, 199), (100, 1_599)].map { low, high in
            mine.select(low: low, high: high)
            peer.select(low: low, high: high)
            return try liveResult(operation, mine, peer, n: n, session: &session)
        }
        blackHole((mine, peer))
        return results
    }

    private static func liveResult(_ operation: LiveOperation, _ mine: LiveBench, _ peer: LiveBench, n: Int, session: inout Session) throws
        -> BenchmarkResult
    {
        let expected = mine.matching.count
        let (livePerRun, peerPerRun) = operation.perRun

        // The memory a live query holds beyond its results: the C heap's growth while making it
        // (after one made and released, so that lazily built caches are not counted), less an
        // array of its results (8 bytes a model and a 32-byte header).
        let array = try mine.query().results()
        _ = try expect(array.count, expected, "results")
        do { _ = try mine.query().live() }
        let heapStart = Memory.heapBytes()
        var live: LiveResults<QueryAuthor>? = try mine.query().live()
        let heapLive = Memory.heapBytes()
        _ = try expect(live!.count, expected, "live results")
        func arrayBytes(_ count: Int) -> Int { MemoryLayout<QueryAuthor>.stride * count + 32 }
        var changeSets = 0
        var changedRows = 0
        let token = live!.observe { _, change in
            changeSets += 1
            changedRows += change.deletions.count + change.insertions.count + change.moves.count + change.modifications.count
        }

        func counted(_ body: () throws -> Void) rethrows -> Int {
            changeSets = 0
            try body()
            return changeSets
        }
        let modelKit: Subject
        let rerun: Subject
        var extras: [Subject] = []
        switch operation {
        case .edit:
            var next = 0
            modelKit = Subject(
                "ModelKit",
                body: {
                    counted {
                        for _ in 0..<livePerRun {
                            mine.author(next).name = mine.nextName()
                            next += 1
                        }
                    }
                }, verify: { try expect($0, livePerRun, "change sets") })
            var peerNext = 0
            rerun = Subject(
                "re-run + CollectionDifference",
                setup: { peer.ids = try peer.query().results().map(\.modelId) },
                body: {
                    var differences = 0
                    for _ in 0..<peerPerRun {
                        peer.author(peerNext).name = peer.nextName()
                        peerNext += 1
                        differences += try peer.rerunAndDiff()
                    }
                    return differences
                }, verify: { $0 })
        case .insert:
            modelKit = Subject(
                "ModelKit", setup: { mine.removeInserted() },
                body: { counted { for _ in 0..<livePerRun { _ = mine.insertMatching() } } },
                verify: { try expect($0, livePerRun, "change sets") })
            rerun = Subject(
                "re-run + CollectionDifference",
                setup: {
                    peer.removeInserted()
                    peer.ids = try peer.query().results().map(\.modelId)
                },
                body: {
                    var differences = 0
                    for _ in 0..<peerPerRun {
                        _ = peer.insertMatching()
                        differences += try peer.rerunAndDiff()
                    }
                    return differences
                }, verify: { try expect($0, peerPerRun, "insertions") })
        case .remove:
            modelKit = Subject(
                "ModelKit",
                setup: { () -> [QueryAuthor] in
                    mine.removeInserted()
                    let authors = (0..<livePerRun).map { _ in mine.insertMatching() }
                    mine.inserted.removeAll()
                    return authors
                },
                body: { authors in counted { for author in authors { mine.context.remove(author) } } },
                verify: { try expect($0, livePerRun, "change sets") })
            rerun = Subject(
                "re-run + CollectionDifference",
                setup: { () -> [QueryAuthor] in
                    peer.removeInserted()
                    let authors = (0..<peerPerRun).map { _ in peer.insertMatching() }
                    peer.inserted.removeAll()
                    peer.ids = try peer.query().results().map(\.modelId)
                    return authors
                },
                body: { authors in
                    var differences = 0
                    for author in authors {
                        peer.context.remove(author)
                        differences += try peer.rerunAndDiff()
                    }
                    return differences
                }, verify: { try expect($0, peerPerRun, "removals") })
        case .batch, .fewBatch:
            let size = min(operation.batchSize ?? 0, expected)
            modelKit = Subject(
                "ModelKit",
                body: {
                    counted {
                        mine.context.batchChanges {
                            for k in 0..<size { mine.author(k).name = mine.nextName() }
                        }
                    }
                },
                verify: { try expect($0, 1, "change sets") })
            rerun = Subject(
                "re-run + CollectionDifference",
                setup: { peer.ids = try peer.query().results().map(\.modelId) },
                body: {
                    for k in 0..<size { peer.author(k).name = peer.nextName() }
                    return try peer.rerunAndDiff()
                }, verify: { $0 })
            // What both sides pay before any update: the renames themselves, in the peer's context
            // (no live query listens there). Both rows include it; the note below takes it out.
            extras = [
                Subject(
                    renamesAlone,
                    body: {
                        for k in 0..<size { peer.author(k).name = peer.nextName() }
                        return size
                    }, verify: { $0 })
            ]
        }

        var result = try BenchmarkResult(timing: [modelKit, rerun], extras: extras, session: &session)
        result.rows[0].seconds /= Double(livePerRun)
        result.rows[1].seconds /= Double(peerPerRun)
        if operation.batchSize != nil, let line = result.notes.first(where: { $0.hasPrefix("also timed: \(renamesAlone)") }),
            let seconds = line.split(separator: " ").compactMap({ Double($0) }).first
        {
            result.notes.append(
                contentsOf: Self.beyondRenames(modelKit: result.rows[0].seconds, peer: result.rows[1].seconds, renames: seconds))
        }
        result.selectivity = Double(expected) / Double(n)
        let unit = operation.batchSize.map { "a batch of \(min($0, expected)) renames" } ?? "one operation"
        result.notes.append(
            "\(expected) of \(n) authors match, sorted by name; seconds per \(unit) "
                + "(ModelKit timed \(livePerRun) at a time, the peer \(peerPerRun)); the context indexes age")
        if let heapStart, let heapLive {
            let liveBytes = heapLive - heapStart
            result.notes.append(
                "memory: making the live query took \(grouped(liveBytes)) heap bytes, an array of its \(expected) results "
                    + "\(grouped(arrayBytes(expected))): \(fixed(Double(liveBytes - arrayBytes(expected)) / Double(max(expected, 1)), 1)) "
                    + "bytes per result beyond the array")
        }
        // And once the runs have moved its models around (chunks split and fill unevenly).
        mine.removeInserted()
        let count = live!.count
        let heapBefore = Memory.heapBytes()
        token.cancel()
        live = nil
        let heapAfter = Memory.heapBytes()
        if let heapBefore, let heapAfter {
            let liveBytes = heapBefore - heapAfter
            let bytesOfArray = arrayBytes(count)
            result.notes.append(
                "memory after the runs: releasing the live query (\(count) results) freed \(grouped(liveBytes)) heap bytes: "
                    + "\(fixed(Double(liveBytes - bytesOfArray) / Double(max(count, 1)), 1)) bytes per result beyond an array of them "
                    + "(\(grouped(bytesOfArray)) bytes)")
        }
        peer.removeInserted()
        session.checksum.add(changedRows)
        blackHole(array)
        return result
    }

    /// The notes of a batch row on what its update costs beyond the renames both subjects make
    /// (`renames`, timed alone in the same run), and the best ratio the whole row could show:
    /// the peer's batch against the renames alone, as if ModelKit's update cost nothing.
    static func beyondRenames(modelKit: Double, peer: Double, renames: Double) -> [String] {
        let live = modelKit - renames
        let peerUpdate = peer - renames
        return [
            "beyond the renames (\(fixed(renames * 1000, 2)) ms alone): ModelKit's update \(fixed(live * 1000, 2)) ms, "
                + "re-run + diff's \(fixed(peerUpdate * 1000, 2)) ms: "
                + (live > 0 ? "ratio \(fixed(peerUpdate / live, 2))x" : "ModelKit's batch took no longer than the renames alone"),
            "best reachable whole-row ratio (re-run + diff / renames alone, an update costing nothing): "
                + (renames > 0 ? "\(fixed(peer / renames, 2))x" : "no renames timed"),
        ]
    }
}
