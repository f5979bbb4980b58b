import Foundation
import ModelKit
import Testing

/// A background importer that knows records by their object ids (a server's ids), not by the
/// model ids the main context gave them: what issue #30 found failing (item 9).
actor RecordImporter: ModelActor {
    let modelContext = ModelContext()

    /// Authors by object id, with their names.
    func importAuthors(_ names: [String: String]) throws -> ModelSnapshot {
        for (objectId, name) in names.sorted(by: { $0.key < $1.key }) {
            Author.instance(objectId: objectId, in: modelContext).name = name
        }
        return try modelContext.snapshotOfChanges()
    }

    /// Author "bob" with post "p1" (both by object id) and a new post, each pointing back at him.
    func importBobsPosts() throws -> ModelSnapshot {
        let bob = Author.instance(objectId: "bob", in: modelContext)
        bob.age = 41
        let known = Post.instance(objectId: "p1", in: modelContext)
        known.title = "p1, edited"
        let fresh = Post.instance(in: modelContext)
        fresh.title = "new"
        for post in [known, fresh] {
            post.author = bob
            bob.posts.append(post)
        }
        return try modelContext.snapshotOfChanges()
    }

    /// Folder "inbox" (by object id) with memo "m1" (by object id) and a new memo, linked
    /// through the declared inverse only.
    func importInbox() throws -> ModelSnapshot {
        let inbox = Folder.instance(objectId: "inbox", in: modelContext)
        inbox.name = "Inbox"
        Memo.instance(objectId: "m1", in: modelContext).folder = inbox
        let fresh = Memo.instance(in: modelContext)
        fresh.title = "new"
        fresh.folder = inbox
        return try modelContext.snapshotOfChanges()
    }

    /// Merges what another context hands over, as the ids to build on.
    func merge(_ snapshot: ModelSnapshot) throws {
        try modelContext.merge(snapshot)
        modelContext.resetChanges()
    }

    /// Two different authors that both claim object id "bob".
    func importTwoBobs() throws -> ModelSnapshot {
        Author.instance(objectId: "bob", in: modelContext).name = "first"
        let second = Author.instance(in: modelContext)
        second.name = "second"
        second.objectId = "bob"
        return try modelContext.snapshotOfChanges()
    }
}

@Suite("Merging models matched by object id")
@MainActor struct UpsertMergeTests {
    @Test("A background import by object id updates the model the context already holds, and adds the others")
    func upsertUpdatesInPlace() async throws {
        let context = ModelContext()
        let bob = Author.instance(objectId: "bob", in: context)
        bob.name = "Bob"
        bob.email = "bob@example.com"
        let created = bob.createdAt
        context.resetChanges()
        var events: [ModelChangeEvent] = []
        let token = context.observeChanges { events.append($0) }
        defer { token.cancel() }

        let snapshot = try await RecordImporter().importAuthors(["bob": "Robert", "ann": "Ann"])
        try context.merge(snapshot)

        #expect(context.models(of: Author.self).count == 2)
        #expect(context.model(Author.self, objectId: "bob") === bob)  // the same instance, the same id
        #expect(context.model(Author.self, modelId: bob.modelId) === bob)
        #expect(bob.name == "Robert")
        #expect(bob.email == "")  // the incoming model's values replace the existing model's
        #expect(bob.createdAt == created)
        #expect(context.model(Author.self, objectId: "ann")?.name == "Ann")
        #expect(events.contains { $0.kind == .updated && $0.modelId == bob.modelId })
        #expect(events.filter { $0.kind == .inserted }.count == 1)

        // Merging the same import again changes nothing more.
        try context.merge(try await RecordImporter().importAuthors(["bob": "Robert"]))
        #expect(context.models(of: Author.self).count == 2)
        #expect(bob.name == "Robert")
    }

    @Test("References to a model matched by object id, to-one and in arrays, lead to the model the context holds")
    func referencesAreRedirected() async throws {
        let context = ModelContext()
        let bob = Author.instance(objectId: "bob", in: context)
        let p1 = Post.instance(objectId: "p1", in: context)
        p1.title = "p1"
        p1.author = bob
        bob.posts.append(p1)
        context.resetChanges()

        try context.merge(try await RecordImporter().importBobsPosts())

        #expect(context.models(of: Author.self).count == 1)
        #expect(context.models(of: Post.self).count == 2)
        #expect(bob.age == 41)
        #expect(p1.title == "p1, edited")
        let fresh = try #require(context.models(of: Post.self).first { $0 !== p1 })
        #expect(fresh.title == "new")
        #expect(bob.posts.map(\.modelId) == [p1.modelId, fresh.modelId])
        #expect(bob.posts.ids == [p1.modelId, fresh.modelId])  // no id the context does not hold
        #expect(p1.author === bob)
        #expect(fresh.author === bob)
        #expect(fresh.persistedProperties.author.id == bob.modelId)
    }

    @Test("Inverse relationships agree on both sides after models matched by object id are merged")
    func inversesAgree() async throws {
        let context = ModelContext()
        let inbox = Folder.instance(objectId: "inbox", in: context)
        let m1 = Memo.instance(objectId: "m1", in: context)
        let m0 = Memo.instance(objectId: "m0", in: context)
        m1.folder = inbox
        m0.folder = inbox
        #expect(inbox.notes.count == 2)
        context.resetChanges()

        try context.merge(try await RecordImporter().importInbox())

        #expect(context.models(of: Folder.self).count == 1)
        #expect(context.models(of: Memo.self).count == 3)
        let fresh = try #require(context.models(of: Memo.self).first { $0 !== m0 && $0 !== m1 })
        #expect(inbox.name == "Inbox")
        // The import's folder holds m1 and the new memo: those lead to it, and m0 no longer does.
        #expect(Set(inbox.notes.map(\.modelId)) == [m1.modelId, fresh.modelId])
        #expect(m1.folder === inbox)
        #expect(fresh.folder === inbox)
        #expect(m0.folder == nil)
        for memo in context.models(of: Memo.self) {
            #expect(memo.folder.map { $0.notes.contains { $0 === memo } } ?? !inbox.notes.contains { $0 === memo })
        }
    }

    @Test("Two models of a snapshot that claim one object id are a typed error, and the context stays as it was")
    func twoClaimsOfOneObjectId() async throws {
        let context = ModelContext()
        let bob = Author.instance(objectId: "bob", in: context)
        bob.name = "Bob"
        context.resetChanges()
        let before = try context.data(format: .json)

        let snapshot = try await RecordImporter().importTwoBobs()
        let error = #expect(throws: SerializationError.self) { try context.merge(snapshot) }
        #expect(error?.code == .duplicateObjectId)
        #expect(error?.path == "objectId")
        #expect(error?.found.contains("\"bob\"") == true)
        #expect(try context.data(format: .json) == before)
        #expect(context.model(Author.self, objectId: "bob") === bob)
        #expect(bob.name == "Bob")
        #expect(!context.hasChanges)
    }

    @Test("A model matched by model id is updated by it, even when another model has its object id")
    func modelIdComesFirst() async throws {
        // The importer merges the main context's bob first, so the ids agree; its later snapshot
        // updates bob by model id, as any merge does.
        let context = ModelContext()
        let bob = Author.instance(objectId: "bob", in: context)
        let importer = RecordImporter()
        try await importer.merge(try context.snapshot(of: [bob]))
        try context.merge(try await importer.importAuthors(["bob": "Robert"]))
        #expect(context.models(of: Author.self).count == 1)
        #expect(bob.name == "Robert")
    }
}
