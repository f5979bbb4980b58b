import Foundation
import ModelKit
import Testing

@testable import ModelKitServices

/// A model that stays on the device: not a `RemoteModel`.
final class LocalNote: ModelObject<LocalNote.Properties> {
    struct Properties: ModelProperties { var text = "" }
}

/// A remote model that references a local one.
final class Shelf: ModelObject<Shelf.Properties>, RemoteModel {
    struct Properties: ModelProperties {
        var label = ""
        var note = ModelRef<LocalNote>()
    }
}

/// A save whose references cannot be saved fails as a whole, before anything is sent.
@Suite("Saves that cannot be sent")
struct SaveFailureTests {
    /// A service on a port nothing listens on: a request would fail as unreachable, so an
    /// `invalidModel` error proves that none was sent (and the counter checks it too).
    private let service = KintoService(url: URL(string: "http://127.0.0.1:9/v1")!, timeout: .seconds(120))

    @Test("A reference to a model that is not a RemoteModel fails the save with the reason, and nothing changes")
    func localReference() async {
        let context = ModelContext()
        let shelf = Shelf.instance(in: context)
        shelf.label = "Top"
        let note = LocalNote.instance(in: context)
        note.text = "private"
        shelf.note = note
        let error = await #expect(throws: ServiceError.self) { try await service.save(shelf) }
        #expect(error?.code == .invalidModel)
        #expect(error?.description.contains("RemoteModel") == true)
        #expect(service.metrics.requests == 0)
        #expect(shelf.objectId == nil && note.objectId == nil)
        #expect(shelf.modelState == .new && shelf.hasChanges)
    }

    @Test("A referenced model whose object id the server would refuse fails the whole save, naming that model")
    func badReferencedId() async throws {
        let context = ModelContext()
        let writer = Writer.instance(in: context)
        writer.name = "Ann"
        let good = Article.instance(in: context)
        good.title = "Fine"
        let bad = Article.instance(in: context)
        bad.title = "Broken"
        bad.objectId = "has space"
        writer.articles = [good, bad]
        let before = try writer.properties
        let error = await #expect(throws: ServiceError.self) { try await service.save(writer) }
        #expect(error?.code == .invalidModel)
        #expect(error?.record == RecordID(collection: "Article", id: "has space"))
        #expect(service.metrics.requests == 0)
        // Object ids given by the failed save are taken back; the one the app set stays.
        #expect(writer.objectId == nil && good.objectId == nil && bad.objectId == "has space")
        #expect(try writer.properties == before)
        #expect(([writer, good, bad] as [any Model]).allSatisfy { $0.modelState == .new })
    }
}
