import ModelKitShims

/// A context's models by id, without retaining them: open addressing with linear probing over
/// one flat array of 8-byte slots, hashed as ``ModelIDTable`` is.
///
/// The context's type lists own its models; this map only finds them. Both change together under
/// the registry's lock (a model is in the map exactly when it is in its type's list), so a model
/// read from the map under the lock is alive, and the copy handed out retains it.
///
/// A slot is the model's address and nothing else: the id is read from the model itself, where
/// every ``AnyModelObject`` keeps it at the same place. Storing the id as well would triple the
/// slot (24 bytes), and a table is 1.4 to 2.9 slots per model: 30 to 45 bytes per model that a
/// context spent on copies of ids. So that probing past other models rarely reads them, the
/// four low bits of the address (always zero: objects are 16-byte aligned) hold four bits of the
/// id's hash; a lookup reads a model only when they match, which is the model it looks for,
/// 15 times in 16 otherwise.
///
/// Why not `[ModelID: any Model]`: a retain per model cost a third of registering a loaded graph,
/// hashing the 16 bytes of each id with SipHash most of the rest, and its entries take 32 bytes.
struct ModelIdentityMap {
    /// A model's address with its tag in the low four bits; 0 for an empty slot.
    typealias Slot = UInt

    /// The low bits of an address that malloc's alignment keeps zero: 16 bytes on 64-bit
    /// platforms, 8 on 32-bit ones (where the tag has three bits).
    private static let tagMask: UInt = MemoryLayout<UInt>.size == 8 ? 15 : 7

    /// The classes of the models in the map, each with its `Model` conformance, in the order
    /// they were first inserted. Only ever grows: a type stays known after its last model left.
    private var types: [(class: ObjectIdentifier, type: any Model.Type)] = []

    private var slots: [Slot]
    /// 64 minus log2 of the number of slots.
    private var shift: Int
    private(set) var count = 0

    init(minimumCapacity: Int = 0) {
        let (size, shift) = ModelIDHashing.size(for: minimumCapacity)
        slots = Array(repeating: 0, count: size)
        self.shift = shift
    }

    var isEmpty: Bool { count == 0 }

