/// A map from ``ModelID`` to a small integer (a position in a list), for the hot loops of writing
/// and loading whole graphs.
///
/// `Dictionary<ModelID, Int>` hashes the 16 bytes of every key with SipHash, which costs more
/// than the rest of a lookup. Ids are already well spread (a random process prefix, a counter), so
/// one multiplication mixes them enough; the table probes linearly in one flat allocation.
///
/// At a million models the table is far larger than the caches, and a lookup is one cache miss.
/// Ids made one after the other (a counter) are often looked up one after the other too (a post
/// after post pointing to author after author), so runs of eight consecutive counter values share
/// a home block of eight slots: three cache lines instead of eight.
///
/// Not copyable: one owner frees the memory.
struct ModelIDTable: ~Copyable {
    private struct Slot {
        var high: UInt64
        var low: UInt64
        /// The value plus one; 0 marks an empty slot.
        var stored: Int
    }

    private var slots: UnsafeMutablePointer<Slot>
    private var mask: Int
    private var shift: UInt64
    /// The number of ids in the table.
    private(set) var count = 0

    /// Creates an empty table sized for `expected` ids without growing.
    init(expected: Int = 0) {
        var capacity = 16
        while capacity < expected * 2 { capacity <<= 1 }
        slots = .allocate(capacity: capacity)
        slots.initialize(repeating: Slot(high: 0, low: 0, stored: 0), count: capacity)
        mask = capacity - 1
        shift = UInt64(64 - capacity.trailingZeroBitCount)
    }

    deinit {
        slots.deallocate()
    }

    @inline(__always) private func home(of id: ModelID) -> Int {
        // Fibonacci hashing of both halves picks the block; the low three bits pick the slot in it.
        let mixed = ((id.low >> 3) ^ (id.high &* 0xD6E8_FEB8_6659_FD93)) &* 0x9E37_79B9_7F4A_7C15
        return Int(truncatingIfNeeded: (mixed >> shift) ^ (id.low & 7)) & mask
    }

    /// The value stored for `id`, or `nil`.
    ///
    /// - Complexity: O(1) on average.
    @inline(__always) func value(for id: ModelID) -> Int? {
        var index = home(of: id)
        while true {
            let slot = slots[index]
            if slot.stored == 0 { return nil }
            if slot.low == id.low, slot.high == id.high { return slot.stored - 1 }
            index = (index + 1) & mask
        }
    }

    /// Stores `value` for `id` unless `id` is already in the table; returns the value the table
    /// holds for `id` afterwards (the earlier one, if there was one).
    ///
    /// - Complexity: O(1) amortized.
    @discardableResult
    mutating func insert(_ id: ModelID, value: Int) -> Int {
        if (count + 1) * 2 > mask + 1 { grow() }
        var index = home(of: id)
        while true {
            let slot = slots[index]
            if slot.stored == 0 {
                slots[index] = Slot(high: id.high, low: id.low, stored: value + 1)
                count += 1
                return value
            }
            if slot.low == id.low, slot.high == id.high { return slot.stored - 1 }
            index = (index + 1) & mask
        }
    }

    private mutating func grow() {
        let old = slots
        let oldCapacity = mask + 1
        let capacity = oldCapacity * 2
        slots = .allocate(capacity: capacity)
        slots.initialize(repeating: Slot(high: 0, low: 0, stored: 0), count: capacity)
        mask = capacity - 1
        shift = UInt64(64 - capacity.trailingZeroBitCount)
        for position in 0..<oldCapacity where old[position].stored != 0 {
            let slot = old[position]
            var index = home(of: ModelID(high: slot.high, low: slot.low))
            while slots[index].stored != 0 { index = (index + 1) & mask }
            slots[index] = slot
        }
        old.deallocate()
    }
}
