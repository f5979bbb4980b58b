import Foundation

/// The payload of a ``JournalRecordType/save`` record:
///
///     removed count u32, then each removed model id as two u64 (high, low)
///     the changed models: a document in the store's format, as a file holds them (envelope,
///     `models`, `tracking`); empty when the save only removed models and changed no package
///     state (see `TrackingMember`)
///
/// The document holds the inserted and changed models only. Their references to the other models
/// of the store's context are written as pointers and not followed (those models are in the base
/// or in earlier records), so a record's size is that of what changed.
struct SaveRecord {
    var removed: [ModelID]
    var document: Data

    /// The save of `models` and `removed`, models of `context`.
    static func payload(models: [any Model], removed: [ModelID], context: ModelContext, format: PersistenceFormat)
        throws -> Data
    {
        var head: [UInt8] = []
        head.reserveCapacity(4 + 16 * removed.count)
        JournalFormat.append(UInt32(removed.count), to: &head)
        for id in removed {
            JournalFormat.append(id.high, to: &head)
            JournalFormat.append(id.low, to: &head)
        }
        var payload = Data(head)
        if !models.isEmpty || context.packageStateChanged {
            payload.append(try Persistence.data(.changes(models, in: context), format: format))
        }
        return payload
    }

    /// What is wrong with a payload.
    struct Invalid: Error {
        let found: String
    }

    /// The record in `payload`.
    ///
    /// - Throws: ``Invalid`` saying what the payload holds instead.
    static func read(_ payload: Data) throws(Invalid) -> SaveRecord {
        guard payload.count >= 4 else { throw Invalid(found: "a save record shorter than its count of removals") }
        let count = Int(JournalFormat.load(UInt32.self, payload, at: 0))
        let end = 4 + 16 * count
        guard end <= payload.count else {
            throw Invalid(found: "a save record with \(count) removals in \(payload.count) bytes")
        }
        var removed: [ModelID] = []
        removed.reserveCapacity(count)
        for index in 0..<count {
            let high = JournalFormat.load(UInt64.self, payload, at: 4 + 16 * index)
            let low = JournalFormat.load(UInt64.self, payload, at: 12 + 16 * index)
            removed.append(ModelID(high: high, low: low))
        }
        return SaveRecord(removed: removed, document: payload.subdata(in: payload.startIndex + end..<payload.endIndex))
    }
}
