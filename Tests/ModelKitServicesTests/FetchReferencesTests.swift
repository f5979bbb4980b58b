import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@testable import ModelKitServices

/// `fetch(_:referenceDepth:maximumRecords:)`: a model and the models it references, read level by
/// level in batched requests and merged into the context by identity, all or nothing.
@Suite("Fetching with references", .enabled(if: serviceTestsEnabled, serviceTestsSkipped), .hangBackstop)
struct FetchReferencesTests {
    /// A chain of writers and articles, saved: w0 → [a0, a1]; a0 → w0 (a cycle); a1 → w1;
    /// w1 → [a2]; a2 → w2; w2 → []. So each further level of depth reaches one more model.
    struct Chain {
        let context: ModelContext
        let w0: Writer, w1: Writer, w2: Writer
        let a0: Article, a1: Article, a2: Article

        init(_ service: KintoService) async throws {
            context = ModelContext()
            w0 = Writer.instance(in: context)
            w1 = Writer.instance(in: context)
            w2 = Writer.instance(in: context)
            a0 = Article.instance(in: context)
            a1 = Article.instance(in: context)
            a2 = Article.instance(in: context)
            for (index, writer) in [w0, w1, w2].enumerated() { writer.name = "w\(index)" }
            for (index, article) in [a0, a1, a2].enumerated() { article.title = "a\(index)" }
            w0.articles = [a0, a1]
            w1.articles = [a2]
            a0.author = w0
            a1.author = w1
            a2.author = w2
            try await service.save(w0)
        }

        var objectIds: [String: String] {
            var ids: [String: String] = [:]
            for (name, model) in [("w0", w0), ("w1", w1), ("w2", w2)] as [(String, any Model)] { ids[model.objectId!] = name }
            for (name, model) in [("a0", a0), ("a1", a1), ("a2", a2)] as [(String, any Model)] { ids[model.objectId!] = name }
            return ids
        }
    }

    /// The models of `context` as "name:state", by the chain's names, sorted.
    static func states(_ context: ModelContext, names: [String: String]) -> [String] {
        context.allModels.map { model in
            "\(names[model.objectId ?? ""] ?? "?"):\(model.modelState == .loaded ? "loaded" : "\(model.modelState)")"
        }.sorted()
    }

