import Foundation
import ModelKit

// Kinto's change feed: `GET …/records?_sort=last_modified&_since=<timestamp>`. Kinto 26.5
// (kinto/core/resource/__init__.py, storage/memory.py and postgresql) gives every change of a
// collection its own, strictly increasing `last_modified`, tombstones included, and the
// collection's timestamp (the ETag of the list) is the largest of them; `_since` keeps what is
// strictly newer and then also returns tombstones (`{"id", "last_modified", "deleted": true}`).
// Sorted by `last_modified`, the `_token` of `Next-Page` resumes after the last change seen, so
// a change made between two pages moves behind it and still comes on a later page. A collection
// that has never had a record has a timestamp too (Kinto stores one on the first read); one that
// does not exist answers 404 with `details.resource_name` "collection".

extension KintoService {
    /// One page of the changes of `collection` since `since`, oldest first: `GET …/records` sorted
    /// by `last_modified`, with `_since` when given (and then Kinto's tombstones as
    /// ``RecordChanges/deletions``), at most ``pageSize`` changes a page. The first page's ETag is
    /// the ``RecordChanges/timestamp``; the cursor carries it to the later pages, with Kinto's
    /// `_token`. A collection that does not exist answers no change and a `nil` timestamp.
    ///
    /// ```swift
    /// var local: [String: ModelValue.Object] = [:]   // record id -> fields
    /// let since: RemoteVersion? = nil                 // the last pull's timestamp
    /// var cursor: RecordCursor? = nil
    /// var next = since
    /// repeat {
    ///     let page = try await service.changes(in: "Author", since: since, after: cursor)
    ///     for record in page.records { local[record.id.id] = record.fields }
    ///     for deletion in page.deletions { local[deletion.id.id] = nil }
    ///     (cursor, next) = (page.next, page.timestamp)
    /// } while cursor != nil
    /// // store `next` for the next pull
    /// ```
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/invalidQuery`` for a `since` that is not a
    ///   Kinto timestamp, or a cursor that is not one of this feed's for the same `since`;
    ///   ``ServiceError/Code/invalidResponse`` for a change without a valid string `id` or an
    ///   integer `last_modified` (naming where, such as `data[3].last_modified`), a first page
    ///   without an ETag, or a `Next-Page` elsewhere; the network and server errors.
    /// - Complexity: One request; O(*n*) in the size of the page.
    public func changes(in collection: String, since: RemoteVersion?, after cursor: RecordCursor?) async throws(ServiceError)
        -> RecordChanges
    {
        if let since, !Self.isTimestamp(since.rawValue) {
            throw ServiceError(.invalidQuery("a change feed since '\(since.rawValue)': expected a Kinto timestamp (digits)"))
        }
        let position = try cursor.map { cursor throws(ServiceError) in try FeedPosition(cursor, since: since) }
        let path = collectionPath(collection)
        var parameters = [("_sort", "last_modified"), ("_limit", String(pageSize))]
        if let since { parameters.append(("_since", since.rawValue)) }
        if let position { parameters.append(("_token", position.token)) }
        let response = try await send("GET", path: path + "?" + Self.encode(parameters), body: nil)
        switch response.status {
        case 200: break
        case 404 where Self.isMissingCollection(response.body): return .none
        default: throw Self.failure(status: response.status, body: response.body, headers: response.headers)
        }
        // The later pages keep the first page's timestamp: a change made since then has a
        // later `last_modified`, so the next pull sees it even if this one did too.
        let timestamp: RemoteVersion
        if let position {
            timestamp = position.timestamp
        } else {
            timestamp = try Self.collectionTimestamp(response.headers)
        }
        let text = try Self.jsonText(response.body, record: nil)
        var records: [RemoteRecord] = []
        var deletions: [RecordDeletion] = []
        for change in try Self.changeList(text, collection: collection) {
            if change.isDeleted {
                deletions.append(RecordDeletion(id: change.id, version: change.version))
            } else {
                records.append(RemoteRecord(id: change.id, version: change.version, text: text, node: change.node))
            }
        }
        let next = try nextCursor(response.headers, path: path).map {
            FeedPosition(timestamp: timestamp, since: since, token: $0.token).cursor
        }
        return RecordChanges(records: records, deletions: deletions, next: next, timestamp: timestamp)
    }

