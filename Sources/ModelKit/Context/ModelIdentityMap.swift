/// A context's models by id, without retaining them: open addressing with linear probing over
/// one flat array, hashed as ``ModelIDTable`` is.
///
/// The context's type lists own its models; this map only finds them. Both change together under
/// the registry's lock (a model is in the map exactly when it is in its type's list), so a model
/// read from the map under the lock is alive, and the copy handed out retains it.
///
/// Why not `[ModelID: any Model]`: every loaded model is the target of weak references, so it
/// has a side table, and a retain per model (the slow path through the side table) cost a third
/// of registering a loaded graph; hashing the 16 bytes of each id with SipHash cost most of the
/// rest. Ids made one after the other also land in the same few cache lines here.
struct ModelIdentityMap {
    /// The model as its address and type. (An `unowned(unsafe)` optional existential field
    /// would be shorter, but with one this struct's copies looped forever under Swift 6.3.)
    struct Slot: ModelIDSlot {
        var id: ModelID
        /// The model, unretained; `nil` for an empty slot.
        var object: UnsafeMutableRawPointer?
        var type: (any Model.Type)?

        var isOccupied: Bool { object != nil }

        var model: (any Model)? {
            guard let object, let type else { return nil }
            return Self.model(of: type, at: object)
        }

        private static func model<M: Model>(of type: M.Type, at object: UnsafeMutableRawPointer) -> any Model {
            Unmanaged<M>.fromOpaque(object).takeUnretainedValue()
        }

        mutating func set<M: Model>(_ model: Unmanaged<M>) {
            object = model.toOpaque()
            type = M.self
        }
    }

    private var slots: [Slot]
    /// 64 minus log2 of the number of slots.
    private var shift: Int
    private(set) var count = 0

    init(minimumCapacity: Int = 0) {
        let (size, shift) = ModelIDHashing.size(for: minimumCapacity)
        slots = Array(repeating: Slot(id: ModelID(high: 0, low: 0), object: nil, type: nil), count: size)
        self.shift = shift
    }

    var isEmpty: Bool { count == 0 }

    @inline(__always) private func home(of id: ModelID) -> Int {
        ModelIDHashing.home(of: id, shift: shift, mask: slots.count - 1)
    }

    /// The position of `id`'s slot, or of the empty slot where it would go.
    @inline(__always) private func position(of id: ModelID) -> Int {
        ModelIDHashing.position(of: id, in: slots, shift: shift)
    }

    /// The model with `id`, retained; assigning `nil` removes it. Use it under the registry's lock.
    ///
    /// - Complexity: O(1) on average.
    subscript(id: ModelID) -> (any Model)? {
        get { slots[position(of: id)].model }
        set {
            if let newValue {
                store(newValue, for: id)
            } else {
                remove(id)
            }
        }
    }

    /// Starts bringing in the first slot where `id` goes, ahead of its ``insert(_:for:)``.
    @inline(__always) func prefetch(_ id: ModelID) {
        ModelIDHashing.prefetch(id, in: slots, shift: shift)
    }

    /// Adds `model` under `id`, without retaining it even for a moment (assigning through the
    /// subscript retains and releases it on the way, through its side table).
    ///
    /// - Complexity: O(1) amortized.
    mutating func insert<M: Model>(_ model: Unmanaged<M>, for id: ModelID) {
        if ModelIDHashing.isOverloaded(count: count + 1, size: slots.count) { grow() }
        let position = position(of: id)
        if slots[position].object == nil {
            slots[position].id = id
            count += 1
        }
        slots[position].set(model)
    }

    /// Opens `model` to insert it (its dynamic type is the one stored).
    private mutating func store<M: Model>(_ model: M, for id: ModelID) {
        insert(Unmanaged.passUnretained(model), for: id)
    }

    /// Removes `id`, shifting back the ids after it that probed past its slot, so that every
    /// id stays reachable from its home without markers for removed slots.
    private mutating func remove(_ id: ModelID) {
        var hole = position(of: id)
        guard slots[hole].object != nil else { return }
        let mask = slots.count - 1
        var next = hole
        while true {
            next = (next + 1) & mask
            guard slots[next].object != nil else { break }
            let home = home(of: slots[next].id)
            // The id at `next` may move to the hole unless its home lies cyclically in
            // (hole, next]: then the hole is before its home, where a lookup never looks.
            let stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)
            if !stays {
                slots[hole] = slots[next]
                hole = next
            }
        }
        slots[hole].object = nil
        slots[hole].type = nil
        count -= 1
    }

    mutating func reserveCapacity(_ minimumCapacity: Int) {
        guard ModelIDHashing.isOverloaded(count: minimumCapacity, size: slots.count) else { return }
        rehash(into: ModelIdentityMap(minimumCapacity: minimumCapacity))
    }

    private mutating func grow() {
        rehash(into: ModelIdentityMap(minimumCapacity: slots.count))  // twice the slots
    }

    private mutating func rehash(into larger: ModelIdentityMap) {
        var larger = larger
        for slot in slots where slot.object != nil {
            let position = larger.position(of: slot.id)
            larger.slots[position] = slot
        }
        larger.count = count
        self = larger
    }

    /// Every id, in no particular order.
    ///
    /// - Complexity: O(capacity).
    var ids: [ModelID] { slots.compactMap { $0.object == nil ? nil : $0.id } }

    /// Every model, retained, in no particular order.
    ///
    /// - Complexity: O(capacity).
    var models: [any Model] { slots.compactMap { $0.model } }
}
