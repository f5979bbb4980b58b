import Foundation
import ModelKit
import Testing

@Suite("Serialization format")
@MainActor struct SerializationFormatTests {
    @Test("A model without references serializes to the seed's dictionary")
    func dictionaryForm() throws {
        try inFreshContext { _ in
            let note = Note.instance(objectId: "001")
            note.text = "hello"
            note.count = 3
            let value = try note.serialize()
            guard case .object(let object) = value else {
                Issue.record("expected a dictionary, got \(value)")
                return
            }
            #expect(object.keys == ["model", "modelId", "objectId", "createdAt", "updatedAt", "properties"])
            #expect(value["model"] == "Note")
            #expect(value["modelId"] == .string(note.modelId.description))
            #expect(value["objectId"] == "001")
            #expect(value["createdAt"] == .date(note.createdAt))
            #expect(value["updatedAt"] == .date(note.updatedAt))
            #expect(value["properties"] == ["text": "hello", "count": 3])
        }
    }

    @Test("A model with references serializes to an array, root first, each model once")
    func arrayForm() throws {
        try inFreshContext { context in
            let authors = makeBlog(authors: 3, postsPerAuthor: 4, in: context)
            let post = authors[1].posts.first!
            guard case .array(let models) = try post.serialize() else {
                Issue.record("expected an array")
                return
            }
            // The post reaches its author, the author's 4 posts; no other author.
            #expect(models.count == 5)
            #expect(models[0]["modelId"] == .string(post.modelId.description))
            let ids = models.compactMap { $0["modelId"]?.stringValue }
            #expect(Set(ids).count == ids.count)
            #expect(
                models[0]["properties"]?["author"] == [
                    "__type": "ModelPointer", "model": "Author", "modelId": .string(authors[1].modelId.description),
                ])
            // A nil object id is left out of models and pointers; a set one is written.
            #expect(models[0]["objectId"] == nil)
            post.objectId = "p-1"
            guard case .array(let again) = try post.serialize() else {
                Issue.record("expected an array")
                return
            }
            #expect(again[0]["objectId"] == "p-1")
            // The author (second) points to the post with its object id.
            #expect(again[1]["properties"]?["posts"]?[0]?["objectId"] == "p-1")
        }
    }

    @Test("An empty reference is written as null and still makes the array form")
    func emptyReference() throws {
        try inFreshContext { _ in
            let post = Post.instance()
            let value = try post.serialize()
            #expect(value[0]?["properties"]?["author"] == .null)
            #expect(value[1] == nil)
        }
    }

    @Test("The JSON form writes dates, bytes and geo points as __type objects")
    func jsonForm() throws {
        try inFreshContext { _ in
            let model = Everything.instance()
            model.date = Date(timeIntervalSince1970: 1_351_493_041)
            model.data = Data([0, 1, 2, 250])
            model.location = GeoPoint(latitude: 10.76529079, longitude: 106.69060779)
            let value = try model.serialize(as: .json)
            let properties = try #require(value["properties"])
            #expect(properties["date"] == ["__type": "Date", "iso": "2012-10-29T06:44:01Z"])
            #expect(properties["data"] == ["__type": "Bytes", "base64": "AAEC+g=="])
            #expect(properties["location"] == ["__type": "GeoPoint", "latitude": 10.76529079, "longitude": 106.69060779])
            #expect(value["createdAt"]?["__type"] == "Date")
            #expect(properties["optionalString"] == .null)
        }
    }

    @Test("The property-list form uses native dates and data and survives PropertyListSerialization")
    func propertyListForm() throws {
        try inFreshContext { context in
            let model = Everything.instance()
            model.date = Date(timeIntervalSinceReferenceDate: 12.5)
            model.data = Data([9, 8, 7])
            model.optionalInt = nil
            let value = try model.serialize()
            #expect(value["properties"]?["date"] == .date(model.date))
            #expect(value["properties"]?["data"] == .data(model.data))
            // Binary property lists keep dates exactly. (Foundation's XML property lists store dates
            // to the second, so sub-second values do not survive them.)
            let bytes = try PropertyListSerialization.data(
                fromPropertyList: value.propertyListObject, format: .binary, options: 0)
            let object = try PropertyListSerialization.propertyList(from: bytes, options: [], format: nil)
            let copy = try Everything.instance(from: ModelValue(propertyList: object), in: ModelContext())
            #expect(copy.persistedProperties == model.persistedProperties)
        }
    }

    @Test("The seed's self-referencing example round-trips")
    func selfReference() throws {
        let context = ModelContext()
        let example = VeryConvolutedExample.instance(objectId: "0001", in: context)
        example.circular = example
        let value = try example.serialize(as: .json)
        guard case .array(let models) = value else {
            Issue.record("expected an array")
            return
        }
        #expect(models.count == 1)
        #expect(value[0]?["properties"]?["circular"]?["modelId"] == .string(example.modelId.description))
        #expect(value[0]?["properties"]?["circular"]?["objectId"] == "0001")
        let target = ModelContext()
        let copy = try VeryConvolutedExample.instance(fromJSON: value.jsonData(), in: target)
        #expect(copy.circular === copy)
        #expect(copy.objectId == "0001")
        #expect(copy.modelId == example.modelId)
    }

    @Test("Mutual references, shared targets and repeated elements round-trip")
    func sharedAndRepeated() throws {
        let context = ModelContext()
        let author = Author.instance(in: context)
        let first = Post.instance(in: context), second = Post.instance(in: context)
        first.author = author
        second.author = author
        author.posts = [first, second, first, first]
        let value = try author.serialize(as: .json)
        #expect(value[3] == nil)  // three models, each once
        let target = ModelContext()
        let copy = try Author.instance(fromJSON: value.jsonData(), in: target)
        #expect(target.count == 3)
        let posts = copy.posts.models
        #expect(posts.count == 4)
        #expect(posts[0] === posts[2] && posts[0] === posts[3])
        #expect(posts[0] !== posts[1])
        #expect(posts.allSatisfy { $0.author === copy })
    }

    @Test("An empty graph: a model with empty references round-trips")
    func emptyGraph() throws {
        let author = Author.instance(in: ModelContext())
        let copy = try Author.instance(fromJSON: author.jsonData(), in: ModelContext())
        #expect(copy.posts.isEmpty)
        #expect(copy.persistedProperties == author.persistedProperties)
    }

    @Test("A 100,000-long chain serializes and loads without deep recursion")
    func longChain() throws {
        let context = ModelContext()
        let count = 100_000
        let nodes = (0..<count).map { index -> Node in
            let node = Node.instance(in: context)
            node.value = index
            return node
        }
        for index in 0..<count - 1 { nodes[index].next = nodes[index + 1] }
        nodes[count - 1].next = nodes[0]  // and close the cycle
        let data = try nodes[0].jsonData()
        let target = ModelContext()
        let head = try Node.instance(fromJSON: data, in: target)
        #expect(target.count == count)
        var node: Node? = head
        var seen = 0
        while let current = node, seen < count {
            #expect(current.value == seen)
            node = current.next
            seen += 1
        }
        #expect(seen == count)
        #expect(node === head)
    }

    @Test("Loading a model whose id is in the context updates that instance in place")
    func updateInPlace() throws {
        try inFreshContext { context in
            let author = Author.instance()
            author.name = "Old"
            let post = Post.instance()
            post.author = author
            author.posts.append(post)
            let saved = try author.serialize()
            author.name = "New"
            post.title = "Changed"
            let loaded = try Author.instance(from: saved)
            #expect(loaded === author)
            #expect(author.name == "Old")
            #expect(post.title == "")
            #expect(author.posts.first === post)
            #expect(context.count == 2)
            #expect(author.modelState == .loaded)
        }
    }

    @Test("Metadata round-trips: ids, object id, dates, state")
    func metadata() throws {
        let context = ModelContext()
        let note = Note.instance(objectId: "n-1", in: context)
        note.text = "x"
        let copy = try Note.instance(fromJSON: note.jsonData(), in: ModelContext())
        #expect(copy.modelId == note.modelId)
        #expect(copy.objectId == "n-1")
        #expect(copy.createdAt == note.createdAt)
        #expect(copy.updatedAt == note.updatedAt)
        #expect(copy.modelState == .loaded)
    }

    @Test("A pointer to a model not in the data can load as a placeholder that needs data")
    func placeholders() throws {
        let data = try json(
            """
            [{"model": "Post", "modelId": "00000000-0000-0000-0000-0000000000A1", "properties": {"title": "t",
              "author": {"__type": "ModelPointer", "model": "Author", "modelId": "00000000-0000-0000-0000-0000000000B2", "objectId": "b2"}}}]
            """)
        let context = ModelContext()
        let post = try Post.instance(from: data, in: context, options: DeserializationOptions(danglingPointers: .placeholder))
        let author = try #require(post.author)
        #expect(author.modelState == .needsData)
        #expect(author.objectId == "b2")
        #expect(author.modelId == ModelID("00000000-0000-0000-0000-0000000000B2"))
        #expect(context.count == 2)
        #expect(Author.instance(objectId: "b2", in: context) === author)
        // An existing model with that id is used instead of a placeholder.
        let again = try Post.instance(from: data, in: context, options: DeserializationOptions(danglingPointers: .placeholder))
        #expect(again.author === author)
        #expect(context.count == 2)
    }

    @Test("Values written by the Objective-C ModelKit read back: 0/1 booleans and offset dates")
    func seedCompatibility() throws {
        let value = try json(
            """
            {"createdAt": {"__type": "Date", "iso": "2012-10-29T13:50:03+0700"}, "model": "Author",
             "modelId": "00000000-0000-0000-0000-000000000001", "objectId": "001",
             "properties": {"age": 39, "avatarURL": "https://secure.gravatar.com/avatar/819b", "birthday": null,
                            "displayEmail": 1, "email": "jon@interfacelab.com", "name": "Jon Gilkison"},
             "updatedAt": "2012-10-29 06:44:01 +0000"}
            """)
        let author = try Author.instance(from: value, in: ModelContext())
        #expect(author.name == "Jon Gilkison")
        #expect(author.displayEmail)
        #expect(author.age == 39)
        #expect(author.avatarURL == URL(string: "https://secure.gravatar.com/avatar/819b"))
        #expect(author.createdAt == Date(timeIntervalSince1970: 1_351_493_403))
        #expect(author.updatedAt == Date(timeIntervalSince1970: 1_351_493_041))
        #expect(author.posts.isEmpty)  // missing in the data: takes its default
    }

    @Test("A property missing from the data takes its default value")
    func missingPropertyDefaults() throws {
        let value = try json(
            #"{"model": "Everything", "modelId": "00000000-0000-0000-0000-000000000009", "properties": {"string": "only this"}}"#)
        let model = try Everything.instance(from: value, in: ModelContext())
        var expected = Everything.Properties()
        expected.string = "only this"
        #expect(model.persistedProperties == expected)
    }

    @Test("Hand-written Codable with super encoders works without a super coding key")
    func superEncoders() throws {
        let model = HasLayers.instance(in: ModelContext())
        model.layered.base = 7
        model.layered.own = "y"
        let value = try model.serialize()
        #expect(value["properties"]?["layered"] == ["own": "y", "super": 7])
        let copy = try HasLayers.instance(from: value, in: ModelContext())
        #expect(copy.layered == model.layered)
    }

    @Test("Codable encoders other than ModelKit's write references as pointers")
    func foreignEncoders() throws {
        let context = ModelContext()
        let author = Author.instance(in: context)
        let post = Post.instance(in: context)
        post.author = author
        author.posts.append(post)
        let data = try JSONEncoder().encode(post.persistedProperties)
        let decoded = try JSONDecoder().decode(Post.Properties.self, from: data)
        #expect(decoded.author.id == author.modelId)
        #expect(decoded.author.resolve(in: context) === author)
        let authorData = try JSONEncoder().encode(author.persistedProperties)
        #expect(try JSONDecoder().decode(Author.Properties.self, from: authorData).posts.ids == [post.modelId])
    }
}
