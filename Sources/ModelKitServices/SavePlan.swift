import Foundation
import ModelKit

/// What a save writes, in which order, and how to apply or undo it locally.
///
/// The root and every model it reaches are written once as records (JSON text straight from the
/// models, see ``ModelKit/RecordTexts``), which also lists the references between them. Writes are
/// ordered so that a referenced model comes before the models that reference it, the members of a
/// cycle next to each other (so they share a request, unless one ends among them);
/// see ``WriteOrder``. ``dependencies`` says which earlier writes each one must follow, so that a
/// backend can have writes that depend on none of each other in flight at once.
struct SavePlan {
    struct Item {
        let model: any Model
        /// Its values when the plan was made.
        let values: ModelValuesSnapshot
    }

    private(set) var writes: [RecordWrite] = []
    private(set) var items: [Item] = []
    /// For each write, the earlier writes of records it references outside its own cycle: the
    /// server must have them before it (a write's references within its cycle cannot all come
    /// first).
    private(set) var dependencies: [[Int]] = []
    /// Models given an object id by this plan, to take it back if the save fails.
    private var assignedIds: [any Model] = []

    init<M: RemoteModel>(root: M, context: ModelContext, store: String) throws(ServiceError) {
        try self.init(records: try Self.records(of: root), context: context, store: store)
    }

    /// The plan of a sync's push: `models` (the context's models that are new or changed), and
    /// no other; their references to the context's other models name records the server has.
    init(models: [any Model], context: ModelContext, store: String) throws(ServiceError) {
        let records: RecordTexts
        do {
            var random = RandomUUIDs()
            records = try RecordTexts.of(models, in: context, reserved: RecordCodec.nonPropertyFields) {
                random.makeString()
            }
        } catch {
            throw ServiceError(.invalidModel(expected: "models that encode", found: "\(error)"))
        }
        try self.init(records: records, context: context, store: store)
    }

    private init(records: RecordTexts, context: ModelContext, store: String) throws(ServiceError) {
        let versions = VersionTable.of(context, store: store)
        do throws(ServiceError) {
            for entry in records.entries {
                let model = entry.model
                guard model.modelContext === context else {
                    throw ServiceError(
                        .invalidModel(expected: "references to models of the same context", found: "one to a model of none"))
                }
                guard type(of: model) is any RemoteModel.Type else {
                    throw ServiceError(
                        .invalidModel(expected: "references to RemoteModel types only", found: "one to a \(entry.modelName)"))
                }
                guard entry.isNewObjectId else { continue }
                // A placeholder names a record that exists: it cannot be given a new one.
                guard model.modelState != .needsData else {
                    throw ServiceError(
                        .invalidModel(expected: "placeholders with an object id", found: "a \(entry.modelName) without one"))
                }
                model.objectId = entry.objectId
                assignedIds.append(model)
            }
            let order = WriteOrder(edges: records.entries.map(\.targets))
            // The write of each entry, once made.
            var writeIndex = [Int?](repeating: nil, count: records.entries.count)
            for index in order.order {
                let entry = records.entries[index]
                let model = entry.model
                let record = RecordID(collection: entry.modelName, id: entry.objectId)
                guard RecordCodec.isValidId(entry.objectId), RecordCodec.isValidId(entry.modelName) else {
                    throw ServiceError(
                        .invalidModel(expected: "ids of letters, digits, '_' and '-'", found: "'\(record)'"), record: record)
                }
                let version = versions[model.modelId]
                // A placeholder is not written, unless the app gave it values: then it is created,
                // which fails with a conflict, overwriting nothing, if the record exists.
                if model.modelState == .needsData, version != nil || !model.hasChanges { continue }
                if version != nil, !model.hasChanges { continue }
                if let refusal = entry.refusal {
                    throw ServiceError(.invalidModel(expected: refusal.expected, found: refusal.found), record: record)
                }
                // A copy: the fields are handed to the backend, and should not keep the whole text.
                let fields = RecordFields(jsonData: Data(records.text[entry.range]))
                if let version {
                    writes.append(.update(record, fields: fields, expected: version))
                } else {
                    writes.append(.create(record, fields: fields))
                }
                items.append(Item(model: model, values: model.valuesSnapshot()))
                writeIndex[index] = writes.count - 1
                dependencies.append(
                    entry.targets.compactMap { target in
                        order.component[target] == order.component[index] ? nil : writeIndex[target]
                    })
            }
        } catch {
            rollBack()
            throw error
        }
    }

    /// Takes back the object ids this plan gave.
    func rollBack() {
        for model in assignedIds { model.objectId = nil }
    }

    /// Records the new versions and marks the written models saved.
    func commit(_ results: [RecordWriteResult], versions: VersionTable) {
        for (item, result) in zip(items, results) {
            guard case .written(let version) = result else { continue }
            versions[item.model.modelId] = version
            // Values changed while the request was in flight stay changes, against the values
            // the server now has (the base of a later sync's merge).
            let unchanged = item.values.isUnchanged
            if !unchanged { item.values.rebaseChanges() }
            item.model.markSaved(resettingChanges: unchanged)
        }
    }

    private static func records<M: Model>(of root: M) throws(ServiceError) -> RecordTexts {
        do {
            var random = RandomUUIDs()
            return try root.recordTexts(reserved: RecordCodec.nonPropertyFields) { random.makeString() }
        } catch {
            throw ServiceError(.invalidModel(expected: "models that encode", found: "\(error)"))
        }
    }
}
