import Foundation
import ModelKit

/// Reads records back into models (a save writes them with ``ModelKit/Model/recordTexts(reserved:newObjectId:)``).
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
    /// Fields that are not properties: the header's and the server's.
    static let nonPropertyFields = serverFields.union(headerFields)

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

    /// Checks the pointers in the fields of `record` that can be properties: each must name a
    /// registered model type and an object id, as strings.
    ///
    /// - Throws: ``ServiceError/Code/invalidResponse`` for the first that does not.
    static func checkPointers(of record: RemoteRecord) throws(ServiceError) {
        let text = record.text
        do {
            try text.forEachPointer(in: record.node, skipping: nonPropertyFields) { pointer in
                guard let model = text.member(pointer, "model").flatMap(text.string),
                    text.member(pointer, "objectId").flatMap(text.string) != nil
                else {
                    let found = (try? text.value(pointer)).map { "\($0)" } ?? "a pointer"
                    throw ServiceError(
                        .invalidResponse(expected: "a ModelPointer with a model name and an object id as strings", found: found),
                        record: record.id)
                }
                guard ModelRegistry.type(named: model) != nil else {
                    throw ServiceError(
                        .invalidResponse(expected: "a pointer to a registered model type", found: "a pointer to '\(model)'"),
                        record: record.id)
                }
            }
        } catch let error as ServiceError {
            throw error
        } catch {
            throw ServiceError(.invalidResponse(expected: "a record", found: "\(error)"), record: record.id)
        }
    }

    /// Loads `records` (each checked with ``checkPointers(of:)``) into `context` as the models
    /// `modelId`, all or nothing, and returns the first, which must be an `M`. Their fields are
    /// the models' properties, but for the header's and the server's (a property of such a name,
    /// which a save refuses, keeps its default value).
    ///
    /// A pointer becomes a reference to the model `known` gives for its record (the records
    /// loaded together, which have the ids of the context's models where it holds them), else to
    /// the model of `context` with its object id, else to a new placeholder; pointers to one
    /// missing record share one placeholder.
    ///
    /// - Throws: The loader's ``ModelKit/SerializationError``, whose model index is the index in
    ///   `records`; the context is then unchanged.
    static func load<M: Model>(
        _ records: [(record: RemoteRecord, modelId: ModelID)], as type: M.Type, into context: ModelContext,
        known: [RecordID: ModelID]
    ) throws -> M {
        let loadable = records.map { record, modelId in
            LoadableRecord(
                text: record.text, node: record.node, modelName: record.id.collection, modelId: modelId,
                objectId: record.id.id)
        }
        let table = PointerTable(context: context, known: known)
        return try M.load(records: loadable, in: context, hiding: nonPropertyFields) { table.id(model: $0, objectId: $1) }
    }
}

/// Gives the pointers of records the model ids of the context's models, of the records loaded
/// together, or fresh ones (kept, so that pointers to one record become one placeholder).
private final class PointerTable {
    let context: ModelContext
    var known: [RecordID: ModelID]
    /// Registered types by model name (the registry takes a lock).
    private var types: [String: (any Model.Type)?] = [:]
    private var random = RandomUUIDs()

    init(context: ModelContext, known: [RecordID: ModelID]) {
        self.context = context
        self.known = known
    }

    func id(model: String, objectId: String) -> ModelID {
        // The records loaded together first: their ids are those of the context's models where
        // it holds them, so asking the context (under its lock) would give the same answer.
        let key = RecordID(collection: model, id: objectId)
        if let id = known[key] { return id }
        let type: (any Model.Type)?
        if let cached = types[model] {
            type = cached
        } else {
            type = ModelRegistry.type(named: model)
            types[model] = type
        }
        if let type, let held = ModelIdAssignment.model(type, objectId, context) { return held.modelId }
        let id = ModelID(random.make())
        known[key] = id
        return id
    }
}
