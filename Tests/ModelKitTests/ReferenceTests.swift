import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@Suite("References")
@MainActor struct ReferenceTests {
    @Test("A to-one reference reads back its target")
    func toOne() {
        inFreshContext { _ in
            let author = Author.instance()
            let post = Post.instance()
            #expect(post.author == nil)
            post.author = author
            #expect(post.author === author)
            post.author = nil
            #expect(post.author == nil)
        }
    }

    @Test("References do not retain their targets")
    func weak() {
        let tracker = LifetimeTracker()
        let context = ModelContext()
        let post = Post.instance(in: context)
        do {
            let author = Author.instance(in: context)
            author.lifetime = tracker.token()
            post.author = author
        }
        #expect(tracker.liveCount == 1)  // the context holds it
        post.author?.removeFromContext()
        #expect(tracker.liveCount == 0)
        #expect(post.author == nil)
    }

    @Test("A reference to a removed model reads nil even while the app holds the model")
    func removedReadsNil() {
        inFreshContext { context in
            let author = Author.instance()
            let post = Post.instance()
            post.author = author
            author.removeFromContext()
            #expect(post.author == nil)
            #expect(context.count == 1)
            author.addToContext()
            #expect(post.author === author)
        }
    }

    @Test("A reference resolves again when a model with its id is loaded later")
    func resolvesAgain() throws {
        try inFreshContext { context in
            let author = Author.instance()
            author.name = "Jon"
            let saved = try author.serialize()
            let post = Post.instance()
            post.author = author
            author.removeFromContext()
            #expect(post.author == nil)
            let reloaded = try Author.instance(from: saved)
            #expect(reloaded !== author)
            #expect(post.author === reloaded)
            #expect(post.author?.name == "Jon")
            #expect(context.count == 2)
        }
    }

    @Test("A model whose context is gone never resolves references in another context")
    func releasedOwnerStaysReleased() throws {
        try inFreshContext { current in
            let author = Author.instance()
            let post = Post.instance()
            post.author = author
            author.posts.append(post)
            let data = try post.jsonData()
            var copy: Post?
            do {
                let loadedInto = ModelContext()
                copy = try Post.instance(fromJSON: data, in: loadedInto)
                #expect(copy?.author?.modelContext === loadedInto)
            }
            // `loadedInto` is gone: the copy's author went with it. The current context has a model
            // with the same id, but a released model must not pick it up.
            #expect(copy?.author == nil)
            #expect(copy?.modelContext == nil)
            #expect(current.model(withId: author.modelId) === author)
            #expect(try copy?.serialize()[1] == nil)
        }
    }

    @Test("An array skips removed elements and keeps repeated ones")
    func arraySkipsRemoved() {
        inFreshContext { _ in
            let author = Author.instance()
            let posts = postsTitledByIndex(5)
            author.posts.append(contentsOf: posts)
            author.posts.append(posts[0])
            #expect(author.posts.map(\.title) == ["0", "1", "2", "3", "4", "0"])
            posts[0].removeFromContext()
            posts[3].removeFromContext()
            #expect(author.posts.map(\.title) == ["1", "2", "4"])
            #expect(author.posts.count == 3)
            #expect(author.posts.first?.title == "1")
            #expect(Array(author.posts.reversed()).map(\.title) == ["4", "2", "1"])
            posts[0].addToContext()
            #expect(author.posts.map(\.title) == ["0", "1", "2", "4", "0"])
        }
    }

    @Test("An index kept while its model leaves the context still gives that model, and indices skip removed ones")
    func staleIndex() {
        inFreshContext { _ in
            let author = Author.instance()
            let posts = postsTitledByIndex(3)
            author.posts.append(contentsOf: posts)
            let first = author.posts.startIndex
            let second = author.posts.index(after: first)
            posts[0].removeFromContext()
            posts[1].removeFromContext()
            // Both subscripts used to trap: their models no longer resolve.
            #expect(author.posts[first] === posts[0])
            #expect(author.posts[second] === posts[1])
            #expect(author.posts.startIndex == author.posts.index(after: second))
            #expect(author.posts[author.posts.startIndex] === posts[2])
            #expect(author.posts.index(before: author.posts.endIndex) == author.posts.startIndex)
        }
    }

    @Test("An array supports the usual mutations")
    func arrayMutations() {
        inFreshContext { _ in
            let author = Author.instance()
            let a = Post.instance(), b = Post.instance(), c = Post.instance()
            author.posts = [a, b]
            author.posts.insert(c, at: author.posts.startIndex)
            #expect(author.posts.models.map(\.modelId) == [c, a, b].map(\.modelId))
            author.posts.removeAll { $0 === a }
            #expect(author.posts.models.map(\.modelId) == [c, b].map(\.modelId))
            author.posts.remove(at: author.posts.startIndex)
            #expect(author.posts.models.map(\.modelId) == [b.modelId])
            author.posts.removeAll()
            #expect(author.posts.isEmpty)
        }
    }

    @Test("Assigning a model that is in no context adds it to the owner's context")
    func adoption() {
        let context = ModelContext()
        let post = Post.instance(in: context)
        post.author = Author()
        #expect(post.author != nil)
        #expect(context.count == 2)
        post.author?.posts.append(Post())
        #expect(context.count == 3)
        #expect(post.author?.posts.count == 1)
    }

