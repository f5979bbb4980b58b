import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

// References hold no Swift `weak` reference: they are ids looked up in the owner's context. A
// model that can't look there (in no context yet, or given a model of another context) holds
// what it was given, so that a graph built before it joins a context stays whole.

@Suite("Graphs built outside a context")
@MainActor struct HeldReferenceTests {
    @Test("A graph built before it joins a context reads its references, and joins whole")
    func graphBuiltOutside() {
        let author = Author()
        author.name = "Ann"
        let posts = (0..<3).map { index -> Post in
            let post = Post()
            post.title = "p\(index)"
            post.author = author
            return post
        }
        author.posts = ModelArray(posts)
        #expect(author.posts.map(\.title) == ["p0", "p1", "p2"])
        #expect(posts.allSatisfy { $0.author === author })

        let context = ModelContext()
        context.insert(author)
        #expect(context.count == 4)  // the posts joined with their author
        #expect(posts.allSatisfy { $0.modelContext === context })
        #expect(posts.allSatisfy { $0.author === author })
        #expect(author.posts.map(\.title) == ["p0", "p1", "p2"])
    }

    @Test("Models appended to an array of a model in no context are held until it joins one")
    func appendedOutside() {
        let tracker = LifetimeTracker()
        let author = Author()
        do {
            let post = Post()
            post.lifetime = tracker.token()
            author.posts.append(post)
        }
        #expect(tracker.liveCount == 1)  // held by the author
        #expect(author.posts.count == 1)
        let context = ModelContext()
        context.insert(author)
        #expect(context.count == 2)
        #expect(tracker.liveCount == 1)  // now the context's
        author.posts.first?.removeFromContext()
        #expect(tracker.liveCount == 0)
        #expect(author.posts.isEmpty)
    }

    @Test("A long chain built outside a context joins it without recursion")
    func longChain() {
        let count = 100_000
        let head = Node()
        var tail = head
        for value in 1..<count {
            let next = Node()
            next.value = value
            tail.next = next
            tail = next
        }
        let context = ModelContext()
        context.insert(head)
        #expect(context.count == count)
        var node: Node? = head
        var seen = 0
        while let current = node {
            #expect(current.value == seen)
            seen += 1
            node = current.next
        }
        #expect(seen == count)
    }

    @Test("A model given a model of another context holds it, reads it and writes it with its own")
    func acrossContexts() throws {
        let tracker = LifetimeTracker()
        let context = ModelContext()
        let post = Post.instance(in: context)
        do {
            let elsewhere = ModelContext()
            let outsider = Author.instance(in: elsewhere)
            outsider.lifetime = tracker.token()
            outsider.name = "from elsewhere"
            post.author = outsider
        }
        #expect(tracker.liveCount == 1)  // its context is gone; the post holds it
        // A model whose context is gone is not live: the reference reads nil, as for removals.
        #expect(post.author == nil)

        let other = ModelContext()
        let writer = Author.instance(in: other)
        post.author = writer
        #expect(post.author === writer)
        let target = ModelContext()
        try target.load(context.data(format: .json))
        #expect(target.model(Post.self, modelId: post.modelId)?.author?.modelId == writer.modelId)
    }

    @Test("A cycle built outside a context is released with the context it joins")
    func cycleJoinsAndIsReleased() {
        let tracker = LifetimeTracker()
        do {
            let context = ModelContext()
            let author = Author()
            author.lifetime = tracker.token()
            let post = Post()
            post.lifetime = tracker.token()
            post.author = author
            author.posts.append(post)
            context.insert(post)
            #expect(context.count == 2)
            #expect(tracker.liveCount == 2)
        }
        #expect(tracker.liveCount == 0)
    }
}
