import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@testable import ModelKitServices

/// The model-level calls (`author.save()`, `saveInBackground`) and the default service. The suite
/// is serialized because the default service is one per process: no other suite sets it.
@Suite("Model-level service calls", .serialized, .hangBackstop)
struct ModelCallsTests {
    @Test("Without a service passed or set, a model-level call fails with 'notConfigured' and changes nothing")
    func notConfigured() async {
        ModelServices.default = nil
        let context = ModelContext()
        let writer = Writer.instance(in: context)
        writer.name = "Ann"
        let error = await #expect(throws: ServiceError.self) { try await writer.save() }
        #expect(error?.code == .notConfigured)
        #expect(error?.description.contains("ModelServices.default") == true)
        #expect(writer.objectId == nil)
        #expect(writer.modelState == .new)
        #expect(writer.hasChanges)
    }

    @Test(
        "The default service serves save, fetch and delete, and a service passed explicitly wins over it",
        .enabled(if: serviceTestsEnabled, serviceTestsSkipped))
    func defaultService() async throws {
        let service = try await KintoServer.freshService()
        let other = try await KintoServer.freshService()
        ModelServices.default = service
        defer { ModelServices.default = nil }

        let context = ModelContext()
        let writer = Writer.instance(in: context)
        writer.name = "Ann"
        try await writer.save()
        let objectId = try #require(writer.objectId)
        #expect(writer.modelState == .loaded)

        let elsewhere = ModelContext()
        let copy = Writer.instance(objectId: objectId, in: elsewhere)
        try await copy.fetch()
        #expect(copy.name == "Ann")
        // The other bucket has no such record: the explicit service was used.
        let error = await #expect(throws: ServiceError.self) { try await copy.fetch(using: other) }
        #expect(error?.code == .notFound)

        try await copy.delete()
        #expect(copy.modelContext == nil)
        let third = ModelContext()
        let gone = Writer.instance(objectId: objectId, in: third)
        let missing = await #expect(throws: ServiceError.self) { try await gone.fetch(using: service) }
        #expect(missing?.code == .notFound)
    }

    @MainActor
    @Test(
        "The completion-handler forms report success and failure on the main actor",
        .enabled(if: serviceTestsEnabled, serviceTestsSkipped))
    func completionHandlers() async throws {
        let service = try await KintoServer.freshService()
        let context = ModelContext()
        let writer = Writer.instance(in: context)
        writer.name = "Bo"
        let saved = await withCheckedContinuation { continuation in
            writer.saveInBackground(using: service) { result in
                MainActor.assertIsolated()
                continuation.resume(returning: result)
            }
        }
        #expect((try? saved.get()) != nil)
        #expect(writer.modelState == .loaded)
        let objectId = try #require(writer.objectId)

        let elsewhere = ModelContext()  // a context keeps its models; a model keeps no context alive
        let copy = Writer.instance(objectId: objectId, in: elsewhere)
        let fetched = await withCheckedContinuation { continuation in
            copy.fetchInBackground(using: service) { continuation.resume(returning: $0) }
        }
        #expect((try? fetched.get()) != nil)
        #expect(copy.name == "Bo")

        let deleted = await withCheckedContinuation { continuation in
            copy.deleteInBackground(using: service) { continuation.resume(returning: $0) }
        }
        #expect((try? deleted.get()) != nil)
        let again = await withCheckedContinuation { continuation in
            writer.deleteInBackground(using: service) { continuation.resume(returning: $0) }
        }
        guard case .failure(let error) = again else {
            Issue.record("deleting a deleted record succeeded")
            return
        }
        // This context still knows the version it saved, and the record is gone.
        #expect(error.code == .notFound || error.code == .conflict)
        #expect(writer.modelContext === context)
    }
}
