import Foundation
import ModelKit
import Testing

@Suite("Models")
@MainActor struct ModelTests {
    @Test("A new model has default properties, a fresh id and state new")
    func newModelDefaults() {
        inFreshContext { context in
            let before = Date()
            let author = Author.instance()
            #expect(author.name == "")
            #expect(author.age == 0)
            #expect(author.birthday == nil)
            #expect(author.modelState == .new)
            #expect(author.objectId == nil)
            #expect(author.createdAt >= before && author.createdAt <= Date())
            #expect(author.updatedAt == author.createdAt)
            #expect(author.modelContext === context)
        }
    }

    @Test("Every model gets a distinct model id")
    func distinctIds() {
        let ids = Set((0..<10_000).map { _ in Note().modelId })
        #expect(ids.count == 10_000)
    }

    @Test("Writing a property stores it and advances updatedAt")
    func writeAdvancesUpdatedAt() {
        inFreshContext { _ in
            let author = Author.instance()
            let created = author.updatedAt
            Thread.sleep(forTimeInterval: 0.002)
            author.name = "Jon"
            #expect(author.name == "Jon")
            #expect(author.updatedAt > created)
            let afterName = author.updatedAt
            Thread.sleep(forTimeInterval: 0.002)
            author.age += 1
            #expect(author.age == 1)
            #expect(author.updatedAt > afterName)
            #expect(author.createdAt <= author.updatedAt)
        }
    }

    @Test("Assigning the value a property already has is not a change")
    func sameValueIsNotAChange() {
        inFreshContext { _ in
            let author = Author.instance()
            author.name = "Jon"
            let stamp = author.updatedAt
            Thread.sleep(forTimeInterval: 0.002)
            author.name = "Jon"
            #expect(author.updatedAt == stamp)
        }
    }

    @Test("Appending to an array property mutates it in place")
    func appendInPlace() {
        inFreshContext { _ in
            let post = Post.instance()
            for index in 0..<1000 { post.tags.append("t\(index)") }
            #expect(post.tags.count == 1000)
            #expect(post.tags.last == "t999")
        }
    }

    @Test("The model name defaults to the type name and can be overridden")
    func modelNames() throws {
        #expect(Author.modelName == "Author")
        #expect(RenamedAuthor.modelName == "Scribe")
        try inFreshContext { _ in
            let writer = RenamedAuthor.instance()
            writer.name = "Ann"
            let value = try writer.serialize()
            #expect(value["model"] == "Scribe")
            let copy = try RenamedAuthor.instance(from: value, in: ModelContext())
            #expect(copy.name == "Ann")
        }
    }

    @Test("Stored properties outside Properties are not persisted")
    func classPropertiesAreTransient() throws {
        try inFreshContext { _ in
            let note = Note.instance()
            note.scratch = "changed"
            note.text = "hello"
            let value = try note.serialize()
            #expect(value["properties"]?["scratch"] == nil)
            let copy = try Note.instance(from: value, in: ModelContext())
            #expect(copy.scratch == "not persisted")
            #expect(copy.text == "hello")
        }
    }

    @Test("A property left out of CodingKeys is not persisted and reloads with its default")
    func codingKeysExclude() throws {
        try inFreshContext { _ in
            let cached = Cached.instance()
            cached.kept = "yes"
            cached.derived = 42
            let value = try cached.serialize()
            #expect(value["properties"]?["derived"] == nil)
            let copy = try Cached.instance(from: value, in: ModelContext())
            #expect(copy.kept == "yes")
            #expect(copy.derived == 0)
        }
    }

    @Test("Registering two types under one name is a typed error")
    func registryConflict() throws {
        final class Impostor: ModelObject<Impostor.Properties> {
            struct Properties: ModelProperties {}
            override class var modelName: String { "Author" }
        }
        try ModelRegistry.register(Author.self)
        try ModelRegistry.register(Author.self)  // registering again is harmless
        let error = try #require(throws: ModelRegistryError.self) { try ModelRegistry.register(Impostor.self) }
        #expect(error.name == "Author")
        #expect(error.registered == "ModelKitTests.Author")
        #expect(error.rejected.hasPrefix("ModelKitTests.") && error.rejected.hasSuffix("Impostor"))
        #expect(ModelRegistry.type(named: "Author") == Author.self)
    }

    @Test("GeoPoint distances are great-circle kilometres")
    func geoDistance() {
        let paris = GeoPoint(latitude: 48.8566, longitude: 2.3522)
        let london = GeoPoint(latitude: 51.5074, longitude: -0.1278)
        #expect(abs(paris.distance(to: london) - 343.5) < 1.0)
        #expect(paris.distance(to: paris) == 0)
        let antipode = GeoPoint(latitude: -48.8566, longitude: -177.6478)
        #expect(abs(paris.distance(to: antipode) - Double.pi * GeoPoint.earthRadiusKilometers) < 0.01)
    }
}

@Suite("Model ids")
@MainActor struct ModelIDTests {
    @Test("The text form round-trips and matches the UUID layout")
    func textRoundTrip() throws {
        let id = Note().modelId
        let text = id.description
        #expect(text.count == 36)
        #expect(ModelID(text) == id)
        #expect(ModelID(text.lowercased()) == id)
        #expect(UUID(uuidString: text) != nil)
        #expect(ModelID(id.uuid) == id)
        #expect(id.uuid.uuidString == text)
    }

    @Test(
        "Malformed id text is rejected",
        arguments: [
            "", "1234", "00000000-0000-0000-0000-00000000000", "00000000-0000-0000-0000-0000000000000",
            "00000000_0000-0000-0000-000000000000", "g0000000-0000-0000-0000-000000000000", "AAAA-AAAA-AAAA-AAAA",
            "00000000-0000-0000-0000-00000000000é",
        ])
    func malformed(text: String) {
        #expect(ModelID(text) == nil)
    }

    @Test("Ids encode as their text with any Codable encoder")
    func codable() throws {
        let id = ModelID(UUID())
        let data = try JSONEncoder().encode([id])
        #expect(try JSONDecoder().decode([ModelID].self, from: data) == [id])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([ModelID].self, from: Data(#"["nope"]"#.utf8)) }
    }
}
