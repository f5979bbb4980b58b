import Foundation

/// The optional `tracking` member of a whole-graph file's envelope (and of a snapshot's): what a
/// context keeps about its models besides their values, so that a relaunch can still push to a
/// backend what it had not pushed yet.
///
/// ```json
/// "tracking": {
///   "metadata": {"<namespace>": {"<modelId>": "<opaque string>"}},
///   "new": ["<modelId>"],
///   "placeholders": ["<modelId>"],
///   "changed": {"<modelId>": {"<property>": <its value at the last reset>}},
///   "removed": {"<namespace>": {"<modelId>": ["<model name>", "<object id>", "<opaque string>", "<createdAt>"]}},
///   "values": {"<key>": "<opaque string>"}
/// }
/// ```
///
/// A removed entry's fourth element, the removed model's creation date as ISO 8601 text, may be
/// missing (files written before it was kept).
///
/// `removed` and `values` are the package's state beyond the models' (see
/// ``ModelMetadataTable/keepsRemovedEntries`` and ``ModelContext/packageValue(_:)``), written
/// whole: in a file, and in a store's save record when they changed since the save before. A
/// namespace listed in `removed`, even empty, is a table that keeps removed entries.
///
/// It is written only by a context that keeps package metadata (``ModelMetadataTable``, for
/// example ModelKitServices' server versions): any other context writes the bytes it always did,
/// and files without the member load as before. Readers ignore members they do not know.
struct TrackingMember {
    /// Each namespace's strings, namespaces in name order, models in the order written.
    var metadata: [(namespace: String, values: [(ModelID, String)])] = []
    /// Models the app made and never saved (``ModelState/new``).
    var new: [ModelID] = []
    /// Placeholders (``ModelState/needsData``) the app gave no values: written with their types'
    /// default values, they would come back as models loaded with those values, and a backend
    /// would take them for records to write.
    var placeholders: [ModelID] = []
    /// Models whose changes since the last reset are kept: the old values of the changed
    /// properties (empty for a new model that was reset, so that it comes back without changes).
    var changed: [(ModelID, ModelValue.Object)] = []
    /// The removed entries of each table that keeps them, namespaces in name order; `nil` when
    /// not written (a save record of a save that did not change them).
    var removed: [(namespace: String, entries: [(ModelID, ModelMetadataTable.RemovedEntry)])]?
    /// The package values, keys in order; `nil` when not written.
    var values: [(String, String)]?

