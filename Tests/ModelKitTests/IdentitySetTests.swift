import Foundation
import ModelKitTestSupport
import Testing

@testable import ModelKit

@Suite("The identity set of a live batch")
struct IdentitySetTests {
    final class Item {}

    @Test(
        "Random insertions and lookups of objects agree with a Set of their identifiers, through growth",
        arguments: [1, 2, 3] as [UInt64])
    func agreesWithASet(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        // Objects alive together have distinct addresses; some are asked about without being in.
        let items = (0..<5_000).map { _ in Item() }
        var set = IdentitySet(minimumCapacity: Int.random(in: 0..<20, using: &random))
        var reference = Set<ObjectIdentifier>()
        for step in 0..<20_000 {
            let id = ObjectIdentifier(items[Int.random(in: 0..<items.count, using: &random)])
            if random.chance(0.5) {
                let inserted = set.insert(id)
                #expect(inserted == reference.insert(id).inserted, "step \(step)")
            } else {
                #expect(set.contains(id) == reference.contains(id), "step \(step)")
            }
            #expect(set.count == reference.count)
        }
        #expect(items.allSatisfy { set.contains(ObjectIdentifier($0)) == reference.contains(ObjectIdentifier($0)) })
    }

    @Test("Identifiers that differ only in their high bits, or only in one bit, are told apart through growth")
    func highAndSingleBitIdentifiers() {
        // Not objects: the set only hashes and compares the bits (16-byte aligned, as objects are).
        let highBits = (1...40).map { UInt($0) << 40 | 0x10 }
        let singleBits = (4..<48).map { UInt(1) << UInt($0) }
        let ids = (highBits + singleBits).map { unsafeBitCast($0, to: ObjectIdentifier.self) }
        var set = IdentitySet(minimumCapacity: 0)
        for (index, id) in ids.enumerated() {
            let inserted = set.insert(id)
            #expect(inserted)
            #expect(set.count == index + 1)
            #expect(ids[...index].allSatisfy { set.contains($0) })
            #expect(ids[(index + 1)...].allSatisfy { !set.contains($0) })
        }
    }

    @Test("An empty set holds nothing, and one object inserted twice counts once")
    func emptyAndDuplicates() {
        let item = Item()
        var set = IdentitySet(minimumCapacity: 0)
        #expect(!set.contains(ObjectIdentifier(item)))
        #expect(set.count == 0)
        let first = set.insert(ObjectIdentifier(item))
        let second = set.insert(ObjectIdentifier(item))
        #expect(first && !second)
        #expect(set.contains(ObjectIdentifier(item)))
        #expect(set.count == 1)
    }
}
