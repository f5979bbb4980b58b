import Foundation
import ModelKitTestSupport
import Testing

@testable import ModelKit

/// Loading into an empty context fills the new models' properties on several threads once every
/// header has been read. These tests run workers on small inputs (a chunk of a few models, more
/// workers than this machine may have processors) and compare everything with the same load on
/// one thread: results, errors, and what is left to the loading thread.
@Suite("Parallel loading")
struct ParallelLoadingTests {
    init() {
        try? ModelRegistry.register(Author.self, Post.self, Note.self, Lister.self, Draft.self)
    }

    static let ids = (1...4).map { ModelID("00000000-0000-0000-0000-0000000000C\($0)")! }

    /// Options that run `workers` workers on any number of models, taking `chunk` at a time.
    func options(workers: Int, chunk: Int = 3, base: DeserializationOptions = DeserializationOptions())
        -> DeserializationOptions
    {
        var options = base
        options.parallelism = DeserializationOptions.Parallelism(minimumModels: 1, chunk: chunk, workers: workers)
        return options
    }

    /// Loads `data` into `context` with the general loader and `workers` workers; returns the
    /// number of models the workers filled.
    @discardableResult
    func load(
        _ data: Data, into context: ModelContext, workers: Int, chunk: Int = 3,
        options base: DeserializationOptions = DeserializationOptions()
    ) throws -> Int {
        let options = options(workers: workers, chunk: chunk, base: base)
        return try withModelSource(for: data) { source in
            let loader = GraphLoader(context: context, options: options, source: source)
            try loader.loadAll()
            return loader.filledInParallel
        }
    }

