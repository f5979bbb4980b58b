import Foundation
import ModelKit

/// What a save writes, in which order, and how to apply or undo it locally.
///
/// The root is serialized once (in the JSON form), which lists every model it reaches; that list
/// gives each model's fields and the references between them. Writes are ordered so that a
/// referenced model comes before the models that reference it (a depth-first post-order), which
/// puts the members of a cycle next to each other: the backend sends them in the same request
/// when they fit in one.
struct SavePlan {
    struct Item {
        let model: any Model
        /// Its values when the plan was made.
        let values: ModelValuesSnapshot
    }

    private(set) var writes: [RecordWrite] = []
    private(set) var items: [Item] = []
    /// Models given an object id by this plan, to take it back if the save fails.
    private var assignedIds: [any Model] = []

    init<M: RemoteModel>(root: M, context: ModelContext, store: String) throws(ServiceError) {
        let entries = try Self.entries(of: root)
        let versions = VersionTable.of(context, store: store)
        var models: [String: any Model] = [:]
        var objectIds: [String: String] = [:]
        do throws(ServiceError) {
            for entry in entries {
                guard let modelId = entry["modelId"]?.stringValue, let id = ModelID(modelId),
                    let model = context.model(withId: id)
                else {
                    throw ServiceError(
                        .invalidModel(expected: "references to models of the same context", found: "one to a model of none"))
                }
                guard type(of: model) is any RemoteModel.Type else {
                    throw ServiceError(
                        .invalidModel(expected: "references to RemoteModel types only", found: "one to a \(entry["model"] ?? "?")"))
                }
                if model.objectId == nil, model.modelState != .needsData {
                    model.objectId = RandomUUID.make().uuidString
                    assignedIds.append(model)
                }
                models[modelId] = model
                objectIds[modelId] = model.objectId
            }
            let order = Self.postOrder(entries)
            for index in order {
                let entry = entries[index]
                guard let modelId = entry["modelId"]?.stringValue, let model = models[modelId] else { continue }
                let name = type(of: model).modelName
                guard let objectId = model.objectId else {
                    throw ServiceError(
                        .invalidModel(expected: "placeholders with an object id", found: "a \(name) without one"))
                }
                let record = RecordID(collection: name, id: objectId)
                guard RecordCodec.isValidId(objectId), RecordCodec.isValidId(name) else {
                    throw ServiceError(.invalidModel(expected: "ids of letters, digits, '_' and '-'", found: "'\(record)'"), record: record)
                }
                let version = versions.versions[model.modelId]
                // A placeholder is not written, unless the app gave it values: then it is created,
                // which fails with a conflict, overwriting nothing, if the record exists.
                if model.modelState == .needsData, version != nil || !model.hasChanges { continue }
                if version != nil, !model.hasChanges { continue }
                let fields = try RecordCodec.fields(of: entry, objectIds: objectIds, record: record)
                if let version {
                    writes.append(.update(record, fields: fields, expected: version))
                } else {
                    writes.append(.create(record, fields: fields))
                }
                items.append(Item(model: model, values: model.valuesSnapshot()))
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
            versions.versions[item.model.modelId] = version
            // Values changed while the request was in flight stay changes.
            item.model.markSaved(resettingChanges: item.values.isUnchanged)
        }
    }

    private static func entries<M: Model>(of root: M) throws(ServiceError) -> [ModelValue.Object] {
        let value: ModelValue
        do {
            value = try root.serialize(as: .json)
        } catch {
            throw ServiceError(.invalidModel(expected: "models that encode", found: "\(error)"))
        }
        switch value {
        case .object(let entry): return [entry]
        case .array(let elements):
            return elements.compactMap { if case .object(let entry) = $0 { entry } else { nil } }
        default: return []
        }
    }

    /// The entries' indexes, each after the entries it references (except along a cycle), from
    /// the root; iterative, so that long chains need no deep stack.
    private static func postOrder(_ entries: [ModelValue.Object]) -> [Int] {
        var indexById: [String: Int] = [:]
        for (index, entry) in entries.enumerated() {
            if let id = entry["modelId"]?.stringValue { indexById[id] = index }
        }
        let edges: [[Int]] = entries.map { entry in
            var targets: [String] = []
            if let properties = entry["properties"] { RecordCodec.pointerTargets(in: properties, into: &targets) }
            return targets.compactMap { indexById[$0] }
        }
        var order: [Int] = []
        order.reserveCapacity(entries.count)
        var visited = [Bool](repeating: false, count: entries.count)
        for start in entries.indices where !visited[start] {
            var stack: [(node: Int, next: Int)] = [(start, 0)]
            visited[start] = true
            while let top = stack.last {
                if top.next < edges[top.node].count {
                    stack[stack.count - 1].next += 1
                    let target = edges[top.node][top.next]
                    if !visited[target] {
                        visited[target] = true
                        stack.append((target, 0))
                    }
                } else {
                    order.append(top.node)
                    stack.removeLast()
                }
            }
        }
        return order
    }
}
