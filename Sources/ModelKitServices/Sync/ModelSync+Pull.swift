import Foundation
import ModelKit

// The pull: each collection's changes since the version it was last pulled at, merged into the
// context page by page. The version moves only when the whole collection was merged, and the
// store saves it with the merged models: a pull cut short (an error, a crash) is pulled again
// from the old version, and records already merged are recognised by their version.

extension ModelSync {
    func pull(into report: inout SyncReport, isolation: isolated (any Actor)? = #isolation) async throws {
        for type in models {
            try await pull(type, into: &report)
        }
    }

    private func pull<M: RemoteModel>(
        _ type: M.Type, into report: inout SyncReport, isolation: isolated (any Actor)? = #isolation
    ) async throws {
        let collection = M.modelName
        let key = Self.sinceKey(service, collection: collection)
        let since = context.packageValue(key).map(RemoteVersion.init)
        var cursor: RecordCursor?
        var timestamp: RemoteVersion?
        let skipped = report.skipped.count
        repeat {
            let page = try await service.changes(in: collection, since: since, after: cursor)
            if timestamp == nil { timestamp = page.timestamp }
            merge(page, as: M.self, into: &report)
            let count = page.records.count + page.deletions.count
            try advance(by: count, total: count)
            emit(.pulled(collection: collection, records: page.records.count, deletions: page.deletions.count))
            cursor = page.next
        } while cursor != nil
        // The feed gives versions after `since`, the look-back those up to it: no record twice.
        if let since { try await lookBack(M.self, upTo: since, into: &report) }
        // A record skipped (it does not decode, or its merge does not) is pulled again next time:
        // the collection's version moves only past records that were merged.
        if let timestamp, report.skipped.count == skipped {
            context.setPackageValue(timestamp.rawValue, forKey: key)
            forgetDeletes(of: collection, before: timestamp)
        }
    }

    /// Forgets the deletes of `collection` done here whose tombstones are more than the
    /// look-back span before `timestamp`, the version the collection is now pulled at: a record
    /// brought back by a write that committed within the span was pulled, by the feed or the
    /// look-back (see `deleteAcknowledged(_:at:)`); one committed later still, with a version
    /// older than the span, is not seen (as for any late change, see Docs/Sync.md). A delete
    /// whose tombstone's version was never heard takes `timestamp`, which the tombstone cannot be
    /// after, and is forgotten a span later.
    ///
    /// A collection's version moves only when something in it changes, so an idle collection
    /// keeps the entries of the deletes of its last span of activity: a bounded number.
    ///
    /// - Complexity: O(*r*) in the removed models' entries.
    func forgetDeletes(of collection: String, before timestamp: RemoteVersion) {
        guard let now = Int64(timestamp.rawValue) else { return }
        let span = Self.milliseconds(lookBack)
        for (id, entry) in versions.table.removed where entry.modelName == collection {
            guard case .deleted(let tombstone) = VersionTable.mark(of: entry) else { continue }
            guard let tombstone else {
                versions.table.updateRemoved(id, value: VersionTable.Mark.deleted(tombstone: timestamp).text)
                continue
            }
            // A version that is not a number is never passed: forgotten at once.
            guard let version = Int64(tombstone.rawValue) else {
                versions.table.forgetRemoved(id)
                continue
            }
            let (end, overflow) = version.addingReportingOverflow(span)
            if !overflow, end <= now { versions.table.forgetRemoved(id) }
        }
    }

    /// Whether `record` may be the record of the removed model of `entry`, by their creation
    /// dates (to the millisecond, as other clients may write them). Model ids cannot tell (a
    /// device that met the record as a reference first gives its model an id of its own, and
    /// writes it); the creation date travels with the record, the same on every device, and a
    /// model made later under the same object id has its own. A record without a date is not the
    /// record of a create sent from here (which wrote one); for any other entry it cannot be told
    /// apart, and is taken for the removed model's (every device loads it with the same date, see
    /// `unknownCreationDate`).
    static func isRecord(_ record: RemoteRecord, of entry: ModelMetadataTable.RemovedEntry) -> Bool {
        guard let createdAt = entry.createdAt else { return true }
        guard let stored = record.storedCreatedAt else { return VersionTable.mark(of: entry) != .sent }
        return abs(stored.timeIntervalSince(createdAt)) < 0.001
    }

