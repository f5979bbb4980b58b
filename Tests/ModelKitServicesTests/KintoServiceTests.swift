import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@testable import ModelKitServices

/// Save, fetch and delete against a real Kinto server (see KintoFixture.swift). Each test has a
/// bucket of its own.
@Suite("KintoService on a real server", .enabled(if: serviceTestsEnabled, serviceTestsSkipped), .hangBackstop)
struct KintoServiceTests {
    @Test("A timeout of any length is taken as given: the longest works, none at all fails at once as 'timed out'")
    func extremeTimeouts() async throws {
        let server = try await KintoServer.shared.value
        let longest = KintoService(url: server.url, user: server.user, password: server.password, timeout: .seconds(Int64.max))
        #expect(try await longest.maximumBatchSize() > 0)
        for none: Duration in [.zero, .seconds(-5)] {
            let impatient = KintoService(url: server.url, user: server.user, password: server.password, timeout: none)
            let error = await #expect(throws: ServiceError.self) { _ = try await impatient.maximumBatchSize() }
            #expect(error?.code == .timedOut, "\(none)")
            // At once: ended by the client's own limit, whose deadline has passed when the request
            // starts, not by the session's backstop 5 s later (the error says which, however busy
            // the machine).
            let text = error.map { "\($0)" } ?? ""
            #expect(text.hasSuffix("(limit \(none))") && !text.contains("backstop"), "\(none): \(text)")
        }
    }

    @Test("Saving a new model creates its record, and a fetch in another context reads the same values")
    func saveThenFetch() async throws {
        let service = try await KintoServer.freshService()
        let context = ModelContext()
        let writer = Writer.instance(in: context)
        writer.name = "Jon Gilkison"
        writer.age = 39
        writer.born = Date(timeIntervalSince1970: 123_456_789.125)
        writer.avatar = Data([0, 1, 2, 254, 255])
        try await service.save(writer)

        let objectId = try #require(writer.objectId)
        #expect(writer.modelState == .loaded)
        #expect(!writer.hasChanges)

        let other = ModelContext()
        let copy = Writer.instance(objectId: objectId, in: other)
        #expect(copy.modelState == .needsData)
        try await service.fetch(copy)
        #expect(copy.modelState == .loaded)
        #expect(copy.name == "Jon Gilkison")
        #expect(copy.age == 39)
        #expect(copy.born == writer.born)
        #expect(copy.avatar == writer.avatar)
        #expect(copy.createdAt == writer.createdAt)
        #expect(other.model(Writer.self, objectId: objectId) === copy)
        #expect(other.count == 1)
    }

