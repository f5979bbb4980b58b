import Foundation
import ModelKit

// Two ways a change the server made can escape the change feed, and what the sync does about
// them (see KintoService+ChangeVersions.swift for why a server commits changes out of order):
// - the look-back: each pull also lists the ids and versions of the changes of the span
//   ``ModelSync/lookBack`` before the version it pulled at last, and reads the few records it does
//   not hold at those versions;
// - the read-back: a write the server refused whose version the next pull did not move (or
//   that the sync's last round met) reads that record by id and merges it, so the next push has
//   its version, however late the change came.

extension ModelSync {
    /// Merges the changes of `M`'s collection in the span ``lookBack`` before `since` (`since`
    /// included) that this device does not hold.
    func lookBack<M: RemoteModel>(
        _ type: M.Type, upTo since: RemoteVersion, into report: inout SyncReport, isolation: isolated (any Actor)? = #isolation
    ) async throws {
        guard let feed = service as? any ChangeVersionFeed, let last = Int64(since.rawValue) else { return }
        let span = Self.milliseconds(lookBack)
        guard span > 0 else { return }
        let start = RemoteVersion(String(last > span ? last - span : 0))
        let end = RemoteVersion(String(last == .max ? last : last + 1))
        let deletes = pendingDeleteIndex()
        var missing: [RecordID] = []
        var deletions: [RecordDeletion] = []
        var cursor: RecordCursor?
        repeat {
            let page = try await feed.changeVersions(in: M.modelName, since: start, before: end, after: cursor)
            for entry in page.entries {
                let local = localState(of: entry.id, deletes: deletes)
                if entry.isDeleted {
                    // The merge decides what a deletion does to a model or a delete still to
                    // push (a model made here and never pushed is not the deleted record).
                    if local != nil { deletions.append(RecordDeletion(id: entry.id, version: entry.version)) }
                } else if local?.version != entry.version {
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
        let deletes = pendingDeleteIndex()
        var stale: [String: [RecordID]] = [:]
        for (id, expected) in refused {
            // Gone since (the pull deleted it): nothing to read.
            guard let local = localState(of: id, deletes: deletes) else { continue }
            if local.version == expected { stale[id.collection, default: []].append(id) }
        }
        for type in models {
            guard let ids = stale[type.modelName] else { continue }
            try await mergeRead(ids.sorted { $0.id < $1.id }, deletions: [], as: type, into: &report)
        }
    }

    /// What this device holds of record `id`, and the version it has of it: its model (not a
    /// placeholder of a record deleted here, which a merged reference may have made), or its
    /// delete still to push; nil for neither.
    private func localState(of id: RecordID, deletes: [RecordID: ModelID]) -> LocalRecord? {
        if let held = heldModel(for: id, deletes: deletes) { return LocalRecord(version: versions[held.modelId]) }
        guard let removed = deletes[id] else { return nil }
        return LocalRecord(version: versions.table.removed[removed].flatMap(VersionTable.expectedVersion(of:)))
    }

    /// `duration` in whole milliseconds, at most `Int64.max`; 0 for a negative one.
    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0 || seconds > 0 else { return 0 }
        let whole = seconds.multipliedReportingOverflow(by: 1000)
        guard !whole.overflow else { return .max }
        let total = whole.partialValue.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        return total.overflow ? .max : max(0, total.partialValue)
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
            try advance(by: 0, total: 1)
            switch await readRecord(id) {
            case .success(let record): records.append(record)
            case .failure(let error) where error.code == .notFound:
                // The deletion's own version is not known; the merge of a deletion does not use it.
                gone.append(RecordDeletion(id: id, version: RemoteVersion("0")))
            case .failure(let error): throw error
            }
            try advance(by: 1, total: 0)
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

/// A record as this device holds it (a model, or a delete to push): the version it has of it.
private struct LocalRecord {
    let version: RemoteVersion?
}