    /// Merges one page: new records and records this device did not change are loaded as a
    /// fetch loads them; records it changed go to the policy; deletions remove models.
    func merge<M: RemoteModel>(_ page: RecordChanges, as type: M.Type, into report: inout SyncReport) {
        let versions = self.versions
        let deletes = removedEntryIndex()
        var clean: [RemoteRecord] = []
        var conflicted: [(any Model, RemoteRecord)] = []
        for record in page.records {
            if let held = heldModel(for: record.id, deletes: deletes) {
                if versions[held.modelId] == record.version { continue }
                let isPending = held.hasChanges || (versions[held.modelId] == nil && held.modelState == ModelState.new)
                if isPending {
                    conflicted.append((held, record))
                } else {
                    clean.append(record)
                }
            } else if let candidates = deletes[record.id] {
                // The removed model whose record this is; none: a record another model made
                // under the object id since, new here (the records removed here are gone).
                let removed = candidates.first { versions.table.removed[$0].map { Self.isRecord(record, of: $0) } ?? false }
                guard let removed, let entry = versions.table.removed[removed] else {
                    for id in candidates { versions.table.forgetRemoved(id) }
                    clean.append(record)
                    continue
                }
                switch VersionTable.mark(of: entry) {
                case .sent:
                    // This device's own create, whose answer it never heard: the delete goes
                    // against its version, and no one else's change is overruled.
                    versions.table.updateRemoved(removed, value: record.version.rawValue)
                    continue
                case .version(let known):
                    guard known != record.version else { continue }
                case .deleted:
                    // Deleted on the server already, and back: an update that raced the delete
                    // (see `deleteAcknowledged(_:at:)`). Whatever its version (a late commit can
                    // carry a smaller one), a live record read after the delete's answer came
                    // back after it.
                    break
                }
                // Deleted here, changed on the server: the delete wins, against the new version.
                versions.table.updateRemoved(removed, value: record.version.rawValue)
                let conflict = SyncConflict(
                    record: record.id, kind: .deletedHere,
                    versions: ConflictVersions(
                        record: record.id, base: nil, local: ModelValue.Object(), remote: RecordForm.fields(of: record)),
                    fields: [], merged: ModelValue.Object())
                report.conflicts.append(conflict)
                emit(.conflict(conflict))
            } else {
                clean.append(record)
            }
        }
        report.pulled += load(clean, as: M.self, into: &report)
        let deletedHere = conflicted.isEmpty ? [] : Set(deletes.keys)
        for (held, record) in conflicted {
            if resolve(held, record, as: M.self, deletedHere: deletedHere, into: &report) { report.pulled += 1 }
        }
        for deletion in page.deletions {
            if let held = ModelIdAssignment.heldModel(for: deletion.id, in: context) {
                // A model made here (or a placeholder given values here) and never pushed is not
                // the deleted record: it is created.
                if versions[held.modelId] == nil, held.modelState != .needsData || held.hasChanges { continue }
                if held.hasChanges {
                    let local = (try? RecordForm.values(of: held, objectIds: objectId(of:))) ?? ModelValue.Object()
                    let conflict = SyncConflict(
                        record: deletion.id, kind: .deletedOnServer,
                        versions: ConflictVersions(
                            record: deletion.id, base: nil, local: local, remote: ModelValue.Object()),
                        fields: [], merged: ModelValue.Object())
                    report.conflicts.append(conflict)
                    emit(.conflict(conflict))
                }
                // No delete to push: the record is gone.
                versions[held.modelId] = nil
                held.removeFromContext()
                report.removed += 1
            } else if let candidates = deletes[deletion.id] {
                // A delete done here stays known until the pulls are past it; one still to push
                // is done (another device deleted the record).
                for removed in candidates {
                    if let entry = versions.table.removed[removed], VersionTable.mark(of: entry).isDeleted { continue }
                    versions.table.forgetRemoved(removed)
                }
            }
        }
    }

    /// The model the context holds for record `id`, but not a placeholder of a record deleted
    /// here (`deletes`): a reference merged meanwhile may have made one, and it is not the record
    /// coming back (the delete wins).
    func heldModel(for id: RecordID, deletes: [RecordID: [ModelID]]) -> (any Model)? {
        guard let held = ModelIdAssignment.heldModel(for: id, in: context) else { return nil }
        if deletes[id] != nil, held.modelState == .needsData, !held.hasChanges { return nil }
        return held
    }

    /// The removed models' entries (deletes to push, and deletes done for a while), by record.
    ///
    /// A record has several when its object id was given to another model that was removed in
    /// turn. They are ranked: a delete still to push first, then the later-made model's; a pull
    /// takes the first whose model the record is (see `isRecord(_:of:)`).
    ///
    /// - Complexity: O(*r* log *r*) in the entries.
    func removedEntryIndex() -> [RecordID: [ModelID]] {
        var index: [RecordID: [ModelID]] = [:]
        let removed = versions.table.removed
        for (id, entry) in removed {
            index[RecordID(collection: entry.modelName, id: entry.objectId), default: []].append(id)
        }
        for (record, ids) in index where ids.count > 1 {
            index[record] = ids.sorted { Self.entry(removed[$0]!, $0, outranks: removed[$1]!, $1) }
        }
        return index
    }

    private static func entry(
        _ entry: ModelMetadataTable.RemovedEntry, _ id: ModelID, outranks other: ModelMetadataTable.RemovedEntry,
        _ otherId: ModelID
    ) -> Bool {
        let done = VersionTable.mark(of: entry).isDeleted
        let otherDone = VersionTable.mark(of: other).isDeleted
        if done != otherDone { return otherDone }
        let made = entry.createdAt ?? .distantPast
        let otherMade = other.createdAt ?? .distantPast
        return made != otherMade ? made > otherMade : id > otherId
    }

    /// Loads records as a fetch does (all at once; one by one when that fails, skipping and
    /// reporting the records that do not decode). Returns how many were loaded.
    private func load<M: RemoteModel>(_ records: [RemoteRecord], as type: M.Type, into report: inout SyncReport) -> Int {
        guard !records.isEmpty else { return 0 }
        do {
            try loadAll(records, as: M.self)
            return records.count
        } catch {
            var loaded = 0
            for record in records {
                do {
                    try loadAll([record], as: M.self)
                    loaded += 1
                } catch {
                    report.skipped.append(error)
                }
            }
            return loaded
        }
    }

    /// Loads `records` into the context, all or nothing, and records their versions.
    func loadAll<M: RemoteModel>(_ records: [RemoteRecord], as type: M.Type) throws(ServiceError) {
        var ids = ModelIdAssignment(caller: context)
        var merged: [(record: RemoteRecord, modelId: ModelID)] = []
        for record in records {
            let held = ModelIdAssignment.heldModel(for: record.id, in: context)
            guard let id = ids.assign(record, held: held?.modelId) else { continue }
            merged.append((record, id))
        }
        try FetchedGraph.load(merged, as: M.self, into: context, known: ids.assigned, versions: versions)
    }
}
