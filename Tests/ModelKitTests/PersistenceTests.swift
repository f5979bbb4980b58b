import Foundation
import ModelKit
import Testing
import ModelKitTestSupport

/// A directory of its own for one test, removed afterwards.
func withTemporaryDirectory<Result>(_ body: (URL) throws -> Result) throws -> Result {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("modelkit-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try body(directory)
}

/// ModelKit JSON as the bytes of a file in `format` (JSON as it is), with nulls as ModelKit writes
/// them in property lists: for damaging a file as text, then loading it in every format.
func converting(_ json: Data, to format: PersistenceFormat) throws -> Data {
    guard format != .json else { return json }
    return try PropertyListSerialization.data(
        fromPropertyList: ModelValue(json: json).propertyListObject, format: format == .xmlPropertyList ? .xml : .binary,
        options: 0)
}

/// Everything that identifies a context's contents: ids, types, object ids, dates, and the
/// properties in the tree form (references as ids).
func snapshot(_ context: ModelContext) throws -> [String: String] {
    var result: [String: String] = [:]
    for model in context.allModels {
        result[model.modelId.description] = try describeModel(model)
    }
    return result
}

private func describeModel(_ model: some Model) throws -> String {
    let value = try model.serialize(as: .json)
    let first: ModelValue
    if case .array(let array) = value { first = array[0] } else { first = value }
    return "\(type(of: model).modelName) \(model.objectId ?? "-") " + first.jsonString()
}

private func registerFixtures() {
    try? ModelRegistry.register(
        Author.self, Post.self, Node.self, Note.self, Everything.self, VeryConvolutedExample.self, HasLayers.self)
}

@Suite("Persistence")
struct PersistenceTests {
    init() { registerFixtures() }

    @Test("a context round-trips through every format with the same contents", arguments: PersistenceFormat.allCases)
    func roundTrip(format: PersistenceFormat) throws {
        let source = ModelContext()
        makeBlog(authors: 3, postsPerAuthor: 4, in: source)
        let data = try source.data(format: format)
        let target = ModelContext()
        try target.load(data)
        #expect(target.count == source.count)
        #expect(try snapshot(target) == snapshot(source))
        for post in target.models(of: Post.self) {
            let author = try #require(post.persistedProperties.author.resolve(in: target))
            #expect(author.posts.contains { $0 === post })
        }
    }

    @Test("the formats are told apart by their bytes, and a file round-trips on disk")
    func files() throws {
        try withTemporaryDirectory { directory in
            let source = ModelContext()
            makeBlog(authors: 2, postsPerAuthor: 2, in: source)
            for format in PersistenceFormat.allCases {
                // A misleading name on purpose: the loader looks at the bytes.
                let url = directory.appendingPathComponent("graph.txt")
                try source.write(to: url, format: format)
                let target = ModelContext()
                try target.load(from: url)
                #expect(try snapshot(target) == snapshot(source))
            }
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(leftovers == ["graph.txt"])
        }
    }

    @Test("the JSON file has the envelope and serialize()'s model objects")
    func envelope() throws {
        let context = ModelContext()
        let note = Note.instance(in: context)
        note.text = "hi"
        let text = String(decoding: try context.data(format: .json), as: UTF8.self)
        #expect(text.hasPrefix(#"{"format":"ModelKit","version":1,"writtenBy":"ModelKit-Swift 1.0","models":[{"model":"Note","#))
        let value = try ModelValue(json: Data(text.utf8))
        guard case .object(let envelope) = value, case .array(let models)? = envelope["models"] else {
            Issue.record("no models array")
            return
        }
        #expect(models == [try note.serialize(as: .json)])
    }

    @Test("dates are written as the same ISO text as serialize() writes, and read back exactly")
    func dateText() throws {
        let context = ModelContext()
        let model = Everything.instance(in: context)
        var generator = SplitMix64(seed: 0xDA7E)
        var dates: [Date] = [Date(), Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSinceReferenceDate: 0.5)]
        for _ in 0..<3000 {
            let whole = Double(generator.next() % 4_000_000_000) - 1_000_000_000
            let digits = Double(1 << (generator.next() % 30))
            dates.append(Date(timeIntervalSinceReferenceDate: whole + Double(generator.next() % 10_000_000) / 10_000_000))
            dates.append(Date(timeIntervalSinceReferenceDate: whole + 1 / digits))
        }
        model.dates = dates
        let data = try context.data(format: .json)
        guard case .object(let envelope) = try ModelValue(json: data), case .array(let models)? = envelope["models"] else {
            Issue.record("no models")
            return
        }
        #expect(models.first == (try model.serialize(as: .json)))
        let target = ModelContext()
        try target.load(data)
        #expect(target.model(Everything.self, modelId: model.modelId)?.dates == dates)
    }

    @Test("every supported property type round-trips in every format", arguments: PersistenceFormat.allCases)
    func everything(format: PersistenceFormat) throws {
        let context = ModelContext()
        let model = Everything.instance(in: context)
        model.string = "héllo \"quoted\" \\ \n\t\u{1} 😀 \u{2028}"
        model.int = .min
        model.int8 = .min
        model.int64 = .max
        model.uint = .max
        model.uint64 = .max
        model.uint8 = .max
        model.double = -.nan
        model.float = .infinity
        model.optionalDouble = -.infinity
        model.date = Date(timeIntervalSinceReferenceDate: -123_456_789.123456)
        model.optionalDate = Date(timeIntervalSinceReferenceDate: 1e15)
        model.data = Data([0, 1, 2, 255])
        model.shape = .rectangle(width: 2, height: 3.5)
        model.optionalAddress = Address(
            street: "1 Main", city: "Zürich", zip: nil, coordinates: GeoPoint(latitude: 1, longitude: -2))
        model.optionals = [1, nil, 3]
        model.nested = [["a"], [], ["b", "c"]]
        model.byName = ["x": 1]
        model.byNumber = [2: "two"]
        model.dates = [Date(timeIntervalSinceReferenceDate: 0.1)]
        model.doubles = [0.1, 1e300, -0.0]
        let data = try context.data(format: format)
        let target = ModelContext()
        try target.load(data)
        let copy = try #require(target.model(Everything.self, modelId: model.modelId))
        #expect(copy.double.isNaN)
        var expected = model.persistedProperties
        var actual = copy.persistedProperties
        expected.double = 0
        actual.double = 0
        if format == .xmlPropertyList {
            // Foundation's XML property lists write -0.0 as 0.
            expected.doubles[2] = 0
        }
        #expect(actual == expected)
        #expect(copy.createdAt == model.createdAt)
        #expect(copy.updatedAt == model.updatedAt)
    }

    @Test("an empty context writes and loads")
    func empty() throws {
        for format in PersistenceFormat.allCases {
            let data = try ModelContext().data(format: format)
            let target = ModelContext()
            try target.load(data)
            #expect(target.isEmpty)
        }
    }

    @Test("self references, shared targets and nil references survive")
    func shapes() throws {
        let context = ModelContext()
        let loop = VeryConvolutedExample.instance(in: context)
        loop.circular = loop
        let author = Author.instance(in: context)
        let first = Post.instance(in: context)
        let second = Post.instance(in: context)
        first.author = author
        second.author = author
        author.posts = [first, first, second]
        let lonely = Post.instance(in: context)
        lonely.title = "no author"
        for format in PersistenceFormat.allCases {
            let target = ModelContext()
            try target.load(try context.data(format: format))
            let loopCopy = try #require(target.model(VeryConvolutedExample.self, modelId: loop.modelId))
            #expect(loopCopy.persistedProperties.circular.resolve(in: target) === loopCopy)
            let authorCopy = try #require(target.model(Author.self, modelId: author.modelId))
            #expect(authorCopy.persistedProperties.posts.ids == [first.modelId, first.modelId, second.modelId])
            #expect(target.model(Post.self, modelId: lonely.modelId)?.persistedProperties.author.isEmpty == true)
        }
    }

    @Test("a chain of 100,000 models writes and loads without deep recursion")
    func longChain() throws {
        let context = ModelContext()
        var head = Node.instance(in: context)
        let first = head
        for value in 1..<100_000 {
            let next = Node.instance(in: context)
            next.value = value
            head.next = next
            head = next
        }
        for format in [PersistenceFormat.json, .binaryPropertyList] {
            let data = try first.persistedData(format: format)
            let target = ModelContext()
            let root = try Node.load(data, in: target)
            #expect(root.modelId == first.modelId)
            #expect(target.count == 100_000)
        }
    }

    @Test("loading into a non-empty context updates instances in place")
    func merge() throws {
        let source = ModelContext()
        let authors = makeBlog(authors: 1, postsPerAuthor: 2, in: source)
        let data = try source.data(format: .binaryPropertyList)
        let target = ModelContext()
        try target.load(data)
        let held = try #require(target.model(Author.self, modelId: authors[0].modelId))
        let heldPosts = held.posts.models
        held.name = "changed locally"
        let other = Note.instance(in: target)
        try target.load(data)
        #expect(target.model(Author.self, modelId: authors[0].modelId) === held)
        #expect(held.name == "Author 0")
        #expect(held.posts.models.map(ObjectIdentifier.init) == heldPosts.map(ObjectIdentifier.init))
        #expect(target.model(withId: other.modelId) === other)
        #expect(target.count == 4)
    }

    @Test("a subgraph is written from its root and loaded back as that root")
    func subgraph() throws {
        let context = ModelContext()
        let authors = makeBlog(authors: 2, postsPerAuthor: 3, in: context)
        for format in PersistenceFormat.allCases {
            let data = try authors[1].persistedData(format: format)
            let target = ModelContext()
            let root = try Author.load(data, in: target)
            #expect(root.modelId == authors[1].modelId)
            #expect(target.count == 4)
            #expect(throws: SerializationError.self) { try Post.load(data, in: ModelContext()) }
        }
    }

    @Test("values that cannot be streamed (super encoders) are written the slow way")
    func superEncoders() throws {
        let context = ModelContext()
        let model = HasLayers.instance(in: context)
        model.layered.base = 42
        for format in PersistenceFormat.allCases {
            let target = ModelContext()
            try target.load(try context.data(format: format))
            #expect(target.model(HasLayers.self, modelId: model.modelId)?.layered.base == 42)
        }
    }

    @Test("Foundation reads the binary property lists ModelKit writes, and the reverse")
    func foundationInterop() throws {
        let source = ModelContext()
        makeBlog(authors: 2, postsPerAuthor: 2, in: source)
        let everything = Everything.instance(in: source)
        everything.string = "ünïcödé 😀"
        everything.uint64 = .max
        everything.int = -5
        let ours = try source.data(format: .binaryPropertyList)
        let object = try PropertyListSerialization.propertyList(from: ours, options: [], format: nil)
        let dictionary = try #require(object as? [String: Any])
        #expect(dictionary["format"] as? String == "ModelKit")
        #expect((dictionary["models"] as? [Any])?.count == source.count)
        let theirs = try PropertyListSerialization.data(fromPropertyList: object, format: .binary, options: 0)
        let target = ModelContext()
        try target.load(theirs)
        #expect(try snapshot(target) == snapshot(source))
    }

    @Test("files without the envelope (bare serialize() output) still load")
    func bareArrays() throws {
        let context = ModelContext()
        let authors = makeBlog(authors: 1, postsPerAuthor: 2, in: context)
        let note = Note.instance(in: context)
        note.text = "alone"
        let target = ModelContext()
        try target.load(try authors[0].jsonData())
        try target.load(try note.jsonData())
        let plist = try PropertyListSerialization.data(
            fromPropertyList: try authors[0].serialize().propertyListObject, format: .binary, options: 0)
        try target.load(plist)
        #expect(target.count == 4)
        #expect(target.model(Note.self, modelId: note.modelId)?.text == "alone")
    }
}
