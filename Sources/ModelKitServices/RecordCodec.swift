import Foundation
import ModelKit

/// Turns serialized models into records and records back into the ModelPointer format.
///
/// A record is flat: the model's properties in the JSON form, next to `modelId`, `createdAt` and
/// `updatedAt`; the record id is the object id. A reference is
/// `{"__type": "ModelPointer", "model": …, "objectId": …}`: a record names other records, not
/// ModelKit's local ids.
enum RecordCodec {
    /// Header fields of a record that are not properties.
    static let headerFields: Set<String> = ["modelId", "createdAt", "updatedAt"]
    /// Fields the server sets or reserves (Kinto's), never properties.
    static let serverFields: Set<String> = ["id", "last_modified", "deleted", "schema"]

    /// Whether `id` is accepted as a record or collection id (Kinto's rule, which Parse's ids
    /// also follow): letters, digits, `_` and `-`, not starting with `_` or `-`.
    static func isValidId(_ id: String) -> Bool {
        guard let first = id.utf8.first, isAlphanumeric(first) else { return false }
        return id.utf8.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    /// The fields of the record for a serialized model `entry`, with each pointer's `modelId`
    /// replaced by its target's object id from `objectIds`.
    static func fields(
        of entry: ModelValue.Object, objectIds: [String: String], record: RecordID
    ) throws(ServiceError) -> ModelValue.Object {
        var pairs: [(String, ModelValue)] = []
        for key in ["modelId", "createdAt", "updatedAt"] {
            if let value = entry[key] { pairs.append((key, value)) }
        }
        if case .object(let properties)? = entry["properties"] {
            for (key, value) in properties {
                guard !serverFields.contains(key), !headerFields.contains(key) else {
                    throw ServiceError(
                        .invalidModel(expected: "property names the server does not reserve", found: "a property '\(key)'"),
                        record: record)
                }
                pairs.append((key, try outgoing(value, objectIds: objectIds, record: record)))
            }
        }
        return ModelValue.Object(pairs)
    }

    private static func outgoing(
        _ value: ModelValue, objectIds: [String: String], record: RecordID
    ) throws(ServiceError) -> ModelValue {
        switch value {
        case .array(let elements):
            var out: [ModelValue] = []
            out.reserveCapacity(elements.count)
            for element in elements { out.append(try outgoing(element, objectIds: objectIds, record: record)) }
            return .array(out)
        case .object(let object):
            if object["__type"] == "ModelPointer" {
                guard let model = object["model"]?.stringValue, let modelId = object["modelId"]?.stringValue,
                    let objectId = objectIds[modelId]
                else {
                    throw ServiceError(
                        .invalidModel(expected: "references to models with an object id", found: "a reference to \(object)"),
                        record: record)
                }
                return ["__type": "ModelPointer", "model": .string(model), "objectId": .string(objectId)]
            }
            var pairs: [(String, ModelValue)] = []
            for (key, element) in object { pairs.append((key, try outgoing(element, objectIds: objectIds, record: record))) }
            return .object(ModelValue.Object(pairs))
        default:
            return value
        }
    }

    /// The model ids that the pointers in `value` name.
    static func pointerTargets(in value: ModelValue, into targets: inout [String]) {
        switch value {
        case .array(let elements):
            for element in elements { pointerTargets(in: element, into: &targets) }
        case .object(let object):
            if object["__type"] == "ModelPointer" {
                if let modelId = object["modelId"]?.stringValue { targets.append(modelId) }
            } else {
                for (_, element) in object { pointerTargets(in: element, into: &targets) }
            }
        default:
            break
        }
    }

    /// The model dictionary (ModelPointer format, JSON form) for `record`, for the model
    /// `modelId` of `context`. Pointers are given the model id of the model with that object id
    /// in the context, or a fresh one (loading makes a placeholder for it).
    ///
    /// `known` gives the model ids of records decoded together with this one ("model/objectId"
    /// keys), for pointers to records the context does not hold yet; the fresh ids given to
    /// other pointers are added to it, so that every record of a batch that points to the same
    /// missing model points to one placeholder.
    static func entry(
        for record: RemoteRecord, modelName: String, modelId: ModelID, context: ModelContext,
        known: inout [String: ModelID]
    ) throws(ServiceError) -> ModelValue {
        // The table moves into the resolver and back, never copied: a copy per record would
        // make a batch of n records cost O(n²).
        var resolver = PointerResolver(context: context, record: record.id, known: [:])
        swap(&known, &resolver.known)
        defer { swap(&known, &resolver.known) }
        var properties: [(String, ModelValue)] = []
        for (key, value) in record.fields where !serverFields.contains(key) && !headerFields.contains(key) {
            properties.append((key, try resolver.incoming(value)))
        }
        var pairs: [(String, ModelValue)] = [
            ("model", .string(modelName)), ("modelId", .string(modelId.description)), ("objectId", .string(record.id.id)),
        ]
        for key in ["createdAt", "updatedAt"] {
            if let value = record.fields[key] { pairs.append((key, value)) }
        }
        pairs.append(("properties", .object(ModelValue.Object(properties))))
        return .object(ModelValue.Object(pairs))
    }
}

/// Gives the pointers of a record the model ids of the context's models.
private struct PointerResolver {
    let context: ModelContext
    let record: RecordID
    /// Model ids of records decoded in the same batch, and fresh ids for targets that neither
    /// the batch nor the context holds, by "model/objectId", so that pointers to one record
    /// become one placeholder.
    var known: [String: ModelID]

    init(context: ModelContext, record: RecordID, known: [String: ModelID]) {
        self.context = context
        self.record = record
        self.known = known
    }

    mutating func incoming(_ value: ModelValue) throws(ServiceError) -> ModelValue {
        switch value {
        case .array(let elements):
            var out: [ModelValue] = []
            out.reserveCapacity(elements.count)
            for element in elements { out.append(try incoming(element)) }
            return .array(out)
        case .object(let object):
            if object["__type"] == "ModelPointer" {
                guard let model = object["model"]?.stringValue, let objectId = object["objectId"]?.stringValue else {
                    throw ServiceError(
                        .invalidResponse(
                            expected: "a ModelPointer with a model name and an object id as strings", found: "\(object)"),
                        record: record)
                }
                guard let type = ModelRegistry.type(named: model) else {
                    throw ServiceError(
                        .invalidResponse(expected: "a pointer to a registered model type", found: "a pointer to '\(model)'"),
                        record: record)
                }
                let key = "\(model)/\(objectId)"
                let id = existingId(of: type, objectId: objectId) ?? freshId(key)
                return [
                    "__type": "ModelPointer", "model": .string(model), "modelId": .string(id.description),
                    "objectId": .string(objectId),
                ]
            }
            var pairs: [(String, ModelValue)] = []
            for (key, element) in object { pairs.append((key, try incoming(element))) }
            return .object(ModelValue.Object(pairs))
        default:
            return value
        }
    }

    private func existingId<T: Model>(of type: T.Type, objectId: String) -> ModelID? {
        context.model(type, objectId: objectId)?.modelId
    }

    private mutating func freshId(_ key: String) -> ModelID {
        if let id = known[key] { return id }
        let id = ModelID(UUID())
        known[key] = id
        return id
    }
}
