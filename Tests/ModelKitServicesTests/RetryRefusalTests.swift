import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@testable import ModelKitServices

/// Refusals that ask for a retry (issue #32): Kinto on PostgreSQL answers a write that collided
/// with a concurrent transaction `409 "Integrity constraint violated, please retry."` with
/// `Retry-After`, inside a `/batch` answer of 200, and rolls the whole batch back. Made here by
/// the fault proxy in front of the real server, so they happen on every backend.
@Suite(
    "Refusals that ask for a retry, and conflicts that do not", .enabled(if: serviceTestsEnabled, serviceTestsSkipped),
    .hangBackstop)
struct RetryRefusalTests {
    static let pleaseRetry =
        #"{"code": 409, "errno": 122, "error": "Conflict", "message": "Integrity constraint violated, please retry."}"#

    /// A rule that turns the first write's answer of the next batch into Kinto's "please retry".
    static func subRefusal(times: Int = 1, retryAfter: String? = "0") -> ModelValue {
        var headers: ModelValue = ["Content-Type": "application/json"]
        if let retryAfter { headers = ["Content-Type": "application/json", "Retry-After": .string(retryAfter)] }
        return [
            "match": "POST /v1/batch", "action": "edit", "times": .int(Int64(times)),
            "edits": [
                ["path": ["responses", 0, "status"], "value": 409],
                ["path": ["responses", 0, "headers"], "value": headers],
                ["path": ["responses", 0, "body"], "value": try! ModelValue(json: Data(pleaseRetry.utf8))],
            ],
        ]
    }

    @Test("A write of a batch refused with 409 'please retry' has the whole batch sent again, and the save goes through")
    func batchRefusalIsRetried() async throws {
        let rig = try await FaultTests.rig()
        defer { rig.proxy.stop() }
        try await rig.proxy.inject([Self.subRefusal()])
        let context = ModelContext()
        let writer = FaultTests.graph(in: context)
        try await rig.service.save(writer)
        #expect(writer.modelState == .loaded && !writer.hasChanges)
        #expect(writer.articles.allSatisfy { $0.modelState == .loaded && !$0.hasChanges })
        #expect(await FaultTests.exists(writer, on: rig.direct))
        // The server did the first batch (the proxy only changed its answer): the second finds
        // our own records, which is not a conflict.
        #expect(try await rig.proxy.count("POST /v1/batch") == 2)
        #expect(rig.service.metrics.retries == 1)
        // A later update is accepted: the versions kept are the server's.
        writer.name = "Ann C."
        try await rig.service.save(writer)
        #expect(!writer.hasChanges)
    }

    @Test("A request answered 409 'please retry', or any error with Retry-After, is sent again")
    func requestRefusalIsRetried() async throws {
        let rig = try await FaultTests.rig()
        defer { rig.proxy.stop() }
        try await rig.proxy.inject([
            ["match": "POST /v1/batch", "action": "status", "status": 409, "body": .string(Self.pleaseRetry)],
            ["match": "POST /v1/batch", "action": "status", "status": 418, "headers": ["Retry-After": "0"]],
        ])
        let context = ModelContext()
        let writer = FaultTests.graph(in: context)
        try await rig.service.save(writer)  // the third attempt, the last the policy allows
        #expect(!writer.hasChanges)
        #expect(try await rig.proxy.count("POST /v1/batch") == 3)
        #expect(rig.service.metrics.retries == 2)
    }

    @Test("A 409 that neither says 'please retry' nor has Retry-After is not retried")
    func plainConflictStatusIsNotRetried() async throws {
        let rig = try await FaultTests.rig()
        defer { rig.proxy.stop() }
        try await rig.proxy.inject([
            ["match": "POST /v1/batch", "action": "status", "status": 409, "body": #"{"message": "Conflict"}"#]
        ])
        let context = ModelContext()
        let writer = FaultTests.graph(in: context)
        let error = try #require(await #expect(throws: ServiceError.self) { try await rig.service.save(writer) })
        #expect(error.code == .httpStatus)
        #expect(error.statusCode == 409)
        #expect(writer.objectId == nil && writer.modelState == .new)
        #expect(try await rig.proxy.count("POST /v1/batch") == 1)
    }

    @Test("When the retries run out, no write of the refused batch counts as done, and the models are as before")
    func refusalsBeyondThePolicyFailTheWholeBatch() async throws {
        let rig = try await FaultTests.rig(retry: RetryPolicy(maximumAttempts: 2, delay: .milliseconds(10)))
        defer { rig.proxy.stop() }
        try await rig.proxy.inject([Self.subRefusal(times: 2)])
        let context = ModelContext()
        let writer = FaultTests.graph(in: context)
        let error = try #require(await #expect(throws: ServiceError.self) { try await rig.service.save(writer) })
        #expect(error.code == .rateLimited)
        #expect(error.retryAfter == .zero)
        #expect(writer.objectId == nil && writer.modelState == .new && writer.hasChanges)
        #expect(writer.articles.allSatisfy { $0.objectId == nil && $0.modelState == .new })
        #expect(try await rig.proxy.count("POST /v1/batch") == 2)
    }

    @Test("A wait asked for beyond the policy's longest is not made: the save fails with the wait")
    func longWaitsAreTheAppsCall() async throws {
        let rig = try await FaultTests.rig(
            retry: RetryPolicy(maximumAttempts: 3, delay: .milliseconds(10), maximumDelay: .seconds(1)))
        defer { rig.proxy.stop() }
        try await rig.proxy.inject([Self.subRefusal(retryAfter: "3600")])
        let context = ModelContext()
        let writer = FaultTests.graph(in: context)
        let error = try #require(await #expect(throws: ServiceError.self) { try await rig.service.save(writer) })
        #expect(error.code == .rateLimited)
        #expect(error.retryAfter == .seconds(3600))
        #expect(writer.objectId == nil)
        #expect(try await rig.proxy.count("POST /v1/batch") == 1)
    }

    @Test("A real conflict (412) is not retried, even with Retry-After on the batch's answer")
    func realConflictIsNotRetried() async throws {
        let rig = try await FaultTests.rig()
        defer { rig.proxy.stop() }
        let (context, writer) = try await FaultTests.savedGraph(on: rig.direct)
        // Another client changes the writer first.
        let elsewhere = ModelContext()
        let other = Writer.instance(objectId: try #require(writer.objectId), in: elsewhere)
        try await rig.direct.fetch(other)
        other.name = "Someone else"
        try await rig.direct.save(other)

        writer.name = "Ann D."
        try await rig.proxy.inject([["match": "POST /v1/batch", "action": "add_headers", "headers": ["Retry-After": "0"]]])
        let before = rig.service.metrics
        let error = try #require(await #expect(throws: ServiceError.self) { try await rig.service.save(writer) })
        #expect(error.code == .conflict)
        #expect(writer.hasChanges && writer.name == "Ann D.")
        #expect(rig.service.metrics.retries == before.retries)
        #expect(try await rig.proxy.count("POST /v1/batch") == 1)
        _ = context
    }
}
