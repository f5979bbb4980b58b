import Foundation
import ModelKit

/// The server versions of the records a context saved or fetched through one store, by model:
/// kept in the context as package metadata (a ``ModelKit/ModelMetadataTable`` per store), so it
/// belongs to the context's domain, and whole-graph files and snapshots of the context carry it
/// across a relaunch. ModelKit keeps the versions as opaque strings; ``Mark`` reads them.
struct VersionTable {
    let table: ModelMetadataTable

    static func of(_ context: ModelContext, store: String) -> VersionTable {
        VersionTable(table: context.metadataTable("ModelKitServices.versions " + store))
    }

    /// What the table's string for a model (or a removed model's entry) says.
    ///
    /// Written as the version itself, `?` for ``sent``, and `-` followed by the tombstone's
    /// version (nothing when unknown) for ``deleted(tombstone:)``: a server whose versions begin
    /// with `-` or are `?` cannot be told apart, and Kinto's are numbers.
    enum Mark: Equatable {
        /// The version this device last saw of the model's record.
        case version(RemoteVersion)
        /// A create that a sync sent without learning the answer (see
        /// `ModelSync.markCreatesSent(_:)`): the record may exist, at a version not known here.
        case sent
        /// A removed model whose record's delete the server acknowledged, kept for a while (see
        /// `ModelSync.deleteAcknowledged(_:at:)`): the tombstone's version, or nil when the
        /// answer was lost and a retry found the record gone.
        case deleted(tombstone: RemoteVersion?)

        init(_ text: String) {
            if text == "?" {
                self = .sent
            } else if text.hasPrefix("-") {
                let tombstone = text.dropFirst()
                self = .deleted(tombstone: tombstone.isEmpty ? nil : RemoteVersion(String(tombstone)))
            } else {
                self = .version(RemoteVersion(text))
            }
        }

        /// The string kept in the table.
        var text: String {
            switch self {
            case .version(let version): version.rawValue
            case .sent: "?"
            case .deleted(let tombstone): "-" + (tombstone?.rawValue ?? "")
            }
        }

        /// The version the record was last seen at: nil for a create sent, the tombstone's for
        /// a delete done.
        var version: RemoteVersion? {
            switch self {
            case .version(let version): version
            case .sent: nil
            case .deleted(let tombstone): tombstone
            }
        }

        var isDeleted: Bool {
            if case .deleted = self { return true }
            return false
        }
    }

    /// The version this context last saw of the model's record; nil for none, for a create
    /// sent whose answer was not heard, and for a record deleted (an undo brought its model back:
    /// it is created again).
    subscript(id: ModelID) -> RemoteVersion? {
        get {
            guard let text = table[id], case .version(let version) = Mark(text) else { return nil }
            return version
        }
        nonmutating set { table[id] = newValue?.rawValue }
    }

    /// What the table holds for a removed model.
    static func mark(of entry: ModelMetadataTable.RemovedEntry) -> Mark { Mark(entry.value) }
}