    /// The model a full slot holds, unretained.
    @inline(__always) private static func object(in slot: Slot) -> Unmanaged<AnyModelObject> {
        Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: slot & ~tagMask).unsafelyUnwrapped)
    }

    /// The id of the model a full slot holds.
    @inline(__always) private static func id(in slot: Slot) -> ModelID {
        object(in: slot)._withUnsafeGuaranteedRef { $0.metadata.modelId }
    }

    /// The position of `id`'s slot, or of the empty slot where it would go, and its tag.
    @inline(__always) private func position(of id: ModelID) -> (position: Int, tag: UInt) {
        slots.withUnsafeBufferPointer { slots in
            let mask = slots.count - 1
            var (position, tag) = ModelIDHashing.homeAndTag(of: id, shift: shift, mask: mask)
            tag &= Self.tagMask
            while true {
                let slot = slots[position]
                if slot == 0 || (slot & Self.tagMask == tag && Self.id(in: slot) == id) { return (position, tag) }
                position = (position + 1) & mask
            }
        }
    }

    /// The model at `slot`, as an existential of its dynamic type.
    /// (Every class in the map was recorded when its first instance was inserted, so this is
    /// never `nil` for a full slot.)
    private func model(in slot: Slot) -> (any Model)? {
        guard slot != 0 else { return nil }
        let object = Self.object(in: slot).takeUnretainedValue()
        let dynamicClass = ObjectIdentifier(Swift.type(of: object))
        guard let type = types.first(where: { $0.class == dynamicClass })?.type else { return nil }
        return Self.model(of: type, object)
    }

    private static func model<M: Model>(of type: M.Type, _ object: AnyModelObject) -> any Model {
        unsafeDowncast(object, to: M.self)
    }

    /// Records the dynamic class of `model` (a subclass of `M` when the model is one).
    private mutating func record<M: Model>(classOf model: M) {
        let dynamicType = Swift.type(of: model)
        let dynamicClass = ObjectIdentifier(dynamicType)
        if types.last?.class == dynamicClass || types.contains(where: { $0.class == dynamicClass }) { return }
        types.append((dynamicClass, dynamicType))
    }

    /// The model with `id`, retained; assigning `nil` removes it. Use it under the registry's lock.
    ///
    /// - Complexity: O(1) on average.
    subscript(id: ModelID) -> (any Model)? {
        get { model(in: slots[position(of: id).position]) }
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
        slots.withUnsafeBufferPointer {
            modelkit_prefetch_for_writing($0.baseAddress! + ModelIDHashing.home(of: id, shift: shift, mask: $0.count - 1))
        }
    }

    /// Adds `model` under `id` (its own id), without retaining it even for a moment (assigning
    /// through the subscript retains and releases it on the way).
    ///
    /// - Complexity: O(1) amortized.
    mutating func insert<M: Model>(_ model: Unmanaged<M>, for id: ModelID) {
        if ModelIDHashing.isOverloaded(count: count + 1, size: slots.count) { grow() }
        let (position, tag) = position(of: id)
        if slots[position] == 0 { count += 1 }
        assert(UInt(bitPattern: model.toOpaque()) & Self.tagMask == 0, "a model at an address malloc does not align")
        model._withUnsafeGuaranteedRef { record(classOf: $0) }
        slots[position] = UInt(bitPattern: model.toOpaque()) | tag
    }

    /// Adds `model` under `id` (its own id) unless the map has a model with that id, which it
    /// returns instead: one probe where a look-up and then an insertion take two.
    ///
    /// - Complexity: O(1) amortized.
    mutating func insertIfAbsent<M: Model>(_ model: M, for id: ModelID) -> (any Model)? {
        // Growing first even when the id is here: that only brings a growth one insertion ahead.
        if ModelIDHashing.isOverloaded(count: count + 1, size: slots.count) { grow() }
        let (position, tag) = position(of: id)
        let slot = slots[position]
        if slot != 0 { return self.model(in: slot) }
        count += 1
        let unmanaged = Unmanaged.passUnretained(model)
        assert(UInt(bitPattern: unmanaged.toOpaque()) & Self.tagMask == 0, "a model at an address malloc does not align")
        record(classOf: model)
        slots[position] = UInt(bitPattern: unmanaged.toOpaque()) | tag
        return nil
    }

    /// Opens `model` to insert it (its dynamic type is the one stored).
    private mutating func store<M: Model>(_ model: M, for id: ModelID) {
        insert(Unmanaged.passUnretained(model), for: id)
    }

    /// Removes `id`, shifting back the models after it that probed past its slot, so that every
    /// model stays reachable from its home without markers for removed slots.
    private mutating func remove(_ id: ModelID) {
        var hole = position(of: id).position
        guard slots[hole] != 0 else { return }
        let mask = slots.count - 1
        var next = hole
        while true {
            next = (next + 1) & mask
            guard slots[next] != 0 else { break }
            let home = ModelIDHashing.home(of: Self.id(in: slots[next]), shift: shift, mask: mask)
            // The model at `next` may move to the hole unless its home lies cyclically in
            // (hole, next]: then the hole is before its home, where a lookup never looks.
            let stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)
            if !stays {
                slots[hole] = slots[next]
                hole = next
            }
        }
        slots[hole] = 0
        count -= 1
    }

    mutating func reserveCapacity(_ minimumCapacity: Int) {
        guard ModelIDHashing.isOverloaded(count: minimumCapacity, size: slots.count) else { return }
        rehash(into: ModelIdentityMap(minimumCapacity: minimumCapacity))
    }

    private mutating func grow() {
        rehash(into: ModelIdentityMap(minimumCapacity: slots.count))  // twice the slots
    }

    /// Moves every model to `larger`. Each model's id is read from the model, a cache miss per
    /// model in a large table: the models a few slots ahead are asked for first, so that those
    /// reads overlap.
    private mutating func rehash(into larger: ModelIdentityMap) {
        var larger = larger
        let distance = ModelIDHashing.prefetchDistance
        slots.withUnsafeBufferPointer { old in
            larger.slots.withUnsafeMutableBufferPointer { new in
                let mask = new.count - 1
                for index in old.indices {
                    if index + distance < old.count, old[index + distance] != 0 {
                        modelkit_prefetch_for_reading(UnsafeRawPointer(bitPattern: old[index + distance] & ~Self.tagMask))
                    }
                    let slot = old[index]
                    guard slot != 0 else { continue }
                    var position = ModelIDHashing.home(of: Self.id(in: slot), shift: larger.shift, mask: mask)
                    while new[position] != 0 { position = (position + 1) & mask }
                    new[position] = slot
                }
            }
        }
        larger.count = count
        larger.types = types
        self = larger
    }

    /// Every id, in no particular order.
    ///
    /// - Complexity: O(capacity).
    var ids: [ModelID] { slots.compactMap { $0 == 0 ? nil : Self.id(in: $0) } }

    /// Every model, retained, in no particular order.
    ///
    /// - Complexity: O(capacity).
    var models: [any Model] { slots.compactMap(model(in:)) }

    /// The model with `id` when it is an `M`. When it is of class `M` exactly (the usual case:
    /// a final model class) no existential is made and no dynamic cast is needed.
    /// The model with `id` when it is of class `M` exactly, not retained: for the graph walk,
    /// which reads it while the context holds it (a model that is weakly referenced has a side
    /// table, which makes each retain and release slow).
    @inline(__always) func unretainedModel<M: Model>(_ type: M.Type, id: ModelID) -> Unmanaged<AnyModelObject>? {
        let slot = slots[position(of: id).position]
        guard slot != 0 else { return nil }
        let object = Self.object(in: slot)
        let modelClass = object._withUnsafeGuaranteedRef { ObjectIdentifier(Swift.type(of: $0)) }
        return modelClass == ObjectIdentifier(M.self) ? object : nil
    }

    @inline(__always) func model<M: Model>(_ type: M.Type, id: ModelID) -> M? {
        let slot = slots[position(of: id).position]
        guard slot != 0 else { return nil }
        let object = Self.object(in: slot).takeUnretainedValue()
        if ObjectIdentifier(Swift.type(of: object)) == ObjectIdentifier(M.self) { return unsafeDowncast(object, to: M.self) }
        return model(in: slot) as? M
    }
}
