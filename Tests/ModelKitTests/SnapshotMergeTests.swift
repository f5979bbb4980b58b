import Foundation
import ModelKit
import Testing

/// A background domain that edits what it is given and hands back what changed.
actor BlogEditor: ModelActor {
    let modelContext = ModelContext()

    /// Merges `snapshot`, renames every author, adds a post to each and removes `removing`.
    func edit(_ snapshot: ModelSnapshot, suffix: String, removing: [ModelID]) throws -> ModelSnapshot {
        try modelContext.merge(snapshot)
        modelContext.resetChanges()
        for author in modelContext.models(of: Author.self) {
            author.name += suffix
            let post = Post.instance(in: modelContext)
            post.title = "by \(author.name)"
            post.author = author
            author.posts.append(post)
        }
        for id in removing { modelContext.model(withId: id)?.removeFromContext() }
        return try modelContext.snapshotOfChanges()
    }

    /// Makes `count` authors with one post each, as a background import does.
    func importAuthors(_ count: Int) throws -> ModelSnapshot {
        for index in 0..<count {
            let author = Author.instance(objectId: "import-\(index)", in: modelContext)
            author.age = index
            let post = Post.instance(in: modelContext)
            post.author = author
            author.posts.append(post)
        }
        return try modelContext.snapshotOfChanges()
    }
}

@Suite("Snapshots and merging")
@MainActor struct SnapshotMergeTests {
    @Test("A merged snapshot updates the instances the context holds in place and reports each change")
    func mergeUpdatesInPlace() async throws {
        let context = ModelContext()
        let authors = makeBlog(authors: 3, postsPerAuthor: 2, in: context)
        let posts = context.models(of: Post.self)
        let removedPostsAuthor = posts[0].author
        context.resetChanges()
        var events: [ModelChangeEvent] = []
        let token = context.observeChanges { events.append($0) }
        defer { token.cancel() }

        let snapshot = try context.snapshot(of: authors)
        let edited = try await BlogEditor().edit(snapshot, suffix: " (edited)", removing: [posts[0].modelId])
        try context.merge(edited)

        #expect(context.models(of: Author.self).count == 3)
        for author in authors {
            #expect(context.model(Author.self, modelId: author.modelId) === author)  // the same instance
            #expect(author.name.hasSuffix(" (edited)"))
            // Two posts each, one more from the editor, less the removed one where it was.
            #expect(author.posts.count == (removedPostsAuthor === author ? 2 : 3))
        }
        #expect(context.model(Post.self, modelId: posts[0].modelId) == nil)  // removed there, removed here
        #expect(posts[0].modelContext == nil)
        #expect(posts[1].modelContext === context)
        let updated = Set(events.filter { $0.kind == .updated }.map(\.modelId))
        #expect(Set(authors.map(\.modelId)).isSubset(of: updated))
        #expect(events.filter { $0.kind == .inserted }.count == 3)  // one new post per author
        #expect(events.filter { $0.kind == .removed }.map(\.modelId) == [posts[0].modelId])
    }

    @Test("A snapshot carries models, their references and their ids, and nothing else")
    func snapshotContents() throws {
        let context = ModelContext()
        let authors = makeBlog(authors: 2, postsPerAuthor: 3, in: context)
        let snapshot = try context.snapshot(of: [authors[0]])
        #expect(snapshot.modelIds == [authors[0].modelId])
        #expect(snapshot.removedIds.isEmpty)
        #expect(!snapshot.isEmpty)

        let other = ModelContext()
        try other.merge(snapshot)
        #expect(other.count == 4)  // the author and the posts it reaches
        let copy = try #require(other.model(Author.self, modelId: authors[0].modelId))
        #expect(copy.persistedProperties == authors[0].persistedProperties)
        #expect(copy.posts.allSatisfy { $0.author === copy })
    }

    @Test("An empty snapshot merges as nothing")
    func emptySnapshot() throws {
        let context = ModelContext()
        _ = makeBlog(authors: 1, postsPerAuthor: 1, in: context)
        context.resetChanges()
        let snapshot = try context.snapshotOfChanges()
        #expect(snapshot.isEmpty)
        let target = ModelContext()
        try target.merge(snapshot)
        #expect(target.isEmpty)
        #expect(!target.hasChanges)
    }

    @Test("A snapshot that does not load leaves the context exactly as before and removes nothing")
    func failedMergeChangesNothing() throws {
        let context = ModelContext()
        let author = makeBlog(authors: 1, postsPerAuthor: 1, in: context)[0]
        let note = Note.instance(in: context)
        context.resetChanges()
        // The other context holds a Post under the author's id, and removed its copy of the note.
        let other = ModelContext()
        Post.instance(modelId: author.modelId, in: other).title = "impostor"
        let copy = Note.instance(modelId: note.modelId, in: other)
        other.resetChanges()
        Post.instance(modelId: author.modelId, in: other).title = "impostor, changed"
        copy.removeFromContext()
        let snapshot = try other.snapshotOfChanges()
        #expect(snapshot.modelIds == [author.modelId])
        #expect(snapshot.removedIds == [note.modelId])

        #expect(throws: SerializationError.self) { try context.merge(snapshot) }
        #expect(context.model(Author.self, modelId: author.modelId) === author)
        #expect(note.modelContext === context)
        #expect(context.count == 3)
        #expect(!context.hasChanges)
    }

    @Test("A background import of many models merges into the main actor's context while it is read and queried")
    func backgroundImportWhileReading() async throws {
        let context = ModelContext()
        let local = makeBlog(authors: 50, postsPerAuthor: 2, in: context)
        let editor = BlogEditor()
        let count = 50_000  // authors; each brings a post: 100k models
        async let imported = editor.importAuthors(count)
        // Meanwhile the main actor keeps reading and querying its own models.
        var reads = 0
        for round in 0..<200 {
            reads += try Author.query(in: context).where(\.age, .greaterThan(-1)).count()
            reads += local[round % local.count].posts.count
            await Task.yield()
        }
        let snapshot = try await imported
        try context.merge(snapshot)
        #expect(reads > 0)
        #expect(context.models(of: Author.self).count == 50 + count)
        #expect(context.models(of: Post.self).count == 100 + count)
        // No model lost or duplicated: one instance per object id, each with its one post.
        for index in stride(from: 0, to: count, by: 997) {
            let author = try #require(context.model(Author.self, objectId: "import-\(index)"))
            #expect(author.age == index)
            #expect(author.posts.count == 1)
            #expect(author.posts.first?.author === author)
        }
        #expect(
            try Author.query(in: context).where(\.age, .between(100, 199)).count() == 100
                + local.filter { (100...199).contains($0.age) }.count)
    }
}
