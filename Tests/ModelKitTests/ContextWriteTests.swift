import Foundation
import ModelKit
import Testing

/// Writing a whole context takes the context's own lists instead of walking the graph; these
/// cases are where the two could differ.
@Suite("Writing a whole context")
struct ContextWriteTests {
    init() {
        try? ModelRegistry.register(Author.self, Post.self, Node.self, VeryConvolutedExample.self)
    }

    /// The model names in a file, in order.
    private func modelNames(in data: Data) throws -> [String] {
        let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let models = try #require(document["models"] as? [[String: Any]])
        return models.compactMap { $0["model"] as? String }
    }

    @Test("a model reached outside the context is written too, after the context's own", arguments: PersistenceFormat.allCases)
    func reachedOutside(format: PersistenceFormat) throws {
        let context = ModelContext()
        let elsewhere = ModelContext()
        let post = Post.instance(in: context)
        let outsider = Author.instance(in: elsewhere)
        outsider.name = "from elsewhere"
        post.author = outsider
        let data = try context.data(format: format)
        let target = ModelContext()
        try target.load(data)
        #expect(target.count == 2)
        let loaded = try #require(target.model(Post.self, modelId: post.modelId))
        #expect(loaded.author?.name == "from elsewhere")
        #expect(loaded.author?.modelId == outsider.modelId)
    }

    @Test("references to removed models are written as null and left out of arrays", arguments: PersistenceFormat.allCases)
    func removedTargets(format: PersistenceFormat) throws {
        let context = ModelContext()
        let author = Author.instance(in: context)
        let kept = Post.instance(in: context)
        let gone = Post.instance(in: context)
        author.posts = [kept, gone, kept]
        gone.author = author
        kept.author = author
        author.removeFromContext()
        gone.removeFromContext()
        let target = ModelContext()
        try target.load(try context.data(format: format))
        #expect(target.count == 1)
        let loaded = try #require(target.model(Post.self, modelId: kept.modelId))
        #expect(loaded.persistedProperties.author.isEmpty)
    }

    @Test("a reference to another instance with the id of a context model writes the context's model once")
    func aliasedInstance() throws {
        let context = ModelContext()
        let author = Author.instance(in: context)
        author.name = "the context's"
        let copyContext = ModelContext()
        try copyContext.load(try context.data())
        let alias = try #require(copyContext.model(Author.self, modelId: author.modelId))
        alias.name = "the copy's"
        let post = Post.instance(in: context)
        post.author = alias
        let target = ModelContext()
        try target.load(try context.data())
        #expect(target.count == 2)
        #expect(target.model(Author.self, modelId: author.modelId)?.name == "the context's")
        #expect(target.model(Post.self, modelId: post.modelId)?.author?.name == "the context's")
    }

    @Test("the file lists types by model name, each in the context's order, and is the same every time")
    func order() throws {
        let context = ModelContext()
        _ = makeBlog(authors: 3, postsPerAuthor: 2, in: context)
        let loop = VeryConvolutedExample.instance(in: context)
        loop.circular = loop
        let data = try context.data()
        #expect(try context.data() == data)
        let names = try modelNames(in: data)
        #expect(names == names.sorted())
        #expect(Set(names) == ["Author", "Post", "VeryConvolutedExample"])
        #expect(names.count == 3 + 6 + 1)
        // Removing and re-adding changes the order but not the contents.
        let first = context.models(of: Post.self)[0]
        first.removeFromContext()
        context.insert(first)
        let again = ModelContext()
        try again.load(try context.data())
        #expect(try snapshot(again) == snapshot(context))
    }

    @Test("a model whose object id changed is pointed to with its new object id", arguments: PersistenceFormat.allCases)
    func objectIds(format: PersistenceFormat) throws {
        let context = ModelContext()
        let author = Author.instance(in: context)
        author.objectId = "a-1"
        let post = Post.instance(in: context)
        post.author = author
        let other = Post.instance(in: context)
        other.objectId = "p-2"
        let target = ModelContext()
        try target.load(try context.data(format: format))
        #expect(target.model(Author.self, objectId: "a-1")?.modelId == author.modelId)
        #expect(target.model(Post.self, objectId: "p-2")?.modelId == other.modelId)
        #expect(target.model(Post.self, modelId: post.modelId)?.author?.objectId == "a-1")
    }

    @Test("an empty context and a context of one self-referencing model write valid files", arguments: PersistenceFormat.allCases)
    func tiny(format: PersistenceFormat) throws {
        let empty = ModelContext()
        let target = ModelContext()
        try target.load(try empty.data(format: format))
        #expect(target.isEmpty)
        let context = ModelContext()
        let loop = VeryConvolutedExample.instance(in: context)
        loop.circular = loop
        try target.load(try context.data(format: format))
        let loaded = try #require(target.model(VeryConvolutedExample.self, modelId: loop.modelId))
        #expect(loaded.persistedProperties.circular.resolve(in: target) === loaded)
    }

    @Test("nil optionals are written as null, not left out, by the tree and the streaming encoders")
    func nilAsNull() throws {
        let context = ModelContext()
        let author = Author.instance(in: context)
        author.birthday = nil
        author.avatarURL = nil
        let tree = try author.properties
        #expect(tree["birthday"] == .null)
        #expect(tree["avatarURL"] == .null)
        let text = String(decoding: try context.data(format: .json), as: UTF8.self)
        #expect(text.contains(#""birthday":null"#))
        #expect(text.contains(#""avatarURL":null"#))
    }

    /// `instance(objectId:)` documents this: a placeholder it made stays in the context until it
    /// is removed, so a write of the context saves it, with its properties' defaults, and a load
    /// of that file can no longer tell it from a model that really has those values.
    @Test("a placeholder is written with the context and loads as a loaded model", arguments: PersistenceFormat.allCases)
    func placeholderIsWritten(format: PersistenceFormat) throws {
        let context = ModelContext()
        let placeholder = Author.instance(objectId: "backend-7", in: context)
        #expect(placeholder.modelState == .needsData)
        #expect(context.changes.inserted == [placeholder.modelId])
        let target = ModelContext()
        try target.load(try context.data(format: format))
        let loaded = try #require(target.model(Author.self, objectId: "backend-7"))
        #expect(loaded.modelId == placeholder.modelId)
        #expect(loaded.modelState == .loaded)
        #expect(loaded.name == "")

        placeholder.removeFromContext()
        let emptied = ModelContext()
        try emptied.load(try context.data(format: format))
        #expect(emptied.isEmpty)
    }
}
