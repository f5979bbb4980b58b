/// A set of objects by identity, for a live result set's batch: the models a batch changed,
/// asked about once per result when the batch's end walks all the results.
///
/// `Set<ObjectIdentifier>` hashes each identifier with SipHash, which was most of the walk's
/// time per result (about 60 ns of it, in a `perf record -g` of live-batch at 15,000 results).
/// Here an identifier is an object's address: its low bits are always zero, its high bits vary
/// little, and no input chooses it, so one multiply (Fibonacci hashing) spreads it well enough,
/// and the table is probed linearly from there. It is sized and grown as the id tables are
/// (``ModelIDHashing``): at most 70% full.
struct IdentitySet {
    /// Addresses, 0 for an empty slot (no object lives at address 0).
    private var slots: [UInt]
    /// 64 minus log2 of the number of slots: the product's top bits are the slot.
    private var shift: Int
    /// The number of objects in the set.
    private(set) var count = 0

    /// An empty set of room for `minimumCapacity` objects before it grows.
    ///
    /// - Complexity: O(`minimumCapacity`).
    init(minimumCapacity: Int = 4) {
        let (size, shift) = ModelIDHashing.size(for: minimumCapacity)
        slots = Array(repeating: 0, count: size)
        self.shift = shift
    }

    /// The slot of `address`, or the empty slot where it would go.
    @inline(__always) private func position(of address: UInt) -> Int {
        let mask = slots.count - 1
        // In 64 bits on every platform (a 32-bit `UInt` can't hold the constant).
        var slot = Int(truncatingIfNeeded: (UInt64(address) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(shift))
        return slots.withUnsafeBufferPointer { slots in
            while slots[slot] != 0 && slots[slot] != address { slot = (slot + 1) & mask }
            return slot
        }
    }

    /// Whether `object` is in the set.
    ///
    /// - Complexity: O(1) on average.
    @inline(__always) func contains(_ object: ObjectIdentifier) -> Bool {
        let address = UInt(bitPattern: object)
        return slots[position(of: address)] == address
    }

    /// Adds `object`; returns whether it was new.
    ///
    /// - Complexity: O(1) on average; O(n) when the set grows.
    @discardableResult
    mutating func insert(_ object: ObjectIdentifier) -> Bool {
        let address = UInt(bitPattern: object)
        let slot = position(of: address)
        guard slots[slot] != address else { return false }
        if ModelIDHashing.isOverloaded(count: count + 1, size: slots.count) {
            grow()
            slots[position(of: address)] = address
        } else {
            slots[slot] = address
        }
        count += 1
        return true
    }

    private mutating func grow() {
        let old = slots
        (slots, shift) = {
            let (size, shift) = ModelIDHashing.size(for: slots.count)
            return (Array(repeating: 0, count: size), shift)
        }()
        for address in old where address != 0 { slots[position(of: address)] = address }
    }
}
