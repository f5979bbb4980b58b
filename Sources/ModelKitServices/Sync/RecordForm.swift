import Foundation
import ModelKit

/// A model's values and a record's fields in one form, so that a merge compares like with like:
/// the JSON form of records, references as pointers by object id, and every value written as
/// JSON text and read back, as a record's are.
enum RecordForm {
    /// The record's property fields (its header's and the server's fields left out).
    static func fields(of record: RemoteRecord) -> ModelValue.Object {
        var fields = ModelValue.Object()
        for (key, value) in record.fields where !RecordCodec.nonPropertyFields.contains(key) { fields[key] = value }
        return fields
    }

    /// The model's persisted properties in the record form.
    ///
    /// - Throws: ``ServiceError/Code/invalidModel`` when they do not encode.
    static func values(of model: any Model, objectIds: (ModelID) -> String?) throws(ServiceError) -> ModelValue.Object {
        normalized(try properties(of: model), objectIds: objectIds)
    }

    /// The model's persisted properties, as ``ModelKit/Model/properties`` gives them.
    ///
    /// - Throws: ``ServiceError/Code/invalidModel`` when they do not encode.
    static func properties(of model: any Model) throws(ServiceError) -> ModelValue.Object {
        do {
            return try model.properties
        } catch {
            throw ServiceError(.invalidModel(expected: "models that encode", found: "\(error)"))
        }
    }

    /// `values` (as ``ModelKit/Model/properties`` or ``ModelKit/ModelChanges/oldValues`` give
    /// them) in the record form: pointers by model name and object id, through JSON text.
    /// `objectIds` gives the object id of a model id (the values' pointers name models by id).
    static func normalized(_ values: ModelValue.Object, objectIds: (ModelID) -> String?) -> ModelValue.Object {
        var object = ModelValue.Object()
        for (key, value) in values { object[key] = pointersByObjectId(value, objectIds) ?? .null }
        let id = RecordID(collection: "record", id: "form")
        return RemoteRecord(id: id, version: RemoteVersion("0"), fields: object).fields
    }

    /// `value` with its pointers by object id; `nil` for a pointer to a model that is gone
    /// (removed, its record deleted): it reads as none, so arrays leave it out.
    private static func pointersByObjectId(_ value: ModelValue, _ objectIds: (ModelID) -> String?) -> ModelValue? {
        switch value {
        case .array(let elements):
            return .array(elements.compactMap { pointersByObjectId($0, objectIds) })
        case .object(let object):
            if object["__type"] == "ModelPointer", case .string(let model)? = object["model"] {
                var pointer = ModelValue.Object()
                pointer["__type"] = "ModelPointer"
                pointer["model"] = .string(model)
                if let objectId = object["objectId"] {
                    pointer["objectId"] = objectId
                } else if case .string(let text)? = object["modelId"], let id = ModelID(text), let objectId = objectIds(id) {
                    pointer["objectId"] = .string(objectId)
                } else {
                    return nil
                }
                return .object(pointer)
            }
            var result = ModelValue.Object()
            for (key, member) in object { result[key] = pointersByObjectId(member, objectIds) ?? .null }
            return .object(result)
        default:
            return value
        }
    }

    /// `values` with each value that a server may have given back a few units in the last
    /// place away from one of `reference`'s (Kinto on PostgreSQL, see `matchesStored`) replaced
    /// by the reference's, so that the merge does not take it for a change.
    static func snapped(_ values: ModelValue.Object, to reference: ModelValue.Object) -> ModelValue.Object {
        var result = values
        for (key, value) in values {
            guard let other = reference[key], other != value, other.matchesStored(value) else { continue }
            result[key] = other
        }
        return result
    }

    /// `values` without their pointers to `records`: a to-one reference to one reads `null`, a
    /// to-many leaves it out (as references to a removed model read).
    static func droppingPointers(to records: Set<RecordID>, in values: ModelValue.Object) -> ModelValue.Object {
        guard !records.isEmpty else { return values }
        func dropped(_ value: ModelValue) -> ModelValue? {
            switch value {
            case .array(let elements):
                return .array(elements.compactMap(dropped))
            case .object(let object):
                if object["__type"] == "ModelPointer", case .string(let model)? = object["model"],
                    case .string(let objectId)? = object["objectId"]
                {
                    // `.none`, not `nil`: `ModelValue` is `ExpressibleByNilLiteral`, and a ternary
                    // with a `nil` would make `.null`, which an array keeps.
                    return records.contains(RecordID(collection: model, id: objectId)) ? Optional.none : value
                }
                var result = ModelValue.Object()
                for (key, member) in object { result[key] = dropped(member) ?? .null }
                return .object(result)
            default:
                return value
            }
        }
        var result = ModelValue.Object()
        for (key, value) in values { result[key] = dropped(value) ?? .null }
        return result
    }
}
