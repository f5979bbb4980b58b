import Foundation
import Testing

@testable import ModelKit

/// A model type no test registers: only typed pointers tell the loader what it is.
final class Unlisted: ModelObject<Unlisted.Properties> {
    struct Properties: ModelProperties, Equatable {
        var label = ""
        var back = ModelRef<Lister>()
    }
}

/// A registered model that points to an ``Unlisted`` one.
final class Lister: ModelObject<Lister.Properties> {
    struct Properties: ModelProperties, Equatable {
        var item = ModelRef<Unlisted>()
    }
}

/// Loading into an empty context reads the input once, making the target of a pointer to a model
/// further on from the pointer's type; any other input goes to the general loader. These tests
/// compare the two (a context holding an unrelated model always gets the general loader) and
/// check that whatever the one pass cannot settle still gets the general loader's result.
@Suite("One-pass loading")
struct OnePassLoadingTests {
    init() {
        try? ModelRegistry.register(Author.self, Post.self, Note.self, Lister.self)
    }

    static let ids = (1...4).map { ModelID("00000000-0000-0000-0000-0000000000B\($0)")! }

    func envelope(_ models: String) -> Data {
        Data(#"{"format":"ModelKit","version":1,"models":[\#(models)]}"#.utf8)
    }

    func pointer(_ model: String, _ id: ModelID) -> String {
        #"{"__type":"ModelPointer","model":"\#(model)","modelId":"\#(id)"}"#
    }

    /// Loads `data` into `context` with the one-pass loader alone: it throws where the public
    /// `load` would go on with the general loader.
    func loadInOnePass(_ data: Data, into context: ModelContext) throws {
        try withModelSource(for: data) { source in
            try GraphLoader(context: context, options: DeserializationOptions(), source: source, streaming: true).loadAll()
        }
    }

    /// A context the general loader loads into: it holds one unrelated model.
    func occupiedContext() -> (ModelContext, ModelID) {
        let context = ModelContext()
        let note = Note.instance(in: context)
        note.text = "already here"
        return (context, note.modelId)
    }

    /// The snapshot of `context` without the model with `excluded`.
    func snapshot(_ context: ModelContext, excluding excluded: ModelID? = nil) throws -> [String: String] {
        var result = try ModelKitTests.snapshot(context)
        if let excluded { result[excluded.description] = nil }
        return result
    }

    @Test(
        "a graph whose pointers go forward and back loads the same in one pass as with the general loader",
        arguments: PersistenceFormat.allCases)
    func sameAsGeneralLoader(format: PersistenceFormat) throws {
        let source = ModelContext()
        let authors = makeBlog(authors: 3, postsPerAuthor: 4, in: source)
        // Object ids on models made early by a pointer (posts, after their authors in the file)
        // and on models that pointers find made already.
        authors[1].objectId = "author-1"
        Array(authors[2].posts)[3].objectId = "post-2-3"
        let data = try source.data(format: format)

        let onePass = ModelContext()
        try loadInOnePass(data, into: onePass)
        let (general, noteId) = occupiedContext()
        try general.load(data)

        #expect(try snapshot(onePass) == snapshot(source))
        #expect(try snapshot(general, excluding: noteId) == snapshot(onePass))
        #expect(onePass.model(Author.self, objectId: "author-1")?.name == "Author 1")
        let post = try #require(onePass.model(Post.self, objectId: "post-2-3"))
        #expect(post.title == "Post 2-3")
        #expect(post.author?.objectId == nil && post.author?.name == "Author 2")
        for author in onePass.models(of: Author.self) {
            #expect(author.posts.count == 4)
            #expect(author.posts.allSatisfy { $0.author === author })
        }
        #expect(onePass.changes.inserted.count == source.count)
    }

    @Test("a model with a typed pointer to it loads even though its type is not registered, whichever comes first")
    func unregisteredTypeThroughPointer() throws {
        let lister = #"{"model":"Lister","modelId":"\#(Self.ids[0])","properties":{"item":\#(pointer("Unlisted", Self.ids[1]))}}"#
        let unlisted =
            #"{"model":"Unlisted","modelId":"\#(Self.ids[1])","properties":{"label":"found","back":\#(pointer("Lister", Self.ids[0]))}}"#
        for models in ["\(lister),\(unlisted)", "\(unlisted),\(lister)"] {
            let context = ModelContext()
            try loadInOnePass(envelope(models), into: context)
            let item = try #require(context.model(Lister.self, modelId: Self.ids[0])?.item)
            #expect(item.label == "found")
            #expect(item.back?.modelId == Self.ids[0])
            #expect(context.count == 2)
        }
    }

    @Test("a pointer whose model turns out to be of another type is a type conflict, and nothing loads")
    func forwardPointerTypeConflict() throws {
        // The post points to an author at ids[1], but the model with that id is a note.
        let post = #"{"model":"Post","modelId":"\#(Self.ids[0])","properties":{"author":\#(pointer("Author", Self.ids[1]))}}"#
        let note = #"{"model":"Note","modelId":"\#(Self.ids[1])","properties":{"text":"not an author"}}"#
        let context = ModelContext()
        #expect(throws: StreamingUnavailable.self) { try loadInOnePass(envelope("\(post),\(note)"), into: context) }
        #expect(context.isEmpty)
        let error = try #require(throws: SerializationError.self) { try context.load(envelope("\(post),\(note)")) }
        #expect(error.code == .modelTypeConflict)
        #expect(error.modelIndex == 0)
        #expect(error.description.contains("model index 1"))
        #expect(context.isEmpty)
    }

    @Test("a pointer to a model the data lacks is still dangling, or a placeholder when asked for one")
    func forwardPointerDangling() throws {
        let post = #"{"model":"Post","modelId":"\#(Self.ids[0])","properties":{"author":\#(pointer("Author", Self.ids[1]))}}"#
        let context = ModelContext()
        #expect(throws: StreamingUnavailable.self) { try loadInOnePass(envelope(post), into: context) }
        let error = try #require(throws: SerializationError.self) { try context.load(envelope(post)) }
        #expect(error.code == .danglingPointer)
        #expect(context.isEmpty)

        try context.load(envelope(post), options: DeserializationOptions(danglingPointers: .placeholder))
        let author = try #require(context.model(Author.self, modelId: Self.ids[1]))
        #expect(author.modelState == .needsData)
        #expect(context.model(Post.self, modelId: Self.ids[0])?.author === author)
    }

    @Test("a model id used twice after a pointer to it is a duplicate id, and nothing loads")
    func duplicateAfterForwardPointer() throws {
        let post = #"{"model":"Post","modelId":"\#(Self.ids[0])","properties":{"author":\#(pointer("Author", Self.ids[1]))}}"#
        let author = #"{"model":"Author","modelId":"\#(Self.ids[1])","properties":{"name":"first"}}"#
        let again = #"{"model":"Author","modelId":"\#(Self.ids[1])","properties":{"name":"second"}}"#
        let context = ModelContext()
        let error = try #require(throws: SerializationError.self) {
            try context.load(envelope([post, author, again].joined(separator: ",")))
        }
        #expect(error.code == .duplicateModelId)
        #expect(error.modelIndex == 2)
        #expect(context.isEmpty)
    }

    @Test("an error after many models have been read in one pass leaves the context empty")
    func lateErrorLeavesNothing() throws {
        let source = ModelContext()
        makeBlog(authors: 20, postsPerAuthor: 10, in: source)
        var json = String(decoding: try source.data(format: .json), as: UTF8.self)
        // Damage the last model's closing: the pass has staged all the others by then.
        let end = try #require(json.range(of: "}]", options: .backwards))
        json.replaceSubrange(end, with: "},]")
        let context = ModelContext()
        #expect(throws: SerializationError.self) { try context.load(Data(json.utf8)) }
        #expect(context.isEmpty)
        #expect(context.changes.inserted.isEmpty)
    }
}
