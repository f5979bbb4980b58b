import Foundation
import ModelKit
import Testing
import ModelKitTestSupport

/// Bad input never crashes, never leaves half a graph behind, and says where and what.
@Suite("Serialization errors")
struct ErrorTests {
    static let postId = "00000000-0000-0000-0000-000000000001"
    static let authorId = "00000000-0000-0000-0000-000000000002"

    /// Loads `text` as a Post graph into `context` and returns the error.
    func loadError(_ text: String, into context: ModelContext = ModelContext()) -> SerializationError? {
        do {
            _ = try Post.instance(fromJSON: Data(text.utf8), in: context)
            Issue.record("expected an error")
            return nil
        } catch let error as SerializationError {
            return error
        } catch {
            Issue.record("expected a SerializationError, got \(error)")
            return nil
        }
    }

    @Test("A wrong type names the model index, the property path and both types")
    func wrongType() throws {
        let error = try #require(
            loadError(#"[{"model": "Post", "modelId": "\#(Self.postId)", "properties": {"title": 3}}]"#))
        #expect(error.code == .typeMismatch)
        #expect(error.modelIndex == 0)
        #expect(error.modelName == "Post")
        #expect(error.path == "properties.title")
        #expect(error.expected == "String")
        #expect(error.found == "number 3")
        // JSON text is read where it lies, so the error also says at which byte.
        #expect(error.byteOffset == 94)
        #expect(
            error.description
                == "Byte offset 94, Model index 0 (Post), properties.title: expected String but found number 3 instead. [typeMismatch]"
        )
    }

    @Test("A wrong type inside an array names the element")
    func wrongTypeInArray() throws {
        let error = try #require(
            loadError(#"{"model": "Post", "modelId": "\#(Self.postId)", "properties": {"tags": ["a", null, "c"]}}"#))
        #expect(error.code == .typeMismatch)
        #expect(error.path == "properties.tags[1]")
    }

    @Test("A missing model name is a typed error")
    func missingModel() throws {
        let error = try #require(loadError(#"[{"modelId": "\#(Self.postId)", "properties": {}}]"#))
        #expect(error.code == .valueNotFound)
        #expect(error.path == "model")
        #expect(error.modelIndex == 0)
    }

    @Test("An unknown model name is a typed error naming the index")
    func unknownModel() throws {
        let error = try #require(
            loadError(
                """
                [{"model": "Post", "modelId": "\(Self.postId)", "properties": {}},
                 {"model": "Nonexistent", "modelId": "\(Self.authorId)", "properties": {}}]
                """))
        #expect(error.code == .unknownModel)
        #expect(error.modelIndex == 1)
        #expect(error.found == "\"Nonexistent\"")
    }