    /// What `context` keeps about `models`, or `nil` when it keeps no package metadata; with
    /// `packageState`, its removed entries and package values too.
    static func gather(_ models: [any Model], context: ModelContext?, packageState: Bool = true) -> TrackingMember? {
        guard let context, !context.metadataTables.isEmpty || context.keepsPackageState else { return nil }
        var member = TrackingMember()
        if packageState, context.keepsPackageState {
            member.removed = context.metadataTables.filter(\.value.keepsRemovedEntries).sorted { $0.key < $1.key }.map {
                namespace, table in (namespace, table.removed.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
            }
            member.values = context.packageValues.sorted { $0.key < $1.key }
        }
        for (namespace, table) in context.metadataTables.sorted(by: { $0.key < $1.key }) {
            var values: [(ModelID, String)] = []
            if !table.values.isEmpty {
                for model in models {
                    if let value = table.values[model.modelId] { values.append((model.modelId, value)) }
                }
            }
            member.metadata.append((namespace, values))
        }
        for model in models {
            if model.modelState == .new { member.new.append(model.modelId) }
            // Only one the app gave no values: one it did comes back with them, loaded.
            if model.modelState == .needsData, !model.hasChanges { member.placeholders.append(model.modelId) }
            if let oldValues = model.trackedOldValues { member.changed.append((model.modelId, oldValues)) }
        }
        return member
    }

    func write(to sink: any GraphSink) {
        sink.beginObject()
        sink.key("metadata")
        sink.beginObject()
        for (namespace, values) in metadata {
            sink.key(namespace)
            sink.beginObject()
            for (id, value) in values {
                sink.key(id.description)
                sink.string(value)
            }
            sink.endObject()
        }
        sink.endObject()
        sink.key("new")
        sink.beginArray()
        for id in new { sink.string(id.description) }
        sink.endArray()
        if !placeholders.isEmpty {
            sink.key("placeholders")
            sink.beginArray()
            for id in placeholders { sink.string(id.description) }
            sink.endArray()
        }
        sink.key("changed")
        sink.beginObject()
        for (id, oldValues) in changed {
            sink.key(id.description)
            ModelValue.object(oldValues).write(to: sink)
        }
        sink.endObject()
        if let removed {
            sink.key("removed")
            sink.beginObject()
            for (namespace, entries) in removed {
                sink.key(namespace)
                sink.beginObject()
                for (id, entry) in entries {
                    sink.key(id.description)
                    sink.beginArray()
                    sink.string(entry.modelName)
                    sink.string(entry.objectId)
                    sink.string(entry.value)
                    if let createdAt = entry.createdAt, let text = ISODate.string(from: createdAt) { sink.string(text) }
                    sink.endArray()
                }
                sink.endObject()
            }
            sink.endObject()
        }
        if let values {
            sink.key("values")
            sink.beginObject()
            for (key, value) in values {
                sink.key(key)
                sink.string(value)
            }
            sink.endObject()
        }
        sink.endObject()
    }

    /// Puts the member back into `context` after a load, for the models the load held
    /// (`loaded`); entries for other models are ignored.
    func apply(to context: ModelContext, loaded: (ModelID) -> Bool) {
        for (namespace, values) in metadata {
            let table = context.metadataTable(namespace)
            for (id, value) in values where loaded(id) { table.restore(value, for: id) }
        }
        for id in new where loaded(id) { context.model(withId: id)?.restoreAsNew() }
        for id in placeholders where loaded(id) { context.model(withId: id)?.restoreAsPlaceholder() }
        for (id, oldValues) in changed where loaded(id) {
            context.model(withId: id)?.restoreChanges(oldValues: oldValues)
        }
        if let removed {
            // Written whole: the tables listed keep removed entries, exactly these.
            let listed = Set(removed.map(\.namespace))
            for (namespace, table) in context.metadataTables where table.keepsRemovedEntries && !listed.contains(namespace) {
                table.restoreRemoved([:])
            }
            for (namespace, entries) in removed {
                let table = context.metadataTable(namespace)
                table.keepsRemovedEntries = true
                table.restoreRemoved(Dictionary(entries, uniquingKeysWith: { $1 }))
            }
        }
        if let values { context.packageValues = Dictionary(values, uniquingKeysWith: { $1 }) }
    }
}

extension Model {
    /// The old values of the changed properties when the model's changes compare with values
    /// saved at a reset (not with a new instance's): what ``TrackingMember`` keeps. `nil` when
    /// there is nothing to keep; empty for a model the app made and reset without changing it.
    var trackedOldValues: ModelValue.Object? {
        guard storage.box.baseline == .saved else { return nil }
        let changes = changes
        if changes.isEmpty { return modelState == .new ? ModelValue.Object() : nil }
        return changes.oldValues
    }
}

// MARK: Reading

extension TrackingMember {
    /// Reads the member at `node`, checking its structure; the context is not touched.
    ///
    /// - Throws: ``SerializationError`` at the path `tracking…` when a part of it has the wrong
    ///   type, or a key or entry is not a model id.
    static func read<D: TreeDocument>(_ node: Int, in document: D) throws -> TrackingMember {
        var member = TrackingMember()
        try expect(.object, node, in: document, path: "tracking", "an object")
        if let metadata = try document.member(of: node, named: "metadata") {
            try expect(.object, metadata, in: document, path: "tracking.metadata", "an object of namespaces")
            try document.forEach(in: metadata) { key, table in
                let namespace = try document.string(key)
                let path = "tracking.metadata.\(namespace)"
                try expect(.object, table, in: document, path: path, "an object of strings by model id")
                var values: [(ModelID, String)] = []
                try document.forEach(in: table) { key, value in
                    let id = try modelId(key, in: document, path: path)
                    try expect(.string, value, in: document, path: "\(path).\(id)", "a string")
                    values.append((id, try document.string(value)))
                    return true
                }
                member.metadata.append((namespace, values))
                return true
            }
        }
        member.new = try readIds("new", of: node, in: document)
        if let removed = try document.member(of: node, named: "removed") {
            member.removed = try readRemoved(removed, in: document)
        }
        if let values = try document.member(of: node, named: "values") {
            try expect(.object, values, in: document, path: "tracking.values", "an object of strings by key")
            var pairs: [(String, String)] = []
            try document.forEach(in: values) { key, value in
                let name = try document.string(key)
                try expect(.string, value, in: document, path: "tracking.values.\(name)", "a string")
                pairs.append((name, try document.string(value)))
                return true
            }
            member.values = pairs
        }
        member.placeholders = try readIds("placeholders", of: node, in: document)
        if let changed = try document.member(of: node, named: "changed") {
            try expect(.object, changed, in: document, path: "tracking.changed", "an object of old values by model id")
            try document.forEach(in: changed) { key, values in
                let id = try modelId(key, in: document, path: "tracking.changed")
                let path = "tracking.changed.\(id)"
                try expect(.object, values, in: document, path: path, "an object of old values by property")
                guard case .object(let object) = try value(values, in: document, path: path, depth: 1) else {
                    return true
                }
                member.changed.append((id, object))
                return true
            }
        }
        return member
    }

    /// The model ids of the array member `name` of `node` (none when it is missing): the `new`
    /// and `placeholders` lists, which have the same form.
    private static func readIds<D: TreeDocument>(_ name: String, of node: Int, in document: D) throws -> [ModelID] {
        guard let array = try document.member(of: node, named: name) else { return [] }
        let path = "tracking.\(name)"
        try expect(.array, array, in: document, path: path, "an array of model ids")
        return try document.elements(of: array).map { element in
            try expect(.string, element, in: document, path: path, "a model id")
            return try modelId(element, in: document, path: path)
        }
    }

