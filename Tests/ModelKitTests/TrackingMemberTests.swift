import Foundation
import Testing

@testable import ModelKit

/// The `tracking` member of whole-graph files and snapshots (issue #30, item 7): package metadata
/// per model, the changes not yet pushed and the models never saved come back after a relaunch.
@Suite("Tracking across a relaunch")
struct TrackingMemberTests {
    static let namespace = "Tests.versions"

    /// A context as a backend leaves it: a saved author (with a version) edited since, and a
    /// post made and never saved.
    static func edited() throws -> (ModelContext, Author, Post) {
        let context = ModelContext()
        let author = Author.instance(objectId: "ann", in: context)
        author.name = "Ann"
        author.birthday = Date(timeIntervalSinceReferenceDate: 1_000.25)
        author.resetChanges()
        context.metadataTable(namespace)[author.modelId] = "17"
        author.name = "Ann Lee"
        author.birthday = Date(timeIntervalSinceReferenceDate: 2_000.5)
        let post = Post.instance(in: context)
        post.title = "Draft"
        post.author = author
        author.posts.append(post)
        return (context, author, post)
    }

    @Test(
        "Versions, changed properties with their old values, and new models come back in every format",
        arguments: PersistenceFormat.allCases)
    func roundTrip(format: PersistenceFormat) throws {
        try ModelRegistry.register(Author.self, Post.self)
        let (context, author, post) = try Self.edited()
        let expected = author.changes
        let data = try context.data(format: format)

        let relaunched = ModelContext()
        try relaunched.load(data)
        let restored = try #require(relaunched.model(Author.self, modelId: author.modelId))
        #expect(relaunched.metadataTable(Self.namespace).values[author.modelId] == "17")
        #expect(restored.hasChanges)
        #expect(restored.changes == expected)
        #expect(restored.changes.properties == ["name", "birthday", "posts"])
        let draft = try #require(relaunched.model(Post.self, modelId: post.modelId))
        #expect(draft.modelState == .new)
        #expect(draft.hasChanges)
        // And once more, through a file of the relaunched context.
        let again = ModelContext()
        try again.load(relaunched.data(format: format))
        #expect(again.model(Author.self, modelId: author.modelId)?.changes == expected)
    }

    @Test("Setting a restored property back to its old value is no change; reverting puts the old values back")
    func restoredBaseline() throws {
        try ModelRegistry.register(Author.self, Post.self)
        let (context, author, _) = try Self.edited()
        let relaunched = ModelContext()
        try relaunched.load(context.data())
        let restored = try #require(relaunched.model(Author.self, modelId: author.modelId))
        restored.name = "Ann"
        #expect(restored.changes.properties == ["birthday", "posts"])
        restored.revertChanges()
        #expect(!restored.hasChanges)
        #expect(restored.name == "Ann")
        #expect(restored.birthday == Date(timeIntervalSinceReferenceDate: 1_000.25))
        #expect(restored.posts.isEmpty)
        restored.name = "Bo"
        #expect(restored.changes.properties == ["name"])
    }

    @Test("A snapshot carries the tracking into the context it merges into")
    func snapshot() throws {
        try ModelRegistry.register(Author.self, Post.self)
        let (context, author, post) = try Self.edited()
        let main = ModelContext()
        try main.merge(context.snapshotOfChanges())
        #expect(main.metadataTable(Self.namespace).values[author.modelId] == "17")
        #expect(main.model(Author.self, modelId: author.modelId)?.changes.properties == ["name", "birthday", "posts"])
        #expect(main.model(Post.self, modelId: post.modelId)?.modelState == .new)
    }

    @Test(
        "A tracking member of the wrong shape fails with a typed error at its path, and the context is unchanged",
        arguments: [
            (#""tracking": []"#, "tracking"),
            (#""tracking": {"metadata": {"v": {"not-an-id": "1"}}}"#, "tracking.metadata.v"),
            (
                #""tracking": {"metadata": {"v": {"0F0C61A2-93D4-4E1B-0000-000000000001": 1}}}"#,
                "tracking.metadata.v.0F0C61A2-93D4-4E1B-0000-000000000001"
            ),
            (#""tracking": {"new": [3]}"#, "tracking.new"),
            (#""tracking": {"new": {}}"#, "tracking.new"),
            (#""tracking": {"new": ["not-an-id"]}"#, "tracking.new"),
            // The placeholders' list has the new models' form and is read by the same code.
            (#""tracking": {"placeholders": [3]}"#, "tracking.placeholders"),
            (#""tracking": {"placeholders": "0F0C61A2-93D4-4E1B-0000-000000000001"}"#, "tracking.placeholders"),
            (#""tracking": {"new": [], "placeholders": ["not-an-id"]}"#, "tracking.placeholders"),
            (
                #""tracking": {"changed": {"0F0C61A2-93D4-4E1B-0000-000000000001": "x"}}"#,
                "tracking.changed.0F0C61A2-93D4-4E1B-0000-000000000001"
            ),
        ])
    func malformed(member: String, path: String) throws {
        try ModelRegistry.register(Author.self)
        let text = """
            {"format": "ModelKit", "version": 1, "models": [{"model": "Author", \
            "modelId": "0F0C61A2-93D4-4E1B-0000-000000000001", "properties": {"name": "New"}}], \(member)}
            """
        let context = ModelContext()
        let kept = Author.instance(modelId: ModelID("0F0C61A2-93D4-4E1B-0000-000000000001")!, in: context)
        kept.name = "Old"
        for data in [Data(text.utf8), try plist(from: text)] {
            let error = #expect(throws: SerializationError.self) { try context.load(data) }
            #expect(error?.path == path)
            #expect(kept.name == "Old")
            #expect(context.metadataTables.isEmpty)
        }
    }

    @Test("Files without the member, and members this version does not know, load as before")
    func unknownMembers() throws {
        try ModelRegistry.register(Author.self)
        let text = """
            {"format": "ModelKit", "version": 1, "models": [{"model": "Author", \
            "modelId": "0F0C61A2-93D4-4E1B-0000-000000000001", "properties": {"name": "New"}}], \
            "tracking": {"later": [1, 2], "new": ["0F0C61A2-93D4-4E1B-0000-0000000000FF"]}}
            """
        let context = ModelContext()
        try context.load(Data(text.utf8))
        let author = try #require(context.allModels.first as? Author)
        #expect(author.modelState == .loaded)
        #expect(!author.hasChanges)
    }

    /// The same document as a binary property list (JSON null has no property-list form; the
    /// documents here hold none).
    func plist(from text: String) throws -> Data {
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
        return try PropertyListSerialization.data(fromPropertyList: object, format: .binary, options: 0)
    }
}
