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
        return ModelID(RandomUUID.make())
    }
}

/// Random (version 4) UUIDs for object ids and model ids, from the system's generator: on Linux
/// Foundation's `UUID()` opens, reads and closes `/dev/urandom` for each one, which cost more than
/// the rest of planning a save.
enum RandomUUID {
    static func make() -> UUID {
        var generator = SystemRandomNumberGenerator()
        var words = (generator.next() as UInt64, generator.next() as UInt64)
        return withUnsafeMutableBytes(of: &words) { raw in
            raw[6] = (raw[6] & 0x0F) | 0x40  // version 4
            raw[8] = (raw[8] & 0x3F) | 0x80  // variant 1
            return UUID(
                uuid: (
                    raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10], raw[11], raw[12],
                    raw[13], raw[14], raw[15]
                ))
        }
    }
}
