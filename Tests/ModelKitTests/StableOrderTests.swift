import Foundation
import Testing
import ModelKitTestSupport

@testable import ModelKit

// Sets and dictionaries encode in a stable order (issue 18): equal models give equal bytes in
// every format and equal `properties`, whatever order their sets and dictionaries iterate in.

/// A model with sets and dictionaries of several kinds.
final class Bag: ModelObject<Bag.Properties> {
    struct Properties: ModelProperties, Equatable {
        var words: Set<String> = []
        var numbers: Set<Int> = []
        var dates: Set<Date> = []
        var points: Set<GeoPoint> = []
        var maybeWords: Set<String>?
        var nested: [Set<Int>] = []
        var counts: [String: Int] = [:]
        var byNumber: [Int: String] = [:]
        var byUUID: [UUID: Bool] = [:]
        var friends: Set<ModelRef<Bag>> = []
    }
}

/// The same values built in two insertion orders and capacities, so that they iterate differently.
private func twoEqualProperties(seed: UInt64, friends: [Bag] = []) -> (Bag.Properties, Bag.Properties) {
    var random = SplitMix64(seed: seed)
    let words = (0..<60).map { "w\($0)-" + String(UnicodeScalar(UInt8(32 + Int.random(in: 0..<90, using: &random)))) + "é\u{FEFF}" }
    let numbers = (0..<60).map { _ in Int.random(in: -1000...1000, using: &random) }
    let dates = (0..<20).map { Date(timeIntervalSinceReferenceDate: Double($0) * 1234.5) }
    let points = (0..<20).map { GeoPoint(latitude: Double($0 % 7), longitude: Double($0 / 7)) }
    let uuids = (0..<20).map { _ in UUID() }
    func make(_ reversed: Bool) -> Bag.Properties {
        func ordered<T>(_ values: [T]) -> [T] { reversed ? values.reversed() : values }
        func set<T: Hashable>(_ values: [T]) -> Set<T> {
            var set = Set<T>(minimumCapacity: reversed ? 512 : 0)
            for value in ordered(values) { set.insert(value) }
            return set
        }
        func dictionary<K: Hashable, V>(_ pairs: [(K, V)]) -> [K: V] {
            var dictionary = [K: V](minimumCapacity: reversed ? 512 : 0)
            for (key, value) in ordered(pairs) { dictionary[key] = value }
            return dictionary
        }
        var properties = Bag.Properties()
        properties.words = set(words)
        properties.numbers = set(numbers)
        properties.dates = set(dates)
        properties.points = set(points)
        properties.maybeWords = set(Array(words.prefix(30)))
        properties.nested = [set(numbers), [], set(Array(numbers.prefix(5)))]
        properties.counts = dictionary(words.enumerated().map { ($1, $0) })
        properties.byNumber = dictionary(numbers.map { ($0, "n\($0)") })
        properties.byUUID = dictionary(uuids.map { ($0, $0.uuidString < "8") })
        properties.friends = set(friends.map { ModelRef($0) })
        return properties
    }
    return (make(false), make(true))
}

@Suite("Stable order of sets and dictionaries")
struct StableOrderTests {
    @Test("Equal models whose sets and dictionaries iterate differently give equal bytes in every format", arguments: PersistenceFormat.allCases)
    func equalBytes(format: PersistenceFormat) throws {
        let (first, second) = twoEqualProperties(seed: 1)
        #expect(first == second)
        #expect(Array(first.words) != Array(second.words), "the two sets must iterate differently for the test to mean anything")
        #expect(Array(first.counts.keys) != Array(second.counts.keys))
        let one = ModelContext()
        let a = Bag.instance(in: one)
        a.storage.values = first
        let two = ModelContext()
        let b = try Bag.instance(from: a.serialize(), in: two)  // same id and dates
        b.storage.values = second
        #expect(try one.data(format: format) == two.data(format: format))
        #expect(try a.persistedData(format: format) == b.persistedData(format: format))
        // And they load back equal.
        let loaded = ModelContext()
        try loaded.load(one.data(format: format))
        #expect(try #require(loaded.model(Bag.self, modelId: a.modelId)).storage.values == first)
    }

    @Test("Equal models give equal properties and serialized values, with sets sorted")
    func equalProperties() throws {
        let context = ModelContext()
        let friends = (0..<12).map { _ in Bag.instance(in: context) }
        let (first, second) = twoEqualProperties(seed: 2, friends: friends)
        let a = Bag.instance(in: context)
        a.storage.values = first
        let b = Bag.instance(in: context)
        b.storage.values = second
        #expect(Array(first.friends) != Array(second.friends))
        #expect(try a.properties == b.properties)
        #expect(try a.serialize(as: .json)["properties"] == b.serialize(as: .json)["properties"])
        let words = try #require(try a.properties["words"])
        guard case .array(let elements) = words else {
            Issue.record("words is not an array: \(words)")
            return
        }
        let texts = elements.compactMap(\.stringValue)
        #expect(texts == first.words.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        guard case .array(let numbers)? = try a.properties["numbers"] else {
            Issue.record("numbers is not an array")
            return
        }
        #expect(numbers == first.numbers.sorted().map { .int(Int64($0)) })
        guard case .array(let pointers)? = try a.properties["friends"] else {
            Issue.record("friends is not an array")
            return
        }
        #expect(pointers.compactMap { $0["modelId"]?.stringValue } == friends.map(\.modelId.description).sorted())
    }

    @Test("Random sets encode as the sorted array of their elements and load back equal")
    func randomSets() throws {
        var random = SplitMix64(seed: 0x5E7)
        let alphabet: [Unicode.Scalar] = ["a", "B", "é", "\u{301}", "\u{FEFF}", "z", "0", "\u{1F469}", " "]
        for _ in 0..<50 {
            var words = Set<String>(minimumCapacity: Int.random(in: 0...64, using: &random))
            for _ in 0..<Int.random(in: 0...20, using: &random) {
                var view = String.UnicodeScalarView()
                for _ in 0..<Int.random(in: 0...4, using: &random) { view.append(alphabet.randomElement(using: &random)!) }
                words.insert(String(view))
            }
            if let removed = words.randomElement(using: &random), Bool.random(using: &random) { words.remove(removed) }
            let context = ModelContext()
            let bag = Bag.instance(in: context)
            bag.words = words
            let sorted = words.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            #expect(try bag.properties["words"] == .array(sorted.map(ModelValue.string)))
            for format in PersistenceFormat.allCases {
                let copy = ModelContext()
                try copy.load(context.data(format: format))
                #expect(try #require(copy.model(Bag.self, modelId: bag.modelId)).words == words)
            }
        }
    }
}
