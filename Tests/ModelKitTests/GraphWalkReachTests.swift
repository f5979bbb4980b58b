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
@MainActor struct GraphWalkMutationTests {
    /// `count` nodes in `context`: each reaches the next (so the root, node 0, reaches them
    /// all), two others at random and the last one, which a removal moves into the removed
    /// model's slot in the context's list.
    func makeNodes(_ count: Int, seed: UInt64, in context: ModelContext) -> [HookNode] {
        var random = SplitMix64(seed: seed)
        let nodes = (0..<count).map { _ in HookNode.instance(in: context) }
        for (index, node) in nodes.enumerated() {
            var next = [nodes[(index + 1) % count]]
            next += (0..<2).map { _ in nodes[Int.random(in: 0..<count, using: &random)] }
            next.append(nodes[count - 1])
            node.next = ModelArray(next)
        }
        return nodes
    }

    /// `root`'s graph as JSON text (what `jsonData()` writes), with the node whose id is
    /// `removedId` removed from `root`'s context while the walk writes the `step`th node (its hook
    /// runs after its references are written); by the walk by id alone (the look-up) when
    /// `byId`. Also whether the walk stopped positioning models by type slot.
    func walk(_ root: HookNode, removing removedId: ModelID, atStep step: Int, byId: Bool = false) throws
        -> (text: Data, droppedSlots: Bool)
    {
        let context = try #require(root.modelContext)
        var steps = 0
        EncodeHook.hook = {
            steps += 1
            guard steps == step, let removed = context.model(HookNode.self, modelId: removedId) else { return }
            context.remove(removed)
        }
        defer { EncodeHook.hook = nil }
        #expect(context.removalCount == 0)
        defer { #expect(context.removalCount == 1, "the hook ran \(steps) times, not \(step)") }
        let buffer = OutputBuffer(descriptor: nil)
        let writer = GraphStreamWriter(sink: JSONSink(buffer: buffer))
        writer.looksUpQueuedTargets = byId
        try writer.writeModels(root: root)
        return (buffer.takeData(), writer.retiredSlots != nil)
    }

    /// Checks that `text`, a graph's array form, holds models each once (`count` of them, when
    /// given), and that every pointer in a node's `next` is to one of them; returns their ids.
    @discardableResult
    func expectWholeGraph(_ text: Data, count: Int? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> [String]
    {
        guard case .array(let models) = try ModelValue(json: text) else {
            Issue.record("expected the array form", sourceLocation: sourceLocation)
            return []
        }
        let ids = models.compactMap { $0["modelId"]?.stringValue }
        if let count { #expect(ids.count == count, sourceLocation: sourceLocation) }
        #expect(Set(ids).count == ids.count, "each model once", sourceLocation: sourceLocation)
        let known = Set(ids)
        var pointers = 0
        for model in models {
            guard case .array(let next)? = model["properties"]?["next"] else { continue }
            for pointer in next {
                pointers += 1
                let id = pointer["modelId"]?.stringValue ?? "none"
                #expect(known.contains(id), "a pointer to \(id), which is not written", sourceLocation: sourceLocation)
            }
        }
        #expect(pointers > 0, sourceLocation: sourceLocation)
        return ids
    }

    @Test("A model removed from the context while the root is written leaves each model written once, all pointers resolving")
    func removalWhileRootIsWritten() throws {
        try ModelRegistry.register(HookNode.self)
        let context = ModelContext()
        let nodes = (0..<10).map { _ in HookNode.instance(in: context) }
        // The root reaches every node; each node reaches the last one.
        nodes[0].next = ModelArray(Array(nodes.dropFirst()))
        for node in nodes.dropFirst().dropLast() { node.next = ModelArray([nodes[9]]) }
        // While the root is written (its references queued): node 1 leaves, and the last node
        // moves into its place in the context's list, where node 1's position is.
        let (text, dropped) = try walk(nodes[0], removing: nodes[1].modelId, atStep: 1)
        #expect(dropped, "node 9 moved, and was reached again: the walk went on by id")
        let ids = try expectWholeGraph(text, count: 10)
        #expect(Set(ids) == Set(nodes.map(\.modelId.description)))
        // Loaded back: the root's nine targets and the last node, which eight of them share.
        let loaded = ModelContext()
        let copy = try HookNode.instance(fromJSON: text, in: loaded)
        let targets = Array(copy.next)
        #expect(targets.map(\.modelId) == nodes.dropFirst().map(\.modelId))
        let last = try #require(targets.last)
        for node in targets.dropLast() { #expect(Array(node.next).first === last) }
        // Without a change under it, the walk writes each model once (node 1 has left).
        let again = try HookNode.instance(fromJSON: nodes[0].jsonData())
        #expect(again.next.count == 8)
    }

    @Test(
        "A removal early, midway or late in a walk over pages of slots gives what the walk by id gives, each model once",
        arguments: [1, 2, 3, 700, 1_300, 2_498, 2_499, 2_500])
    func removalAtEveryStage(step: Int) throws {
        try ModelRegistry.register(HookNode.self)
        // More than two pages (1,024 slots each) of nodes; a twin context holds the same models
        // (the same ids), and the walk by id, which no slot can mislead, writes the twin. The
        // node that leaves: node 1 (queued by the first node written) or node 1,500 (on the
        // second page); the last node moves into its slot.
        let count = 2_500
        var dropped = 0
        for removedIndex in [1, 1_500] {
            let context = ModelContext()
            let nodes = makeNodes(count, seed: 0x30_2026 &+ UInt64(step), in: context)
            let twin = ModelContext()
            try twin.load(context.data(format: .json))
            let twinRoot = try #require(twin.model(HookNode.self, modelId: nodes[0].modelId))
            let removed = nodes[removedIndex].modelId
            let (walked, droppedSlots) = try walk(nodes[0], removing: removed, atStep: step)
            let byId = try walk(twinRoot, removing: removed, atStep: step, byId: true).text
            if droppedSlots { dropped += 1 }
            // (A node that left before the walk reached it is not written, nor are the nodes
            // reached only through it.)
            let ids = try expectWholeGraph(walked)
            #expect(ids.count > count / 2)
            #expect(walked == byId, "node \(removedIndex) removed: \(walked.count) bytes against \(byId.count)")
            #expect(context.model(HookNode.self, modelId: removed) == nil)
            // Walked again, after the removal: by slot, as the look-up writes it.
            let lookUp = GraphStreamWriter(sink: JSONSink(buffer: OutputBuffer(descriptor: nil)))
            lookUp.looksUpQueuedTargets = true
            try lookUp.writeModels(root: nodes[0])
            #expect(try nodes[0].jsonData() == lookUp.sink.buffer.takeData())
        }
        // The last node moved into the removed one's slot; when it was reached after that (all
        // but the last steps), the walk noticed and went on by id.
        if step < count - 1 { #expect(dropped == 2) }
    }
}
