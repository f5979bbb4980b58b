import Foundation
import ModelKit
import Testing
import ModelKitTestSupport

/// Every supported property type comes back `==` through both forms and through JSON text.
@Suite("Round trips")
struct RoundTripTests {
    enum Route: String, CaseIterable {
        case propertyList, json, jsonText, propertyListFile
    }

    /// Serializes `model` along `route` and loads it into a new context.
    static func roundTrip(_ model: Everything, _ route: Route) throws -> Everything {
        let context = ModelContext()
        switch route {
        case .propertyList:
            return try Everything.instance(from: model.serialize(), in: context)
        case .json:
            return try Everything.instance(from: model.serialize(as: .json), in: context)
        case .jsonText:
            return try Everything.instance(fromJSON: model.jsonData(), in: context)
        case .propertyListFile:
            let bytes = try PropertyListSerialization.data(
                fromPropertyList: model.serialize().propertyListObject, format: .binary, options: 0)
            let object = try PropertyListSerialization.propertyList(from: bytes, options: [], format: nil)
            return try Everything.instance(from: ModelValue(propertyList: object), in: context)
        }
    }

    static func extremes() -> Everything {
        let model = Everything()
        model.string = "Jon \"the\" Gilkison \\ \n\t\r\u{0}\u{1F} 日本語 é é 👩‍👩‍👧 \u{202E}rtl"
        model.int = .min
        model.int8 = .min
        model.int16 = .max
        model.int32 = .min
        model.int64 = .max
        model.uint = .max
        model.uint8 = .max
        model.uint16 = .max
        model.uint32 = .max
        model.uint64 = .max
        model.double = .greatestFiniteMagnitude
        model.float = .leastNonzeroMagnitude
        model.bool = true
        model.date = Date(timeIntervalSinceReferenceDate: 817_012_345.123_456_7)
        model.data = Data((0...255).map { UInt8($0) })
        model.url = URL(string: "https://example.com/a%20b?q=ü&x=1#frag")!
        model.uuid = UUID()
        model.mood = .😀
        model.priority = .high
        model.shape = .rectangle(width: 2.5, height: 1e-300)
        model.optionalString = ""
        model.optionalInt = 0
        model.optionalDouble = -0.0
        model.optionalDate = .distantPast
        model.optionalData = Data()
        model.optionalURL = URL(string: "file:///tmp/x")
        model.optionalUUID = UUID()
        model.optionalMood = .grumpy
        model.optionalAddress = Address(
            street: "1 Rue", city: "Paris", zip: nil, coordinates: GeoPoint(latitude: -90, longitude: 180))
        model.optionalGeo = GeoPoint(latitude: 48.8566, longitude: 2.3522)
        model.strings = ["", "a", "é", "\u{0}"]
        model.ints = [Int.min, -1, 0, 1, Int.max]
        model.doubles = [0.1, -0.0, .leastNonzeroMagnitude, 1.7976931348623157e308, .pi, 1e21, 123_456_789.123_456_79]
        model.dates = [.distantFuture, Date(timeIntervalSince1970: 0), Date(timeIntervalSinceReferenceDate: -0.000_001)]
        model.optionals = [1, nil, 3, nil]
        model.nested = [[], ["a"], ["b", "c"]]
        model.byName = ["": 0, "key with space": 1, "ключ": 2]
        model.byNumber = [-1: "minus", 0: "zero", 42: "answer"]
        model.byUUID = [UUID(): true, UUID(): false]
        model.address = Address(
            street: "Main", city: "Saigon", zip: "700000", coordinates: GeoPoint(latitude: 10.76529079, longitude: 106.69060779))
        model.addresses = [Address(), Address(street: "x", city: "y", zip: "z")]
        model.location = GeoPoint(latitude: -33.8688, longitude: 151.2093)
        return model
    }

    @Test("Extreme and unusual values come back equal", arguments: Route.allCases)
    func extremesRoundTrip(route: Route) throws {
        let model = Self.extremes()
        let copy = try Self.roundTrip(model, route)
        #expect(copy.persistedProperties == model.persistedProperties)
        #expect(copy.optionalDouble?.sign == .minus)
    }

    @Test("Default values come back equal", arguments: Route.allCases)
    func defaultsRoundTrip(route: Route) throws {
        let model = Everything()
        #expect(try Self.roundTrip(model, route).persistedProperties == model.persistedProperties)
    }

    @Test("nil everywhere comes back nil", arguments: Route.allCases)
    func nilEverywhere(route: Route) throws {
        let model = Self.extremes()
        model.optionalString = nil
        model.optionalInt = nil
        model.optionalDouble = nil
        model.optionalDate = nil
        model.optionalData = nil
        model.optionalURL = nil
        model.optionalUUID = nil
        model.optionalMood = nil
        model.optionalAddress = nil
        model.optionalGeo = nil
        model.optionals = [nil, nil]
        let copy = try Self.roundTrip(model, route)
        #expect(copy.persistedProperties == model.persistedProperties)
    }

    @Test("NaN and infinities come back", arguments: Route.allCases)
    func nonFinite(route: Route) throws {
        let model = Everything()
        model.doubles = [.nan, .infinity, -.infinity]
        model.float = -.infinity
        model.optionalDouble = .nan
        let copy = try Self.roundTrip(model, route)
        #expect(copy.doubles[0].isNaN)
        #expect(copy.doubles[1] == .infinity)
        #expect(copy.doubles[2] == -.infinity)
        #expect(copy.float == -.infinity)
        #expect(copy.optionalDouble?.isNaN == true)
    }

    @Test("Random doubles, floats and dates come back bit for bit", arguments: Route.allCases)
    func randomNumbers(route: Route) throws {
        var generator = SplitMix64(seed: 42)
        let model = Everything()
        model.doubles = (0..<300).map { _ in Double(bitPattern: generator.next()) }.filter(\.isFinite)
        model.dates = (0..<300).map { _ in
            Date(timeIntervalSinceReferenceDate: Double.random(in: -4e10...4e10, using: &generator))
        }
        model.float = Float(bitPattern: UInt32(truncatingIfNeeded: generator.next()) & 0x7F7F_FFFF)
        let copy = try Self.roundTrip(model, route)
        #expect(copy.doubles.map(\.bitPattern) == model.doubles.map(\.bitPattern))
        #expect(copy.dates == model.dates)
        #expect(copy.float.bitPattern == model.float.bitPattern)
    }

    @Test("A graph of references round-trips through JSON text with identical values")
    func blogGraph() throws {
        let source = ModelContext()
        let authors = makeBlog(authors: 4, postsPerAuthor: 5, in: source)
        // Connect authors so that one root reaches everything.
        for (index, author) in authors.enumerated() { authors[(index + 1) % authors.count].posts.first?.author = author }
        let data = try authors[0].jsonData()
        let target = ModelContext()
        let copy = try Author.instance(fromJSON: data, in: target)
        #expect(target.count == source.count)
        for model in source.models(of: Post.self) {
            let twin = try #require(target.model(Post.self, modelId: model.modelId))
            #expect(twin.title == model.title)
            #expect(twin.tags == model.tags)
            #expect(twin.author?.modelId == model.author?.modelId)
            #expect(twin.createdAt == model.createdAt)
            #expect(twin.updatedAt == model.updatedAt)
        }
        #expect(try copy.jsonData() == data)  // and writes back byte for byte
    }
}
