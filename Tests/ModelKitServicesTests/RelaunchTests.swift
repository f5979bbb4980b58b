import Foundation
import ModelKit
import Testing

@testable import ModelKitServices

/// What a context's whole-graph file and its snapshots keep for the service (issue #30, item 7):
/// each record's server version, the changes not yet saved and the models never saved, so that a
/// relaunch saves an edit made before it as an update, against a real Kinto server.
@Suite("Service state across a relaunch", .timeLimit(.minutes(5)))
struct RelaunchTests {
    static let formats: [PersistenceFormat] = [.json, .binaryPropertyList, .xmlPropertyList]

    @Test(
        "An edit saved online, written to the context's file and loaded at a relaunch saves as an update, in every format",
        .enabled(if: serviceTestsEnabled, serviceTestsSkipped), arguments: formats)
    func editSurvivesRelaunch(format: PersistenceFormat) async throws {
        let service = try await KintoServer.freshService()
        let first = ModelContext()
        let writer = Writer.instance(in: first)
        writer.name = "Ann"
        writer.age = 30
        try await service.save(writer)
        let objectId = try #require(writer.objectId)
        let saved = try await service.read(RecordID(collection: Writer.modelName, id: objectId)).version

        // Edited offline, then a new article never saved; the file is written on exit.
        writer.name = "Ann Lee"
        let article = Article.instance(in: first)
        article.title = "Draft"
        article.author = writer
        writer.articles.append(article)
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("relaunch-\(UUID()).modelkit")
        defer { try? FileManager.default.removeItem(at: url) }
        try first.write(to: url, format: format)

        // The relaunch.
        let second = ModelContext()
        try second.load(from: url)
        let restored = try #require(second.model(Writer.self, objectId: objectId))
        #expect(restored.hasChanges)
        #expect(restored.changes.properties.contains("name"))
        #expect(restored.changes["name"]?.oldValue == "Ann")
        let draft = try #require(second.model(Article.self, modelId: article.modelId))
        #expect(draft.modelState == .new)
        #expect(draft.hasChanges)

        try await service.save(restored)
        #expect(!restored.hasChanges)
        #expect(draft.objectId != nil)
        let record = try await service.read(RecordID(collection: Writer.modelName, id: objectId))
        #expect(record.fields["name"] == "Ann Lee")
        #expect(record.version != saved)
        let written = try await service.read(RecordID(collection: Article.modelName, id: try #require(draft.objectId)))
        #expect(written.fields["title"] == "Draft")
    }

    @Test(
        "A record changed by someone else since the file was written is still a conflict after the relaunch",
        .enabled(if: serviceTestsEnabled, serviceTestsSkipped))
    func realConflictStays() async throws {
        let service = try await KintoServer.freshService()
        let first = ModelContext()
        let writer = Writer.instance(in: first)
        writer.name = "Bo"
        try await service.save(writer)
        let objectId = try #require(writer.objectId)
        writer.name = "Bo offline"
        let data = try first.data(format: .binaryPropertyList)

        // Another client changes the record meanwhile.
        let other = ModelContext()
        let copy = Writer.instance(objectId: objectId, in: other)
        try await service.fetch(copy)
        copy.age = 41
        try await service.save(copy)

        let second = ModelContext()
        try second.load(data)
        let restored = try #require(second.model(Writer.self, objectId: objectId))
        let error = await #expect(throws: ServiceError.self) { try await service.save(restored) }
        #expect(error?.code == .conflict)
        #expect(restored.hasChanges)
    }

    @Test(
        "A snapshot of a background context's fetched and edited model carries its version into the context it merges into",
        .enabled(if: serviceTestsEnabled, serviceTestsSkipped))
    func snapshotCarriesVersions() async throws {
        let service = try await KintoServer.freshService()
        let seed = ModelContext()
        let writer = Writer.instance(in: seed)
        writer.name = "Cy"
        try await service.save(writer)
        let objectId = try #require(writer.objectId)

        let background = ModelContext()
        let fetched = Writer.instance(objectId: objectId, in: background)
        try await service.fetch(fetched)
        fetched.age = 52
        let snapshot = try background.snapshotOfChanges()

        let main = ModelContext()
        try main.merge(snapshot)
        let merged = try #require(main.model(Writer.self, objectId: objectId))
        #expect(merged.hasChanges)
        try await service.save(merged)
        let record = try await service.read(RecordID(collection: Writer.modelName, id: objectId))
        #expect(record.fields["age"] == 52)
    }
}
