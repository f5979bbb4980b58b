import Foundation
import ModelKit
import ModelKitServices
import Synchronization

/// A backend written the way a third party writes one: records in a dictionary inside an actor,
/// with only ModelKitServices' public API (this target imports it plainly, never `@testable`).
///
/// Versions are a counter; a write whose precondition fails is a conflict carrying the stored
/// version, and the writes after it are not attempted. Listing takes `in` on record ids, which
/// fetches with references send, and leaves every other condition to the client.
actor DictionaryService: ModelService {
    private struct Stored {
        var version: Int
        var fields: RecordFields
    }

    nonisolated let storeIdentifier = "dictionary \(UUID().uuidString)"
    private var records: [RecordID: Stored] = [:]
    /// Passwords by username (DictionaryService+Users.swift).
    var accounts: [String: String] = [:]
    /// Who the service acts as: read and set synchronously, as `UserService` asks.
    let session = Mutex<Credentials?>(nil)
    private var clock = 0
    /// How many records a page of a list holds: small, so that the checks page.
    private let pageSize: Int

    init(pageSize: Int = 3) {
        self.pageSize = pageSize
    }

    func perform(_ writes: [RecordWrite]) async throws(ServiceError) -> [RecordWriteResult] {
        var results: [RecordWriteResult] = []
        for write in writes {
            if results.contains(where: { if case .failed = $0 { true } else { false } }) {
                results.append(.failed(.notAttempted(write.record)))
                continue
            }
            results.append(apply(write))
        }
        return results
    }

    private func apply(_ write: RecordWrite) -> RecordWriteResult {
        let id = write.record
        let current = records[id]
        switch write {
        case .create(_, let fields):
            if let current { return .failed(.conflict(serverVersion: version(current.version), record: id)) }
            return store(fields, at: id)
        case .update(_, let fields, let expected):
            guard let current else { return .failed(.conflict(serverVersion: nil, record: id)) }
            guard version(current.version) == expected else {
                return .failed(.conflict(serverVersion: version(current.version), record: id))
            }
            return store(fields, at: id)
        case .delete(_, let expected):
            guard let current else { return .failed(.notFound(id)) }
            if let expected, version(current.version) != expected {
                return .failed(.conflict(serverVersion: version(current.version), record: id))
            }
            records[id] = nil
            clock += 1
            return .written(version(clock))
        }
    }

    private func store(_ fields: RecordFields, at id: RecordID) -> RecordWriteResult {
        clock += 1
        records[id] = Stored(version: clock, fields: fields)
        return .written(version(clock))
    }

    private func version(_ number: Int) -> RemoteVersion { RemoteVersion(String(number)) }

    func read(_ id: RecordID) async throws(ServiceError) -> RemoteRecord {
        guard let stored = records[id] else { throw .notFound(id) }
        return try RemoteRecord(id: id, version: version(stored.version), jsonData: stored.fields.jsonData)
    }

    nonisolated func evaluation(of condition: RecordCondition) -> RecordConditionSupport {
        condition.field == .recordId && condition.op == .in ? .exact : .unsupported
    }

    func listRecords(_ request: RecordListRequest, after cursor: RecordCursor?) async throws(ServiceError) -> RecordPage {
        let matches = try self.matches(request)
        var start = 0
        if let cursor {
            guard let offset = Int(cursor.token), (0...matches.count).contains(offset) else {
                throw .invalidQuery("expected a cursor this service made but found '\(cursor.token)'")
            }
            start = offset
        }
        let end = min(matches.count, start + pageSize)
        var page: [RemoteRecord] = []
        for id in matches[start..<end] {
            guard let stored = records[id] else { continue }
            page.append(try RemoteRecord(id: id, version: version(stored.version), jsonData: stored.fields.jsonData))
        }
        return RecordPage(records: page, next: end < matches.count ? RecordCursor(token: String(end)) : nil)
    }

    func countRecords(_ request: RecordListRequest) async throws(ServiceError) -> Int {
        try matches(request).count
    }

    /// The ids of the records of the request's collection that satisfy its conditions, by id.
    private func matches(_ request: RecordListRequest) throws(ServiceError) -> [RecordID] {
        var ids = records.keys.filter { $0.collection == request.collection }
        for condition in request.conditions {
            guard evaluation(of: condition) != .unsupported else {
                throw .invalidQuery("expected only conditions this service evaluates but found \(condition)")
            }
            let wanted = Set(condition.values.compactMap(\.stringValue))
            ids = ids.filter { wanted.contains($0.id) }
        }
        return ids.sorted { $0.id < $1.id }
    }

    /// How many records the store holds (for the tests).
    var count: Int { records.count }
}
