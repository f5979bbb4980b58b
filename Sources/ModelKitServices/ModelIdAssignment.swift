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
    private var random = RandomUUIDs()

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

    /// The model of `type` with `objectId` in `caller`.
    static func model<T: Model>(_ type: T.Type, _ objectId: String, _ caller: ModelContext) -> T? {
        caller.model(T.self, objectId: objectId)
    }

    /// The record's own model id when no other model has it, else a new one.
    private mutating func freeId(of record: RemoteRecord) -> ModelID {
        if let text = record.storedModelId, let id = ModelID(text), !used.contains(id),
            caller.model(withId: id) == nil
        {
            return id
        }
        return ModelID(random.make())
    }
}

/// Random (version 4) UUIDs for object ids and model ids, from the system's random bytes, taken
/// 4 KB at a time: on Linux Foundation's `UUID()` opens, reads and closes `/dev/urandom` for each
/// one, and the standard library's generator makes a system call per 8 bytes, which cost more than
/// the rest of planning a save of new models.
struct RandomUUIDs {
    /// Random bytes not used yet from `next` on; allocated on first use.
    private var bytes: [UInt8] = []
    private var next = 0

    /// A new UUID.
    ///
    /// - Complexity: O(1) amortized: a system call per 256 UUIDs.
    mutating func make() -> UUID {
        if next + 16 > bytes.count { refill() }
        defer { next += 16 }
        return bytes.withUnsafeMutableBufferPointer { buffer in
            let raw = UnsafeMutableBufferPointer(rebasing: buffer[next..<next + 16])
            raw[6] = (raw[6] & 0x0F) | 0x40  // version 4
            raw[8] = (raw[8] & 0x3F) | 0x80  // variant 1
            return UUID(
                uuid: (
                    raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10], raw[11], raw[12],
                    raw[13], raw[14], raw[15]
                ))
        }
    }

    /// A new UUID as its 36-character text in upper case (as `UUID.uuidString` writes it; a
    /// model id's text is that form).
    mutating func makeString() -> String {
        ModelID(make()).description
    }

    private mutating func refill() {
        next = 0
        if bytes.isEmpty { bytes = [UInt8](repeating: 0, count: 4096) }
        let filled = bytes.withUnsafeMutableBytes { Self.systemRandom($0) }
        guard !filled else { return }
        // No random device: the standard library's generator, 8 bytes per call.
        var generator = SystemRandomNumberGenerator()
        bytes.withUnsafeMutableBytes { raw in
            for offset in stride(from: 0, to: raw.count, by: 8) {
                raw.storeBytes(of: generator.next() as UInt64, toByteOffset: offset, as: UInt64.self)
            }
        }
    }

    /// Fills `buffer` with the system's random bytes; false if they could not be read.
    private static func systemRandom(_ buffer: UnsafeMutableRawBufferPointer) -> Bool {
        #if canImport(Darwin)
            arc4random_buf(buffer.baseAddress!, buffer.count)
            return true
        #else
            let descriptor = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return false }
            defer { close(descriptor) }
            var done = 0
            while done < buffer.count {
                let count = read(descriptor, buffer.baseAddress! + done, buffer.count - done)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { return false }
                done += count
            }
            return true
        #endif
    }
}
