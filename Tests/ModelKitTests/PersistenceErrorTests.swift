import Foundation
import Testing
import ModelKitTestSupport

@testable import ModelKit

@Suite("Persistence errors")
struct PersistenceErrorTests {
    init() throws {
        try ModelRegistry.register(Author.self, Post.self, Everything.self, Note.self, Profile.self)
    }

    /// Loads `data` into `context` and returns the SerializationError it must throw.
    func loadError(_ data: Data, into context: ModelContext = ModelContext()) -> SerializationError? {
        do {
            try context.load(data)
            Issue.record("expected an error")
        } catch let error as SerializationError {
            return error
        } catch {
            Issue.record("expected a SerializationError, got \(error)")
        }
        return nil
    }

    func envelope(_ models: String, version: String = "1") -> Data {
        Data(#"{"format":"ModelKit","version":\#(version),"writtenBy":"test","models":[\#(models)]}"#.utf8)
    }

    static let id1 = "00000000-0000-0000-0000-000000000001"
    static let id2 = "00000000-0000-0000-0000-000000000002"

    @Test(
        "every truncation of a file is a typed error and loads nothing", arguments: [PersistenceFormat.json, .binaryPropertyList])
    func truncations(format: PersistenceFormat) throws {
        let source = ModelContext()
        makeBlog(authors: 2, postsPerAuthor: 2, in: source)
        let data = try source.data(format: format)
        for length in stride(from: 0, to: data.count - 1, by: max(1, data.count / 300)) {
            let context = ModelContext()
            let error = loadError(data.prefix(length), into: context)
            #expect(error != nil)
            #expect(context.isEmpty)
        }
    }

    @Test("syntax errors give the byte offset")
    func syntax() throws {
        let error = try #require(loadError(Data(#"{"format":"ModelKit","version":1,"models":[{"model": "Note",}]}"#.utf8)))
        #expect(error.code == .malformedInput)
        #expect(error.byteOffset == 60)
        var bytes = Array(envelope(#"{"model":"Note","modelId":"\#(Self.id1)","properties":{"text":"é"}}"#))
        let index = try #require(bytes.firstIndex(of: 0xC3))
        bytes[index + 1] = 0x28
        let utf8 = try #require(loadError(Data(bytes)))
        #expect(utf8.code == .malformedInput)
        #expect(utf8.byteOffset == index)
    }

    @Test("envelope problems are typed errors")
    func envelopes() throws {
        #expect(loadError(envelope("", version: "2"))?.code == .unsupportedVersion)
        #expect(loadError(envelope("", version: "\"1\""))?.code == .invalidValue)
        #expect(loadError(Data(#"{"format":"Other","version":1,"models":[]}"#.utf8))?.path == "format")
        #expect(loadError(Data(#"{"version":1,"models":[]}"#.utf8))?.path == "format")
    }

    @Test("value problems name the model index and the property path")
    func values() throws {
        let note = #"{"model":"Note","modelId":"\#(Self.id1)","properties":{"text":"ok","count":1}}"#
        let bad = #"{"model":"Everything","modelId":"\#(Self.id2)","properties":{"uint8":300}}"#
        let error = try #require(loadError(envelope(note + "," + bad)))
        #expect(error.code == .numberOutOfRange)
        #expect(error.modelIndex == 1)
        #expect(error.modelName == "Everything")
        #expect(error.path == "properties.uint8")
        let text = #"{"model":"Note","modelId":"\#(Self.id2)","properties":{"count":"seven"}}"#
        let mismatch = try #require(loadError(envelope(note + "," + text)))
        #expect(mismatch.code == .typeMismatch)
        #expect(mismatch.path == "properties.count")
    }

    @Test("duplicate ids, dangling pointers and unknown models are typed errors")
    func graphProblems() throws {
        let note = #"{"model":"Note","modelId":"\#(Self.id1)","properties":{}}"#
        let duplicate = try #require(loadError(envelope(note + "," + note)))
        #expect(duplicate.code == .duplicateModelId)
        #expect(duplicate.modelIndex == 1)
        let pointer = #"{"__type":"ModelPointer","model":"Author","modelId":"\#(Self.id2)","objectId":null}"#
        let post = #"{"model":"Post","modelId":"\#(Self.id1)","properties":{"author":\#(pointer)}}"#
        let dangling = try #require(loadError(envelope(post)))
        #expect(dangling.code == .danglingPointer)
        #expect(dangling.path == "properties.author")
        let placeholderContext = ModelContext()
        try placeholderContext.load(envelope(post), options: DeserializationOptions(danglingPointers: .placeholder))
        #expect(placeholderContext.model(Author.self, modelId: ModelID(Self.id2)!)?.modelState == .needsData)
        let unknown = try #require(loadError(envelope(#"{"model":"Autor","modelId":"\#(Self.id1)","properties":{}}"#)))
        #expect(unknown.code == .unknownModel)
        #expect(unknown.found == "\"Autor\"")
        let badId = try #require(loadError(envelope(#"{"model":"Note","modelId":"nope","properties":{}}"#)))
        #expect(badId.code == .invalidModelId)
    }

    @Test("nesting deeper than the limit is a typed error")
    func nesting() throws {
        let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        let error = try #require(
            loadError(envelope(#"{"model":"Note","modelId":"\#(Self.id1)","properties":{"text":\#(deep)}}"#)))
        #expect(error.code == .nestingTooDeep)
    }

    @Test("a binary property list whose objects refer to themselves is an error, not a hang or a crash")
    func plistCycle() throws {
        // A dictionary whose only value is itself: {"a": <self>}.
        var bytes = Array("bplist00".utf8)
        bytes += [0xD1, 0x01, 0x00]  // object 0: dictionary, key = object 1, value = object 0
        bytes += [0x51, UInt8(ascii: "a")]  // object 1: "a"
        let table = bytes.count
        bytes += [8, 11]
        bytes += [0, 0, 0, 0, 0, 0, 1, 1]
        bytes += [0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, UInt8(table)]
        #expect(loadError(Data(bytes)) != nil)
    }

    @Test(
        "a failed load leaves the context and its models exactly as before",
        arguments: [PersistenceFormat.json, .binaryPropertyList])
    func unchangedAfterFailure(format: PersistenceFormat) throws {
        let source = ModelContext()
        let authors = makeBlog(authors: 2, postsPerAuthor: 2, in: source)
        let target = ModelContext()
        try target.load(try source.data(format: format))
        let before = try snapshot(target)
        // The same graph, changed, with a broken model at the end: nothing of it may be applied.
        authors[0].name = "changed"
        _ = Everything.instance(in: source)
        var text = String(decoding: try source.data(format: .json), as: UTF8.self)
        text = text.replacingOccurrences(of: #""uint8":0"#, with: #""uint8":-1"#)
        let data = try converting(Data(text.utf8), to: format)
        #expect(loadError(data, into: target)?.code == .numberOutOfRange)
        #expect(try snapshot(target) == before)
        #expect(target.model(Author.self, modelId: authors[0].modelId)?.name == "Author 0")
    }
}

@Suite("Persistence fuzzing")
struct PersistenceFuzzTests {
    init() throws {
        try ModelRegistry.register(Author.self, Post.self, Everything.self, Note.self, Profile.self)
    }

    /// Loads `bytes` into a context that already holds `seed`'s models: either it loads, or it
    /// throws a SerializationError and the context is unchanged.
    static func check(_ bytes: [UInt8], over seed: Data) throws -> Bool {
        let context = ModelContext()
        try context.load(seed)
        let before = try snapshot(context)
        do {
            try context.load(Data(bytes))
            return true
        } catch is SerializationError {
            #expect(try snapshot(context) == before)
            return false
        }
    }

    /// Loads `bytes` into an empty context (the one-pass loader, or the general one where the
    /// pass declines) and into a context holding one unrelated model (always the general
    /// loader): both load the same models, or both throw a SerializationError and change
    /// nothing.
    static func checkOnePass(_ bytes: [UInt8]) throws {
        let empty = ModelContext()
        var loadedEmpty = false
        do {
            try empty.load(Data(bytes))
            loadedEmpty = true
        } catch is SerializationError {
            #expect(empty.isEmpty)
        }
        let general = ModelContext()
        let marker = Note.instance(in: general).modelId
        do {
            try general.load(Data(bytes))
            #expect(loadedEmpty)
            var loaded = try contents(general)
            loaded[marker.description] = nil
            #expect(try loaded == contents(empty))
        } catch is SerializationError {
            #expect(!loadedEmpty)
            #expect(general.count == 1)
        }
    }

    /// Loads `bytes` into an empty context with workers taking one model at a time, and on one
    /// thread: both load the same models, or both throw the same error and change nothing.
    static func checkWorkers(_ bytes: [UInt8]) throws {
        func load(workers: Int) throws -> Result<[String: String], SerializationError> {
            let context = ModelContext()
            var options = DeserializationOptions()
            options.parallelism = DeserializationOptions.Parallelism(minimumModels: 1, chunk: 1, workers: workers)
            do {
                try withModelSource(for: Data(bytes)) { source in
                    try GraphLoader(context: context, options: options, source: source).loadAll()
                }
                return .success(try contents(context))
            } catch let error as SerializationError {
                #expect(context.isEmpty)
                return .failure(error)
            }
        }
        switch (try load(workers: 3), try load(workers: 1)) {
        case (.success(let parallel), .success(let serial)):
            #expect(parallel == serial)
        case (.failure(let parallel), .failure(let serial)):
            #expect(parallel.description == serial.description)
        case (let parallel, let serial):
            Issue.record("with workers: \(parallel); on one thread: \(serial)")
        }
    }

    /// `snapshot(context)` without the models' creation and update dates: a model whose file
    /// lacks them keeps the time its instance was made, which differs from one load to another.
    static func contents(_ context: ModelContext) throws -> [String: String] {
        try snapshot(context).mapValues { description in
            guard let properties = description.range(of: #""properties":"#) else { return description }
            let head = String(description[..<properties.lowerBound])
                .replacing(#/"(createdAt|updatedAt)":\{[^}]*\},?/#, with: "")
            return head + description[properties.lowerBound...]
        }
    }

    @Test(
        "seeded random mutations of files never crash, never half-load, and load the same in one pass and with workers",
        arguments: [PersistenceFormat.json, .binaryPropertyList])
    func mutations(format: PersistenceFormat) throws {
        let source = ModelContext()
        let authors = makeBlog(authors: 2, postsPerAuthor: 2, in: source)
        authors[0].birthday = Date(timeIntervalSinceReferenceDate: 1000.25)
        let everything = Everything.instance(in: source)
        everything.string = "ünï 😀"
        let original = Array(try source.data(format: format))
        let seed = try source.data(format: format)
        var generator = SplitMix64(seed: format == .json ? 0xF00D : 0xBEEF)
        var loaded = 0
        var rejected = 0
        // MODELKIT_FUZZ_ITERATIONS runs a longer session; MODELKIT_FUZZ_DUMP names a file that
        // holds the input being tried, to recover one that crashes (then add it to Corpus/).
        let environment = ProcessInfo.processInfo.environment
        let iterations = environment["MODELKIT_FUZZ_ITERATIONS"].flatMap(Int.init) ?? 400
        let dump = environment["MODELKIT_FUZZ_DUMP"].map { URL(fileURLWithPath: $0 + (format == .json ? ".json" : ".bplist")) }
        for _ in 0..<iterations {
            var bytes = original
            for _ in 0...Int(generator.next() % 3) {
                let position = Int(generator.next() % UInt64(bytes.count))
                switch generator.next() % 5 {
                case 0: bytes[position] ^= UInt8(1 << (generator.next() % 8))  // bit flip
                case 1: bytes[position] = UInt8(truncatingIfNeeded: generator.next())
                case 2: bytes.removeSubrange(position...)  // truncation
                case 3:  // splice: a copy of another stretch of the file
                    let from = Int(generator.next() % UInt64(original.count))
                    let length = Int(generator.next() % 16)
                    bytes.replaceSubrange(
                        position..<min(bytes.count, position + length), with: original[from..<min(original.count, from + length)])
                default: bytes.remove(at: position)
                }
                if bytes.isEmpty { bytes = [0] }
            }
            if let dump { try Data(bytes).write(to: dump) }
            if try Self.check(bytes, over: seed) { loaded += 1 } else { rejected += 1 }
            try Self.checkOnePass(bytes)
            try Self.checkWorkers(bytes)
        }
        #expect(loaded + rejected == iterations)
        #expect(rejected > iterations / 4)
    }

    @Test("inputs that once failed stay fixed (the regression corpus)")
    func corpus() throws {
        let folder = try #require(Bundle.module.url(forResource: "Corpus", withExtension: nil, subdirectory: "Fixtures"))
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
        #expect(!files.isEmpty)
        let seed = try ModelContext().data()
        for file in files {
            _ = try Self.check(Array(try Data(contentsOf: file)), over: seed)
            try Self.checkOnePass(Array(try Data(contentsOf: file)))
            try Self.checkWorkers(Array(try Data(contentsOf: file)))
        }
    }
}
