import Foundation
import ModelKitTestSupport
import Testing

@testable import ModelKit

@Suite("The chunked storage of live results")
struct OrderedModelsTests {
    final class Item {
        let value: Int
        init(_ value: Int) { self.value = value }
    }

    @Test(
        "Thousands of random insertions and removals, splitting and shrinking chunks, keep the same order as an array, and spare storage stays under the chunks' size",
        arguments: [1, 2] as [UInt64])
    func randomInsertionsAndRemovals(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var models = OrderedModels((0..<700).map(Item.init))
        var reference = models.elements
        for step in 0..<20_000 {
            // Grow to a few thousand, then shrink to a few, then grow again.
            let growing = (step / 5_000) % 2 == 0
            if reference.isEmpty || (growing ? random.chance(0.7) : random.chance(0.25)) {
                let position = Int.random(in: 0...reference.count, using: &random)
                let item = Item(700 + step)
                models.insert(item, key: UInt64(700 + step), at: position)
                reference.insert(item, at: position)
            } else {
                let position = Int.random(in: 0..<reference.count, using: &random)
                let removed = models.remove(at: position)
                #expect(removed === reference.remove(at: position))
            }
            guard step % 97 == 0 else { continue }
            #expect(models.count == reference.count)
            #expect(models.elements.map(ObjectIdentifier.init) == reference.map(ObjectIdentifier.init), "step \(step)")
            // Each model keeps its key (its value; the first 700 have none) through splits and moves.
            #expect(models.allKeys == reference.map { $0.value < 700 ? OrderedModels<Item>.noKey : UInt64($0.value) })
            if !reference.isEmpty {
                let position = Int.random(in: 0..<reference.count, using: &random)
                #expect(models[position] === reference[position])
                let value = reference[position].value
                #expect(models.key(at: position) == (value < 700 ? OrderedModels<Item>.noKey : UInt64(value)))
            }
            #expect(models.chunks.allSatisfy { !$0.isEmpty && $0.count <= OrderedModels<Item>.chunkCapacity })
            // No chunk keeps more than twice what it holds (and a little for malloc's rounding).
            #expect(models.chunks.allSatisfy { $0.capacity <= max(2 * $0.count + 8, 32) }, "step \(step)")
        }
    }

    @Test(
        "Removing every model a random set names, among random insertions, keeps the rest in an array's order and returns the removed ones with their old positions",
        arguments: [4, 5] as [UInt64])
    func removeAllMatchesAnArray(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var models = OrderedModels((0..<3_000).map(Item.init), keys: (0..<3_000).map(UInt64.init))
        var reference = models.elements
        var next = 3_000
        for round in 0..<200 {
            // A few insertions, so that chunks are uneven, then one removal of a random share:
            // none, a few, most or all of the models.
            for _ in 0..<Int.random(in: 0..<40, using: &random) {
                let position = Int.random(in: 0...reference.count, using: &random)
                let item = Item(next)
                models.insert(item, key: UInt64(next), at: position)
                reference.insert(item, at: position)
                next += 1
            }
            let share = [0.0, 0.001, 0.05, 0.5, 0.95, 1.0][round % 6]
            let doomed = Set(reference.filter { _ in random.chance(share) }.map(ObjectIdentifier.init))
            let expected = reference.indices.filter { doomed.contains(ObjectIdentifier(reference[$0])) }
            let removed = models.removeAll { doomed.contains($0) }
            #expect(removed.map(\.index) == expected, "round \(round)")
            #expect(zip(removed, expected).allSatisfy { $0.model === reference[$1] }, "round \(round)")
            #expect(removed.allSatisfy { $0.key == UInt64($0.model.value) })
            reference.removeAll { doomed.contains(ObjectIdentifier($0)) }
            #expect(models.count == reference.count)
            #expect(models.elements.map(ObjectIdentifier.init) == reference.map(ObjectIdentifier.init), "round \(round)")
            #expect(models.allKeys == reference.map { UInt64($0.value) }, "round \(round)")
            if !reference.isEmpty {
                let position = Int.random(in: 0..<reference.count, using: &random)
                #expect(models[position] === reference[position])
            }
            #expect(models.chunks.allSatisfy { !$0.isEmpty && $0.count <= OrderedModels<Item>.chunkCapacity })
            #expect(models.chunks.allSatisfy { $0.capacity <= max(2 * $0.count + 8, 32) }, "round \(round)")
            if reference.count < 100 {
                models = OrderedModels((0..<3_000).map { Item(next + $0) }, keys: (0..<3_000).map { UInt64(next + $0) })
                next += 3_000
                reference = models.elements
            }
        }
    }

    final class TrackedItem {
        let token: LifetimeToken
        init(_ tracker: LifetimeTracker) { token = tracker.token() }
    }

