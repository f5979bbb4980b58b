import Foundation
import ModelKit
import Testing

/// The current version of a model whose files have changed over time (see the fixture files in
/// Fixtures/Persistence): `theme` was added, `karma` removed, `name` renamed to `fullName`.
final class Profile: ModelObject<Profile.Properties>, PropertyRenaming {
    struct Properties: ModelProperties, Equatable {
        var fullName = ""
        var email = ""
        var theme = "light"
    }
    static var renamedProperties: [String: String] { ["fullName": "name"] }
}

/// The URL of a checked-in fixture file.
func fixture(_ name: String, _ kind: String, in folder: String = "Persistence") throws -> URL {
    try #require(Bundle.module.url(forResource: name, withExtension: kind, subdirectory: "Fixtures/\(folder)"))
}

@Suite("Schema evolution")
struct SchemaEvolutionTests {
    init() throws {
        try ModelRegistry.register(Profile.self, Author.self, Post.self)
    }

    static let profileId = ModelID("0F0C61A2-93D4-4E1B-0000-000000000001")!

    func loadProfile(_ name: String, _ kind: String = "json") throws -> Profile {
        let context = ModelContext()
        try context.load(from: fixture(name, kind))
        return try #require(context.model(Profile.self, modelId: Self.profileId))
    }

    @Test("a file written before a property was added loads with the property's default")
    func addedProperty() throws {
        let profile = try loadProfile("added-property")
        #expect(
            profile.persistedProperties == Profile.Properties(fullName: "Ada Lovelace", email: "ada@example.com", theme: "light"))
        #expect(profile.objectId == "p1")
        #expect(profile.createdAt == Date(timeIntervalSinceReferenceDate: 725_857_445.5))
    }

    @Test("a file written when the model had a property since removed still loads")
    func removedProperty() throws {
        let profile = try loadProfile("removed-property")
        #expect(
            profile.persistedProperties == Profile.Properties(fullName: "Ada Lovelace", email: "ada@example.com", theme: "dark"))
    }

    @Test("a renamed property is read from its old name, in JSON and in a foreign binary property list")
    func renamedProperty() throws {
        for kind in ["json", "bplist"] {
            let profile = try loadProfile("renamed-property", kind)
            #expect(profile.fullName == "Ada Lovelace")
            #expect(profile.theme == "dark")
        }
    }

    @Test("new files use the new name, and it wins over the old one")
    func newName() throws {
        let context = ModelContext()
        let profile = Profile.instance(in: context)
        profile.fullName = "Grace"
        let text = String(decoding: try context.data(), as: UTF8.self)
        #expect(text.contains(#""fullName":"Grace""#))
        #expect(!text.contains(#""name""#))
        let both = text.replacingOccurrences(of: #""fullName":"Grace""#, with: #""name":"Old","fullName":"Grace""#)
        let target = ModelContext()
        try target.load(Data(both.utf8))
        #expect(target.model(Profile.self, modelId: profile.modelId)?.fullName == "Grace")
    }

    @Test("a file from a newer format version is refused with a typed error")
    func futureVersion() throws {
        let context = ModelContext()
        #expect(throws: SerializationError.self) { try context.load(from: fixture("future-version", "json")) }
        do {
            try context.load(from: fixture("future-version", "json"))
        } catch let error as SerializationError {
            #expect(error.code == .unsupportedVersion)
            #expect(error.path == "version")
            #expect(error.byteOffset != nil)
        }
        #expect(context.isEmpty)
    }

    @Test("a file from the Objective-C era (bare array, booleans as 0 and 1) loads")
    func objectiveCEra() throws {
        let context = ModelContext()
        try context.load(from: fixture("objc-era", "json"))
        let author = try #require(context.model(Author.self, objectId: "001"))
        #expect(author.name == "Jon Gilkison")
        #expect(author.displayEmail)
        #expect(author.posts.first?.title == "Hello from 2012")
        #expect(author.posts.first?.author === author)
    }
}
