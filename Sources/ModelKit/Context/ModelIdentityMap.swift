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
    /// A model's id and address: 24 bytes. The model's type is not stored per slot: it is the
    /// dynamic class of the object, found in `types` (a context holds models of a few types), so
    /// every model costs 8 bytes less here.
    struct Slot: ModelIDSlot {
        var id: ModelID
        /// The model, unretained; `nil` for an empty slot.
        var object: UnsafeMutableRawPointer?

        var isOccupied: Bool { object != nil }
    }

    /// The classes of the models in the map, each with its `Model` conformance, in the order
    /// they were first inserted. Only ever grows: a type stays known after its last model left.
    private var types: [(class: ObjectIdentifier, type: any Model.Type)] = []

    /// The model at `object`, as an existential of its dynamic type.
    /// (Every class in the map was recorded when its first instance was inserted, so this is
    /// never `nil` for an object of the map.)
    private func model(at object: UnsafeMutableRawPointer) -> (any Model)? {
        let dynamicClass = ObjectIdentifier(Swift.type(of: Unmanaged<AnyObject>.fromOpaque(object).takeUnretainedValue()))
        guard let type = types.first(where: { $0.class == dynamicClass })?.type else { return nil }
        return Self.model(of: type, at: object)
    }

    private static func model<M: Model>(of type: M.Type, at object: UnsafeMutableRawPointer) -> any Model {
        Unmanaged<M>.fromOpaque(object).takeUnretainedValue()
    }

    /// Records the dynamic class of `model` (a subclass of `M` when the model is one).
    private mutating func record<M: Model>(classOf model: M) {
        let dynamicType = Swift.type(of: model)
        let dynamicClass = ObjectIdentifier(dynamicType)
        if types.last?.class == dynamicClass || types.contains(where: { $0.class == dynamicClass }) { return }
        types.append((dynamicClass, dynamicType))
    }

    private var slots: [Slot]
    /// 64 minus log2 of the number of slots.
    private var shift: Int
    private(set) var count = 0

    init(minimumCapacity: Int = 0) {
        let (size, shift) = ModelIDHashing.size(for: minimumCapacity)
        slots = Array(repeating: Slot(id: ModelID(high: 0, low: 0), object: nil), count: size)
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
        get { slots[position(of: id)].object.flatMap(model(at:)) }
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
        model._withUnsafeGuaranteedRef { record(classOf: $0) }
        slots[position].object = model.toOpaque()
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
        larger.types = types
        self = larger
    }

    /// Every id, in no particular order.
    ///
    /// - Complexity: O(capacity).
    var ids: [ModelID] { slots.compactMap { $0.object == nil ? nil : $0.id } }

    /// Every model, retained, in no particular order.
    ///
    /// - Complexity: O(capacity).
    var models: [any Model] { slots.compactMap { $0.object.flatMap(model(at:)) } }

    /// The model with `id` when it is an `M`. When it is of class `M` exactly (the usual case:
    /// a final model class) no existential is made and no dynamic cast is needed.
    @inline(__always) func model<M: Model>(_ type: M.Type, id: ModelID) -> M? {
        guard let object = slots[position(of: id)].object else { return nil }
        let model = Unmanaged<AnyObject>.fromOpaque(object).takeUnretainedValue()
        if ObjectIdentifier(Swift.type(of: model)) == ObjectIdentifier(M.self) { return unsafeDowncast(model, to: M.self) }
        return self.model(at: object) as? M
    }
}
