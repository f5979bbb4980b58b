import Foundation
import ModelKit
import ModelKitServiceTesting
import ModelKitServices
import Testing

/// An adapter outside the library's targets passes the conformance checks KintoService passes
/// (ModelKitServicesTests/KintoConformanceTests.swift runs the same ones against Kinto).
@Suite("An adapter written with the public API only")
struct DictionaryServiceTests {
    @Test("A dictionary-backed adapter passes every conformance check", arguments: ServiceConformance.Check.allCases)
    func conformance(_ check: ServiceConformance.Check) async throws {
        try await ServiceConformance { DictionaryService() }.run(check)
    }

    @Test(
        "The dictionary adapter's accounts pass every account conformance check", arguments: UserServiceConformance.Check.allCases
    )
    func accounts(_ check: UserServiceConformance.Check) async throws {
        try await UserServiceConformance { DictionaryService() }.run(check)
    }

    @Test("Paging by one record at a time still passes the checks that list records")
    func pagingByOne() async throws {
        let conformance = ServiceConformance { DictionaryService(pageSize: 1) }
        try await conformance.run(.query)
        try await conformance.run(.references)
    }

    @Test("A conformance failure names the check, what was expected and what was found")
    func failureNamesTheCheck() async throws {
        // A service that forgets every write: its saves succeed, its reads find nothing.
        let failure = await #expect(throws: ConformanceFailure.self) {
            try await ServiceConformance { ForgetfulService() }.run(.saveAndFetch)
        }
        #expect(failure?.check == "saveAndFetch")
        #expect(failure?.description.hasPrefix("saveAndFetch: expected no error but found ") == true)
        #expect(failure?.found.hasPrefix("notFound: expected a record on the server (ConformanceNote/") == true)

        let factory = await #expect(throws: ConformanceFailure.self) {
            try await ServiceConformance { throw ServiceError.unreachable("no such host") }.run(.delete)
        }
        #expect(factory?.expected == "a service from the factory")
        #expect(factory?.found.contains("no such host") == true)
    }

    @Test("Every error code has a public factory whose error reports that code, its record and its details")
    func errorFactories() {
        let id = RecordID(collection: "Note", id: "n1")
        let errors: [(ServiceError, ServiceError.Code)] = [
            (.unreachable("refused", record: id), .unreachable), (.timedOut("GET /n1", record: id), .timedOut),
            (.cancelled("GET /n1", record: id), .cancelled), (.unauthorized(message: "who?", record: id), .unauthorized),
            (.forbidden(message: "no", record: id), .forbidden),
            (.rateLimited(retryAfter: .seconds(3), record: id), .rateLimited),
            (.serverError(statusCode: 502, message: "down", record: id), .serverError),
            (.httpStatus(400, message: "bad", record: id), .httpStatus),
            (.conflict(serverVersion: RemoteVersion("9"), record: id), .conflict), (.notFound(id), .notFound),
            (.invalidResponse(expected: "an integer at data.v", found: "\"x\"", record: id), .invalidResponse),
            (.invalidModel(expected: "an id", found: "' '", record: id), .invalidModel), (.notAttempted(id), .notAttempted),
            (.notSupported("password reset", record: id), .notSupported), (.notConfigured(record: id), .notConfigured),
            (.invalidQuery("unknown key 'x'", record: id), .invalidQuery),
            (.queryTooBroad(maximum: 10, record: id), .queryTooBroad),
            (.quotaExceeded(message: "1 MB used", record: id), .quotaExceeded),
        ]
        for (error, code) in errors {
            #expect(error.code == code)
            #expect(error.record == id, "\(code)")
            #expect(error.description.contains("(Note/n1)"), "\(code): \(error)")
        }
        #expect(Set(errors.map(\.1)).count == errors.count)
        #expect(ServiceError.usernameTaken("bob").code == .usernameTaken)
        #expect(ServiceError.credentialStoreFailed(expected: "a", found: "b").code == .credentialStoreFailed)
        #expect(ServiceError.insecureCredentialStore(expected: "a", found: "b").code == .insecureCredentialStore)

        #expect(ServiceError.conflict(serverVersion: RemoteVersion("9")).serverVersion == RemoteVersion("9"))
        #expect(ServiceError.conflict(serverVersion: nil).statusCode == 412)
        #expect(ServiceError.rateLimited(retryAfter: .seconds(3)).retryAfter == .seconds(3))
        #expect(ServiceError.rateLimited(retryAfter: nil, statusCode: 503).statusCode == 503)
        #expect(ServiceError.serverError(statusCode: 502).statusCode == 502)
        #expect(ServiceError.httpStatus(400).statusCode == 400)
        #expect(ServiceError.notFound().statusCode == 404)
        #expect(ServiceError.quotaExceeded().statusCode == 507)
        #expect(
            ServiceError.invalidResponse(expected: "an integer at data.v", found: "\"x\"").description
                == "invalid response: expected an integer at data.v but found \"x\"")
        // naming(_:) adds a record to an error that has none, and keeps one it has.
        let other = RecordID(collection: "Note", id: "n2")
        #expect(ServiceError.unreachable("reset").naming(id).record == id)
        #expect(ServiceError.notFound(id).naming(other).record == id)
    }

    @Test(
        "The retry schedule is public: waits double from the policy's delay, stop at its cap, and none comes before the first attempt"
    )
    func retrySchedule() {
        let policy = RetryPolicy(maximumAttempts: 6, delay: .milliseconds(250), maximumDelay: .seconds(1))
        let waits = (0...6).map { policy.delay(beforeAttempt: $0) }
        #expect(waits == [.zero, .zero, .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(1), .seconds(1)])
        #expect(RetryPolicy.never.maximumAttempts == 1)
        #expect(RetryPolicy(maximumAttempts: 3, delay: .seconds(1)).delay(beforeAttempt: Int.max) == .seconds(60))  // the default cap
    }

    @Test("A record made from JSON text reads back its fields, and text that is not an object is invalidResponse")
    func recordFromText() throws {
        let id = RecordID(collection: "Note", id: "n1")
        let record = try RemoteRecord(id: id, version: RemoteVersion("1"), jsonData: Data(#"{"title":"Hi","stars":3}"#.utf8))
        #expect(record.fields["title"] == "Hi")
        #expect(record.fields["stars"] == 3)
        for text in ["[1, 2]", "not json", "", #"{"title": "#, "null"] {
            let error = #expect(throws: ServiceError.self) {
                _ = try RemoteRecord(id: id, version: RemoteVersion("1"), jsonData: Data(text.utf8))
            }
            #expect(error?.code == .invalidResponse, "\(text)")
            #expect(error?.record == id, "\(text)")
        }
    }
}

/// Acknowledges every write and then has no records: a service that fails the checks.
final class ForgetfulService: ModelService {
    var storeIdentifier: String { "forgetful" }
    func perform(_ writes: [RecordWrite]) async throws(ServiceError) -> [RecordWriteResult] {
        writes.map { _ in .written(RemoteVersion("1")) }
    }
    func read(_ id: RecordID) async throws(ServiceError) -> RemoteRecord { throw .notFound(id) }
}