    @Test("Depth 0, 1, 2, 3 and all load exactly the models that many references away; the next ones stay placeholders")
    func depths() async throws {
        let service = try await KintoServer.freshService()
        let chain = try await Chain(service)
        let names = chain.objectIds
        let cases: [(depth: Int, states: [String], requests: Int)] = [
            (0, ["a0:needsData", "a1:needsData", "w0:loaded"], 1),
            (1, ["a0:loaded", "a1:loaded", "w0:loaded", "w1:needsData"], 2),
            (2, ["a0:loaded", "a1:loaded", "a2:needsData", "w0:loaded", "w1:loaded"], 3),
            (3, ["a0:loaded", "a1:loaded", "a2:loaded", "w0:loaded", "w1:loaded", "w2:needsData"], 4),
            (Int.max, ["a0:loaded", "a1:loaded", "a2:loaded", "w0:loaded", "w1:loaded", "w2:loaded"], 5),
            (-1, ["a0:needsData", "a1:needsData", "w0:loaded"], 1),
        ]
        for (depth, states, requests) in cases {
            let context = ModelContext()
            let root = Writer.instance(objectId: try #require(chain.w0.objectId), in: context)
            let before = service.metrics.requests
            try await service.fetch(root, referenceDepth: depth)
            #expect(service.metrics.requests - before == requests, "depth \(depth)")
            #expect(Self.states(context, names: names) == states, "depth \(depth)")
            #expect(root.name == "w0")
            #expect(!context.allModels.contains { $0.hasChanges }, "depth \(depth)")
            // Loaded models hold the server's values, and their references are the context's.
            if depth >= 2 {
                let a1 = try #require(Array(root.articles).last)
                #expect(a1.title == "a1" && a1.author?.name == "w1")
                #expect(Array(root.articles).first?.author === root)
            }
        }
    }

    @Test("The model-level forms take the depth too, and a fetched model saves later as an update")
    @MainActor
    func modelLevel() async throws {
        let service = try await KintoServer.freshService()
        let chain = try await Chain(service)
        let context = ModelContext()
        let root = Writer.instance(objectId: try #require(chain.w0.objectId), in: context)
        try await root.fetch(referenceDepth: Int.max, using: service)
        #expect(context.allModels.allSatisfy { $0.modelState == .loaded } && context.count == 6)

        let other = ModelContext()
        let copy = Writer.instance(objectId: try #require(chain.w0.objectId), in: other)
        let result = await withCheckedContinuation { continuation in
            copy.fetchInBackground(referenceDepth: 1, using: service) { continuation.resume(returning: $0) }
        }
        #expect((try? result.get()) != nil)
        #expect(other.count == 4 && Array(copy.articles).allSatisfy { $0.modelState == .loaded })

        // The deepest article's server version was recorded: its save is an update (a create
        // of an existing record would be a conflict), and then the source's stale copy conflicts.
        let a2Id = try #require(chain.a2.objectId)
        let a2 = try #require(context.model(Article.self, objectId: a2Id))
        a2.title = "a2, edited"
        try await service.save(a2)
        chain.a2.title = "stale"
        let error = await #expect(throws: ServiceError.self) { try await service.save(chain.a2) }
        #expect(error?.code == .conflict)
    }

    @Test("Instances the context holds are updated in place, never duplicated, and a cycle ends")
    func inPlace() async throws {
        let service = try await KintoServer.freshService()
        let chain = try await Chain(service)
        let context = ModelContext()
        // The context holds a loaded a0 (then changed on the server), and a placeholder w1.
        let a0 = Article.instance(objectId: try #require(chain.a0.objectId), in: context)
        try await service.fetch(a0)
        let w1 = Writer.instance(objectId: try #require(chain.w1.objectId), in: context)
        chain.a0.title = "a0, new"
        try await service.save(chain.a0)

        let root = Writer.instance(objectId: try #require(chain.w0.objectId), in: context)
        let before = service.metrics.requests
        try await service.fetch(root, referenceDepth: Int.max)
        #expect(service.metrics.requests - before == 5)
        #expect(a0.title == "a0, new" && a0.modelState == .loaded && !a0.hasChanges)
        #expect(w1.name == "w1" && w1.modelState == .loaded)
        let articles = Array(root.articles)
        #expect(articles.count == 2 && articles[0] === a0)
        #expect(a0.author === root)
        #expect(articles[1].author === w1)
        #expect(Array(w1.articles).first?.author?.name == "w2")
        // One instance per record.
        let objectIds = context.allModels.compactMap(\.objectId)
        #expect(objectIds.count == 6 && Set(objectIds).count == 6)
    }

    @Test("A few hundred models take one request per collection per level and per 100 records, not one per model")
    func batched() async throws {
        let service = try await KintoServer.freshService()
        let source = ModelContext()
        // root → 150 articles → 60 writers → one article each → root.
        let root = Writer.instance(in: source)
        root.name = "root"
        let writers = (0..<60).map { index in
            let writer = Writer.instance(in: source)
            writer.name = "w\(index)"
            let own = Article.instance(in: source)
            own.title = "own \(index)"
            own.author = root
            writer.articles = [own]
            return writer
        }
        root.articles = ModelArray(
            (0..<150).map { index in
                let article = Article.instance(in: source)
                article.title = "t\(index)"
                article.author = writers[index % 60]
                return article
            })
        try await service.save(root)
        #expect(source.count == 271)

        let context = ModelContext()
        let copy = Writer.instance(objectId: try #require(root.objectId), in: context)
        let before = service.metrics.requests
        try await service.fetch(copy, referenceDepth: Int.max)
        // The root; 150 articles in 2 lists; 60 writers in 1; their 60 articles in 1.
        #expect(service.metrics.requests - before == 5)
        #expect(context.count == 271)
        #expect(context.allModels.allSatisfy { $0.modelState == .loaded })
        #expect(Array(copy.articles).map(\.title) == (0..<150).map { "t\($0)" })
        #expect(Array(copy.articles)[61].author?.name == "w1")
        #expect(Array(copy.articles)[61].author.map { Array($0.articles)[0].author === copy } == true)
    }

    @Test("A referenced model with unsaved changes keeps them, and its save still conflicts; the root's are replaced")
    func unsavedChanges() async throws {
        let service = try await KintoServer.freshService()
        let chain = try await Chain(service)
        let context = ModelContext()
        let root = Writer.instance(objectId: try #require(chain.w0.objectId), in: context)
        try await service.fetch(root, referenceDepth: 1)
        let (a0, a1) = (Array(root.articles)[0], Array(root.articles)[1])
        // Another client changes the three records; here, a0 and the root are edited.
        chain.w0.age = 50
        chain.a0.title = "a0 by the other"
        chain.a1.title = "a1 by the other"
        try await service.save(chain.w0)
        a0.title = "a0 here"
        root.name = "w0 here"

        try await service.fetch(root, referenceDepth: 1)
        #expect(root.name == "w0" && root.age == 50 && !root.hasChanges)
        #expect(a0.title == "a0 here" && a0.hasChanges)
        #expect(a1.title == "a1 by the other" && !a1.hasChanges)
        // a0's version is still the one this context saw: its save does not overwrite.
        let error = await #expect(throws: ServiceError.self) { try await service.save(a0) }
        #expect(error?.code == .conflict)
        a1.title = "a1 here"
        try await service.save(a1)
    }

    @Test("A reference to a record the server does not have reads as nil; a placeholder for it leaves the context")
    func missingRecords() async throws {
        let service = try await KintoServer.freshService()
        let chain = try await Chain(service)
        // Loaded before its record goes away.
        let third = ModelContext()
        let w2 = Writer.instance(objectId: try #require(chain.w2.objectId), in: third)
        try await service.fetch(w2)
        let server = try await KintoServer.shared.value
        for (collection, model) in [("Article", chain.a1 as any Model), ("Writer", chain.w2 as any Model)] {
            let path = "/buckets/\(service.bucket)/collections/\(collection)/records/\(model.objectId!)"
            #expect(try await server.request("DELETE", path).status == 200)
        }
        let context = ModelContext()
        let heldA1 = Article.instance(objectId: try #require(chain.a1.objectId), in: context)
        let root = Writer.instance(objectId: try #require(chain.w0.objectId), in: context)
        try await service.fetch(root, referenceDepth: 1)
        #expect(Array(root.articles).map(\.title) == ["a0"])
        #expect(heldA1.modelContext == nil)
        #expect(context.count == 2 && !root.hasChanges)

        // Beyond the depth, a missing record is not looked for: its placeholder stays.
        let other = ModelContext()
        let a2 = Article.instance(objectId: try #require(chain.a2.objectId), in: other)
        try await service.fetch(a2)
        #expect(a2.author?.modelState == .needsData)
        try await service.fetch(a2, referenceDepth: 1)
        #expect(a2.author == nil && a2.title == "a2" && other.count == 1)

        // A loaded model whose record is gone is left as it is.
        let a2Again = Article.instance(objectId: try #require(chain.a2.objectId), in: third)
        try await service.fetch(a2Again, referenceDepth: 1)
        #expect(w2.modelContext === third && w2.name == "w2" && w2.modelState == .loaded && a2Again.author === w2)
    }

    @Test("Beyond maximumRecords the fetch is queryTooBroad and changes nothing; at the limit it goes through")
    func limit() async throws {
        let service = try await KintoServer.freshService()
        let source = ModelContext()
        let writer = Writer.instance(in: source)
        writer.articles = ModelArray(
            (0..<30).map { index in
                let article = Article.instance(in: source)
                article.title = "t\(index)"
                article.author = writer
                return article
            })
        try await service.save(writer)
        let context = ModelContext()
        let root = Writer.instance(objectId: try #require(writer.objectId), in: context)
        let state = ContextState(context, store: service)
        let error = await #expect(throws: ServiceError.self) {
            try await service.fetch(root, referenceDepth: 1, maximumRecords: 30)
        }
        #expect(error?.code == .queryTooBroad)
        #expect(error?.description.contains("at most 30 records") == true)
        #expect(ContextState(context, store: service) == state)

        let before = service.metrics.requests
        let none = await #expect(throws: ServiceError.self) { try await service.fetch(root, maximumRecords: 0) }
        #expect(none?.code == .queryTooBroad && service.metrics.requests == before)

        try await service.fetch(root, referenceDepth: 1, maximumRecords: 31)
        #expect(context.count == 31 && context.allModels.allSatisfy { $0.modelState == .loaded })
    }

    @Test("A referenced record that does not decode fails the whole fetch, naming it, and the context is as before")
    func undecodable() async throws {
        let service = try await KintoServer.freshService()
        let chain = try await Chain(service)
        let server = try await KintoServer.shared.value
        let bad = try #require(chain.a1.objectId)
        let put = try await server.request(
            "PUT", "/buckets/\(service.bucket)/collections/Article/records/\(bad)",
            body: ["data": ["title": 42, "author": ["__type": "ModelPointer", "model": "Writer", "objectId": "nobody"]]])
        #expect(put.status == 200)

        let context = ModelContext()
        let root = Writer.instance(objectId: try #require(chain.w0.objectId), in: context)
        try await service.fetch(root)
        root.age = 7
        let a0 = Array(root.articles)[0]
        let state = ContextState(context, store: service)
        let error = await #expect(throws: ServiceError.self) { try await service.fetch(root, referenceDepth: Int.max) }
        #expect(error?.code == .invalidResponse)
        #expect(error?.record == RecordID(collection: "Article", id: bad))
        #expect(error?.description.contains("decodes as a Article") == true)
        #expect(ContextState(context, store: service) == state)
        #expect(root.age == 7 && a0.modelState == .needsData)

        // A pointer to a type the app does not know: no request for it, and the reason.
        let ghost = try await server.request(
            "PUT", "/buckets/\(service.bucket)/collections/Article/records/\(bad)",
            body: ["data": ["title": "a1", "author": ["__type": "ModelPointer", "model": "Ghost", "objectId": "g1"]]])
        #expect(ghost.status == 200)
        let before = service.metrics.requests
        let unknown = await #expect(throws: ServiceError.self) { try await service.fetch(root, referenceDepth: Int.max) }
        #expect(service.metrics.requests - before == 2)
        #expect(unknown?.code == .invalidResponse && unknown?.record == RecordID(collection: "Article", id: bad))
        #expect(unknown?.description.contains("a pointer to a registered model type") == true)
        #expect(ContextState(context, store: service) == state)
    }

    @Test("A request failing mid-way, and records the server was not asked for, fail the fetch and change nothing")
    func hostileAnswers() async throws {
        let rig = try await FaultTests.rig()
        defer { rig.proxy.stop() }
        let chain = try await Chain(rig.direct)
        let context = ModelContext()
        let root = Writer.instance(objectId: try #require(chain.w0.objectId), in: context)
        let held = Article.instance(objectId: try #require(chain.a0.objectId), in: context)
        let state = ContextState(context, store: rig.service)

        // The second level's list request fails (400 is not retried). The proxy matches paths
        // without their query: the first Writer request, the root's read, passes.
        try await rig.proxy.inject([
            ["match": "collections/Writer/records", "action": "delay", "seconds": 0],
            ["match": "collections/Writer/records", "action": "status", "status": 400, "body": "{}"],
        ])
        let failed = await #expect(throws: ServiceError.self) { try await rig.service.fetch(root, referenceDepth: Int.max) }
        #expect(failed?.code == .httpStatus)
        #expect(ContextState(context, store: rig.service) == state)

        // A list answer with a record that was not asked for.
        try await rig.proxy.inject([
            [
                "match": "collections/Article/records", "action": "edit",
                "edits": [["path": ["data", 0, "id"], "value": "someone-else"]],
            ]
        ])
        let hostile = await #expect(throws: ServiceError.self) { try await rig.service.fetch(root, referenceDepth: 1) }
        #expect(hostile?.code == .invalidResponse)
        #expect(hostile?.description.contains("among the 2 ids asked for") == true, "\(hostile.map { "\($0)" } ?? "")")
        #expect(ContextState(context, store: rig.service) == state)

        // Undisturbed, it goes through.
        try await rig.service.fetch(root, referenceDepth: 1)
        #expect(held.modelState == .loaded && held.author === root)
    }

    @Test("Records decoded together that point to the same unfetched record share one placeholder (fetches and queries)")
    func sharedPlaceholders() async throws {
        let service = try await KintoServer.freshService()
        let chain = try await Chain(service)
        // a1 and a new a3 both name w1, which a fetch of w0 at depth 1 does not load.
        let source = chain.context
        let extra = Article.instance(in: source)
        extra.title = "a3"
        extra.author = chain.w1
        chain.w0.articles.append(extra)
        try await service.save(chain.w0)

        let context = ModelContext()
        let root = Writer.instance(objectId: try #require(chain.w0.objectId), in: context)
        try await service.fetch(root, referenceDepth: 1)
        let articles = Array(root.articles)
        #expect(articles.count == 3 && articles[1].author != nil && articles[1].author === articles[2].author)
        #expect(context.count == 5)

        let other = ModelContext()
        let results = try await service.fetch(Article.query(in: other).where(\.title, .notEquals("a0")).sorted(by: "title"))
        #expect(results.map(\.title) == ["a1", "a2", "a3"])
        #expect(results[0].author != nil && results[0].author === results[2].author)
        #expect(results[0].author?.modelState == .needsData)
        #expect(other.allModels.filter { $0.objectId == chain.w1.objectId }.count == 1)
    }

    @Test("A backend that cannot list records reads them one at a time, with the same outcome")
    func withoutListing() async throws {
        let kinto = try await KintoServer.freshService()
        let chain = try await Chain(kinto)
        let backend = ReadOnlyBackend(kinto)
        let context = ModelContext()
        let root = Writer.instance(objectId: try #require(chain.w0.objectId), in: context)
        let before = kinto.metrics.requests
        try await backend.fetch(root, referenceDepth: Int.max)
        // One read per record: the backend refuses the list request without sending anything.
        #expect(kinto.metrics.requests - before == 6)
        #expect(context.count == 6 && context.allModels.allSatisfy { $0.modelState == .loaded })
        #expect(Array(root.articles).last?.author.map { Array($0.articles)[0].author?.name } == "w2")
    }
}

/// A backend over Kinto's reads and writes that cannot list records (the protocol's default):
/// a fetch with references falls back to reading each record.
final class ReadOnlyBackend: ModelService {
    let kinto: KintoService
    init(_ kinto: KintoService) { self.kinto = kinto }
    var storeIdentifier: String { kinto.storeIdentifier }
    func perform(_ writes: [RecordWrite]) async throws(ServiceError) -> [RecordWriteResult] { try await kinto.perform(writes) }
    func read(_ id: RecordID) async throws(ServiceError) -> RemoteRecord { try await kinto.read(id) }
}
