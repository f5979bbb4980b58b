import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@testable import ModelKitServices

/// What a save does with values the app writes while its `/batch` is on the way: the server has
/// the values the save planned with, so a model written meanwhile keeps its changes, to be saved
/// next, and the others' changes are reset. The proxy holds the batch until the test has written
/// (an event, not a time: a busy machine only makes the test slower), and the writes happen on
/// the main actor while the save waits there.
@Suite(
    "Writes while a save is in flight", .enabled(if: serviceTestsEnabled, serviceTestsSkipped), .hangBackstop)
struct SaveInFlightTests {
    /// Long enough that Swift keeps it in a heap buffer, so an equal copy is other bytes.
    static let longTitle = "A title long enough to live in a buffer of its own"

    @Test("A value written while its save is in flight stays a change and is saved next; the other models' changes are reset")
    @MainActor
    func writesDuringASave() async throws {
        let rig = try await FaultTests.rig()
        defer { rig.proxy.stop() }
        let context = ModelContext()
        let writer = FaultTests.graph(in: context)
        let articles = Array(writer.articles)
        articles[0].title = Self.longTitle
        try await rig.proxy.inject([["match": "POST /v1/batch", "action": "hold", "name": "batch"]])

        // The task starts when this one waits, and plans the save before its first request; once
        // the batch has reached the proxy, the save is in flight, and stays so until released.
        let save = Task { @MainActor in try await rig.service.save(writer) }
        try await waitUntil("the batch to reach the proxy") { try await rig.proxy.count("POST /v1/batch") == 1 }
        writer.name = "Renamed while the save was in flight"
        // Written, then written back to the value the save planned with, in a new buffer: other
        // bits, the same value, so the values' trees decide, and the article's changes are reset.
        articles[0].title = ""
        articles[0].title = String(decoding: Array(Self.longTitle.utf8), as: UTF8.self)
        try await rig.proxy.release("batch")
        try await save.value
        #expect(try await rig.proxy.count("POST /v1/batch") == 1)

        #expect(writer.hasChanges && writer.modelState == .loaded)
        #expect(writer.name == "Renamed while the save was in flight")
        // The changes compare with what the server now has (a later merge's base): the name
        // only, from the value saved.
        #expect(writer.changes.properties == ["name"])
        #expect(writer.changes["name"]?.oldValue == "Ann")
        #expect(!articles[0].hasChanges && !articles[1].hasChanges)
        let objectId = try #require(writer.objectId)
        #expect(try await Self.storedName(objectId, on: rig.direct) == "Ann")

        // The change is saved next, as an update of the version the first save wrote.
        try await rig.service.save(writer)
        #expect(!writer.hasChanges)
        #expect(try await Self.storedName(objectId, on: rig.direct) == "Renamed while the save was in flight")
    }

    /// The name of writer `objectId` as the server has it, read into a context of its own.
    static func storedName(_ objectId: String, on service: KintoService) async throws -> String {
        let context = ModelContext()
        let copy = Writer.instance(objectId: objectId, in: context)
        try await service.fetch(copy)
        return copy.name
    }
}
