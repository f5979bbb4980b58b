/// Model ids to model indexes, for the loader: open addressing with linear probing over one flat
/// array, and a multiplicative hash of the id's two words.
///
/// The loader looks an id up for every model and every pointer. `[ModelID: Int]` hashes the 16
/// bytes with a seeded SipHash each time, which cost more than the rest of resolving a pointer.
/// Ids are random (UUIDs) or a process prefix plus a counter (ModelKit's own), so one multiply
/// that folds both words spreads them well; the top bits of the product pick the slot.
///
/// A slot also holds the instance the loader made for the id, once there is one, and a code for
/// its type: most pointers then resolve with the one cache miss of finding the slot, where
/// looking the instance up by index would miss again in each array it reads.
struct ModelIDTable {
    struct Slot {
        fileprivate(set) var id: ModelID
        /// The model index, or -1 for an empty slot.
        fileprivate(set) var index: Int32
        /// A code for the type of `instance` (see ``GraphLoader``), 0 while there is none.
        fileprivate(set) var typeCode: UInt32
        /// The new instance the loader made for the id, unretained.
        fileprivate(set) var instance: UnsafeMutableRawPointer?
    }

    private var slots: [Slot]
    /// 64 minus log2 of the number of slots: the product's top bits are the slot.
    private var shift: Int
    private(set) var count = 0

    init(minimumCapacity: Int = 0) {
        var size = 16
        while size < minimumCapacity * 2 { size *= 2 }
        slots = Array(
            repeating: Slot(id: ModelID(high: 0, low: 0), index: -1, typeCode: 0, instance: nil), count: size)
        shift = 64 - size.trailingZeroBitCount
    }

    @inline(__always) private func slot(of id: ModelID) -> Int {
        let mixed = (id.low ^ (id.high &* 0x9E37_79B9_7F4A_7C15)) &* 0xBF58_476D_1CE4_E5B9
        return Int(truncatingIfNeeded: mixed >> UInt64(shift))
    }

    /// The position of `id`'s slot, or of the empty slot where it would go.
    @inline(__always) private func position(of id: ModelID) -> Int {
        let mask = slots.count - 1
        return slots.withUnsafeBufferPointer { slots in
            var position = slot(of: id)
            while slots[position].index >= 0, slots[position].id != id { position = (position + 1) & mask }
            return position
        }
    }

    /// The slot of `id`, if the table has it.
    @inline(__always) func lookup(_ id: ModelID) -> Slot? {
        let slot = slots[position(of: id)]
        return slot.index >= 0 ? slot : nil
    }

    /// The index stored for `id`.
    @inline(__always) func index(of id: ModelID) -> Int? {
        lookup(id).map { Int($0.index) }
    }

    /// Stores `index` for `id` unless the table has `id` already; returns the index it had.
    mutating func insert(_ id: ModelID, index: Int) -> Int? {
        if (count + 1) * 2 > slots.count { grow() }
        let position = position(of: id)
        if slots[position].index >= 0 { return Int(slots[position].index) }
        slots[position] = Slot(id: id, index: Int32(index), typeCode: 0, instance: nil)
        count += 1
        return nil
    }

    /// Records the instance made for `id`, which the table has.
    mutating func setInstance(_ instance: UnsafeMutableRawPointer, typeCode: UInt32, for id: ModelID) {
        let position = position(of: id)
        guard slots[position].index >= 0 else { return }
        slots[position].instance = instance
        slots[position].typeCode = typeCode
    }

    private mutating func grow() {
        let old = slots
        self = ModelIDTable(minimumCapacity: old.count)
        for slot in old where slot.index >= 0 {
            let position = position(of: slot.id)
            slots[position] = slot
            count += 1
        }
    }
}