    func envelope(_ models: [String]) -> Data {
        Data(#"{"format":"ModelKit","version":1,"models":[\#(models.joined(separator: ","))]}"#.utf8)
    }

    func pointer(_ model: String, _ id: ModelID) -> String {
        #"{"__type":"ModelPointer","model":"\#(model)","modelId":"\#(id)"}"#
    }

    func post(_ index: Int, title: String = "", author: String) -> String {
        #"{"model":"Post","modelId":"\#(Self.ids[index])","properties":{"title":"\#(title)","body":"","author":\#(author),"tags":[]}}"#
    }

    @Test(
        "a cyclic graph loads the same with workers as on one thread, in every format",
        arguments: PersistenceFormat.allCases, [2, 3, 5])
    func sameAsOneThread(format: PersistenceFormat, workers: Int) throws {
        let source = ModelContext()
        let authors = makeBlog(authors: 9, postsPerAuthor: 7, in: source)
        authors[4].objectId = "author-4"
        Array(authors[8].posts)[6].objectId = "last post, ünïcödé ✓"
        let loop = VeryConvolutedExample.instance(in: source)
        loop.circular = loop
        try ModelRegistry.register(VeryConvolutedExample.self)
        let data = try source.data(format: format)

        let parallel = ModelContext()
        // Authors have optional properties, which their direct plan does not read: the serial
        // pass decodes them through Codable. Workers fill the others.
        #expect(try load(data, into: parallel, workers: workers) == source.count - authors.count)
        let serial = ModelContext()
        #expect(try load(data, into: serial, workers: 1) == 0)

        #expect(try snapshot(parallel) == snapshot(source))
        #expect(try snapshot(serial) == snapshot(parallel))
        #expect(parallel.model(Author.self, objectId: "author-4")?.name == "Author 4")
        #expect(parallel.model(Post.self, objectId: "last post, ünïcödé ✓")?.author?.name == "Author 8")
        for author in parallel.models(of: Author.self) {
            #expect(author.posts.count == 7)
            #expect(author.posts.allSatisfy { $0.author === author && $0.modelContext === parallel })
        }
        let loaded = try #require(parallel.models(of: VeryConvolutedExample.self).first)
        #expect(loaded.circular === loaded)
        #expect(parallel.changes.inserted.count == source.count)
        #expect(parallel.models(of: Post.self).map(\.modelId) == serial.models(of: Post.self).map(\.modelId))
    }

    @Test(
        "chunks of one model go to workers, a chunk larger than the data stays on one thread; both load the same",
        arguments: [1, 1000])
    func chunkSizes(chunk: Int) throws {
        let source = ModelContext()
        makeBlog(authors: 4, postsPerAuthor: 4, in: source)
        let data = try source.data(format: .binaryPropertyList)
        let context = ModelContext()
        #expect(try load(data, into: context, workers: 4, chunk: chunk) == (chunk == 1 ? 16 : 0))
        #expect(try snapshot(context) == snapshot(source))
    }

    @Test("workers are used from the minimum number of models on, one per processor, never more than chunks")
    func workerCounts() {
        typealias Parallelism = DeserializationOptions.Parallelism
        let four = Parallelism(minimumModels: 100, chunk: 10, workers: 4)
        #expect(four.workers(for: 0) == 1)
        #expect(four.workers(for: 99) == 1)
        #expect(four.workers(for: 100) == 4)
        #expect(Parallelism(minimumModels: 1, chunk: 10, workers: 4).workers(for: 25) == 2)
        #expect(Parallelism(minimumModels: 1, chunk: 10, workers: 4).workers(for: 5) == 1)
        #expect(Parallelism(minimumModels: 1, chunk: 0, workers: 4).workers(for: 5) == 4)
        let processors = min(ProcessInfo.processInfo.activeProcessorCount, 8)
        #expect(Parallelism().workers(for: 1_000_000) == processors)
        #expect(Parallelism().workers(for: 2047) == 1)
    }

    @Test("models the workers cannot fill are decoded on the loading thread, with their defaults")
    func leftToLoadingThread() throws {
        // Post 1 lacks its body and tags (their defaults apply), post 2 has a key no field has:
        // the direct plan declines the first, and reads past the unknown key of the second when
        // unknown keys are ignored (else it declines it too, for the loading thread to report
        // the key). (It declines authors, which have optional properties.)
        let author =
            #"{"model":"Author","modelId":"\#(Self.ids[0])","properties":{"name":"Ann","email":"","age":3,"displayEmail":false,"posts":[]}}"#
        let partial =
            #"{"model":"Post","modelId":"\#(Self.ids[1])","properties":{"title":"short","author":\#(pointer("Author", Self.ids[0]))}}"#
        let extra =
            #"{"model":"Post","modelId":"\#(Self.ids[2])","properties":{"title":"extra","body":"b","author":\#(pointer("Author", Self.ids[0])),"tags":["x"],"unknown":1}}"#
        let data = envelope([author, partial, extra])
        #expect(try load(data, into: ModelContext(), workers: 2, chunk: 1) == 0)
        let context = ModelContext()
        let filled = try load(
            data, into: context, workers: 2, chunk: 1, options: DeserializationOptions(unknownKeys: .ignore))
        #expect(filled == 1)
        let short = try #require(context.model(Post.self, modelId: Self.ids[1]))
        #expect(short.title == "short" && short.body == "" && short.tags == [])
        #expect(short.author?.name == "Ann")
        #expect(context.model(Post.self, modelId: Self.ids[2])?.tags == ["x"])
        let serial = ModelContext()
        try load(data, into: serial, workers: 1)
        #expect(try withoutDates(snapshot(serial)) == withoutDates(snapshot(context)))
    }

    @Test("a dangling pointer gets its placeholder on the loading thread")
    func danglingPlaceholder() throws {
        let data = envelope([post(0, title: "orphan", author: pointer("Author", Self.ids[3])), post(1, author: "null")])
        let context = ModelContext()
        let filled = try load(
            data, into: context, workers: 2, chunk: 1, options: DeserializationOptions(danglingPointers: .placeholder))
        #expect(filled == 1)
        let author = try #require(context.model(Author.self, modelId: Self.ids[3]))
        #expect(author.modelState == .needsData)
        #expect(context.model(Post.self, modelId: Self.ids[0])?.author === author)
        #expect(context.count == 3)
    }

    @Test("errors are the same with workers as on one thread, and nothing loads")
    func sameErrors() throws {
        let author =
            #"{"model":"Author","modelId":"\#(Self.ids[2])","properties":{"name":"A","email":"","age":1,"displayEmail":false,"posts":[]}}"#
        let toAuthor = pointer("Author", Self.ids[2])
        let note = #"{"model":"Note","modelId":"\#(Self.ids[3])","properties":{"text":"not an author","count":0}}"#
        let wrongTitle = post(1, title: "x", author: toAuthor).replacingOccurrences(of: #""title":"x""#, with: #""title":12"#)
        let hugeCount = note.replacingOccurrences(of: #""count":0"#, with: #""count":1e300"#)
        let inputs: [(String, Data)] = [
            ("dangling", envelope([author, post(0, author: toAuthor), post(1, author: pointer("Author", Self.ids[3]))])),
            (
                "type conflict",
                envelope([author, post(0, author: toAuthor), post(1, author: pointer("Author", Self.ids[3])), note])
            ),
            ("wrong type", envelope([author, post(0, author: toAuthor), wrongTitle])),
            ("number too large", envelope([hugeCount, author, post(0, author: toAuthor)])),
        ]
        for (name, data) in inputs {
            for format in PersistenceFormat.allCases {
                let converted = try converting(data, to: format)
                let serialContext = ModelContext()
                let serial = try #require(throws: SerializationError.self, "\(name)") {
                    try load(converted, into: serialContext, workers: 1)
                }
                let context = ModelContext()
                let parallel = try #require(throws: SerializationError.self, "\(name)") {
                    try load(converted, into: context, workers: 3, chunk: 1)
                }
                #expect(parallel.description == serial.description, "\(name), \(format)")
                // Every format is read from its own bytes: errors say where in the file.
                #expect(parallel.byteOffset != nil && parallel.byteOffset == serial.byteOffset, "\(name), \(format)")
                #expect(parallel.modelIndex == serial.modelIndex && parallel.modelIndex != nil, "\(name), \(format)")
                #expect(context.isEmpty, "\(name), \(format)")
                #expect(context.changes.inserted.isEmpty, "\(name), \(format)")
            }
        }
    }

    /// A snapshot without the models' dates: a header without them leaves a new model's own.
    func withoutDates(_ snapshot: [String: String]) throws -> [String: String] {
        let dates = try Regex(#""(createdAt|updatedAt)":\{[^}]*\}"#)
        return snapshot.mapValues { $0.replacing(dates, with: "") }
    }

    @Test("a model of an unregistered type keeps the load on one thread, and it still loads")
    func unregisteredType() throws {
        let lister = #"{"model":"Lister","modelId":"\#(Self.ids[0])","properties":{"item":\#(pointer("Unlisted", Self.ids[1]))}}"#
        let unlisted =
            #"{"model":"Unlisted","modelId":"\#(Self.ids[1])","properties":{"label":"found","back":\#(pointer("Lister", Self.ids[0]))}}"#
        let context = ModelContext()
        #expect(try load(envelope([lister, unlisted]), into: context, workers: 2) == 0)
        #expect(context.model(Lister.self, modelId: Self.ids[0])?.item?.label == "found")
    }

    @Test("a context that already holds models loads on one thread, merging as always")
    func occupiedContext() throws {
        let source = ModelContext()
        let authors = makeBlog(authors: 3, postsPerAuthor: 3, in: source)
        let data = try source.data(format: .binaryPropertyList)
        let context = ModelContext()
        try load(data, into: context, workers: 1)
        let held = try #require(context.model(Author.self, modelId: authors[0].modelId))
        held.name = "changed"
        #expect(try load(data, into: context, workers: 2) == 0)
        #expect(held.name == "Author 0")
        #expect(context.model(Author.self, modelId: authors[0].modelId) === held)
    }

    @Test("models that never join a context are filled by workers and stay out of it")
    func contextFreeModels() throws {
        var drafts: [any Model] = []
        for index in 0..<12 {
            let draft = Draft()
            draft.text = "draft \(index)"
            drafts.append(draft)
        }
        let data = try Persistence.data(.models(drafts), format: .binaryPropertyList)
        let context = ModelContext()
        #expect(try load(data, into: context, workers: 2, chunk: 2) == 12)
        #expect(context.isEmpty)
    }

    @Test("a root loads with workers, and its graph with it")
    func rootLoad() throws {
        let source = ModelContext()
        let author = makeBlog(authors: 1, postsPerAuthor: 20, in: source)[0]
        let data = try author.persistedData(format: .binaryPropertyList)
        let context = ModelContext()
        let options = options(workers: 2, chunk: 2)
        let (root, filled) = try withModelSource(for: data) { source in
            let loader = GraphLoader(context: context, options: options, source: source)
            return (try loader.load(root: Author.self), loader.filledInParallel)
        }
        #expect(filled == 20)  // the posts; the author is decoded through Codable
        #expect(root.posts.count == 20)
        #expect(root.posts.allSatisfy { $0.author === root })
        #expect(context.count == 21)
    }

    @Test("models loaded with workers are released with their context")
    func lifetimes() throws {
        let source = ModelContext()
        makeBlog(authors: 10, postsPerAuthor: 10, in: source)
        let data = try source.data(format: .binaryPropertyList)
        let tracker = LifetimeTracker()
        do {
            let context = ModelContext()
            try load(data, into: context, workers: 3, chunk: 4)
            for author in context.models(of: Author.self) { author.lifetime = tracker.token() }
            for post in context.models(of: Post.self) { post.lifetime = tracker.token() }
            #expect(tracker.liveCount == 110)
        }
        #expect(tracker.liveCount == 0)
    }

    @Test(
        "a damaged file large enough for workers reports, through the public API, what one thread reports",
        arguments: [PersistenceFormat.json, .binaryPropertyList])
    func publicAPIError(format: PersistenceFormat) throws {
        let source = ModelContext()
        let authors = makeBlog(authors: 300, postsPerAuthor: 9, in: source)
        // The last author's name becomes a number: decoding it fails after every header was read.
        let last = try #require(authors.last)
        let json = try String(decoding: source.data(format: .json), as: UTF8.self)
            .replacingOccurrences(of: #""name":"\#(last.name)""#, with: #""name":7"#)
        let data = try converting(Data(json.utf8), to: format)
        let context = ModelContext()
        let error = try #require(throws: SerializationError.self) { try context.load(data) }
        let serial = try #require(throws: SerializationError.self) { try load(data, into: ModelContext(), workers: 1) }
        #expect(error.description == serial.description)
        #expect(error.code == .typeMismatch && error.path == "properties.name")
        #expect(context.isEmpty)
    }

    @Test("a file large enough for workers loads through the public API like a small one", arguments: PersistenceFormat.allCases)
    func publicAPI(format: PersistenceFormat) throws {
        let source = ModelContext()
        makeBlog(authors: 300, postsPerAuthor: 9, in: source)
        #expect(DeserializationOptions().parallelism.minimumModels <= source.count)
        let data = try source.data(format: format)
        let context = ModelContext()
        try context.load(data)
        #expect(try snapshot(context) == snapshot(source))
    }
}
