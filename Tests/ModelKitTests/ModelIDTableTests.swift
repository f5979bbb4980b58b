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
