import ModelKitShims

/// Model ids to positions (a model's index in a file or a list), for the hot loops of writing
/// and loading whole graphs: open addressing with linear probing over one flat array.
///
/// `Dictionary<ModelID, Int>` hashes the 16 bytes of every key with SipHash, which costs more
/// than the rest of resolving a pointer. Here one multiply-xorshift-multiply over the two words
/// picks the slot, keyed by secret random constants chosen once per process, so that a crafted
/// file cannot pile its ids into one run of slots.
///
/// At a million models the table is far larger than the caches, and a lookup is one cache miss.
/// Ids made one after the other (ModelKit's ids are a process prefix and a counter) are often
/// looked up one after the other too (post after post pointing to author after author), so runs
/// of eight consecutive counter values share a home block of eight slots: a few cache lines
/// instead of eight. A block holds at most eight ids, whatever the input.
///
/// A slot can also hold what the loader made for the id (an instance and a code for its type), so
/// that resolving a pointer costs the one miss of finding the slot.
struct ModelIDTable {
    struct Slot: ModelIDSlot {
        fileprivate(set) var id: ModelID
        /// The position, ``ModelIDTable/pending``, or -1 for an empty slot.
        fileprivate(set) var index: Int32
        /// A code for the type of `instance` (see ``GraphLoader``), 0 while there is none.
        fileprivate(set) var typeCode: UInt32
        /// The new instance the loader made for the id, unretained.
        fileprivate(set) var instance: UnsafeMutableRawPointer?

        var isOccupied: Bool { index >= 0 }
    }

    /// The index of an id the loader met in a pointer before the model itself, whose position
    /// is not known yet (see ``claim(_:index:)``).
    static let pending = Int32.max

    private var slots: [Slot]
    /// 64 minus log2 of the number of slots: the product's top bits are the slot.
    private var shift: Int
    /// The number of ids in the table.
    private(set) var count = 0
    /// The number of slots.
    var capacity: Int { slots.count }
    /// Whether one more id would make the table grow.
    var isFull: Bool { ModelIDHashing.isOverloaded(count: count + 1, size: slots.count) }

    /// Creates an empty table that holds `minimumCapacity` ids without growing.
    init(minimumCapacity: Int = 0) {
        let (size, shift) = ModelIDHashing.size(for: minimumCapacity)
        slots = Array(repeating: Slot(id: ModelID(high: 0, low: 0), index: -1, typeCode: 0, instance: nil), count: size)
        self.shift = shift
    }

    /// The position of `id`'s slot, or of the empty slot where it would go.
    @inline(__always) private func position(of id: ModelID) -> Int {
        ModelIDHashing.position(of: id, in: slots, shift: shift)
    }

    /// Starts bringing in the first slot where `id` goes, ahead of a write to it.
    @inline(__always) func prefetch(_ id: ModelID) {
        ModelIDHashing.prefetch(id, in: slots, shift: shift)
    }

    /// Starts bringing in the first slot where `id` goes, ahead of a lookup.
    @inline(__always) func prefetchForLookup(_ id: ModelID) {
        slots.withUnsafeBufferPointer {
            modelkit_prefetch_for_reading(
                $0.baseAddress! + ModelIDHashing.home(of: id, shift: shift, mask: $0.count - 1))
        }
    }

    /// The slot of `id`, if the table has it.
    ///
    /// - Complexity: O(1) on average.
    @inline(__always) func lookup(_ id: ModelID) -> Slot? {
        let slot = slots[position(of: id)]
        return slot.index >= 0 ? slot : nil
    }

    /// The position stored for `id`, if the table has it.
    ///
    /// - Complexity: O(1) on average.
    @inline(__always) func index(of id: ModelID) -> Int? {
        lookup(id).map { Int($0.index) }
    }

    /// Stores `index` for `id` (with the instance made for it, if any) unless the table has `id`
    /// already; returns the index it had.
    ///
    /// - Complexity: O(1) amortized.
    @discardableResult
    mutating func insert(
        _ id: ModelID, index: Int, instance: UnsafeMutableRawPointer? = nil, typeCode: UInt32 = 0
    ) -> Int? {
        if ModelIDHashing.isOverloaded(count: count + 1, size: slots.count) { grow() }
        let position = position(of: id)
        if slots[position].index >= 0 { return Int(slots[position].index) }
        slots[position] = Slot(id: id, index: Int32(truncatingIfNeeded: index), typeCode: typeCode, instance: instance)
        count += 1
        return nil
    }

    /// Gives `id`, stored as ``pending``, its position; returns its slot as it was.
    ///
    /// - Complexity: O(1) on average.
    mutating func claim(_ id: ModelID, index: Int) -> Slot? {
        let position = position(of: id)
        guard slots[position].index == Self.pending else { return nil }
        defer { slots[position].index = Int32(truncatingIfNeeded: index) }
        return slots[position]
    }

