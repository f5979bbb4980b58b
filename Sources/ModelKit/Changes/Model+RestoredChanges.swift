import Foundation

// Changes that outlive the process: a whole-graph file or snapshot written by a context with
// package metadata (a backend's versions) lists the models that are new and the old values of
// changed properties (its `tracking` member, see TrackingMember.swift), so that a relaunch can
// still push an edit made before it. Loading puts them back with these calls.

extension Model {
    /// Marks a model just loaded as one the app made and never saved (``ModelState/new``), whose
    /// changes are what differs from a new instance of its type, as before it was written out.
    func restoreAsNew() {
        storage.metadata.state = .new
        storage.box.baseline = .newWritten
        storage.quietEpoch = 0
    }

    /// Marks a model just loaded as the placeholder it was when it was written out
    /// (``ModelState/needsData``): its values are its type's defaults, not a record's.
    func restoreAsPlaceholder() {
        storage.metadata.state = .needsData
    }

    /// Makes the properties in `oldValues` (encoded, as ``ModelChanges/oldValues`` gives them)
    /// changes again: the values at the last reset are the loaded ones with those put back.
    /// Names that are not properties of the model are ignored.
    ///
    /// ModelKitServices calls it after merging a record into a model: the fields where the merge
    /// kept this device's values become changes against the server's, to push.
    package func restoreChanges(oldValues: ModelValue.Object) {
        storage.box.baseline = .saved
        storage.quietEpoch = 0
        guard !oldValues.isEmpty else { return }
        var baseline = Self.encoded(storage.values)
        var changed = false
        for (name, value) in oldValues where baseline[name] != nil {
            baseline[name] = value
            changed = true
        }
        guard changed else { return }
        changeTracker.restored = baseline
    }

    /// ``revertChanges()`` for changes restored from a file: the values at the reset are only
    /// known encoded, so they are loaded into the model in place, as a file is (references
    /// resolve in the model's context, to placeholders when the model is gone from it). A model
    /// no longer in a context, or values that no longer decode, only forget the changes.
    func revertRestored(_ baseline: ModelValue.Object) {
        let metadata = storage.metadata
        guard let context = modelContext else { return resetChanges() }
        var dictionary = ModelValue.Object()
        dictionary["model"] = .string(Self.modelName)
        dictionary["modelId"] = .string(metadata.modelId.description)
        if let objectId = metadata.objectId { dictionary["objectId"] = .string(objectId) }
        dictionary["createdAt"] = .date(metadata.createdAt)
        dictionary["updatedAt"] = .date(Date())
        dictionary["properties"] = .object(baseline)
        let options = DeserializationOptions(danglingPointers: .placeholder)
        guard (try? Self.instance(from: .object(dictionary), in: context, options: options)) != nil else {
            return resetChanges()
        }
        resetChanges()
    }
}
