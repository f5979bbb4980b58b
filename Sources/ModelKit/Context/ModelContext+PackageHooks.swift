import Foundation

// Small entry points for the other targets of this package (ModelKitServices), at `package`
// access: they are not public API. Each exists because the service layer needs a piece of a
// model's or context's state that the public API deliberately does not let apps set.

extension Model {
    /// Marks the model as matching the copy a backend now stores: its state becomes
    /// ``ModelState/loaded``, as after loading it, and its changes are reset unless
    /// `resettingChanges` is false (values changed while the save was in flight).
    ///
    /// ModelKitServices calls it after a save succeeds. Apps cannot set ``modelState``, which
    /// records what an instance was made from; a saved model has a stored copy, like a loaded one.
    package func markSaved(resettingChanges: Bool) {
        if resettingChanges { resetChanges() }
        storage.metadata.state = .loaded
        // What a file's `tracking` member says of the model changed: a store saves it again.
        storage.context?.noteTrackingChanged(modelId)
    }
}

extension Model {
    /// The model's values now, to tell after an asynchronous save whether they changed while it
    /// was in flight (``ModelValuesSnapshot/isUnchanged``).
    ///
    /// ModelKitServices takes one for every model it writes. A copy of the values costs next to
    /// nothing (their strings and arrays are shared); encoding them, which comparing needs in
    /// general, is only done when the copy and the values then differ bit for bit.
    package func valuesSnapshot() -> ModelValuesSnapshot {
        // The copy holds on to the values' storage, so none of it can be freed and reused at the
        // same address while the save is in flight: equal bits then mean the same values.
        let values = storage.values
        return ModelValuesSnapshot(rebase: { [self] in
            // The values the backend now stores become the ones changes compare with.
            storage.box.baseline = .saved
            changeTracker.original = values
            changeTracker.restored = nil
        }) { [self] in
            // The values now are compared where they are: a copy would retain and release each.
            let same = withUnsafeBytes(of: values) { before in
                withUnsafeBytes(of: &storage.values) { after in
                    before.count == after.count
                        && (before.isEmpty || memcmp(before.baseAddress!, after.baseAddress!, before.count) == 0)
                }
            }
            if same { return true }
            // Bits differ when a value was written, also with an equal one (or in padding): the
            // values' trees decide, as ``properties`` would.
            guard let old = try? GraphStreamWriter.valueTree(of: values),
                let new = try? GraphStreamWriter.valueTree(of: storage.values)
            else { return false }
            return old == new
        }
    }
}

/// A model's values at some moment (``Model/valuesSnapshot()``).
package struct ModelValuesSnapshot {
    /// Makes the snapshot's values the ones the model's changes compare with.
    fileprivate let rebase: () -> Void
    fileprivate let compare: () -> Bool

    /// Whether the model's persisted values are those of the snapshot.
    package var isUnchanged: Bool { compare() }

    /// Makes the snapshot's values the ones ``Model/changes`` compares with (what a backend
    /// stores after a save of them), keeping what was written since as changes.
    package func rebaseChanges() { rebase() }
}

extension ModelContext {
    /// State that another target of this package keeps per context, by key: ModelKitServices
    /// keeps there the server version (ETag) of each record it saved or fetched into this context,
    /// so that an update or a delete can send it as a precondition.
    ///
    /// A plain dictionary: like the rest of the context, it belongs to the context's isolation
    /// domain, so it needs no lock.
    package subscript(packageState key: String) -> AnyObject? {
        get { packageState[key] }
        set { packageState[key] = newValue }
    }
}

