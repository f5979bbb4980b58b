import Foundation
import ModelKit

// Two ways a change the server made can escape the change feed, and what the sync does about
// them (see KintoService+ChangeVersions.swift for why a server commits changes out of order):
// - the look-back: each pull also lists the ids and versions of the changes of the span
//   ``ModelSync/lookBack`` before the version it pulled at last, and reads the few records it does
//   not hold at those versions;
// - the read-back: a write the server refused twice in a row for the same version (the pull
//   between them did not bring the record's newer version) reads that record by id and merges it,
//   so the next push has its version, however late the change came.

extension ModelSync {
    /// Merges the changes of `M`'s collection in the span ``lookBack`` before `since` (`since`
    /// included) that this device does not hold.
    func lookBack<M: RemoteModel>(
        _ type: M.Type, upTo since: RemoteVersion, into report: inout SyncReport, isolation: isolated (any Actor)? = #isolation
    ) async throws {
        guard let feed = service as? any ChangeVersionFeed, let last = Int64(since.rawValue) else { return }
        let (seconds, attoseconds) = lookBack.components
        let span = seconds.multipliedReportingOverflow(by: 1000).partialValue + attoseconds / 1_000_000_000_000_000
        guard span > 0 else { return }
        let start = RemoteVersion(String(max(0, last - span)))
        let end = RemoteVersion(String(last + 1))
        let versions = self.versions
        let deletes = pendingDeleteIndex()
        var missing: [RecordID] = []
        var deletions: [RecordDeletion] = []
        var cursor: RecordCursor?
        repeat {
            let page = try await feed.changeVersions(in: M.modelName, since: start, before: end, after: cursor)
            for entry in page.entries {
                let held = ModelIdAssignment.heldModel(for: entry.id, in: context)
                let removed = deletes[entry.id]
                if entry.isDeleted {
                    // Only a model that has a server version, or a delete still to push, is
                    // touched by a deletion (a model made here and never pushed is not it).
                    if held.map({ versions[$0.modelId] != nil }) ?? (removed != nil) {
                        deletions.append(RecordDeletion(id: entry.id, version: entry.version))
                    }
                } else if let held {
                    if versions[held.modelId] != entry.version { missing.append(entry.id) }
                } else if let removed {
                    if versions.table.removed[removed]?.value != entry.version.rawValue { missing.append(entry.id) }
                } else {
                    missing.append(entry.id)
                }
            }
            cursor = page.next
        } while cursor != nil
        try await mergeRead(missing, deletions: deletions, as: M.self, into: &report)
    }

    /// Reads the records the server refused a write of, whose version here the pull since did
    /// not move (`refused`: the version each write expected), and merges them.
    func readBack(
        _ refused: [RecordID: RemoteVersion?], into report: inout SyncReport, isolation: isolated (any Actor)? = #isolation
    )
        async throws
    {
        let versions = self.versions
        let deletes = pendingDeleteIndex()
        var stale: [String: [RecordID]] = [:]
        for (id, expected) in refused {
            let current: RemoteVersion?
            if let held = ModelIdAssignment.heldModel(for: id, in: context) {
                current = versions[held.modelId]
            } else if let removed = deletes[id], let value = versions.table.removed[removed]?.value {
                current = RemoteVersion(value)
            } else {
                continue  // Gone since: the pull deleted it.
            }
            if current == expected { stale[id.collection, default: []].append(id) }
        }
        for type in models {
            guard let ids = stale[type.modelName] else { continue }
            try await mergeRead(ids.sorted { $0.id < $1.id }, deletions: [], as: type, into: &report)
        }
    }

    /// Reads `ids` one by one (a record gone meanwhile is a deletion) and merges them with
    /// `deletions` as a page of the change feed.
    private func mergeRead<M: RemoteModel>(
        _ ids: [RecordID], deletions: [RecordDeletion], as type: M.Type, into report: inout SyncReport,
        isolation: isolated (any Actor)? = #isolation
    ) async throws {
        guard !ids.isEmpty || !deletions.isEmpty else { return }
        var records: [RemoteRecord] = []
        var gone = deletions
        for id in ids {
            switch await readRecord(id) {
            case .success(let record): records.append(record)
            case .failure(let error) where error.code == .notFound:
                // The deletion's own version is not known; the merge of a deletion does not use it.
                gone.append(RecordDeletion(id: id, version: RemoteVersion("0")))
            case .failure(let error): throw error
            }
        }
        merge(RecordChanges(records: records, deletions: gone, next: nil, timestamp: nil), as: M.self, into: &report)
        report.lateChanges += records.count + gone.count
    }

    /// `service.read(id)` as a result (a `catch … where` on the typed error crashed the 6.3
    /// compiler here).
    private func readRecord(_ id: RecordID, isolation: isolated (any Actor)? = #isolation) async -> Result<
        RemoteRecord, ServiceError
    > {
        do {
            return .success(try await service.read(id))
        } catch {
            return .failure(error)
        }
    }
}