    @Test("A pointer to a model not in the data is a typed error")
    func danglingPointer() throws {
        let error = try #require(
            loadError(
                #"""
                [{"model": "Post", "modelId": "\#(Self.postId)", "properties": {"author":
                  {"__type": "ModelPointer", "model": "Author", "modelId": "\#(Self.authorId)"}}}]
                """#))
        #expect(error.code == .danglingPointer)
        #expect(error.path == "properties.author")
        #expect(error.modelIndex == 0)
    }

    @Test("A pointer whose type differs from the property's is a typed error")
    func pointerTypeConflict() throws {
        let error = try #require(
            loadError(
                #"""
                [{"model": "Post", "modelId": "\#(Self.postId)", "properties": {"author":
                  {"__type": "ModelPointer", "model": "Post", "modelId": "\#(Self.postId)"}}}]
                """#))
        #expect(error.code == .modelTypeConflict)
        #expect(error.path == "properties.author")
    }

    @Test("Duplicate and malformed model ids are typed errors")
    func badIds() throws {
        let duplicate = try #require(
            loadError(
                """
                [{"model": "Post", "modelId": "\(Self.postId)"}, {"model": "Post", "modelId": "\(Self.postId)"}]
                """))
        #expect(duplicate.code == .duplicateModelId)
        #expect(duplicate.modelIndex == 1)
        let malformed = try #require(loadError(#"{"model": "Post", "modelId": "AAAA-AAAA-AAAA-AAAA"}"#))
        #expect(malformed.code == .invalidModelId)
        #expect(malformed.path == "modelId")
    }

    @Test("Header dates read like property dates, and their errors name the model and the key")
    func headerDates() throws {
        let error = try #require(
            loadError(
                #"{"model": "Post", "modelId": "\#(Self.postId)", "createdAt": {"__type": "Date", "iso": "2012-02-30T00:00:00Z"}}"#
            ))
        #expect(error.code == .invalidValue)
        #expect(error.modelIndex == 0)
        #expect(error.modelName == "Post")
        #expect(error.path == "createdAt")
        let far = #"{"model": "Post", "modelId": "\#(Self.postId)", "updatedAt": {"__type": "Date", "referenceSeconds": 1e300}}"#
        let post = try Post.instance(fromJSON: Data(far.utf8), in: ModelContext())
        #expect(post.updatedAt == Date(timeIntervalSinceReferenceDate: 1e300))
    }

    @Test("A root of the wrong type is a typed error")
    func wrongRoot() throws {
        let error = try #require(loadError(#"{"model": "Author", "modelId": "\#(Self.authorId)"}"#))
        #expect(error.code == .modelTypeConflict)
        #expect(error.modelIndex == 0)
    }

    @Test("An id the context holds as another type is a typed error")
    func idHeldAsAnotherType() throws {
        let context = ModelContext()
        let author = Author.instance(in: context)
        let error = try #require(
            loadError(#"{"model": "Post", "modelId": "\#(author.modelId)"}"#, into: context))
        #expect(error.code == .modelTypeConflict)
        #expect(context.count == 1)
    }

    @Test(
        "Numbers that do not fit the property's type are typed errors",
        arguments: [
            ("uint8", "300"), ("uint8", "-1"), ("int8", "128"), ("int16", "40000"), ("int32", "2147483648"),
            ("int64", "9223372036854775808"), ("uint64", "18446744073709551616"), ("int", "1.5"), ("float", "1e39"),
        ])
    func outOfRange(property: String, number: String) throws {
        let text = #"{"model": "Everything", "modelId": "\#(Self.postId)", "properties": {"\#(property)": \#(number)}}"#
        do {
            _ = try Everything.instance(fromJSON: Data(text.utf8), in: ModelContext())
            Issue.record("expected an error for \(number) in \(property)")
        } catch let error as SerializationError {
            #expect(error.code == .numberOutOfRange || error.code == .typeMismatch)
            #expect(error.path == "properties.\(property)")
        }
    }

    @Test(
        "Invalid dates, base64 and URLs are typed errors",
        arguments: [
            (#""date": {"__type": "Date", "iso": "2012-02-30T00:00:00Z"}"#, "properties.date"),
            (#""date": {"__type": "Date", "iso": "yesterday"}"#, "properties.date"),
            (#""data": {"__type": "Bytes", "base64": "not base64!"}"#, "properties.data"),
            (#""url": 12"#, "properties.url"),
            (#""double": {"__type": "Double", "value": "lots"}"#, "properties.double"),
            (#""location": {"latitude": "north"}"#, "properties.location"),
            (#""mood": "ecstatic""#, "properties.mood"),
            (#""address": {"city": 5}"#, "properties.address.city"),
        ])
    func invalidValues(member: String, path: String) throws {
        let text = #"{"model": "Everything", "modelId": "\#(Self.postId)", "properties": {\#(member)}}"#
        do {
            _ = try Everything.instance(fromJSON: Data(text.utf8), in: ModelContext())
            Issue.record("expected an error for \(member)")
        } catch let error as SerializationError {
            #expect(error.path == path, "\(error)")
            #expect(error.modelIndex == 0)
        }
    }

    @Test(
        "Malformed JSON gives the byte offset",
        arguments: [
            (#"{"model": "Post""#, 16),
            (#"{"model": "Post",}"#, 17),
            (#"[{"model": "Post", "modelId": "\#(Self.postId)"}"#, 69),
            (#"{"a": 01}"#, 7),
            (#"{"a": tru}"#, 6),
            (#"{"a": "\x"}"#, 8),
            ("{\"a\": \"\u{01}\"}", 7),
            (#"{"model": "\udc00"}"#, 11),
            (#"{"model": "Post", "modelId": "\#(Self.postId)"} x"#, 69),
            ("", 0),
        ])
    func malformedJSON(text: String, offset: Int) throws {
        let error = try #require(loadError(text))
        #expect(error.code == .malformedInput)
        #expect(error.byteOffset == offset, "\(error)")
    }

    @Test("Invalid UTF-8 inside a string is reported at its byte")
    func invalidUTF8() throws {
        var bytes = Array(#"{"model": "Po"#.utf8)
        bytes.append(0xFF)
        bytes.append(contentsOf: Array(#"st"}"#.utf8))
        do {
            _ = try Post.instance(fromJSON: Data(bytes), in: ModelContext())
            Issue.record("expected an error")
        } catch let error as SerializationError {
            #expect(error.code == .malformedInput)
            #expect(error.byteOffset == 13)
        }
    }

    @Test("Nesting deeper than the limit is a typed error, in JSON text and in values")
    func nestingLimit() throws {
        let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        #expect(throws: SerializationError.self) { try ModelValue(json: Data(deep.utf8)) }
        do {
            _ = try ModelValue(json: Data(deep.utf8))
        } catch SerializationError.Code.nestingTooDeep {
            // matched through `~=`
        }
        let fine = String(repeating: "[", count: 500) + String(repeating: "]", count: 500)
        _ = try ModelValue(json: Data(fine.utf8))
    }

    @Test("A cycle among objects that are not models is a typed error, not a stack overflow")
    func nonModelCycle() throws {
        let model = HasLoop.instance(in: ModelContext())
        let box = LoopingBox()
        box.next = box
        model.box = box
        do {
            _ = try model.serialize()
            Issue.record("expected an error")
        } catch let error as SerializationError {
            #expect(error.code == .nestingTooDeep)
            #expect(error.modelIndex == 0)
            #expect(error.path.hasPrefix("properties.box.next.next"))
        }
        box.next = nil  // break the cycle so the test doesn't leak it
    }

    @Test("A failed load leaves the context and its models exactly as before")
    func failedLoadChangesNothing() throws {
        let context = ModelContext()
        let author = Author.instance(objectId: "a", in: context)
        author.name = "Original"
        let post = Post.instance(in: context)
        post.author = author
        author.posts.append(post)
        let updatedAt = author.updatedAt
        // The first model (the author, existing) decodes fine; the second fails late.
        let text = """
            [{"model": "Author", "modelId": "\(author.modelId)", "objectId": "renamed",
              "properties": {"name": "Replaced", "posts": [{"__type": "ModelPointer", "model": "Post", "modelId": "\(Self.postId)"}]}},
             {"model": "Post", "modelId": "\(Self.postId)", "properties": {"title": "new", "tags": [1]}}]
            """
        #expect(throws: SerializationError.self) { try Author.instance(fromJSON: Data(text.utf8), in: context) }
        #expect(context.count == 2)
        #expect(author.name == "Original")
        #expect(author.objectId == "a")
        #expect(author.updatedAt == updatedAt)
        #expect(author.modelState == .needsData)
        #expect(author.posts.models.map(\.modelId) == [post.modelId])
        #expect(Author.instance(objectId: "a", in: context) === author)
        #expect(context.model(withId: ModelID(Self.postId)!) == nil)
    }

    @Test("Seeded random corruption of a valid document never crashes and never half-loads")
    func randomCorruption() throws {
        let source = ModelContext()
        let authors = makeBlog(authors: 3, postsPerAuthor: 3, in: source)
        authors[0].birthday = Date(timeIntervalSinceReferenceDate: 1000.25)
        let original = Array(try authors[0].jsonData())
        var generator = SplitMix64(seed: 0x5EED)
        let alphabet = Array(#"{}[]":,0123456789-.eE truefalsnul\"#.utf8) + [0x00, 0xFF, 0xC3]
        var loaded = 0, rejected = 0
        for _ in 0..<1500 {
            var bytes = original
            for _ in 0...Int(generator.next() % 4) {
                let position = Int(generator.next() % UInt64(bytes.count))
                switch generator.next() % 4 {
                case 0: bytes[position] = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                case 1: bytes.remove(at: position)
                case 2: bytes.insert(alphabet[Int(generator.next() % UInt64(alphabet.count))], at: position)
                default: bytes.removeSubrange(position...)
                }
                if bytes.isEmpty { bytes = [UInt8(ascii: "{")] }
            }
            let context = ModelContext()
            do {
                _ = try Author.instance(fromJSON: Data(bytes), in: context)
                loaded += 1
            } catch is SerializationError {
                #expect(context.count == 0)
                rejected += 1
            }
        }
        #expect(loaded + rejected == 1500)
        #expect(rejected > 1000)
    }
}

@Suite("Error messages")
@MainActor struct ErrorMessageTests {
    /// Every public error type: an instance of it, made the way an app meets it.
    static func examples() throws -> [any Error] {
        var errors: [any Error] = []
        let context = ModelContext()
        do { _ = try Post.instance(fromJSON: Data("[".utf8), in: context) } catch { errors.append(error) }
        do { try context.load(from: URL(fileURLWithPath: "/nonexistent/modelkit/graph.json")) } catch { errors.append(error) }
        do { _ = try ModelPredicate<Author>("name ==") } catch { errors.append(error) }
        do { try Author.instance(in: context).endChanges() } catch { errors.append(error) }
        final class AuthorImpostor: ModelObject<AuthorImpostor.Properties> {
            struct Properties: ModelProperties {}
            override class var modelName: String { "Author" }
        }
        try ModelRegistry.register(Author.self)
        do { try ModelRegistry.register(AuthorImpostor.self) } catch { errors.append(error) }
        do { try ModelRegistry.register(Shadowed.self) } catch { errors.append(error) }
        return errors
    }

    @Test("Every public error reads the same in localizedDescription, String(describing:) and description")
    func errorsReadWell() throws {
        let errors = try Self.examples()
        #expect(errors.count == 6)
        #expect(Set(errors.map { "\(type(of: $0))" }).count == 6)
        for error in errors {
            let description = String(describing: error)
            #expect(error.localizedDescription == description)
            #expect(!description.contains("The operation could not be completed"))
            #expect(!description.isEmpty)
        }
    }
}
