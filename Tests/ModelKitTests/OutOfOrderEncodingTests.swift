import Foundation
import Testing

@testable import ModelKit

/// A value whose hand-written `encode(to:)` uses its containers in an order a stream cannot
/// follow: it writes to a nested container after its parent moved on, fills a super encoder
/// after later members, and puts a reference inside a late-filled container.
struct Scrambled: Codable, Equatable {
    var first = 1
    var list = [10, 20]
    var inner = "in"
    var base = 5
    var last = "z"
    var author = ModelRef<Author>()

    enum CodingKeys: String, CodingKey { case first, list, nested, last }
    enum NestedKeys: String, CodingKey { case inner, author }

    init() {}

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        first = try container.decode(Int.self, forKey: .first)
        list = try container.decode([Int].self, forKey: .list)
        let nested = try container.nestedContainer(keyedBy: NestedKeys.self, forKey: .nested)
        inner = try nested.decode(String.self, forKey: .inner)
        author = try nested.decode(ModelRef<Author>.self, forKey: .author)
        last = try container.decode(String.self, forKey: .last)
        base = try container.superDecoder().singleValueContainer().decode(Int.self)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        var list = container.nestedUnkeyedContainer(forKey: .list)
        var nested = container.nestedContainer(keyedBy: NestedKeys.self, forKey: .nested)
        let superEncoder = container.superEncoder()
        try container.encode(first, forKey: .first)
        // Back to containers that a stream has closed by now.
        try list.encode(self.list[0])
        try nested.encode(inner, forKey: .inner)
        try list.encode(self.list[1])
        try container.encode(last, forKey: .last)
        try nested.encode(author, forKey: .author)
        var base = superEncoder.singleValueContainer()
        try base.encode(self.base)
    }
}

final class Scrambler: ModelObject<Scrambler.Properties> {
    struct Properties: ModelProperties, Equatable { var scrambled = Scrambled() }
}

@Suite("Values whose containers are used out of nesting order")
struct OutOfOrderEncodingTests {
    private func makeModel(in context: ModelContext) -> (Scrambler, Author) {
        let author = Author.instance(in: context)
        author.name = "Ada"
        let model = Scrambler.instance(in: context)
        model.scrambled.first = 3
        model.scrambled.list = [7, 8]
        model.scrambled.inner = "deep"
        model.scrambled.base = 42
        model.scrambled.last = "end"
        model.scrambled.author = ModelRef(author)
        return (model, author)
    }

    @Test("They serialize to the tree their members describe, whatever the order of the calls")
    func serializesToTheExpectedTree() throws {
        let context = ModelContext()
        let (model, author) = makeModel(in: context)
        let value = try model.serialize()
        let pointer: ModelValue = ["__type": "ModelPointer", "model": "Author", "modelId": .string(author.modelId.description)]
        let expected: ModelValue = [
            "list": [7, 8], "nested": ["inner": "deep", "author": pointer], "super": 42, "first": 3, "last": "end",
        ]
        #expect(value[0]?["properties"]?["scrambled"] == expected)
        // The reference inside the late-filled container reached its target.
        #expect(value[1]?["modelId"] == .string(author.modelId.description))
    }

    @Test("They come back equal from every format and from the tree, with their reference", arguments: PersistenceFormat.allCases)
    func roundTrips(format: PersistenceFormat) throws {
        let context = ModelContext()
        let (model, author) = makeModel(in: context)
        let target = ModelContext()
        let copy = try Scrambler.load(try model.persistedData(format: format), in: target)
        #expect(copy.scrambled == model.scrambled)
        #expect(copy.scrambled.author.resolve(in: target)?.name == author.name)

        let fromTree = try Scrambler.instance(from: try model.serialize(as: .json), in: ModelContext())
        #expect(fromTree.scrambled == model.scrambled)
        let fromText = try Scrambler.instance(fromJSON: try model.jsonData(), in: ModelContext())
        #expect(fromText.scrambled == model.scrambled)
    }

    @Test("Their changes are tracked like any other values")
    func changesAreTracked() throws {
        let context = ModelContext()
        let (model, _) = makeModel(in: context)
        model.resetChanges()
        model.scrambled.inner = "changed"
        let change = try #require(model.changes["scrambled"])
        #expect(change.oldValue["nested"]?["inner"] == "deep")
        #expect(change.newValue["nested"]?["inner"] == "changed")
    }
}