/// Opaque strings about a context's models, by model id, that another target of this package
/// keeps in one namespace: ModelKitServices keeps there each record's server version per store.
///
/// Unlike ``ModelContext/subscript(packageState:)``, these tables are part of the context's
/// state that outlives the process: whole-graph files and snapshots carry them (the file's
/// `tracking` member), and loading or merging puts them back. ModelKit does not read the strings.
package final class ModelMetadataTable {
    /// The string kept for each model.
    package private(set) var values: [ModelID: String] = [:]
    /// The context whose table this is, told of each change so that a ``ModelStore`` saves it.
    weak var context: ModelContext?

    package init() {}

    /// The string kept for the model with `id`; setting it marks the model's tracking as changed
    /// in the context (see ``ModelContext/noteTrackingChanged(_:)``).
    package subscript(id: ModelID) -> String? {
        get { values[id] }
        set {
            guard values[id] != newValue else { return }
            values[id] = newValue
            context?.noteTrackingChanged(id)
        }
    }

    /// Sets a value as a load puts it back: no change to save.
    func restore(_ value: String?, for id: ModelID) {
        values[id] = value
    }

    /// What a table that keeps removed entries (``keepsRemovedEntries``) holds for a model
    /// removed from the context: which record it was, and its string.
    package struct RemovedEntry: Equatable, Sendable {
        /// The removed model's ``Model/modelName``.
        package let modelName: String
        /// Its object id.
        package let objectId: String
        /// The table's string for it when it was removed.
        package let value: String
        /// The removed model's ``Model/createdAt``: what tells its record from one that another
        /// model made later under the same object id (model ids differ between devices, the
        /// creation date travels with the record). Nil in entries written before it was kept.
        package let createdAt: Date?

        package init(modelName: String, objectId: String, value: String, createdAt: Date?) {
            self.modelName = modelName
            self.objectId = objectId
            self.value = value
            self.createdAt = createdAt
        }

        /// The entry with another string.
        package func with(value: String) -> RemovedEntry {
            RemovedEntry(modelName: modelName, objectId: objectId, value: value, createdAt: createdAt)
        }
    }

    /// Whether the string of a model removed from the context moves to ``removed`` (when the model
    /// has an object id), to stay there, saved by a ``ModelStore`` and carried by whole-graph
    /// files, until ``forgetRemoved(_:)``: what an offline sync needs to delete the model's record
    /// later. Otherwise (the default) it stays in ``values`` until the process ends, and files do
    /// not carry it. ``ModelContext/clear()`` moves nothing: it drops local copies.
    package var keepsRemovedEntries = false {
        didSet {
            guard keepsRemovedEntries != oldValue else { return }
            context?.tombstoneTables += keepsRemovedEntries ? 1 : -1
            context?.packageStateChanged = true
        }
    }

    /// The entries of removed models (see ``keepsRemovedEntries``), by model id.
    package private(set) var removed: [ModelID: RemovedEntry] = [:]

    /// Drops the entry of a removed model (its record was deleted, say).
    package func forgetRemoved(_ id: ModelID) {
        guard removed.removeValue(forKey: id) != nil else { return }
        context?.packageStateChanged = true
    }

    /// Replaces the string of a removed model's entry (the version its record's delete must
    /// match, after a pull saw the record change).
    package func updateRemoved(_ id: ModelID, value: String) {
        guard let entry = removed[id], entry.value != value else { return }
        removed[id] = entry.with(value: value)
        context?.packageStateChanged = true
    }

    /// Moves the string of a model just removed to ``removed``; during a store's replay
    /// (`keepingEntry` false), whose records say what ``removed`` holds, it is only dropped.
    func modelRemoved(_ id: ModelID, name: String, objectId: String?, createdAt: Date, keepingEntry: Bool) {
        guard let value = values[id] else { return }
        values[id] = nil
        guard keepingEntry, let objectId else { return }
        removed[id] = RemovedEntry(modelName: name, objectId: objectId, value: value, createdAt: createdAt)
        context?.packageStateChanged = true
    }

    /// Moves the entry of a removed model back to ``values`` when the model comes back (undo).
    func modelReturned(_ id: ModelID) {
        guard let entry = removed.removeValue(forKey: id) else { return }
        values[id] = entry.value
        context?.packageStateChanged = true
    }

    /// Puts back the entries of removed models as a file or save record gives them, all at once.
    func restoreRemoved(_ entries: [ModelID: RemovedEntry]) {
        removed = entries
    }
}

