import Foundation
import ModelKit

// Two ways a change the server made can escape the change feed, and what the sync does about
// them (see KintoService+ChangeVersions.swift for why a server commits changes out of order):
// - the look-back: each pull also lists the ids and versions of the changes of the span
//   ``ModelSync/lookBack`` before the version it pulled at last, and reads the few records it does
//   not hold at those versions (100 per list request);
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
        let deletes = removedEntryIndex()
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
        let deletes = removedEntryIndex()
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
    private func localState(of id: RecordID, deletes: [RecordID: [ModelID]]) -> LocalRecord? {
        if let held = heldModel(for: id, deletes: deletes) { return LocalRecord(version: versions[held.modelId]) }
        guard let removed = deletes[id]?.first else { return nil }
        return LocalRecord(version: versions.table.removed[removed].flatMap { VersionTable.mark(of: $0).version })
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

    /// Reads `ids` (100 per list request; a record gone meanwhile is a deletion) and merges
    /// them with `deletions` as a page of the change feed.
    private func mergeRead<M: RemoteModel>(
        _ ids: [RecordID], deletions: [RecordDeletion], as type: M.Type, into report: inout SyncReport,
        isolation: isolated (any Actor)? = #isolation
    ) async throws {
        guard !ids.isEmpty || !deletions.isEmpty else { return }
        var records: [RemoteRecord] = []
        var gone = deletions
        var canList = true
        let tooMany = ServiceError(.invalidResponse(expected: "the records asked for", found: "more"))
        for offset in stride(from: 0, to: ids.count, by: 100) {
            let chunk = ids[offset..<min(offset + 100, ids.count)].map(\.id)
            try advance(by: 0, total: chunk.count)
            let found = try await service.existingRecords(
                chunk, of: M.modelName, maximumCandidates: chunk.count, tooMany: tooMany, canList: &canList)
            let foundIds = Set(found.map(\.id.id))
            // The deletion's own version is not known; the merge of a deletion does not use it.
            for id in chunk where !foundIds.contains(id) {
                gone.append(RecordDeletion(id: RecordID(collection: M.modelName, id: id), version: RemoteVersion("0")))
            }
            records += found
            try advance(by: chunk.count, total: 0)
        }
        merge(RecordChanges(records: records, deletions: gone, next: nil, timestamp: nil), as: M.self, into: &report)
        report.lateChanges += records.count + gone.count
    }
}

/// A record as this device holds it (a model, or a delete to push): the version it has of it.
private struct LocalRecord {
    let version: RemoteVersion?
}
