import Foundation
import ModelKit

// Why a pull looks back: Kinto on PostgreSQL stamps a record's `last_modified` when the row is
// written (`bump_timestamp()` reads the clock inside the transaction), but other clients see the
// row only when its transaction commits. A `/batch` that writes at t1 and commits after another
// request has written and committed at t2 > t1 shows up behind a list that already answered t2 as
// the collection's timestamp: `_since=t2` never returns it. The memory backend serialises writes
// and does not do this; a client may also give a record its own `last_modified` (older than the
// collection's). So `ModelSync` asks again, on each pull, for the ids and versions of what changed
// a while before the version it pulled at last, and reads only the records it does not hold at
// those versions: a few bytes a record in the usual case, where it holds them all.

/// The ids and versions of a span of a collection's changes, without their fields.
struct ChangeVersions: Sendable {
    struct Entry: Sendable, Equatable {
        let id: RecordID
        let version: RemoteVersion
        let isDeleted: Bool
    }

    /// The changes, oldest first.
    let entries: [Entry]
    /// The next page, or nil after the last one.
    let next: RecordCursor?
}

/// A backend that can list the versions of a span of a collection's changes: what ``ModelSync``
/// looks back at, for changes that became visible after later ones.
protocol ChangeVersionFeed: ModelService {
    /// One page of the ids and versions of the changes of `collection` (tombstones included)
    /// with a version after `since` and before `before`, oldest first.
    func changeVersions(in collection: String, since: RemoteVersion, before: RemoteVersion, after cursor: RecordCursor?)
        async throws(ServiceError) -> ChangeVersions
}

extension KintoService: ChangeVersionFeed {
    /// `GET …/records?_since=…&_before=…&_fields=id,last_modified,deleted`, sorted by
    /// `last_modified`, ``pageSize`` changes a page.
    ///
    /// - Throws: ``ServiceError/Code/invalidQuery`` for versions that are not Kinto timestamps or
    ///   a cursor of another span; ``ServiceError/Code/invalidResponse`` for a change without an
    ///   id or an integer `last_modified`; the network and server errors.
    /// - Complexity: One request; O(*n*) in the size of the page.
    func changeVersions(in collection: String, since: RemoteVersion, before: RemoteVersion, after cursor: RecordCursor?)
        async throws(ServiceError) -> ChangeVersions
    {
        guard Self.isTimestamp(since.rawValue), Self.isTimestamp(before.rawValue) else {
            throw ServiceError(
                .invalidQuery("a span of changes from '\(since.rawValue)' to '\(before.rawValue)': expected Kinto timestamps"))
        }
        let position = try cursor.map { cursor throws(ServiceError) in try FeedPosition(cursor, since: since) }
        if let position, position.timestamp != before {
            throw ServiceError(
                .invalidQuery(
                    "a span cursor of a span before '\(position.timestamp.rawValue)', asked before '\(before.rawValue)'"))
        }
        let path = collectionPath(collection)
        var parameters = [
            ("_sort", "last_modified"), ("_limit", String(pageSize)), ("_since", since.rawValue),
            ("_before", before.rawValue), ("_fields", "id,last_modified,deleted"),
        ]
        if let position { parameters.append(("_token", position.token)) }
        let response = try await send("GET", path: path + "?" + Self.encode(parameters), body: nil)
        switch response.status {
        case 200: break
        case 404 where Self.isMissingCollection(response.body): return ChangeVersions(entries: [], next: nil)
        default: throw Self.failure(status: response.status, body: response.body, headers: response.headers)
        }
        let text = try Self.jsonText(response.body, record: nil)
        let entries = try Self.changeList(text, collection: collection).map {
            ChangeVersions.Entry(id: $0.id, version: $0.version, isDeleted: $0.isDeleted)
        }
        let next = try nextCursor(response.headers, path: path).map {
            FeedPosition(timestamp: before, since: since, token: $0.token).cursor
        }
        return ChangeVersions(entries: entries, next: next)
    }
}