    private static func readRemoved<D: TreeDocument>(_ node: Int, in document: D) throws
        -> [(namespace: String, entries: [(ModelID, ModelMetadataTable.RemovedEntry)])]
    {
        try expect(.object, node, in: document, path: "tracking.removed", "an object of namespaces")
        var removed: [(namespace: String, entries: [(ModelID, ModelMetadataTable.RemovedEntry)])] = []
        try document.forEach(in: node) { key, table in
            let namespace = try document.string(key)
            let path = "tracking.removed.\(namespace)"
            try expect(.object, table, in: document, path: path, "an object of removed entries by model id")
            var entries: [(ModelID, ModelMetadataTable.RemovedEntry)] = []
            try document.forEach(in: table) { key, entry in
                let id = try modelId(key, in: document, path: path)
                let entryPath = "\(path).\(id)"
                let expected = "an array of a model name, an object id, a string and an optional date"
                try expect(.array, entry, in: document, path: entryPath, expected)
                let parts = try document.elements(of: entry)
                guard parts.count == 3 || parts.count == 4 else {
                    throw SerializationError(
                        .typeMismatch, path: entryPath, byteOffset: document.byteOffset(of: entry), expected: expected,
                        found: "an array of \(parts.count) elements")
                }
                for part in parts { try expect(.string, part, in: document, path: entryPath, expected) }
                var createdAt: Date?
                if parts.count == 4 {
                    createdAt = ISODate.date(from: try document.string(parts[3]))
                    guard createdAt != nil else {
                        throw SerializationError(
                            .invalidValue, path: "\(entryPath)[3]", byteOffset: document.byteOffset(of: parts[3]),
                            expected: "an ISO 8601 date", found: document.describeNode(parts[3]))
                    }
                }
                entries.append(
                    (
                        id,
                        ModelMetadataTable.RemovedEntry(
                            modelName: try document.string(parts[0]), objectId: try document.string(parts[1]),
                            value: try document.string(parts[2]), createdAt: createdAt)
                    ))
                return true
            }
            removed.append((namespace, entries))
            return true
        }
        return removed
    }

    private static func expect<D: TreeDocument>(
        _ kind: NodeKind, _ node: Int, in document: D, path: String, _ expected: String
    ) throws {
        guard document.kind(of: node) == kind else {
            throw SerializationError(
                .typeMismatch, path: path, byteOffset: document.byteOffset(of: node), expected: expected,
                found: document.describeNode(node))
        }
    }

    private static func modelId<D: TreeDocument>(_ node: Int, in document: D, path: String) throws -> ModelID {
        guard let id = ModelID(try document.string(node)) else {
            throw SerializationError(
                .invalidValue, path: path, byteOffset: document.byteOffset(of: node),
                expected: "a model id (8-4-4-4-12 hexadecimal digits)", found: document.describeNode(node))
        }
        return id
    }

    /// The value at `node` in the property-list form that ``Model/changes`` compares: dates,
    /// data and null written in their JSON (or property-list) `__type` forms are read back as
    /// such.
    private static func value<D: TreeDocument>(_ node: Int, in document: D, path: String, depth: Int) throws
        -> ModelValue
    {
        guard depth < SerializationError.maximumDepth else {
            throw SerializationError(
                .nestingTooDeep, path: path, byteOffset: document.byteOffset(of: node),
                expected: "at most \(SerializationError.maximumDepth) levels of nested values", found: "deeper nesting")
        }
        switch document.kind(of: node) {
        case .null: return .null
        case .bool: return .bool(document.bool(node))
        case .integer, .real:
            switch try document.number(node) {
            case .int(let number): return .int(number)
            case .uint(let number): return .uint(number)
            case .double(let number): return .double(number)
            }
        case .string: return .string(try document.string(node))
        case .date: return .date(Date(timeIntervalSinceReferenceDate: try document.date(node)))
        case .data: return .data(try document.data(node))
        case .array:
            var elements: [ModelValue] = []
            for element in try document.elements(of: node) {
                elements.append(try value(element, in: document, path: path, depth: depth + 1))
            }
            return .array(elements)
        case .object:
            if try document.isNull(node) { return .null }
            if let date = try? DirectPlan.date(node, document) { return .date(date) }
            var object = ModelValue.Object()
            try document.forEach(in: node) { key, member in
                let name = try document.string(key)
                object[name] = try value(member, in: document, path: "\(path).\(name)", depth: depth + 1)
                return true
            }
            if object["__type"] == "Bytes", case .string(let text)? = object["base64"], let data = Data(base64Encoded: text) {
                return .data(data)
            }
            return .object(object)
        case .other:
            throw SerializationError(
                .typeMismatch, path: path, byteOffset: document.byteOffset(of: node), expected: "a value ModelKit writes",
                found: document.describeNode(node))
        }
    }
}
