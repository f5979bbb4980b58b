/// A context's models by id, without retaining them.
///
/// The context's type lists own its models; this map only finds them. Both change together under
/// the registry's lock (a model is in the map exactly when it is in its type's list), so a model
/// read from the map under the lock is alive, and the copy handed out retains it.
///
/// Not retaining matters for loading: every loaded model is the target of weak references, so it
/// has a side table, and a retain per model (the slow path through the side table, usually a
/// cache miss) cost a third of registering a loaded graph.
struct ModelIdentityMap {
    struct Entry {
        unowned(unsafe) let model: any Model
    }

    private var entries: [ModelID: Entry] = [:]

    /// The model with `id`, retained. Read it under the registry's lock.
    ///
    /// - Complexity: O(1) on average.
    subscript(id: ModelID) -> (any Model)? {
        get { entries[id]?.model }
        set { entries[id] = newValue.map { Entry(model: $0) } }
    }

    /// Adds `model` under `id`, without retaining it even for a moment (assigning through the
    /// subscript retains and releases it on the way, through its side table).
    mutating func insert<M: Model>(_ model: Unmanaged<M>, for id: ModelID) {
        model._withUnsafeGuaranteedRef { entries[id] = Entry(model: $0) }
    }

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }
    var ids: Dictionary<ModelID, Entry>.Keys { entries.keys }

    /// Every model, retained.
    ///
    /// - Complexity: O(n).
    var models: [any Model] { entries.values.map(\.model) }

    mutating func reserveCapacity(_ minimumCapacity: Int) {
        entries.reserveCapacity(minimumCapacity)
    }
}