    @Test("Saving an article saves its author first, cycles included, and a fetch links them by identity")
    func cycleSave() async throws {
        let service = try await KintoServer.freshService()
        let context = ModelContext()
        let writer = Writer.instance(in: context)
        writer.name = "Ann"
        let first = Article.instance(in: context)
        first.title = "One"
        first.author = writer
        let second = Article.instance(in: context)
        second.title = "Two"
        second.author = writer
        writer.articles = [first, second]

        try await service.save(first)
        for model in [writer, first, second] as [any Model] {
            #expect(model.objectId != nil)
            #expect(model.modelState == .loaded)
            #expect(!model.hasChanges)
        }
        #expect(service.metrics.requests == 2)  // GET / for the batch limit, one /batch

        let other = ModelContext()
        let author = Writer.instance(objectId: try #require(writer.objectId), in: other)
        try await service.fetch(author)
        #expect(author.articles.count == 2)
        let fetchedFirst = try #require(author.articles.first)
        #expect(fetchedFirst.modelState == .needsData)
        #expect(fetchedFirst.objectId == first.objectId)
        try await service.fetch(fetchedFirst)
        #expect(fetchedFirst.title == "One")
        #expect(fetchedFirst.author === author)
        #expect(other.count == 3)
    }

    @Test("Large records go in /batch bodies kept under the preferred size (on Linux), and all are saved")
    func largeRecordsSplit() async throws {
        let service = try await KintoServer.freshService()
        let context = ModelContext()
        let writer = Writer.instance(in: context)
        writer.name = "Ann"
        writer.articles = ModelArray(
            (0..<12).map { index in
                let article = Article.instance(in: context)
                article.title = "\(index) " + String(repeating: "long text ", count: 1_000)
                article.author = writer
                return article
            })
        try await service.save(writer)
        #if canImport(FoundationNetworking)
            // 13 records of which 12 of about 10 KB: five a batch under 60 KB, so three batches.
            #expect(service.metrics.requests == 4)
        #else
            #expect(service.metrics.requests == 2)
        #endif
        #expect(context.models(of: Article.self).allSatisfy { $0.modelState == .loaded && !$0.hasChanges })
        let other = ModelContext()
        let last = try #require(Array(writer.articles).last)
        let copy = Article.instance(objectId: try #require(last.objectId), in: other)
        try await service.fetch(copy)
        #expect(copy.title == last.title)
    }

    @Test("A save of more models than the server's batch limit goes in several /batch requests")
    func batching() async throws {
        let service = try await KintoServer.freshService()
        let context = ModelContext()
        let writer = Writer.instance(in: context)
        writer.articles = ModelArray(
            (0..<60).map { index in
                let article = Article.instance(in: context)
                article.title = "Article \(index)"
                article.author = writer
                return article
            })
        try await service.save(writer)
        // 61 records, 25 a batch: 3 batches, after GET / for the limit.
        #expect(service.metrics.requests == 4)
        #expect(context.models(of: Article.self).allSatisfy { $0.modelState == .loaded && !$0.hasChanges })

        // Nothing changed: a second save sends nothing.
        try await service.save(writer)
        #expect(service.metrics.requests == 4)

        // One change: one write.
        let seventh = Array(writer.articles)[7]
        seventh.title = "Changed"
        try await service.save(writer)
        #expect(service.metrics.requests == 5)
        let other = ModelContext()
        let copy = Article.instance(objectId: try #require(seventh.objectId), in: other)
        try await service.fetch(copy)
        #expect(copy.title == "Changed")
    }

    @Test("An update after another client changed the record is a conflict, and the local model keeps its changes")
    func conflict() async throws {
        let service = try await KintoServer.freshService()
        let context = ModelContext()
        let writer = Writer.instance(in: context)
        writer.name = "Ann"
        try await service.save(writer)
        let objectId = try #require(writer.objectId)

        // Another client (its own context) fetches, changes and saves the record.
        let otherContext = ModelContext()
        let theirs = Writer.instance(objectId: objectId, in: otherContext)
        try await service.fetch(theirs)
        theirs.name = "Ann (theirs)"
        try await service.save(theirs)

        writer.name = "Ann (mine)"
        let error = await #expect(throws: ServiceError.self) { try await service.save(writer) }
        #expect(error?.code == .conflict)
        #expect(error?.statusCode == 412)
        #expect(error?.serverVersion != nil)
        #expect(error?.record == RecordID(collection: "Writer", id: objectId))
        #expect(error?.description.contains("expected the version this context last saw") == true)
        #expect(writer.name == "Ann (mine)")
        #expect(writer.hasChanges)

        // After a fetch, the save goes through.
        try await service.fetch(writer)
        #expect(writer.name == "Ann (theirs)")
        writer.name = "Ann (merged)"
        try await service.save(writer)
        try await service.fetch(theirs)
        #expect(theirs.name == "Ann (merged)")
    }

    @Test("A failed save leaves the models it did not write as they were, and reports and keeps the ones it wrote")
    func failedSaveRollsBack() async throws {
        let service = try await KintoServer.freshService()
        let server = try await KintoServer.shared.value
        // Another client already has the record "taken".
        let existing = try await server.request(
            "PUT", "/buckets/\(service.bucket)/collections/Writer/records/taken", body: ["data": ["name": "Theirs"]])
        #expect(existing.status == 201)

        let context = ModelContext()
        // A placeholder the app gave values is created, which fails: the record exists.
        let writer = Writer.instance(objectId: "taken", in: context)
        writer.name = "Mine"
        let article = Article.instance(in: context)
        article.title = "Mine"
        article.author = writer
        let error = await #expect(throws: ServiceError.self) { try await service.save(article) }
        #expect(error?.code == .conflict)
        #expect(error?.record == RecordID(collection: "Writer", id: "taken"))
        // The server carries on after a refused write of a batch: the article, in the same
        // request, was written, so the error says so and the article is saved (its id kept).
        let articleId = try #require(article.objectId)
        #expect(error?.writtenRecords == [RecordID(collection: "Article", id: articleId)])
        #expect(article.modelState == .loaded)
        #expect(!article.hasChanges)
        #expect(writer.modelState == .needsData)
        #expect(writer.name == "Mine")

        // A placeholder without values is never written: the server's record stays.
        let elsewhere = ModelContext()
        let untouched = Writer.instance(objectId: "taken", in: elsewhere)
        try await service.save(untouched)
        #expect(untouched.modelState == .needsData)
        try await service.fetch(untouched)
        #expect(untouched.name == "Theirs")
    }

    @Test("Fetching a record that does not exist is 'not found', and the placeholder stays as it was")
    func notFound() async throws {
        let service = try await KintoServer.freshService()
        let context = ModelContext()
        let ghost = Writer.instance(objectId: "nobody", in: context)
        let error = await #expect(throws: ServiceError.self) { try await service.fetch(ghost) }
        #expect(error?.code == .notFound)
        #expect(error?.record == RecordID(collection: "Writer", id: "nobody"))
        #expect(ghost.modelState == .needsData)
        #expect(context.count == 1)
    }

    @Test("Deleting a model removes its record and the local model; a reference to it then reads nil")
    func delete() async throws {
        let service = try await KintoServer.freshService()
        let context = ModelContext()
        let writer = Writer.instance(in: context)
        writer.name = "Gone soon"
        let article = Article.instance(in: context)
        article.author = writer
        try await service.save(article)
        let objectId = try #require(writer.objectId)

        try await service.delete(writer)
        #expect(article.author == nil)
        #expect(context.model(Writer.self, objectId: objectId) == nil)

        let other = ModelContext()
        let copy = Writer.instance(objectId: objectId, in: other)
        let error = await #expect(throws: ServiceError.self) { try await service.fetch(copy) }
        #expect(error?.code == .notFound)

        // Deleting it again: not found, and the model stays where it is.
        let again = await #expect(throws: ServiceError.self) { try await service.delete(copy) }
        #expect(again?.code == .notFound)
        #expect(other.model(Writer.self, objectId: objectId) === copy)
    }

    @Test("A record with wrong types or a broken pointer is an invalid response, and the model is unchanged")
    func badRecords() async throws {
        let service = try await KintoServer.freshService()
        let server = try await KintoServer.shared.value
        let base = "/buckets/\(service.bucket)/collections"
        _ = try await server.request("PUT", "\(base)/Writer/records/wrong", body: ["data": ["name": 42]])
        _ = try await server.request(
            "PUT", "\(base)/Article/records/broken",
            body: ["data": ["title": "T", "author": ["__type": "ModelPointer", "model": "Writer"]]])
        _ = try await server.request(
            "PUT", "\(base)/Article/records/stranger",
            body: ["data": ["title": "T", "author": ["__type": "ModelPointer", "model": "Nobody", "objectId": "x"]]])

        let context = ModelContext()
        let writer = Writer.instance(objectId: "wrong", in: context)
        let error = await #expect(throws: ServiceError.self) { try await service.fetch(writer) }
        #expect(error?.code == .invalidResponse)
        #expect(error?.description.contains("expected a record that decodes as a Writer") == true)
        #expect(writer.modelState == .needsData)

        for id in ["broken", "stranger"] {
            let article = Article.instance(objectId: id, in: context)
            let error = await #expect(throws: ServiceError.self) { try await service.fetch(article) }
            #expect(error?.code == .invalidResponse)
            #expect(article.modelState == .needsData)
        }
        #expect(context.count == 3)
    }

    @Test("Two services on different buckets keep their records apart")
    func twoServices() async throws {
        let first = try await KintoServer.freshService()
        let second = try await KintoServer.freshService()
        let one = ModelContext()
        let two = ModelContext()
        let a = Writer.instance(objectId: "same", in: one)
        a.name = "First"
        let b = Writer.instance(objectId: "same", in: two)
        b.name = "Second"
        try await first.save(a)
        try await second.save(b)

        let check = ModelContext()
        let readBack = Writer.instance(objectId: "same", in: check)
        try await first.fetch(readBack)
        #expect(readBack.name == "First")
        try await second.fetch(readBack)
        #expect(readBack.name == "Second")
    }

    @Test("A record's server and header fields are never read as properties of the same name; its dates are the model's")
    func serverFieldsAreNotProperties() async throws {
        try ModelRegistry.register(Stamped.self)
        let service = try await KintoServer.freshService()
        let server = try await KintoServer.shared.value
        let collection = "/buckets/\(service.bucket)/collections/Stamped"
        #expect(try await server.request("PUT", collection).status == 201)
        let put = try await server.request(
            "PUT", "\(collection)/records/s1",
            body: ["data": ["name": "S", "createdAt": ["__type": "Date", "iso": "2020-01-02T03:04:05Z"]]])
        #expect(put.status == 201)

        let context = ModelContext()
        let model = Stamped.instance(objectId: "s1", in: context)
        try await service.fetch(model)
        #expect(model.modelState == .loaded)
        #expect(model.name == "S")
        // The server's `last_modified` is the record's version, not the property's value.
        #expect(model.last_modified == -1)
        #expect(model.createdAt == Date(timeIntervalSince1970: 1_577_934_245))
    }
}

/// A model with a property named like a field Kinto sets (a save refuses it; another client may
/// still write such records).
final class Stamped: ModelObject<Stamped.Properties>, RemoteModel {
    struct Properties: ModelProperties {
        var name = ""
        // swift-format-ignore: AlwaysUseLowerCamelCase
        var last_modified = -1
    }
}

@Suite("ServiceError without a server")
struct ServiceErrorTests {
    @Test("A body that is not JSON is an invalid response, not a crash")
    func notJSON() {
        let error = #expect(throws: ServiceError.self) {
            _ = try KintoService.json(Data("<html>oops".utf8), record: nil)
        }
        #expect(error?.code == .invalidResponse)
        #expect(error?.description.contains("expected JSON but found '<html>oops'") == true)
    }

    @Test("A server that is not there is 'unreachable'")
    func unreachable() async {
        let service = KintoService(url: URL(string: "http://127.0.0.1:9/v1")!, timeout: .seconds(120))
        let context = ModelContext()
        let writer = Writer.instance(objectId: "w", in: context)
        let error = await #expect(throws: ServiceError.self) { try await service.fetch(writer) }
        #expect(error?.code == .unreachable)
        #expect(writer.modelState == .needsData)
    }

    @Test("A model with an object id the server refuses is an invalid model, and nothing is sent")
    func badObjectId() async {
        let service = KintoService(url: URL(string: "http://127.0.0.1:9/v1")!, timeout: .seconds(120))
        let context = ModelContext()
        let writer = Writer.instance(in: context)
        writer.objectId = "bad.id"
        let error = await #expect(throws: ServiceError.self) { try await service.save(writer) }
        #expect(error?.code == .invalidModel)
        #expect(service.metrics.requests == 0)
        #expect(writer.modelState == .new)
    }
}
