import Foundation
import ModelKit

// A record that changed on the server and on this device since the last sync: the policy decides
// its fields, the model takes them in place, and the fields where they differ from the server's
// become the model's changes against the server's record, to push with its version.

extension ModelSync {
    /// Settles `record` against `held`, which has changes; returns whether the model took
    /// the result (a merged record that does not decode is skipped and reported). References to
    /// `deletedHere`, the records this device deleted and has not pushed yet, are left out.
    func resolve<M: RemoteModel>(
        _ held: any Model, _ record: RemoteRecord, as type: M.Type, deletedHere: Set<RecordID>, into report: inout SyncReport
    ) -> Bool {
        let local: ModelValue.Object
        do {
            local = try RecordForm.values(of: held, objectIds: objectId(of:))
        } catch {
            report.skipped.append(error)
            return false
        }
        var base: ModelValue.Object?
        if versions[held.modelId] != nil {
            var values = local
            for (key, value) in RecordForm.normalized(held.changes.oldValues, objectIds: objectId(of:)) { values[key] = value }
            base = values
        }
        var remote = RecordForm.fields(of: record)
        if let base { remote = RecordForm.snapped(remote, to: base) }
        remote = RecordForm.snapped(remote, to: local)
        let versions = ConflictVersions(record: record.id, base: base, local: local, remote: remote)
        var fields: [SyncFieldConflict] = []
        var merged: ModelValue.Object
        switch policies[M.modelName] ?? .threeWay {
        case .threeWay:
            let result = FieldMerge.threeWay(base: base, local: local, remote: remote)
            merged = result.merged
            fields = result.conflicts.map {
                SyncFieldConflict(field: $0.field, base: $0.base, local: $0.local, remote: $0.remote, merged: $0.merged)
            }
        case .serverWins:
            merged = remote
        case .clientWins:
            var values = remote
            for (key, value) in local where base?[key] != value { values[key] = value }
            for (key, value) in base ?? ModelValue.Object() where local[key] == nil && value != .null { values[key] = .null }
            merged = values
        case .custom(let decide):
            merged = decide(versions)
        }
        // A record deleted here stays deleted (the delete wins over an edit): references to it
        // read as none, whichever side's values the merge took them from.
        merged = RecordForm.droppingPointers(to: deletedHere, in: merged)
        do {
            try take(merged, from: record, into: held, as: M.self, comparedWith: remote)
        } catch {
            report.skipped.append(error)
            return false
        }
        // A record that only came back as this device has it (its own push, whose answer was
        // lost) is no conflict.
        if local != remote {
            let conflict = SyncConflict(
                record: record.id, kind: .changedOnBoth, versions: versions, fields: fields, merged: merged)
            report.conflicts.append(conflict)
            emit(.conflict(conflict))
        }
        return true
    }

    /// Gives `held` the fields `merged`: the server's record first (so its version and values
    /// become the model's saved state), then the fields where `merged` differs from `remote`,
    /// which become changes to push. Checked first in a scratch context: on error the model is
    /// as it was.
    private func take<M: RemoteModel>(
        _ merged: ModelValue.Object, from record: RemoteRecord, into held: any Model, as type: M.Type,
        comparedWith remote: ModelValue.Object
    ) throws(ServiceError) {
        var differing: [String] = []
        for key in Set(merged.keys).union(remote.keys) where (merged[key] ?? .null) != (remote[key] ?? .null) {
            differing.append(key)
        }
        var fields = record.fields
        for key in differing { fields[key] = merged[key] ?? .null }
        let mergedRecord = RemoteRecord(id: record.id, version: record.version, fields: fields)
        if !differing.isEmpty {
            // Whether the merged record decodes, before the model is touched.
            try RecordCodec.checkPointers(of: mergedRecord)
            do {
                var ids = ModelIdAssignment(caller: ModelContext())
                let id = ids.assign(mergedRecord, held: nil) ?? ModelID(UUID())
                _ = try RecordCodec.load([(mergedRecord, id)], as: M.self, into: ModelContext(), known: ids.assigned)
            } catch {
                throw ServiceError(
                    .invalidResponse(expected: "merged fields that decode as a \(M.modelName)", found: "\(error)"),
                    record: record.id)
            }
        }
        try loadAll([record], as: M.self)
        guard !differing.isEmpty else { return }
        let server = try RecordForm.properties(of: held)
        var oldValues = ModelValue.Object()
        for key in differing { oldValues[key] = server[key] ?? .null }
        try loadAll([mergedRecord], as: M.self)
        Self.restoreChanges(of: held, oldValues: oldValues)
    }

    /// The object id of the model with `id`: the context's, or a removed model's that the
    /// server had.
    func objectId(of id: ModelID) -> String? {
        context.model(withId: id)?.objectId ?? versions.table.removed[id]?.objectId
    }

    private static func restoreChanges<T: Model>(of model: T, oldValues: ModelValue.Object) {
        model.restoreChanges(oldValues: oldValues)
    }
}
