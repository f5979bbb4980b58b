/// Model ids to model indexes, for the loader: open addressing with linear probing over one flat
/// array, and a multiplicative hash of the id's two words.
///
/// The loader looks an id up for every model and every pointer. `[ModelID: Int]` hashes the 16
/// bytes with a seeded SipHash each time, which cost more than the rest of resolving a pointer.
/// Ids are random (UUIDs) or a process prefix plus a counter (ModelKit's own), so one multiply
/// that folds both words spreads them well; the top bits of the product pick the slot.
struct ModelIDTable {
    private struct Slot {
        var id: ModelID
        /// The model index, or -1 for an empty slot.
        var index: Int
    }

    private var slots: [Slot]
    /// 64 minus log2 of the number of slots: the product's top bits are the slot.
    private var shift: Int
    private(set) var count = 0

    init(minimumCapacity: Int = 0) {
        var size = 16
        while size < minimumCapacity * 2 { size *= 2 }
        slots = Array(repeating: Slot(id: ModelID(high: 0, low: 0), index: -1), count: size)
        shift = 64 - size.trailingZeroBitCount
    }

    @inline(__always) private func slot(of id: ModelID) -> Int {
        let mixed = (id.low ^ (id.high &* 0x9E37_79B9_7F4A_7C15)) &* 0xBF58_476D_1CE4_E5B9
        return Int(truncatingIfNeeded: mixed >> UInt64(shift))
    }

    /// The index stored for `id`.
    @inline(__always) func index(of id: ModelID) -> Int? {
        let mask = slots.count - 1
        return slots.withUnsafeBufferPointer { slots in
            var position = slot(of: id)
            while true {
                let slot = slots[position]
                if slot.index < 0 { return nil }
                if slot.id == id { return slot.index }
                position = (position + 1) & mask
            }
        }
    }

    /// Stores `index` for `id` unless the table has `id` already; returns the index it had.
    mutating func insert(_ id: ModelID, index: Int) -> Int? {
        if (count + 1) * 2 > slots.count { grow() }
        let mask = slots.count - 1
        var position = slot(of: id)
        while slots[position].index >= 0 {
            if slots[position].id == id { return slots[position].index }
            position = (position + 1) & mask
        }
        slots[position] = Slot(id: id, index: index)
        count += 1
        return nil
    }

    private mutating func grow() {
        let old = slots
        self = ModelIDTable(minimumCapacity: old.count)
        for slot in old where slot.index >= 0 { _ = insert(slot.id, index: slot.index) }
    }
}
