import Foundation
import ModelKit
import ModelKitServices

/// The behaviours every ``ModelKitServices/ModelService`` must have for ModelKit's saves, fetches,
/// queries and deletes to be right on it: the checks `KintoService` passes, for any adapter to run
/// in its own tests.
///
/// Each check makes a service with the factory (a fresh, empty store is best: a bucket of its
/// own, a new in-memory store), works with models of two types of its own (``collections``
/// names their collections, which a backend that needs them made beforehand must have), and
/// throws a ``ConformanceFailure`` saying what it expected and what it found. It needs no test
/// framework, so Swift Testing and XCTest alike can run it:
///
/// ```swift
/// import ModelKitServiceTesting
/// import Testing
///
/// @Test("My adapter behaves as ModelKit expects", arguments: ServiceConformance.Check.allCases)
/// func conformance(_ check: ServiceConformance.Check) async throws {
///     try await ServiceConformance { MyService() }.run(check)
/// }
/// ```
///
/// Checks that the backend's answers depend on (queries, references) work on a backend that
/// evaluates no condition itself: ModelKit then filters on the client.
public struct ServiceConformance: Sendable {
    /// One behaviour to check.
    public enum Check: String, CaseIterable, Sendable, CustomStringConvertible {
        /// `perform(_:)` returns one result per write, in order; versions change with each write,
        /// and `read(_:)` returns the version and fields written.
        case writesAndVersions
        /// A saved model fetched in another context has the same values (strings, numbers,
        /// dates, bytes, optionals, Unicode).
        case saveAndFetch
        /// A graph with a cycle is saved whole, and a fetch with `referenceDepth: 1` links it by
        /// identity.
        case references
        /// A query's filter, order, window and count give what the same query gives locally.
        case query
        /// A deleted model's record is gone: a fetch and a second delete are `notFound`.
        case delete
        /// A fetch of a record that does not exist is `notFound`, names the record, and changes
        /// nothing.
        case notFound
        /// An update after another client's is a `conflict` with the server's version, and the
        /// model keeps its changes; after a fetch it saves.
        case updateConflict
        /// Creating a record that exists is a `conflict`, and the record is left as it was.
        case createConflict
        /// A delete with a version older than the server's is a `conflict`; the record stays.
        case deleteConflict
        /// A save that fails part-way (one create of the graph refused) reports exactly what it
        /// wrote: every record in `writtenRecords` is on the server and its model saved, every
        /// other model of the save is not on the server and keeps its changes; with the refused
        /// model left out, saving again writes the rest.
        case partialSave

        public var description: String { rawValue }
    }

    /// The collections the checks write to, the model names of their two types: a backend whose
    /// collections must exist before a write (a Kinto bucket other than `default`) makes these.
    public static let collections = [ConformanceAuthor.modelName, ConformanceNote.modelName]

    private let makeService: @Sendable () async throws -> any ModelService

    /// Checks on services made by `makeService`, called once per check.
    ///
    /// - Parameter makeService: Makes the service under test; for the checks to be independent,
    ///   one on a store of its own each time.
    public init(makeService: @escaping @Sendable () async throws -> any ModelService) {
        self.makeService = makeService
    }

    /// Runs one check on a service of its own.
    ///
    /// - Throws: ``ConformanceFailure`` naming the check, what it expected and what it found
    ///   (an error the service threw where none was expected, or the wrong one, included).
    /// - Complexity: A few dozen records and requests.
    public func run(_ check: Check) async throws(ConformanceFailure) {
        do {
            try ModelRegistry.register(ConformanceAuthor.self, ConformanceNote.self)
        } catch {
            throw ConformanceFailure(check, expected: "the check's model types to register", found: "\(error)")
        }
        let service: any ModelService
        do {
            service = try await makeService()
        } catch {
            throw ConformanceFailure(check, expected: "a service from the factory", found: "\(error)")
        }
        try await ConformanceFailure.running(check.rawValue) { try await Checker(check: check, service: service).run() }
    }

    /// Runs every check, in order, each on a service of its own, and throws the first failure.
    ///
    /// - Throws: ``ConformanceFailure`` of the first check that fails.
    public func runAll() async throws(ConformanceFailure) {
        for check in Check.allCases { try await run(check) }
    }
}

/// A check that failed: which one, what it expected and what it found.
///
/// ```swift
/// do { try await conformance.run(.query) } catch { print(error) }   // query: expected … but found …
/// ```
public struct ConformanceFailure: Error, Sendable, CustomStringConvertible {
    /// The name of the check that failed (a ``ServiceConformance/Check`` or a
    /// ``UserServiceConformance/Check``).
    public let check: String
    /// What the check expected.
    public let expected: String
    /// What it found instead.
    public let found: String

    /// A failure of `check`.
    public init(_ check: ServiceConformance.Check, expected: String, found: String) {
        self.init(name: check.rawValue, expected: expected, found: found)
    }

    /// A failure of the account check `check`.
    public init(_ check: UserServiceConformance.Check, expected: String, found: String) {
        self.init(name: check.rawValue, expected: expected, found: found)
    }

    init(name: String, expected: String, found: String) {
        check = name
        self.expected = expected
        self.found = found
    }

    /// Runs the check named `name`, taking whatever it throws as its failure: a
    /// ``ConformanceFailure`` as it is, anything else as an error where none was expected.
    static func running(_ name: String, _ body: () async throws -> Void) async throws(ConformanceFailure) {
        do {
            try await body()
        } catch let failure as ConformanceFailure {
            throw failure
        } catch let error as ServiceError {
            // The code first: what a test (or a reader) looks for.
            throw ConformanceFailure(name: name, expected: "no error", found: "\(error.code): \(error)")
        } catch {
            throw ConformanceFailure(name: name, expected: "no error", found: "\(error)")
        }
    }

    public var description: String { "\(check): expected \(expected) but found \(found)" }
}

/// A writer of notes, the other end of the checks' references.
public final class ConformanceAuthor: ModelObject<ConformanceAuthor.Properties>, RemoteModel {
    public struct Properties: ModelProperties {
        public var name = ""
        public var notes = ModelArray<ConformanceNote>()
        public init() {}
    }
}

/// A note with a value of each kind a record holds, and a reference to its author.
public final class ConformanceNote: ModelObject<ConformanceNote.Properties>, RemoteModel {
    public struct Properties: ModelProperties {
        public var title = ""
        public var stars = 0
        public var score = 0.0
        public var done = false
        public var written: Date?
        public var attachment: Data?
        public var tags: [String] = []
        public var topic = ""
        public var author = ModelRef<ConformanceAuthor>()
        public init() {}
    }
}
