import Foundation
import Testing

@testable import ModelKit

@Suite("The id table of the graph writer")
struct ModelIDTableTests {
    /// Checks `table` against a dictionary holding the same entries, and ids that are not there.
    private func check(_ table: ModelIDTable, against expected: [ModelID: Int], missing: [ModelID]) {
        #expect(table.count == expected.count)
        for (id, value) in expected { #expect(table.index(of: id) == value) }
        for id in missing { #expect(table.index(of: id) == nil) }
    }

    @Test("counter ids, random ids and runs of counters under two prefixes all map to their values")
    func shapes() {
        var random = SystemRandomNumberGenerator()
        let counters = (0..<5_000).map { ModelID(high: 42, low: UInt64($0)) }
        let randoms = (0..<5_000).map { _ in ModelID(high: random.next(), low: random.next()) }
        // Two dense runs over the same counter values: the case a locality-keeping hash must not
        // turn into long probe chains.
        let otherPrefix = (0..<5_000).map { ModelID(high: 43, low: UInt64($0)) }
        let all = counters + randoms + otherPrefix
        var table = ModelIDTable()  // grows from the smallest size
        var expected: [ModelID: Int] = [:]
        for (value, id) in all.enumerated() {
            #expect(table.insert(id, index: value) == nil)
            expected[id] = value
        }
        let missing = (5_000..<5_100).map { ModelID(high: 42, low: UInt64($0)) } + [ModelID(high: 44, low: 1)]
        check(table, against: expected, missing: missing)
    }

    @Test("inserting an id again keeps and returns its first value")
    func duplicates() {
        var table = ModelIDTable(minimumCapacity: 4)
        let id = ModelID(high: 1, low: 2)
        #expect(table.insert(id, index: 7) == nil)
        #expect(table.insert(id, index: 9) == 7)
        #expect(table.count == 1)
        #expect(table.index(of: id) == 7)
    }

    @Test("an empty table finds nothing, including the all-zero id")
    func empty() {
        let table = ModelIDTable()
        #expect(table.index(of: ModelID(high: 0, low: 0)) == nil)
        #expect(table.count == 0)
        var zero = ModelIDTable()
        zero.insert(ModelID(high: 0, low: 0), index: 0)
        #expect(zero.index(of: ModelID(high: 0, low: 0)) == 0)
    }
}

@Suite("A context's identity map")
struct ModelIdentityMapTests {
    /// Checks `map` against the models `expected` names, and ids that are not there.
    private func check(_ map: ModelIdentityMap, against expected: [ModelID: Note], missing: [ModelID]) {
        #expect(map.count == expected.count)
        #expect(map.isEmpty == expected.isEmpty)
        for (id, note) in expected { #expect(map[id] === note) }
        for id in missing { #expect(map[id] == nil) }
        #expect(Set(map.ids) == Set(expected.keys))
        #expect(Set(map.models.map(\.modelId)) == Set(expected.values.map(\.modelId)))
    }

    @Test("inserts, replacements and removals in any order leave every other id reachable")
    func insertAndRemove() {
        var random = SystemRandomNumberGenerator()
        // Counter runs under two prefixes (shared home blocks) and random ids, many removed.
        let ids =
            (0..<3_000).map { ModelID(high: 42, low: UInt64($0)) } + (0..<3_000).map { ModelID(high: 43, low: UInt64($0)) }
            + (0..<3_000).map { _ in ModelID(high: random.next(), low: random.next()) }
        // Owned here: the map does not retain them. A map finds a model by its own id.
        let notes = ids.map(note(withId:))
        let replacements = ids.map(note(withId:))
        var map = ModelIdentityMap()
        var expected: [ModelID: Note] = [:]
        for (id, note) in zip(ids, notes) {
            map[id] = note
            expected[id] = note
        }
        check(map, against: expected, missing: [ModelID(high: 42, low: 5_000), ModelID(high: 0, low: 0)])
        // Remove every third id, in shuffled order, then replace some models.
        var order = Array(ids.indices)
        order.shuffle(using: &random)
        for index in order where index % 3 == 0 {
            map[ids[index]] = nil
            expected[ids[index]] = nil
        }
        for index in stride(from: 1, to: ids.count, by: 7) where expected[ids[index]] != nil {
            let other = replacements[index]
            map[ids[index]] = other
            expected[ids[index]] = other
        }
        check(map, against: expected, missing: stride(from: 0, to: ids.count, by: 3).map { ids[$0] })
        // Removing what is gone does nothing; everything can go, and come back.
        map[ids[0]] = nil
        for id in expected.keys { map[id] = nil }
        check(map, against: [:], missing: Array(ids.prefix(100)))
        map.insert(Unmanaged.passUnretained(notes[5]), for: ids[5])
        check(map, against: [ids[5]: notes[5]], missing: [ids[6]])
        withExtendedLifetime((notes, replacements)) {}
    }

    /// A note whose model id is `id`.
    private func note(withId id: ModelID) -> Note {
        let note = Note()
        note.storage.metadata.modelId = id
        return note
    }

    @Test("a map made or reserved for many models holds them without growing, and the all-zero id is an id")
    func capacityAndZero() {
        let notes = (0..<1_000).map { note(withId: ModelID(high: 0, low: UInt64($0))) }
        var map = ModelIdentityMap(minimumCapacity: 10)
        map.reserveCapacity(1_000)
        var expected: [ModelID: Note] = [:]
        for (offset, note) in notes.enumerated() {
            let id = ModelID(high: 0, low: UInt64(offset))
            map[id] = note
            expected[id] = note
        }
        check(map, against: expected, missing: [ModelID(high: 1, low: 0)])
        withExtendedLifetime(notes) {}
    }
}

@Suite("Parsing model ids")
struct ModelIDParsingTests {
    @Test("Every single-byte change of an id's text parses as a per-character reading says")
    func everyByteAtEveryPosition() {
        /// The plain reading: 8-4-4-4-12 hexadecimal digits of either case.
        func reference(_ bytes: [UInt8]) -> ModelID? {
            guard bytes.count == 36 else { return nil }
            var words: [UInt64] = [0, 0]
            var nibbles = 0
            for (offset, byte) in bytes.enumerated() {
                if [8, 13, 18, 23].contains(offset) {
                    guard byte == UInt8(ascii: "-") else { return nil }
                    continue
                }
                let value: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): value = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): value = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                words[nibbles / 16] = words[nibbles / 16] << 4 | UInt64(value)
                nibbles += 1
            }
            return ModelID(high: words[0], low: words[1])
        }
        for text in ["01234567-89AB-CDEF-abcd-ef0123456789", Note().modelId.description] {
            let original = Array(text.utf8)
            #expect(reference(original) != nil)
            for offset in original.indices {
                for byte in 0...255 {
                    var changed = original
                    changed[offset] = UInt8(byte)
                    let parsed = changed.withUnsafeBufferPointer { ModelID.parse($0) }
                    if parsed != reference(changed) {
                        Issue.record("offset \(offset), byte \(byte): \(String(describing: parsed))")
                        return
                    }
                }
            }
        }
    }
}
