import Foundation
import Testing

@testable import ModelKit

/// The nil UUID is no model's id: it is the empty state of a reference, which is why a reference
/// takes 16 bytes.
@Suite("The nil id")
struct NilIdTests {
    init() throws {
        try ModelRegistry.register(Note.self, Author.self, Post.self)
    }

    static let nilText = "00000000-0000-0000-0000-000000000000"

    @Test("A reference takes the 16 bytes of an id, in properties and in arrays of references")
    func referencesAreSixteenBytes() {
        #expect(MemoryLayout<ModelRef<Author>>.size == 16)
        #expect(MemoryLayout<ModelRef<Author>>.stride == 16)
        // Two strings (16 bytes each), the reference and an array: no padding after the reference.
        #expect(MemoryLayout<Post.Properties>.size == 16 + 16 + 16 + 8)
    }

    @Test("The nil UUID reads as no id, and a reference to it is empty")
    func nilUUIDIsNoId() {
        #expect(ModelID(Self.nilText) == nil)
        #expect(ModelID("00000000-0000-0000-0000-000000000001") != nil)
        let fromUUID = ModelID(UUID(uuidString: Self.nilText)!)
        let reference = ModelRef<Author>(id: fromUUID)
        #expect(reference.isEmpty)
        #expect(reference.id == nil)
        #expect(ModelRef<Author>(id: nil) == ModelRef<Author>())
        let author = Author()
        #expect(ModelRef(author).id == author.modelId)
    }

    @Test("A file that gives a model the nil UUID as its id is a typed error, and nothing loads")
    func nilModelIdInAFile() throws {
        let file = #"{"format":"ModelKit","version":1,"models":[{"model":"Note","modelId":"\#(Self.nilText)","properties":{"text":"x"}}]}"#
        let context = ModelContext()
        let kept = Note.instance(in: context)
        let error = #expect(throws: SerializationError.self) { try context.load(Data(file.utf8)) }
        #expect(error != nil)
        #expect(context.allModels.count == 1 && context.allModels.first === kept)
    }

    @Test("A pointer to the nil UUID is a typed error, and nothing loads")
    func nilPointerInAFile() throws {
        let post = #"{"model":"Post","modelId":"00000000-0000-0000-0000-000000000002","properties":{"title":"t","author":{"__type":"ModelPointer","model":"Author","modelId":"\#(Self.nilText)"}}}"#
        let file = #"{"format":"ModelKit","version":1,"models":[\#(post)]}"#
        let context = ModelContext()
        let error = #expect(throws: SerializationError.self) { try context.load(Data(file.utf8)) }
        #expect(error != nil)
        #expect(context.allModels.isEmpty)
    }

    @Test("References survive a round trip through both formats, empty ones included")
    func roundTrip() throws {
        let context = ModelContext()
        let author = Author.instance(in: context)
        let linked = Post.instance(in: context)
        linked.author = author
        author.posts.append(linked)
        let lonely = Post.instance(in: context)
        for format in [PersistenceFormat.json, .binaryPropertyList] {
            let copy = ModelContext()
            try copy.load(try context.data(format: format))
            #expect(copy.model(Post.self, modelId: linked.modelId)?.author?.modelId == author.modelId)
            #expect(copy.model(Post.self, modelId: lonely.modelId)?.author == nil)
            #expect(copy.model(Author.self, modelId: author.modelId)?.posts.ids == [linked.modelId])
        }
    }
}
