import Foundation
import ModelKit

// The change feed: what changed in a collection since a version, so that a sync pulls only
// that. Written per backend (KintoService+Changes.swift); a backend without one throws.

/// A record the server deleted: its id and the tombstone's version.
public struct RecordDeletion: Hashable, Sendable {
    /// The deleted record.
    public let id: RecordID
    /// The version of the deletion (Kinto: the tombstone's `last_modified`).
    public let version: RemoteVersion

    /// The deletion of `id` at `version`.
    public init(id: RecordID, version: RemoteVersion) {
        self.id = id
        self.version = version
    }
}

/// One page of the changes of a collection since a version (see
/// ``ModelService/changes(in:since:after:)``).
public struct RecordChanges: Sendable {
    /// Records created or changed since `since`, in the order the server changed them (oldest
    /// first), each in its latest version.
    public let records: [RemoteRecord]
    /// Records deleted since `since` (none when `since` was nil: a first pull sees only live
    /// records).
    public let deletions: [RecordDeletion]
    /// The next page, or nil after the last one.
    public let next: RecordCursor?
    /// The version to ask `since` next time, to see only what changed after this pull: the
    /// collection's timestamp as the first page's answer gave it (Kinto: its ETag), carried
    /// unchanged on the later pages; nil when the collection does not exist (yet, or any more).
    public let timestamp: RemoteVersion?

    /// A page of changes.
    public init(records: [RemoteRecord], deletions: [RecordDeletion], next: RecordCursor?, timestamp: RemoteVersion?) {
        self.records = records
        self.deletions = deletions
        self.next = next
        self.timestamp = timestamp
    }

    /// No change, and no timestamp: what a collection that does not exist answers.
    static let none = RecordChanges(records: [], deletions: [], next: nil, timestamp: nil)
}

// A backend without a change feed still saves, fetches and queries: only a pull throws.
extension ModelService {
    /// By default a backend has no change feed.
    ///
    /// - Throws: ``ServiceError/Code/notSupported``.
    public func changes(in collection: String, since: RemoteVersion?, after cursor: RecordCursor?) async throws(ServiceError)
        -> RecordChanges
    {
        throw ServiceError(.notSupported("a change feed"))
    }
}
