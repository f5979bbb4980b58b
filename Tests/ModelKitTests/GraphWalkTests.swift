import Foundation
import ModelKitTestSupport
import Testing

@testable import ModelKit

// A walk from a root writes a pointer to a model it has already queued without looking the
// target up in the owner's context when the queued model is that context's own instance of the
// reference's class (the context holds one instance per id). Every other case still looks it up.
// These tests write each graph both ways and compare the bytes.

/// A model whose reference is declared to an `Author` but may be given the id of another class.
final class Mislabelled: ModelObject<Mislabelled.Properties> {
    struct Properties: ModelProperties, Equatable {
        // The array first, so that its post is queued before the reference is written.
        var posts = ModelArray<Post>()
        var author = ModelRef<Author>()
    }
}

@Suite("Writing a graph from its root")
@MainActor struct GraphWalkTests {
    /// `root`'s graph as JSON text the way the walk wrote it before it checked queued targets by
    /// context and class: every reference to a queued model looked up in its owner's context.
    func jsonByLookUp(_ root: some Model) throws -> Data {
        let buffer = OutputBuffer(descriptor: nil)
        let writer = GraphStreamWriter(sink: JSONSink(buffer: buffer))
        writer.looksUpQueuedTargets = true
        try writer.writeModels(root: root)
        #expect(writer.sawReference, "the graphs here all have references: jsonData() writes the array form")
        return buffer.takeData()
    }

    /// The models of a graph's text (its array form).
    func models(in text: Data) throws -> [ModelValue] {
        guard case .array(let models) = try ModelValue(json: text) else {
            Issue.record("expected the array form")
            return []
        }
        return models
    }

    /// Whether `root.jsonData()` and the look-up's text are the same bytes.
    func expectSameBytes(_ root: some Model, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let walked = try root.jsonData()
        let lookedUp = try jsonByLookUp(root)
        #expect(walked == lookedUp, "\(walked.count) bytes against \(lookedUp.count)", sourceLocation: sourceLocation)
    }

    @Test("A graph full of cycles is written byte for byte as the look-up wrote it, from every root")
    func cycles() throws {
        let context = ModelContext()
        let authors = makeBlog(authors: 20, postsPerAuthor: 15, in: context)
        // Shared targets and repeats: an author's posts also list another author's post, twice.
        authors[0].posts.append(Array(authors[1].posts)[0])
        authors[0].posts.append(Array(authors[1].posts)[0])
        let loop = VeryConvolutedExample.instance(in: context)
        loop.circular = loop
        for root in authors { try expectSameBytes(root) }
        try expectSameBytes(Array(authors[3].posts)[2])
        try expectSameBytes(loop)
        // Every model once: the authors reached from the first, and all their posts.
        let text = try authors[0].jsonData()
        #expect(try models(in: text).count == 2 + 15 + 15)
    }

    @Test("A graph that reaches models of another context is written as the look-up wrote it")
    func acrossContexts() throws {
        let home = ModelContext()
        let elsewhere = ModelContext()
        let post = Post.instance(in: home)
        post.title = "at home"
        let author = Author.instance(in: elsewhere)
        author.name = "elsewhere"
        // Each holds the other's model: the references resolve through what they hold, and the
        // pointers back to the post are written by a model whose context is not the post's.
        post.author = author
        author.posts.append(post)
        let local = Post.instance(in: elsewhere)
        local.author = author
        author.posts.append(local)
        try expectSameBytes(post)
        try expectSameBytes(author)
        let models = try models(in: post.jsonData())
        #expect(models.count == 3)
        let expected = [post.modelId, author.modelId, local.modelId].map(\.description)
        #expect(models.compactMap { $0["modelId"]?.stringValue } == expected)
    }

    @Test("Two instances with one id in two contexts fail the same way, with the graph's error")
    func sameIdInTwoContexts() throws {
        let home = ModelContext()
        let authors = makeBlog(authors: 1, postsPerAuthor: 3, in: home)
        let copy = ModelContext()
        try copy.load(home.data(format: .json))
        // A post of `home` is given an author of the copy (an id `home` does not have, so the
        // reference resolves through what the post holds), whose posts resolve in the copy to
        // the copy's instances of the same ids as `home`'s posts.
        let post = Array(authors[0].posts)[0]
        let stranger = Author.instance(in: copy)
        stranger.posts.append(try #require(copy.model(Post.self, modelId: post.modelId)))
        post.author = stranger
        func failure(_ write: () throws -> Data) -> SerializationError? {
            do {
                _ = try write()
                return nil
            } catch {
                return error as? SerializationError
            }
        }
        let walked = failure { try post.jsonData() }
        let lookedUp = failure { try jsonByLookUp(post) }
        #expect(walked?.code == .duplicateModelId)
        #expect(lookedUp?.code == .duplicateModelId)
        #expect(walked?.description == lookedUp?.description)
    }

    @Test("Models in no context are written as the look-up wrote them")
    func withoutContext() throws {
        let author = Author()
        author.name = "unattached"
        for index in 0..<4 {
            let post = Post()
            post.title = "post \(index)"
            post.author = author
            author.posts.append(post)
        }
        try expectSameBytes(author)
        try expectSameBytes(Array(author.posts)[2])
        #expect(try models(in: author.jsonData()).count == 5)
    }

    @Test("A reference whose id is a queued model of another class is written as null, as the look-up wrote it")
    func otherClass() throws {
        let context = ModelContext()
        let mislabelled = Mislabelled.instance(in: context)
        let post = Post.instance(in: context)
        mislabelled.posts.append(post)
        // The `Author` reference holds the id of the post, which is queued before the
        // reference is written: it resolves to no `Author`.
        mislabelled.storage.values.author = ModelRef<Author>(id: post.modelId)
        #expect(mislabelled.author == nil)
        try expectSameBytes(mislabelled)
        let models = try models(in: mislabelled.jsonData())
        #expect(models.count == 2)
        #expect(models.first?["properties"]?["author"] == .null)
    }

    @Test("References to models removed from the context are left out, as the look-up left them out")
    func removedTargets() throws {
        let context = ModelContext()
        let authors = makeBlog(authors: 2, postsPerAuthor: 4, in: context)
        let removed = Array(authors[0].posts)[1]
        context.remove(removed)
        try expectSameBytes(authors[0])
        // The removed post is in no context now: its reference reads nil, and its graph is itself.
        try expectSameBytes(removed)
        let models = try models(in: authors[0].jsonData())
        #expect(models.count == 4)
        #expect(!models.contains { $0["modelId"]?.stringValue == removed.modelId.description })
    }
}