    /// Whether `text` is a Kinto timestamp: an integer of milliseconds, in digits.
    static func isTimestamp(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 19 && text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// The items of a change list's `data`: each one's node, id, version and whether it is a
    /// tombstone.
    ///
    /// - Throws: ``ServiceError/Code/invalidResponse`` naming the item and what it lacks.
    static func changeList(_ text: JSONRecordText, collection: String) throws(ServiceError)
        -> [(node: Int, id: RecordID, version: RemoteVersion, isDeleted: Bool)]
    {
        let data = text.member(text.root, "data")
        guard let items = data.flatMap(text.elements) else {
            throw ServiceError(.invalidResponse(expected: "an array 'data'", found: describe(data, in: text)))
        }
        var changes: [(node: Int, id: RecordID, version: RemoteVersion, isDeleted: Bool)] = []
        changes.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            guard text.isObject(item) else {
                throw .invalidResponse(at: "data[\(index)]", expected: "a record", found: describe(item, in: text))
            }
            let idNode = text.member(item, "id")
            guard let id = idNode.flatMap(text.string), RecordCodec.isValidId(id) else {
                throw .invalidResponse(at: "data[\(index)].id", expected: "a record id", found: describe(idNode, in: text))
            }
            let recordId = RecordID(collection: collection, id: id)
            let version = try version(
                text.member(item, "last_modified"), in: text, at: "data[\(index)].last_modified", record: recordId)
            // "deleted" is a field Kinto reserves (RecordCodec.serverFields): no model writes it.
            let deleted = text.member(item, "deleted").flatMap { try? text.value($0) } == .bool(true)
            changes.append((item, recordId, version, deleted))
        }
        return changes
    }

    /// Whether a 404's body says the collection is missing (not the bucket: that stays an error).
    static func isMissingCollection(_ body: Data) -> Bool {
        guard let value = try? ModelValue(json: body) else { return false }
        return value["details"]?["resource_name"]?.stringValue == "collection"
    }

    /// The collection's timestamp: the list's ETag, a timestamp in quotes.
    static func collectionTimestamp(_ headers: [String: String]) throws(ServiceError) -> RemoteVersion {
        let header = headers.first { $0.key.lowercased() == "etag" }?.value
        let value = header?.trimmingCharacters(in: .whitespaces)
        guard let value, value.count >= 3, value.hasPrefix("\""), value.hasSuffix("\"") else {
            throw ServiceError(
                .invalidResponse(expected: "an ETag with the collection's timestamp", found: header.map { "'\($0)'" } ?? "none"))
        }
        let timestamp = String(value.dropFirst().dropLast())
        guard isTimestamp(timestamp) else {
            throw ServiceError(.invalidResponse(expected: "an ETag with the collection's timestamp", found: "'\(value)'"))
        }
        return RemoteVersion(timestamp)
    }
}

/// Where a pull is: the first page's timestamp, the `since` it was asked with, and Kinto's
/// `_token`, in a cursor's text as `timestamp.since.token` (a token is base64: no dot).
struct FeedPosition {
    let timestamp: RemoteVersion
    let since: RemoteVersion?
    let token: String

    init(timestamp: RemoteVersion, since: RemoteVersion?, token: String) {
        self.timestamp = timestamp
        self.since = since
        self.token = token
    }

    /// The position in `cursor`, which must have been made for a pull since `since`.
    init(_ cursor: RecordCursor, since: RemoteVersion?) throws(ServiceError) {
        let parts = cursor.token.split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].utf8.allSatisfy({ (48...57).contains($0) }),
            parts[1].utf8.allSatisfy({ (48...57).contains($0) }), !parts[2].isEmpty
        else {
            throw ServiceError(
                .invalidQuery("a change feed cursor: expected one the feed returned, found '\(cursor.token.prefix(80))'"))
        }
        guard String(parts[1]) == (since?.rawValue ?? "") else {
            throw ServiceError(
                .invalidQuery(
                    "a change feed cursor of a pull since '\(parts[1])', asked since '\(since?.rawValue ?? "")': "
                        + "pass the same since on every page"))
        }
        self.init(timestamp: RemoteVersion(String(parts[0])), since: since, token: String(parts[2]))
    }

    var cursor: RecordCursor {
        RecordCursor(token: "\(timestamp.rawValue).\(since?.rawValue ?? "").\(token)")
    }
}
