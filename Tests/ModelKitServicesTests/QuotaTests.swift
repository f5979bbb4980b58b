import Foundation
import ModelKit
import ModelKitTestSupport
import ServiceTestModels
import Testing

@testable import ModelKitServices

/// A server with no room left (issue #35's "quota" error). Kinto answers a write over a quota
/// `507 Insufficient Storage` with errno 121 through its quotas plugin, which Kinto shipped up to
/// 18.x and no longer has (the 26.x the tests install has none), so the fault proxy in front of
/// the real server gives that answer, in the plugin's words, in place of the server's.
@Suite(
    "A server out of room: quota refusals are typed and not retried", .enabled(if: serviceTestsEnabled, serviceTestsSkipped),
    .hangBackstop)
struct QuotaTests {
    static let message = "Bucket maximum total size exceeded (1101 > 1024 Bytes). "

    /// Answers the next request matching `match` as Kinto's quotas plugin does, without forwarding it.
    static func quotaRule(_ match: String) -> ModelValue {
        let body = #"{"code": 507, "errno": 121, "error": "Insufficient Storage", "message": "\#(message)"}"#
        return [
            "match": .string(match), "action": "status", "status": 507, "times": 1,
            "headers": ["Content-Type": "application/json"], "body": .string(body),
        ]
    }

    @Test("A 507 answer is quotaExceeded with the server's message and status, and is not among the statuses retried")
    func mapping() {
        let headers = ["Content-Type": "application/json"]
        let error = KintoService.failure(status: 507, body: ["message": .string(Self.message)], headers: headers)
        #expect(error.code == .quotaExceeded)
        #expect(error.statusCode == 507)
        #expect(
            error.description
                == "expected room on the server for the write but its quota or storage is full (HTTP 507): \(Self.message)")
        #expect(!HTTPClient.isRetryable(status: 507))
        // A 507 with Retry-After is sent again as the server asks (any error status with it is),
        // and once the attempts are spent it still says what the server said: no room.
        let answer = HTTPClient.Response(status: 507, headers: ["Retry-After": "5"], body: Data(), attempts: 1)
        #expect(HTTPClient.asksForRetry(answer))
        let waiting = KintoService.failure(status: 507, body: .null, headers: ["Retry-After": "5"])
        #expect(waiting.code == .quotaExceeded)
    }

    @Test("A save answered 507 is quotaExceeded after one request, and its models are as before, ready to save later")
    func saveOverQuota() async throws {
        let rig = try await FaultTests.rig()
        defer { rig.proxy.stop() }
        try await rig.proxy.inject([Self.quotaRule("POST /v1/batch")])
        let context = ModelContext()
        let writer = FaultTests.graph(in: context)
        let error = await #expect(throws: ServiceError.self) { try await rig.service.save(writer) }
        #expect(error?.code == .quotaExceeded, "\(String(describing: error))")
        #expect(error?.description.contains(Self.message) == true)
        #expect(error?.writtenRecords.isEmpty == true)
        #expect(try await rig.proxy.count("POST /v1/batch") == 1)
        #expect(rig.service.metrics.retries == 0)
        #expect(writer.objectId == nil && writer.hasChanges)
        #expect(writer.articles.allSatisfy { $0.objectId == nil && $0.hasChanges })

        // Room made on the server: the same models save.
        try await rig.service.save(writer)
        #expect(!writer.hasChanges && writer.articles.allSatisfy { !$0.hasChanges })
        #expect(await FaultTests.exists(writer, on: rig.direct))
    }

    @Test("A file upload answered 507 is quotaExceeded after one request; the file and its record wait for the next sync")
    func uploadOverQuota() async throws {
        // One upload request: a 507 is not tried again.
        let error = try await PendingFilesTests.expectUploadRefused(by: Self.quotaRule("POST /v1/buckets"), tries: 1)
        #expect(error?.code == .quotaExceeded && error?.statusCode == 507, "\(String(describing: error))")
    }
}
