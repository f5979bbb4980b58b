import Foundation
import ModelKit

/// The model ids that records decoded together get, decided before anything is decoded, so that
/// pointers between them (cycles included) name the right models and nothing is duplicated: the
/// id of the model the caller's context holds with that object id, else the `modelId` the record
/// holds when no model has it, else a new one.
///
/// Used by queries (the candidates and the records they reference, decoded into a scratch
/// context, then merged) and by fetches with references (decoded straight into the caller's).
struct ModelIdAssignment {
    let caller: ModelContext
    /// Each assigned record's model id: the `known` ids of
    /// `RecordCodec.load(_:as:into:known:)`.
    private(set) var assigned: [RecordID: ModelID] = [:]
    private var used = Set<ModelID>()

    init(caller: ModelContext) {
        self.caller = caller
    }

    /// Gives `record` the id `held` (the caller's model for it), or else a free one; `nil` when
    /// the record already has one.
    mutating func assign(_ record: RemoteRecord, held: ModelID?) -> ModelID? {
        let key = record.id
        guard assigned[key] == nil else { return nil }
        let id = held ?? freeId(of: record)
        used.insert(id)
        assigned[key] = id
        return id
    }

    /// The model the caller holds for `record`, by its collection's registered type and its
    /// object id.
    static func heldModel(for record: RecordID, in caller: ModelContext) -> (any Model)? {
        guard let type = ModelRegistry.type(named: record.collection) else { return nil }
        return model(type, record.id, caller)
    }

    private static func model<T: Model>(_ type: T.Type, _ objectId: String, _ caller: ModelContext) -> T? {
        caller.model(T.self, objectId: objectId)
    }

    /// The record's own model id when no other model has it, else a new one.
    private func freeId(of record: RemoteRecord) -> ModelID {
        if let text = record.storedModelId, let id = ModelID(text), !used.contains(id),
            caller.model(withId: id) == nil
        {
            return id
        }
        return ModelID(UUID())
    }
}
