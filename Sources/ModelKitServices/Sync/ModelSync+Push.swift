import Foundation
import ModelKit

// The push: every model of the synced types that is new or changed, and every delete not pushed,
// in one plan sent as a save sends it (referenced records first, preconditions on each write).
// A retried create or update that the server already holds as sent counts as written (see
// `KintoService`), and a delete of a record already gone is done: so a push repeated after a
// crash, whose answers the store never recorded, applies nothing twice.

extension ModelSync {
    /// Pushes the pending changes (`pending`: the models of ``pendingModels()``); returns the writes that met a change made on the server since
    /// the pull, with the version each expected (another round then pulls the change and pushes
    /// again).
    func push(_ pending: [any Model], into report: inout SyncReport, isolation: isolated (any Actor)? = #isolation)
        async throws -> [RecordID: RemoteVersion?]
    {
        // Models removed while the store saved, before this push, are deletes now.
        let pending = pending.filter { $0.modelContext === context }
        let deletes = pendingDeletes()
        guard !pending.isEmpty || !deletes.isEmpty else { return [:] }
        try advance(by: 0, total: pending.count + deletes.count)
        let plan = try SavePlan(models: pending, context: context, store: service.storeIdentifier)
        var writes = plan.writes
        var dependencies = plan.dependencies
        for (_, entry) in deletes {
            writes.append(
                .delete(
                    RecordID(collection: entry.modelName, id: entry.objectId),
                    expected: VersionTable.mark(of: entry).version))
            dependencies.append([])
        }
        let results: [RecordWriteResult]
        do {
            // Files made offline that the records name go first.
            try await (service as? any PendingFileUploads)?.uploadPendingFiles(namedIn: writes)
            if let pipelined = service as? any PipelinedWrites {
                results = try await pipelined.perform(writes, after: .dependencies(dependencies))
            } else {
                results = try await service.perform(writes)
            }
        } catch {
            plan.rollBack()
            throw error
        }
        guard results.count == writes.count else {
            plan.rollBack()
            throw ServiceError(.invalidResponse(expected: "\(writes.count) results", found: "\(results.count)"))
        }
        plan.commit(Array(results.prefix(plan.writes.count)), versions: versions)
        var refused: [RecordID: RemoteVersion?] = [:]
        var failure: ServiceError?
        var written = 0
        var failed = 0
        for (index, result) in results.enumerated() {
            let isDelete = index >= plan.writes.count
            switch result {
            case .written(let version):
                written += 1
                if isDelete {
                    report.deleted += 1
                    // A retried delete that found the record gone answers with the version it
                    // expected ("0" for none; see `KintoService`): the tombstone's is unknown.
                    let expected = writes[index].expectedVersion ?? RemoteVersion("0")
                    deleteAcknowledged(deletes[index - plan.writes.count].0, at: version == expected ? nil : version)
                } else {
                    report.pushed += 1
                }
            case .failed(let error):
                if isDelete, error.code == .notFound {
                    // Deleted already (by another device, or by this push before a crash).
                    versions.table.forgetRemoved(deletes[index - plan.writes.count].0)
                    continue
                }
                failed += 1
                switch error.code {
                case .conflict: refused[writes[index].record] = writes[index].expectedVersion
                case .notAttempted: break
                default: if failure == nil { failure = error }
                }
            }
        }
        emit(.pushed(written: written, failed: failed))
        try advance(by: pending.count + deletes.count, total: 0)
        if let failure { throw failure }
        return refused
    }
}

extension ModelSync {
    /// Keeps the entry of a removed model whose delete the server acknowledged, as done at the
    /// tombstone's `version` (nil when unknown), until the pulls are past it
    /// (`forgetDeletes(of:before:)`).
    ///
    /// Kinto checks a precondition before it writes, not atomically with the write, and its
    /// update writes a record whether or not a tombstone is there: an update by another device
    /// racing this delete (both checked against the version before) is accepted after it and
    /// brings the record back (seen on PostgreSQL in the two-process test). A pull that meets the
    /// removed model's record alive again (see `isRecord(_:of:)`) deletes it again, as a delete
    /// against an edit does.
    func deleteAcknowledged(_ id: ModelID, at version: RemoteVersion?) {
        versions.table.updateRemoved(id, value: VersionTable.Mark.deleted(tombstone: version).text)
    }

    /// Marks each model about to be pushed as a create "sent, version unknown" (saved with the
    /// store before the push goes out). Without the mark, a create that reaches the server but
    /// whose answer is lost leaves the model with no version; deleting it then leaves no delete
    /// to push (only models with a version do), and the next pull brings the record back. With
    /// it, the removed model keeps an entry, and its delete goes without a precondition (a 404
    /// meaning the create never landed).
    ///
    /// - Complexity: O(*p*) in the models to push (`pending`, from ``pendingModels()``).
    func markCreatesSent(_ pending: [any Model]) {
        let versions = self.versions
        for model in pending where versions[model.modelId] == nil {
            // Also over the mark of a delete done (an undo brought the model back); setting the
            // mark again changes nothing.
            versions.table[model.modelId] = VersionTable.Mark.sent.text
        }
    }
}

extension RecordWrite {
    /// The version the write expects the record at; nil for a create (no record).
    var expectedVersion: RemoteVersion? {
        switch self {
        case .create: nil
        case .update(_, _, let expected): expected
        case .delete(_, let expected): expected
        }
    }
}