extension ModelContext {
    /// The table of `namespace`, made (empty) if the context has none yet.
    ///
    /// A context that has any table writes it, with what a backend needs to push changes made
    /// before a relaunch (which models are new, and the old values of changed properties), into
    /// its whole-graph files and snapshots; a context that has none writes the files it always did.
    package func metadataTable(_ namespace: String) -> ModelMetadataTable {
        if let table = metadataTables[namespace] { return table }
        let table = ModelMetadataTable()
        table.context = self
        metadataTables[namespace] = table
        return table
    }
}

extension ModelContext {
    /// Records that what the `tracking` member says of the model with `id` changed (a server
    /// version, or the model's state after a push), without counting as a change of the model:
    /// ``changes`` and ``hasChanges`` do not show it, a ``ModelStore``'s save writes it.
    package func noteTrackingChanged(_ id: ModelID) {
        withRegistry { registry in
            guard registry.models[id] != nil else { return }
            registry.log.tracked.insert(id)
        }
    }

    /// The models whose tracking changed since the last ``resetChanges()``, still in the context.
    var trackingChanged: Set<ModelID> {
        withRegistry { $0.log.tracked }
    }
}

extension ModelContext {
    /// A string another target of this package keeps for the whole context, by key, carried by
    /// whole-graph files and saved by a ``ModelStore`` (the `tracking` member's `values`), so that
    /// it changes atomically with the models: ModelKitServices keeps there the version each
    /// collection was last pulled at.
    ///
    /// - Complexity: O(1).
    package func packageValue(_ key: String) -> String? {
        packageValues[key]
    }

    /// Sets (or, with `nil`, removes) the string kept for `key`; the next store save writes it.
    ///
    /// - Complexity: O(1).
    package func setPackageValue(_ value: String?, forKey key: String) {
        guard packageValues[key] != value else { return }
        packageValues[key] = value
        packageStateChanged = true
    }

    /// Whether the context keeps state a file's `tracking` member carries beyond the models'
    /// own: package values, or tables that keep removed entries.
    var keepsPackageState: Bool { !packageValues.isEmpty || tombstoneTables > 0 }
}

extension ModelContext {
    /// Moves a removed model's strings to the removed entries of the tables that keep them.
    func noteRemoval(_ id: ModelID, name: String, objectId: String?, createdAt: Date) {
        for table in metadataTables.values where table.keepsRemovedEntries {
            table.modelRemoved(id, name: name, objectId: objectId, createdAt: createdAt, keepingEntry: !replaysJournal)
        }
    }

    /// Moves a returning model's removed entries back.
    func noteReturn(_ id: ModelID) {
        for table in metadataTables.values where table.keepsRemovedEntries { table.modelReturned(id) }
    }
}

extension ModelContext {
    /// Runs `body` with the models of `ids` unindexed by object id (as if already removed), then
    /// indexes again those still in the context: a store's replay loads a record's models before
    /// it removes the models the record removed, and a loaded model may have one's object id.
    func withObjectIdsReleased<Result>(of ids: [ModelID], _ body: () throws -> Result) rethrows -> Result {
        guard !ids.isEmpty else { return try body() }
        let models = ids.compactMap { model(withId: $0) }
        var released: [(ObjectKey, any Model)] = []
        withRegistry { registry in
            for model in models {
                guard let objectId = model.objectId else { continue }
                let key = ObjectKey(type: ObjectIdentifier(type(of: model)), objectId: objectId)
                if registry.objectIds[key] === model {
                    registry.objectIds[key] = nil
                    released.append((key, model))
                }
            }
        }
        defer {
            withRegistry { registry in
                for (key, model) in released where registry.models[model.modelId] != nil && registry.objectIds[key] == nil {
                    registry.objectIds[key] = model
                }
            }
        }
        return try body()
    }
}
