import Foundation
import ModelKit

/// How a sync settles a record that this device and the server both changed since the last
/// sync, set per model type with ``ModelSync/setPolicy(_:for:)``.
///
/// ```swift
/// sync.setPolicy(.serverWins, for: Author.self)
/// sync.setPolicy(.custom { versions in versions.local }, for: Post.self)
/// ```
public enum ConflictPolicy: Sendable {
    /// The default: field by field against the values of the last sync. A field changed on one
    /// side only takes that side's value, so edits of different fields on two devices are both
    /// kept; a field changed differently on both sides takes the server's value (the one other
    /// devices have already seen, so every device ends the same whatever order they sync in);
    /// to-many references changed on both sides merge as sets of added and removed members.
    case threeWay
    /// The server's record replaces this device's changes (ModelKit for Objective-C's rule).
    case serverWins
    /// This device's values replace the server's for every field it changed since the last sync;
    /// the fields it did not change take the server's values.
    case clientWins
    /// The closure decides the record's fields from the three versions. A field it leaves out is
    /// `null`.
    case custom(@Sendable (ConflictVersions) -> ModelValue.Object)
}

/// The three versions of a record in conflict, as a ``ConflictPolicy/custom(_:)`` closure gets
/// them: fields in the JSON form of records, references as pointers by object id
/// (`{"__type": "ModelPointer", "model": …, "objectId": …}`).
public struct ConflictVersions: Sendable {
    /// The record.
    public let record: RecordID
    /// Its fields at the last sync; `nil` when this device made the record and never pushed it
    /// (the server's was made elsewhere, or by a push whose answer was lost).
    public let base: ModelValue.Object?
    /// This device's fields.
    public let local: ModelValue.Object
    /// The server's fields.
    public let remote: ModelValue.Object
}

/// One field that both sides changed, and the value kept.
public struct SyncFieldConflict: Sendable, Equatable {
    /// The field (the property's coding key).
    public let field: String
    /// Its value at the last sync, `nil` without one.
    public let base: ModelValue?
    /// This device's value.
    public let local: ModelValue
    /// The server's value.
    public let remote: ModelValue
    /// The value kept.
    public let merged: ModelValue
}

/// A record that both sides changed since the last sync, and how it was settled.
public struct SyncConflict: Sendable, CustomStringConvertible {
    /// What each side did.
    public enum Kind: Sendable, Equatable {
        /// Both changed the record: the policy merged it (see ``fields``).
        case changedOnBoth
        /// The server deleted the record this device changed: the delete wins, the model is
        /// removed (its values are in ``ConflictVersions/local`` of ``versions``).
        case deletedOnServer
        /// This device deleted the record the server changed: the delete wins, and is pushed.
        case deletedHere
    }

    /// The record.
    public let record: RecordID
    /// What each side did.
    public let kind: Kind
    /// The versions compared (for ``Kind/deletedHere``, `local` is empty).
    public let versions: ConflictVersions
    /// For ``Kind/changedOnBoth`` under the three-way merge, the fields both sides changed
    /// differently and the value kept for each; empty otherwise.
    public let fields: [SyncFieldConflict]
    /// The fields the record was given (empty when it was deleted).
    public let merged: ModelValue.Object

    public var description: String {
        switch kind {
        case .changedOnBoth:
            "\(record): changed on both sides; \(fields.map(\.field)) changed on both, merged"
        case .deletedOnServer: "\(record): changed here, deleted on the server; deleted"
        case .deletedHere: "\(record): deleted here, changed on the server; deleted"
        }
    }
}

/// What one ``ModelSync/sync(isolation:)`` did.
public struct SyncReport: Sendable {
    /// Records the pull brought in, created or changed (conflicts included).
    public var pulled = 0
    /// Models the pull removed because the server deleted their records.
    public var removed = 0
    /// Records the push created or replaced.
    public var pushed = 0
    /// Records the push deleted.
    public var deleted = 0
    /// Every conflict, and how it was settled.
    public var conflicts: [SyncConflict] = []
    /// Records from the server that do not decode as their model, skipped: the context and the
    /// store hold what they held.
    public var skipped: [ServiceError] = []
    /// How many pull and push rounds ran (another round runs when the server changed a record
    /// between this sync's pull and its push).
    public var rounds = 0
    /// Records the sync read by id, and deletions it found, beyond what the change feed gave:
    /// changes the server committed after later ones (``ModelSync/lookBack``), and records of
    /// writes it refused against a version no pull moved. Each then merges as a change from the
    /// feed would (so most are also in ``pulled``, ``removed`` or ``conflicts``).
    public var lateChanges = 0

    public init() {}
}

/// What a sync reports as it goes (``ModelSync/events``).
public enum SyncEvent: Sendable {
    /// A sync started.
    case started
    /// A page of a collection's changes was merged.
    case pulled(collection: String, records: Int, deletions: Int)
    /// Writes were pushed.
    case pushed(written: Int, failed: Int)
    /// A conflict was settled.
    case conflict(SyncConflict)
    /// The sync finished.
    case finished(SyncReport)
    /// The sync failed; what it had merged and pushed is kept.
    case failed(ServiceError)
}