    @Test("An array kept after its context is gone resolves no elements, and its owner's array reads empty")
    func arrayOutlivesContext() {
        let tracker = LifetimeTracker()
        var context: ModelContext? = ModelContext()
        let author = Author.instance(in: context!)
        for title in ["a", "b", "c"] {
            let post = Post.instance(in: context!)
            post.title = title
            post.lifetime = tracker.token()
            author.posts.append(post)
        }
        let kept = author.posts
        #expect(kept.map(\.title) == ["a", "b", "c"])
        context = nil
        // The posts went with the context; the copy and the owner's array must not reach them.
        #expect(tracker.liveCount == 0)
        #expect(kept.isEmpty)
        #expect(kept.ids.count == 3)
        #expect(author.posts.isEmpty)
        #expect(author.modelContext == nil)
    }

    @Test("Appending models from anywhere: the owner's context adopts new ones and the owner holds the rest")
    func appendFromAnywhere() {
        let context = ModelContext()
        let other = ModelContext()
        let author = Author.instance(in: context)
        let here = Post.instance(in: context)
        let fresh = Post()
        let elsewhere = Post.instance(in: other)
        author.posts.append(here)
        author.posts.append(contentsOf: [fresh, elsewhere])
        #expect(fresh.modelContext === context)
        #expect(elsewhere.modelContext === other)
        #expect(context.count == 3)
        #expect(author.posts.map(\.modelId) == [here, fresh, elsewhere].map(\.modelId))
        // A model in no context keeps what it is given alive until it joins one.
        let loose = Author()
        let tracker = LifetimeTracker()
        do {
            let post = Post()
            post.lifetime = tracker.token()
            loose.posts.append(post)
        }
        #expect(tracker.liveCount == 1)
        #expect(loose.posts.count == 1)
        loose.addToContext(context)
        #expect(loose.posts.first?.modelContext === context)
        #expect(context.count == 5)
    }

    @Test("A cyclic graph is released when its context is cleared")
    func noLeakOnClear() {
        let tracker = LifetimeTracker()
        let context = ModelContext()
        for author in makeBlog(authors: 20, postsPerAuthor: 10, in: context) {
            author.lifetime = tracker.token()
            for post in author.posts { post.lifetime = tracker.token() }
        }
        let loop = VeryConvolutedExample.instance(in: context)
        loop.circular = loop
        #expect(tracker.liveCount == 220)
        context.clear()
        #expect(tracker.liveCount == 0)
        #expect(context.count == 0)
    }

    @Test("A cyclic graph is released with its context")
    func noLeakOnRelease() {
        let tracker = LifetimeTracker()
        do {
            let context = ModelContext()
            for author in makeBlog(authors: 10, postsPerAuthor: 10, in: context) {
                author.lifetime = tracker.token()
                for post in author.posts { post.lifetime = tracker.token() }
            }
            #expect(tracker.liveCount == 110)
        }
        #expect(tracker.liveCount == 0)
    }

    @Test("A loaded cyclic graph is released when its context is cleared")
    func noLeakAfterLoad() throws {
        let tracker = LifetimeTracker()
        let source = ModelContext()
        let authors = makeBlog(authors: 5, postsPerAuthor: 4, in: source)
        let value = try authors[0].serialize()
        let target = ModelContext()
        do {
            let loaded = try Author.instance(from: value, in: target)
            loaded.lifetime = tracker.token()
            for post in loaded.posts { post.lifetime = tracker.token() }
        }
        #expect(tracker.liveCount == 5)
        target.clear()
        #expect(tracker.liveCount == 0)
    }

    @Test("References compare by the id of their target")
    func equality() {
        let context = ModelContext()
        let author = Author.instance(in: context)
        #expect(ModelRef(author) == ModelRef(id: author.modelId))
        #expect(ModelRef<Author>() == ModelRef(nil))
        #expect(ModelRef(author) != ModelRef<Author>())
        #expect(ModelArray([Post(), Post()]) != ModelArray<Post>())
    }
}

@Suite("Model arrays while models go away")
@MainActor struct ModelArrayIterationTests {
    @Test("Removing a later element's model inside a for-in loop skips it instead of trapping")
    func removeDuringIteration() {
        inFreshContext { _ in
            let author = Author.instance()
            let posts = (0..<4).map { index -> Post in
                let post = Post.instance()
                post.title = "p\(index)"
                author.posts.append(post)
                return post
            }
            var seen: [String] = []
            for post in author.posts {
                seen.append(post.title)
                if post === posts[0] { posts[1].removeFromContext() }
            }
            #expect(seen == ["p0", "p2", "p3"])
            #expect(author.posts.map(\.title) == ["p0", "p2", "p3"])
            #expect(author.posts.models.count == 3)
        }
    }
}

/// `count` new posts in the current context, titled "0", "1", ….
@MainActor private func postsTitledByIndex(_ count: Int) -> [Post] {
    (0..<count).map { index in
        let post = Post.instance()
        post.title = "\(index)"
        return post
    }
}