    @Test(
        "Removing models releases exactly the removed ones once their caller lets go, and keeps the rest alive: the walk, insertions and removals move references without retaining them"
    )
    func removeAllKeepsReferenceCounts() {
        let tracker = LifetimeTracker()
        var random = SplitMix64(seed: 9)
        do {
            var models = OrderedModels((0..<2_000).map { _ in TrackedItem(tracker) })
            for share in [0.01, 0.3, 0.9] {
                var doomed = Set<ObjectIdentifier>()
                for model in models.elements where random.chance(share) { doomed.insert(ObjectIdentifier(model)) }
                let before = tracker.liveCount
                do {
                    let removed = models.removeAll { doomed.contains($0) }
                    #expect(removed.count == doomed.count)
                    #expect(tracker.liveCount == before)
                }
                // Only the removed list held them.
                #expect(tracker.liveCount == before - doomed.count)
                #expect(models.count == before - doomed.count)
                #expect(models.elements.allSatisfy { !doomed.contains(ObjectIdentifier($0)) })
            }
            #expect(tracker.liveCount == models.count)
            // Insertions and removals at positions move words too (splitting chunks on the way).
            for step in 0..<3_000 {
                if models.count == 0 || random.chance(0.6) {
                    models.insert(TrackedItem(tracker), at: Int.random(in: 0...models.count, using: &random))
                } else {
                    let position = Int.random(in: 0..<models.count, using: &random)
                    let expected = models[position]
                    let removed = models.remove(at: position)
                    #expect(removed === expected, "step \(step)")
                }
            }
            #expect(tracker.liveCount == models.count)
        }
        #expect(tracker.liveCount == 0)
    }

    @Test(
        "At the edges the counts stay right too: insertions at the front and the end, removals that empty a chunk, a removeAll that takes a whole chunk or leaves so few that the chunks are rebuilt"
    )
    func edgesKeepReferenceCounts() {
        let tracker = LifetimeTracker()
        do {
            // Chunks of 256 (the initial fill is half a chunk's capacity).
            var models = OrderedModels((0..<1_024).map { _ in TrackedItem(tracker) })
            let chunkCount = models.chunks.count
            models.insert(TrackedItem(tracker), at: 0)
            models.insert(TrackedItem(tracker), at: models.count)
            #expect(tracker.liveCount == 1_026 && models.count == 1_026)
            // The first chunk (now 257 models) emptied one removal at a time.
            let first = models.chunks[0].count
            for _ in 0..<first { models.remove(at: 0) }
            #expect(models.chunks.count == chunkCount - 1)
            #expect(tracker.liveCount == models.count)
            // A whole chunk at once.
            let doomed = Set(models.chunks[1].map(ObjectIdentifier.init))
            let removedCount = models.removeAll { doomed.contains($0) }.count
            #expect(removedCount == doomed.count)
            #expect(models.chunks.count == chunkCount - 2)
            #expect(tracker.liveCount == models.count)
            // Nearly all: the rest is rebuilt into fewer, fuller chunks.
            let keep = Set(models.elements.prefix(3).map(ObjectIdentifier.init))
            _ = models.removeAll { !keep.contains($0) }
            #expect(models.count == 3 && models.chunks.count == 1)
            #expect(tracker.liveCount == 3)
            #expect(models.elements.map(ObjectIdentifier.init).allSatisfy { keep.contains($0) })
        }
        #expect(tracker.liveCount == 0)
    }

    private struct Stop: Error {}

    @Test("The first position at or after a value is the sorted array's, over many chunks, ties, both ends and no models")
    func partitioningIndexMatchesAnArray() throws {
        var random = SplitMix64(seed: 3)
        #expect(OrderedModels<Item>().partitioningIndex(byKey: { _ in nil }) { _ in true } == 0)
        for count in [1, 2, 255, 256, 257, 1_500] {
            // Values with runs of ties, some across chunk boundaries.
            let values = (0..<count).map { _ in Int.random(in: 0..<(count / 4 + 2), using: &random) }.sorted()
            var models = OrderedModels(values.map(Item.init))
            // Chunks of uneven sizes too: insert and remove in the middle, keeping the order.
            if count > 300 {
                models.insert(Item(values[150]), at: 150)
                models.remove(at: 10)
            }
            let reference = models.elements.map(\.value)
            for probe in -1...(count / 4 + 3) {
                let expected = reference.firstIndex { $0 >= probe } ?? reference.count
                #expect(
                    models.partitioningIndex(byKey: { _ in nil }) { $0.value >= probe } == expected,
                    "\(count) models, value \(probe)")
            }
        }
        // Decided by keys where they tell, by the models elsewhere: the same positions.
        for count in [0, 1, 300, 1_500] {
            let values = (0..<count).map { _ in Int.random(in: 0..<(count / 4 + 2), using: &random) }.sorted()
            // Every other model has a key (its value); the rest are read.
            let keys = values.enumerated().map { $0.offset % 2 == 0 ? UInt64($0.element) : OrderedModels<Item>.noKey }
            let models = OrderedModels(values.map(Item.init), keys: keys)
            for probe in -1...(count / 4 + 3) {
                var read = 0
                let found = models.partitioningIndex(
                    byKey: { $0 == OrderedModels<Item>.noKey ? nil : Int($0) >= probe },
                    else: { item in
                        read += 1
                        return item.value >= probe
                    })
                #expect(found == (values.firstIndex { $0 >= probe } ?? values.count), "\(count) models, value \(probe)")
                #expect(read <= 2 * (Int.bitWidth - count.leadingZeroBitCount) + 2)
            }
        }
        // An error of the predicate comes out, from the search of the chunks or of one chunk.
        let models = OrderedModels((0..<1_000).map(Item.init))
        #expect(throws: Stop.self) { try models.partitioningIndex(byKey: { _ in nil }) { _ in throw Stop() } }
        #expect(throws: Stop.self) {
            try models.partitioningIndex(byKey: { _ in nil }) { item in
                if item.value % 256 == 255 { return item.value >= 600 }
                throw Stop()
            }
        }
    }
}