    /// Records the instance made for `id`, which the table has.
    mutating func setInstance(_ instance: UnsafeMutableRawPointer, typeCode: UInt32, for id: ModelID) {
        let position = position(of: id)
        guard slots[position].index >= 0 else { return }
        slots[position].instance = instance
        slots[position].typeCode = typeCode
    }

    /// Makes room for `minimumCapacity` ids without growing, keeping the ids already in.
    mutating func reserveCapacity(_ minimumCapacity: Int) {
        guard ModelIDHashing.size(for: minimumCapacity).size > slots.count else { return }
        let old = slots
        self = ModelIDTable(minimumCapacity: minimumCapacity)
        for slot in old where slot.index >= 0 {
            slots[position(of: slot.id)] = slot
            count += 1
        }
    }

    private mutating func grow() {
        let old = slots
        self = ModelIDTable(minimumCapacity: old.count)  // twice the slots
        for slot in old where slot.index >= 0 {
            slots[position(of: slot.id)] = slot
            count += 1
        }
    }
}

/// The hashing of ``ModelIDTable`` and ``ModelIdentityMap``: where an id's slot is in a table of
/// a power-of-two size, with linear probing.
enum ModelIDHashing {
    /// The secret constants of the hash (the multipliers odd).
    private static let keys: (UInt64, UInt64, UInt64) = {
        var generator = SystemRandomNumberGenerator()
        return (generator.next() | 1, generator.next(), generator.next() | 1)
    }()

    /// The number of slots for `minimumCapacity` ids (a power of two, at least 16), and the
    /// shift for ``home(of:shift:mask:)``.
    static func size(for minimumCapacity: Int) -> (size: Int, shift: Int) {
        var size = 16
        while isOverloaded(count: minimumCapacity, size: size) { size *= 2 }
        return (size, 64 - size.trailingZeroBitCount)
    }

    /// The position of `id`'s slot in `slots`, or of the empty slot where it would go.
    @inline(__always) static func position<Slot: ModelIDSlot>(of id: ModelID, in slots: [Slot], shift: Int) -> Int {
        let mask = slots.count - 1
        return slots.withUnsafeBufferPointer { slots in
            var position = home(of: id, shift: shift, mask: mask)
            while slots[position].isOccupied, slots[position].id != id { position = (position + 1) & mask }
            return position
        }
    }

    /// How many ids ahead of a run of inserts their slots are prefetched: far enough for a few
    /// memory reads to overlap, near enough that the lines are still in the cache when used.
    static let prefetchDistance = 8

    /// Asks the processor for the first slot to try for `id` in `slots`, without waiting for it:
    /// called a few ids ahead of a run of inserts into a table far larger than the cache, their
    /// memory reads overlap instead of coming one after another.
    @inline(__always) static func prefetch<Slot: ModelIDSlot>(_ id: ModelID, in slots: [Slot], shift: Int) {
        slots.withUnsafeBufferPointer {
            modelkit_prefetch_for_writing($0.baseAddress! + home(of: id, shift: shift, mask: $0.count - 1))
        }
    }

    /// The first slot to try for `id` in a table of `mask + 1` slots, where `shift` is 64 minus
    /// log2 of that size. Ids whose counters differ only in their low three bits share a block
    /// of eight slots.
    @inline(__always) static func home(of id: ModelID, shift: Int, mask: Int) -> Int {
        // The top bits pick the block; the id's low three bits the slot in it.
        Int(truncatingIfNeeded: (mixed(id) >> UInt64(shift)) ^ (id.low & 7)) & mask
    }

    /// ``home(of:shift:mask:)`` and four more bits of the hash, which differ between the ids of
    /// one block: ``ModelIdentityMap`` keeps them next to each model so that probing past other
    /// ids rarely needs to read those ids from their models.
    @inline(__always) static func homeAndTag(of id: ModelID, shift: Int, mask: Int) -> (home: Int, tag: UInt) {
        let mixed = mixed(id)
        let home = Int(truncatingIfNeeded: (mixed >> UInt64(shift)) ^ (id.low & 7)) & mask
        // Bits 8–11 lie below the block bits of any table smaller than 2^52 slots.
        return (home, UInt(truncatingIfNeeded: (mixed >> 8) ^ id.low) & 15)
    }

    @inline(__always) private static func mixed(_ id: ModelID) -> UInt64 {
        let keys = Self.keys
        var mixed = (id.low >> 3) &* keys.0
        mixed ^= mixed >> 29
        return (mixed ^ id.high ^ keys.1) &* keys.2
    }

    /// Whether `count` ids are too many for `size` slots. Linear probing stays short up to 70%
    /// full (about 2 probes to find an id, 6 to miss one); a lower limit would make a table for a
    /// million ids twice as large whenever the count is just past a power of two.
    @inline(__always) static func isOverloaded(count: Int, size: Int) -> Bool {
        count * 10 > size * 7
    }
}

/// A slot of a table hashed by ``ModelIDHashing``.
protocol ModelIDSlot {
    var id: ModelID { get }
    /// Whether the slot holds an id (`id` is meaningless otherwise).
    var isOccupied: Bool { get }
}
