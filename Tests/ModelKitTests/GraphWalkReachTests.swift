import Foundation
import ModelKitTestSupport
import Testing

@testable import ModelKit

// The walk from a root writes each queued model without retaining it again, looks new targets up
// in the owner's context directly, and grows its tables towards the size of the root's context.
// These tests check that what it writes is still what the look-up wrote, and what the context
// writer writes for the same models, whatever part of the context the root reaches.

/// A root holding authors, with a reference to itself.
final class WalkRoot: ModelObject<WalkRoot.Properties> {
    struct Properties: ModelProperties, Equatable {
        var circular = ModelRef<WalkRoot>()
        var authors = ModelArray<Author>()
    }
}

extension GraphWalkTests {
    /// The model dictionaries of a whole-context document, by model id.
    func contextModels(_ context: ModelContext) throws -> [String: ModelValue] {
        guard case .array(let models) = try ModelValue(json: context.data(format: .json))["models"] else {
            Issue.record("expected the document's models")
            return [:]
        }
        return Dictionary(uniqueKeysWithValues: models.compactMap { model in model["modelId"]?.stringValue.map { ($0, model) } })
    }

    @Test("A root that reaches all of a large context writes each model as the context writer does, once")
    func wholeLargeContext() throws {
        // Past several growths of the walk's tables (a few thousand models), with cycles
        // (author and posts), shared targets (a post listed by two authors) and repeats.
        let context = ModelContext()
        let authors = makeBlog(authors: 150, postsPerAuthor: 20, in: context)
        authors[0].posts.append(Array(authors[1].posts)[3])
        authors[7].posts.append(Array(authors[7].posts)[0])
        let root = WalkRoot.instance(in: context)
        root.circular = root
        root.authors = ModelArray(authors)
        try expectSameBytes(root)
        let walked = try models(in: root.jsonData())
        #expect(walked.count == context.count)
        #expect(walked.first?["modelId"]?.stringValue == root.modelId.description)
        // The same dictionaries as the context writer's, model for model (only the order differs).
        let whole = try contextModels(context)
        let ids = walked.compactMap { $0["modelId"]?.stringValue }
        #expect(Set(ids).count == ids.count, "each model once")
        for model in walked {
            let id = try #require(model["modelId"]?.stringValue)
            #expect(model == whole[id], "model \(id) differs from the context writer's")
        }
    }

    @Test("A root that reaches part of a large context writes that part only, with tables of its size")
    func partOfLargeContext() throws {
        let context = ModelContext()
        let authors = makeBlog(authors: 200, postsPerAuthor: 10, in: context)
        let root = authors[5]
        try expectSameBytes(root)
        let walked = try models(in: root.jsonData())
        #expect(walked.count == 11)
        let expected = Set([root.modelId] + root.posts.map(\.modelId)).map(\.description)
        #expect(Set(walked.compactMap { $0["modelId"]?.stringValue }) == Set(expected))
        // The tables grew for the 11 models reached, not for the 2,200 in the context.
        let writer = GraphStreamWriter(sink: JSONSink(buffer: OutputBuffer(descriptor: nil)))
        try writer.writeModels(root: root)
        #expect(writer.queuedModels.count == 11)
        #expect(writer.positions.capacity <= 128, "\(writer.positions.capacity) slots for 11 models")
    }

    @Test("A walk that crosses into another context mid-way writes what the look-up wrote, each model once")
    func largeAcrossContexts() throws {
        let home = ModelContext()
        let elsewhere = ModelContext()
        let homeAuthors = makeBlog(authors: 40, postsPerAuthor: 10, in: home)
        let otherAuthors = makeBlog(authors: 40, postsPerAuthor: 10, in: elsewhere)
        // Each home author's first post points to an author of the other context (which the post
        // holds), and so reaches all of that author's posts there.
        for (index, author) in homeAuthors.enumerated() {
            Array(author.posts)[0].author = otherAuthors[index]
        }
        let root = WalkRoot.instance(in: home)
        root.authors = ModelArray(homeAuthors)
        try expectSameBytes(root)
        let walked = try models(in: root.jsonData())
        let ids = walked.compactMap { $0["modelId"]?.stringValue }
        #expect(Set(ids).count == ids.count, "each model once")
        #expect(walked.count == 1 + home.count - 1 + otherAuthors.count * 11)
    }

    @Test("A large graph of models in no context is written as the look-up wrote it")
    func largeWithoutContext() throws {
        // No context: the tables double as before (no context size to grow towards).
        let author = Author()
        for index in 0..<1_500 {
            let post = Post()
            post.title = "post \(index)"
            post.author = author
            author.posts.append(post)
        }
        try expectSameBytes(author)
        #expect(try models(in: author.jsonData()).count == 1_501)
    }
}

/// A value whose encoding runs `hook`: a way for a test to change the context while a walk
/// writes a model (which no app should do).
struct EncodeHook: Codable, Equatable {
    nonisolated(unsafe) static var hook: (() -> Void)?

    init() {}
    init(from decoder: any Decoder) throws {}
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encodeNil()
        Self.hook?()
    }
}

/// A node that references others, then encodes a hook.
final class HookNode: ModelObject<HookNode.Properties> {
    struct Properties: ModelProperties {
        var next = ModelArray<HookNode>()
        var hook = EncodeHook()
    }
}

@Suite("A walk whose context changes under it", .serialized)
struct GraphWalkMutationTests {
    @Test("Removing a model of the context while the walk writes is refused, never a model written twice")
    @MainActor func removalDuringWalk() throws {
        try ModelRegistry.register(HookNode.self)
        let context = ModelContext()
        let nodes = (0..<10).map { _ in HookNode.instance(in: context) }
        // The root reaches every node; each node reaches the last one.
        nodes[0].next = ModelArray(Array(nodes.dropFirst()))
        for node in nodes.dropFirst().dropLast() { node.next = ModelArray([nodes[9]]) }
        var removed = false
        EncodeHook.hook = {
            // While the root is written (its references queued): node 1 leaves, and the last
            // node moves into its place in the context's list.
            guard !removed else { return }
            removed = true
            context.remove(nodes[1])
        }
        defer { EncodeHook.hook = nil }
        #expect(throws: SerializationError.self) { _ = try nodes[0].jsonData() }
        // Without a change under it, the walk writes each model once (node 1 has left).
        let copy = try HookNode.instance(fromJSON: nodes[0].jsonData())
        #expect(copy.next.count == 8)
    }
}
