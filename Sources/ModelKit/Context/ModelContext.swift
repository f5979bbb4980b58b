import Foundation
import Observation
import Synchronization

/// Owns models: at most one instance per ``ModelID`` and per object id, retained until removed.
/// The Swift counterpart of `MKitModelContext`.
///
/// Models reference each other without retaining (``ModelRef``, ``ModelArray``); the context
/// holds the strong references. Removing a model, clearing the context or letting the context go
/// releases its models, so object graphs with cycles never leak.
///
/// ```swift
/// @MainActor func example() {
///     let author = Author.instance(objectId: "001")     // created in ModelContext.current
///     _ = Author.instance(objectId: "001") === author   // true: one instance per id
///
///     let scratch = ModelContext.push()                  // a temporary context on the stack
///     _ = Author.instance(objectId: "tmp")
///     ModelContext.pop()                                 // gone, with its models
/// }
/// ```
///
/// ## Isolation
/// A context and its models belong to one isolation domain: ``main`` and the context stack to the
/// main actor, a context that an actor of the app's stores (see ``ModelActor``) to that actor, a
/// context made in a function to that function until it hands the context over. `ModelContext`
/// and models are not `Sendable`, so the compiler rejects every way of using them from two
/// domains at once: capturing them in a `Task`, a detached task or a task group's closure while
/// the domain still uses them, or passing them to another actor. Hand ``ModelID``s and
/// ``ModelSnapshot``s across instead, and ``merge(_:isolation:)`` a snapshot into the context that should see
/// the changes.
///
/// In debug builds, reading or writing a model of a context made on an actor (the main actor
/// included) from any other domain traps, naming the model and both domains.
public final class ModelContext {
    struct Registry {
        /// Every model by id: the identity map (the type lists own the models).
        var models = ModelIdentityMap()
        /// Models by type and object id (the models themselves: one hash lookup, not two).
        var objectIds: [ObjectKey: any Model] = [:]
        /// What was inserted, updated and removed since the last `resetChanges()`.
        var log = ChangeLog()
        /// The models of each type, in a typed array (a `TypeList<M>`), so that listing or
        /// querying one type neither walks the others nor casts each model.
        var byType: [ObjectIdentifier: AnyObject] = [:]
        /// The ids of the models removed from the context (and not back since), which arrays
        /// leave out of their ``ModelArray/ids``: removal drops a model from every array.
        var removedIds = Set<ModelID>()
        /// How many times a model left a type list (moving another into its place) or the lists
        /// were cleared, ever: a walk positioning models by type slot stops trusting the slots
        /// once it changed (see `GraphStreamWriter.dropSlotsIfMoved()`).
        var removals = 0
        /// The type list last appended to, unretained (`byType` holds it, and never replaces or
        /// removes a list: only a whole new registry drops them): models are mostly made many of
        /// one type at a time, and the look-up in `byType` hashes the type on every insertion.
        private var lastList: (type: ObjectIdentifier, list: Unmanaged<AnyObject>)?

        /// The ids of the models inserted since the last reset (whose inserted generation is
        /// `generation`) and still here. O(n) in the models of the context, and no work at all
        /// when none was inserted.
        func insertedIds(generation: UInt32) -> Set<ModelID> {
            var ids = Set<ModelID>()
            guard log.insertedCount > 0 else { return ids }
            ids.reserveCapacity(log.insertedCount)
            for list in byType.values {
                (list as? any DetachableList)?.collectInserted(generation: generation, into: &ids)
            }
            return ids
        }

        /// The changes since the last reset.
        func changes(generation: UInt32) -> ContextChanges {
            var changes = ContextChanges()
            changes.inserted = insertedIds(generation: generation)
            changes.updated = log.updated.subtracting(changes.inserted)
            changes.removed = log.removed
            return changes
        }

        /// Appends `model` to its type's list, remembering its position in its storage. Returns
        /// whether the list is new: the context's first model of its type.
        @discardableResult
        mutating func addToTypeList<M: Model>(_ model: M) -> Bool {
            let key = ObjectIdentifier(M.self)
            let list: TypeList<M>
            let isNew: Bool
            if let lastList, lastList.type == key {
                list = unsafeDowncast(lastList.list.takeUnretainedValue(), to: TypeList<M>.self)
                isNew = false
            } else if let existing = byType[key] {
                list = unsafeDowncast(existing, to: TypeList<M>.self)
                isNew = false
            } else {
                list = TypeList<M>()
                byType[key] = list
                isNew = true
            }
            lastList = (key, Unmanaged.passUnretained(list))
            model.typeSlot = list.append(model)
            return isNew
        }

        /// Removes `model`, expected at `hint`, from its type's list in O(1), moving the last model
        /// into its place. The hint is passed in because a model moving to another context has
        /// already been given its slot there; if the model is not at the hint (another thread
        /// moved it there meanwhile), the list is searched.
        mutating func removeFromTypeList<M: Model>(_ model: M, at hint: Int) {
            guard let existing = byType[ObjectIdentifier(M.self)] else { return }
            let list = unsafeDowncast(existing, to: TypeList<M>.self)
            let slot: Int
            if list.models.indices.contains(hint), list.models[hint] === model {
                slot = hint
            } else if let found = list.models.firstIndex(where: { $0 === model }) {
                slot = found
            } else {
                return
            }
            removals &+= 1
            let last = list.models.removeLast()
            if slot < list.models.count {
                list.models[slot] = last
                last.typeSlot = slot
            }
        }
    }

    /// The models of one type in a context.
    final class TypeList<M: Model>: DetachableList {
        /// The models, kept as an array of their base class. This code is not specialized for
        /// `M`, and each call to a method of `[M]` looks the type `[M]` up at run time, which
        /// cost more than the append of an insertion; `[AnyModelObject]`'s methods are
        /// specialized. An array of class references has the same representation whatever the
        /// class (an upcast of `[M]` shares its storage), and only `M`s are ever stored, so
        /// ``models`` views the same storage as `[M]`. Unchecked: only the context's own code
        /// touches a list, one access at a time, and a run-time check cost as much as an append.
        @exclusivity(unchecked) private var stored: [AnyModelObject] = []

        /// The models, typed.
        var models: [M] {
            get { unsafeBitCast(stored, to: [M].self) }
            set { stored = unsafeBitCast(newValue, to: [AnyModelObject].self) }
            _modify {
                // Moved out and back, so that the array stays uniquely referenced while it is
                // mutated (a copy would make every mutation copy the storage).
                var models = unsafeBitCast(stored, to: [M].self)
                stored = []
                defer { stored = unsafeBitCast(models, to: [AnyModelObject].self) }
                yield &models
            }
        }

        /// Appends `model` and returns its position.
        @inline(__always) func append(_ model: M) -> Int {
            stored.append(model)
            return stored.count - 1
        }

        func detachAll() {
            models.withUnsafeBufferPointer { models in
                for model in models { model.context = nil }
            }
        }

        func collectInserted(generation: UInt32, into ids: inout Set<ModelID>) {
            models.withUnsafeBufferPointer { models in
                for model in models where model.insertedGeneration == generation {
                    ids.insert(model.metadata.modelId)
                }
            }
        }
    }

    struct ObjectKey: Hashable {
        let type: ObjectIdentifier
        let objectId: String
    }

    /// The context's tables. No lock guards them: a context belongs to one isolation domain, so
    /// one piece of code uses them at a time (a load's workers never touch them). Unchecked: the
    /// accessors below never nest, and a run-time exclusivity check on every lookup would cost
    /// more than the lookup's hashing.
    @exclusivity(unchecked) private var registry = Registry()

    /// The undo manager that registers the context's changes, or `nil` (the default): property
    /// writes, insertions, removals (with their cascades) and relationship changes, each action
    /// one undo step. See Docs/Undo.md.
    ///
    /// ```swift
    /// context.undoManager = ModelUndoManager()     // UndoManager() also does on Apple platforms
    /// ```
    ///
    /// While it is set, every write saves the model's values before it (as while someone
    /// observes each change), and the undo steps retain the models they restore.
    @exclusivity(unchecked) public var undoManager: (any UndoRegistering)? {
        // Models that write quietly now must take the path that registers undo.
        didSet { ChangeEpoch.advance() }
    }
    /// Whether `registry.removedIds` holds any id, read without the registry (arrays ask on
    /// every read of their ids).
    @exclusivity(unchecked) var hasRemovedIds = false
    /// A journal for the next mutation of a to-many reference with an inverse, kept between
    /// mutations so that each one allocates nothing for it (see `ModelArrayJournal`).
    @exclusivity(unchecked) var spareJournal: ModelArrayJournal.Spare?
    /// Whether the context has change observers or an undo manager: each wants to hear about
    /// every write of its models.
    @usableFromInline var hasChangeListeners: Bool { !changeObservers.isEmpty || undoManager != nil }
    /// The change epoch at which nobody was found listening to the writes of the context's
    /// models (see `nobodyListens()`).
    @exclusivity(unchecked) private var quietSinceEpoch: UInt32 = 0

    /// Whether nobody listens to the writes of the context's models: no change observer, no
    /// undo manager, no index, no notifications. Remembered until the change epoch advances,
    /// which everything that starts listening makes it do.
    ///
    /// - Complexity: O(1).
    func nobodyListens() -> Bool {
        let epoch = ChangeEpoch.current
        if quietSinceEpoch == epoch { return true }
        guard !hasChangeListeners, !hasIndexes, !ModelNotifications.isEnabled else { return false }
        quietSinceEpoch = epoch
        return true
    }

    /// The link the context's to-many references resolve through (see ``ContextLink``); made
    /// when the first array is handed out.
    @exclusivity(unchecked) private var storedLink: ContextLink?

    /// See ``ContextLink``. O(1).
    var link: ContextLink {
        if let storedLink { return storedLink }
        let made = ContextLink(self)
        storedLink = made
        return made
    }

    /// The class last asked about by ``isContextFree(_:)``, and the answer.
    @exclusivity(unchecked) private var lastContextFreeCheck: (type: ObjectIdentifier, isContextFree: Bool)?

    /// Whether `model` is a ``ContextFreeModel``, remembered for the last class asked about: a
    /// conformance check is a look-up in the runtime's tables, and creating a model asks it each
    /// time (models are mostly made many of one type at a time).
    ///
    /// - Complexity: O(1).
    func isContextFree<M: Model>(_ model: M) -> Bool {
        let type = ObjectIdentifier(Swift.type(of: model))
        if let last = lastContextFreeCheck, last.type == type { return last.isContextFree }
        let answer = model is any ContextFreeModel
        lastContextFreeCheck = (type, answer)
        return answer
    }

    /// Models the app still holds outlive their context; their unowned pointer to it must not.
    deinit {
        storedLink?.context = nil
        for list in registry.byType.values { (list as? any DetachableList)?.detachAll() }
    }

    /// How many times a model left one of the context's type lists, or the lists were cleared
    /// (see `Registry.removals`): read without going through ``withRegistry(_:)``, which may tell
    /// observers, since a graph walk reads it while it writes. O(1).
    var removalCount: Int { registry.removals }

    /// Runs `body` on the context's tables.
    ///
    /// Once ``hasChanges``, ``count`` or a store's ``ModelStore/needsSaving`` was read under
    /// observation, each call then checks whether they changed and tells their observers: every
    /// change of the tables goes through here. O(1); one test of `observedState` until then.
    @inline(__always)
    func withRegistry<Result>(_ body: (inout Registry) throws -> Result) rethrows -> Result {
        if observedState == nil { return try body(&registry) }
        defer { publishObservedStateChanges() }
        return try body(&registry)
    }

    /// The context's ``hasChanges``, ``count`` and "needs saving", computed from the tables
    /// without going through `withRegistry` (which calls back here).
    ///
    /// - Complexity: O(1).
    var currentObservedState: ObservedState {
        let hasChanges = !registry.log.isEmpty
        return ObservedState(
            hasChanges: hasChanges, count: registry.models.count,
            needsSaving: hasChanges || !registry.log.tracked.isEmpty || packageStateChanged)
    }
    /// Closure observers and streams of the context's changes.
    let changeObservers = ObserverList()
    /// The state of an open ``batchChanges(_:)``, `nil` while none is open (see
    /// ModelContext+Batch.swift). Read by every write that reports, so kept behind one pointer.
    @usableFromInline @exclusivity(unchecked) var openBatch: ContextBatch?
    /// The Observation framework's bookkeeping for ``hasChanges``, ``count`` and "needs saving"
    /// (see ModelContext+Observation.swift).
    let observationRegistrar = ObservationRegistrar()
    /// The values of ``hasChanges``, ``count`` and "needs saving" last told to observers, or
    /// `nil` while none was ever read under observation (then nothing is checked).
    @exclusivity(unchecked) var observedState: ObservedState?
    /// The indexes queries use (see `addIndex(on:of:kind:key:)`).
    let indexRegistry = IndexRegistry()
    /// Advanced by `resetChanges()`; see ``ModelStorage/insertedGeneration``.
    let generation = Atomic<UInt32>(1)

    /// The current change generation.
    @usableFromInline var changeGeneration: UInt32 { generation.load(ordering: .relaxed) }

    /// The actor whose domain the context was made in, if it was made in one; checked on every
    /// model access in debug builds. Weak: an actor that stores its context must not be kept
    /// alive by it.
    weak var owner: (any Actor)?
    /// Whether the context was made outside any actor and no actor has used it since: the first
    /// that does becomes its owner (see ``claim(for:)``).
    @exclusivity(unchecked) var isUnclaimed: Bool

    /// What other targets of this package keep per context (see `subscript(packageState:)`).
    var packageState: [String: AnyObject] = [:]

    /// Opaque per-model strings other targets of this package keep, by namespace, which
    /// whole-graph files and snapshots carry (see `metadataTable(_:)`).
    var metadataTables: [String: ModelMetadataTable] = [:]
    /// Context-wide strings of other targets of this package (see `packageValue(_:)`).
    var packageValues: [String: String] = [:]
    /// How many of `metadataTables` keep removed entries: a removal asks them only when some do.
    @exclusivity(unchecked) var tombstoneTables = 0
    /// Whether package values or removed entries changed since the last ``resetChanges()``: a
    /// store's save then writes them all.
    var packageStateChanged = false {
        didSet { if packageStateChanged != oldValue { publishObservedStateChanges() } }
    }
    /// Whether a store is replaying its journal: a removal then drops a table's entry instead of
    /// keeping it, since the records say what was kept.
    var replaysJournal = false

    /// Creates an empty context, owned by the isolation domain that creates it.
    ///
    /// ```swift
    /// actor Importer: ModelActor {
    ///     let modelContext = ModelContext()
    /// }
    /// ```
    ///
    /// Pass it explicitly to APIs taking a context (`Author.instance(in: context)`), or, on the
    /// main actor, make it current with ``withCurrent(_:operation:)-(_,()->Result)`` or
    /// ``activate()``.
    ///
    /// - Parameter isolation: The domain the context belongs to; leave it to the default, the
    ///   caller's. A context made outside any actor (in a nonisolated function, or in an actor's
    ///   initializer or property default, which Swift runs outside the actor) belongs to the first
    ///   actor that creates, inserts, loads, merges, finds or queries models in it (see
    ///   Docs/Contexts.md).
    /// - Complexity: O(1).
    public init(isolation: isolated (any Actor)? = #isolation) {
        owner = isolation
        isUnclaimed = isolation == nil
    }

    /// Creates the context of `owner`'s domain (the main actor's stack).
    init(owner: any Actor) {
        self.owner = owner
        isUnclaimed = false
    }

    /// The number of models in the context (the seed's `contextCount`).
    ///
    /// Observable: read inside `withObservationTracking` or a SwiftUI view's body, it notifies
    /// when models are inserted, loaded, merged or removed (undo and redo included), not when
    /// they are only changed.
    ///
    /// ```swift
    /// Text("\(context.count) models")
    /// ```
    ///
    /// - Complexity: O(1).
    public var count: Int {
        accessObserved(\.count)
        return withRegistry { $0.models.count }
    }

    /// Whether the context holds no model. Observable, as ``count``.
    ///
    /// ```swift
    /// if context.isEmpty { print("nothing yet") }
    /// ```
    ///
    /// - Complexity: O(1).
    public var isEmpty: Bool { count == 0 }

    /// A rough estimate of the memory the context's models use, in bytes (the seed's
    /// `contextSize`): instance sizes, identity-map entries and the text of string ids. Not exact.
    ///
    /// - Complexity: O(n) in the number of models.
    public var estimatedByteSize: Int {
        let models = allModels
        return models.reduce(0) { total, model in total + Self.estimatedSize(of: model) }
    }

    private static func estimatedSize<M: Model>(of model: M) -> Int {
        // The model object (object header, framework state, properties, the tracker pointer);
        // its change tracker when it has one (object header, the values at the reset, two
        // pointers); its identity-map slot and type-list entry.
        let object = 16 + MemoryLayout<ModelMetadata>.size + 15 + MemoryLayout<M.Properties>.stride + 8
        let tracker = model.storage.tracker == nil ? 0 : 16 + MemoryLayout<M.Properties?>.stride + 2 * 8
        let entry = MemoryLayout<ModelIdentityMap.Slot>.stride + MemoryLayout<M>.stride
        return object + tracker + entry + (model.objectId?.utf8.count ?? 0)
    }

    /// Every model in the context, in no particular order.
    ///
    /// - Complexity: O(n).
    public var allModels: [any Model] {
        withRegistry { $0.models.models }
    }

    /// The models of type `type` in the context, in no particular order.
    ///
    /// Models are listed by the type they were inserted as: use final model classes.
    ///
    /// - Complexity: O(1): the context keeps a list per type, and the array shares its storage
    ///   until either is changed.
    public func models<M: Model>(of type: M.Type) -> [M] {
        withRegistry { registry in
            guard let list = registry.byType[ObjectIdentifier(M.self)] else { return [] }
            return unsafeDowncast(list, to: TypeList<M>.self).models
        }
    }

    /// The model with `modelId`, whatever its type, or `nil` when the context has none.
    ///
    /// - Complexity: O(1).
    public func model(withId modelId: ModelID) -> (any Model)? {
        withRegistry { $0.models[modelId] }
    }

    /// ``count``, without telling the Observation framework that it was read: for the library's
    /// own use (a view that writes a model's graph does not depend on the context's size).
    var unobservedCount: Int { registry.models.count }

    /// ``model(_:modelId:)`` for the graph writer's loops: inlined there, and without
    /// `withRegistry`, which only matters to calls that change the tables.
    /// ``registeredModel(_:modelId:)`` for a model of class `M` exactly, not retained (see
    /// ``ModelIdentityMap/unretainedModel(_:id:)``).
    @inline(__always) func unretainedModel<M: Model>(_ type: M.Type, modelId: ModelID) -> Unmanaged<AnyModelObject>? {
        registry.models.unretainedModel(M.self, id: modelId)
    }

    @inline(__always) func registeredModel<M: Model>(_ type: M.Type, modelId: ModelID) -> M? {
        registry.models.model(M.self, id: modelId)
    }

    /// The model of type `type` with `modelId`, or `nil` when the context has none. Unlike
    /// ``Model/instance(modelId:in:isolation:)``, it never creates a placeholder.
    ///
    /// - Complexity: O(1).
    public func model<M: Model>(_ type: M.Type, modelId: ModelID) -> M? {
        withRegistry { $0.models.model(M.self, id: modelId) }
    }

    /// `model as? M`, with a fast path for the usual case of a final model class.
    @inline(__always)
    static func cast<M: Model>(_ model: (any Model)?, to type: M.Type) -> M? {
        guard let model else { return nil }
        if ObjectIdentifier(Swift.type(of: model)) == ObjectIdentifier(M.self) {
            return unsafeDowncast(model as AnyObject, to: M.self)
        }
        return model as? M
    }

    /// The model of type `type` whose ``Model/objectId`` is `objectId`, or `nil` when the context
    /// has none. Unlike ``Model/instance(objectId:in:isolation:)``, it never creates a placeholder, so
    /// asking about an id leaves the context, and what a write of it saves, as they were.
    ///
    /// - Complexity: O(1) (average, hashing `objectId`).
    public func model<M: Model>(_ type: M.Type, objectId: String) -> M? {
        let key = ObjectKey(type: ObjectIdentifier(type), objectId: objectId)
        return Self.cast(withRegistry { $0.objectIds[key] }, to: M.self)
    }

    /// Adds `model` to the context, taking it out of the context it was in.
    ///
    /// If the context already holds a different instance with the same model id (or the same type
    /// and object id), that instance stays and is returned; otherwise `model` is returned. Use the
    /// returned instance.
    ///
    /// - Parameters:
    ///   - model: The model to add.
    ///   - isolation: The caller's domain; leave it to the default. A context made outside any
    ///     actor becomes its own (see ``ModelContext/init(isolation:)``).
    /// - Complexity: O(1).
    @discardableResult
    public func insert<M: Model>(_ model: M, isolation: (any Actor)? = #isolation) -> M {
        claim(for: isolation)
        let inserted = register(model)
        if inserted === model, !model.storage.box.held.isEmpty { adoptHeld(by: model) }
        return inserted
    }

    /// Adds `model` if it has never been in a context and is not context-free: a model assigned
    /// to a reference of a model in this context joins it. Returns whether the model is here now;
    /// if not (it is in another context, or context-free), the owner must hold it.
    ///
    /// - Complexity: O(1), plus the models it holds (see ``ModelObject/held``).
    @discardableResult
    func adopt<M: Model>(_ model: M) -> Bool {
        if model.context === self { return true }
        guard isAdoptable(model) else { return false }
        return insert(model) === model
    }

    /// Adopts the models `owner` held while it was in no context, and those they held, without
    /// recursion (a long chain built outside a context must not overflow the stack).
    private func adoptHeld<M: Model>(by owner: M) {
        var pending = takeHeld(from: owner)
        while let object = pending.popLast() {
            guard let model = object as? any Model else { continue }
            pending += adoptOne(model)
        }
    }

    /// Registers `model` if it has never been in a context; returns what it held.
    private func adoptOne<N: Model>(_ model: N) -> [AnyObject] {
        guard isAdoptable(model), register(model) === model else { return [] }
        return takeHeld(from: model)
    }

    /// What `owner` holds, leaving it holding only what this context will not adopt (models of
    /// other contexts, context-free ones): only the owner keeps those reachable.
    private func takeHeld<N: Model>(from owner: N) -> [AnyObject] {
        let held = owner.storage.box.held
        owner.storage.box.held = held.filter { object in
            guard let model = object as? any Model else { return true }
            return !(model.modelContext === self || isAdoptable(model))
        }
        return held
    }

    /// Whether a context may take `model` in without asking: it has never been in one, and its
    /// type is not context-free.
    private func isAdoptable<N: Model>(_ model: N) -> Bool {
        model.metadata.membership == .unmanaged && !isContextFree(model)
    }

    /// Registers `model`: ``insert(_:isolation:)`` without adopting what it holds.
    private func register<M: Model>(_ model: M) -> M {
        let previous = model.context
        if previous === self { return model }
        let previousSlot = model.typeSlot
        let id = model.metadata.modelId
        let objectKey = model.metadata.objectId.map { ObjectKey(type: ObjectIdentifier(M.self), objectId: $0) }
        let generation = changeGeneration
        var countsAsInserted = false
        var firstOfType = false
        let existing: (any Model)? = withRegistry { registry in
            if let objectKey {
                if let existing = registry.models[id] { return existing }
                if let existing = registry.objectIds[objectKey] { return existing }
                registry.models[id] = model
                registry.objectIds[objectKey] = model
            } else if let existing = registry.models.insertIfAbsent(model, for: id) {
                return existing
            }
            if !registry.removedIds.isEmpty, registry.removedIds.remove(id) != nil {
                hasRemovedIds = !registry.removedIds.isEmpty
            }
            firstOfType = registry.addToTypeList(model)
            countsAsInserted = registry.log.inserted(id)
            return nil
        }
        if let existing {
            // The context keeps the instance it has; `model` stays where it was.
            return existing as? M ?? model
        }
        // Once per type and context, not per model: noting a use takes the registry's lock.
        if firstOfType { ModelRegistry.noteUse(of: M.self) }
        // Only now that this context holds the model does it leave the one it was in.
        previous?.remove(model, typeSlot: previousSlot)
        model.context = self
        model.metadata.membership = .managed
        didInsert(model, countsAsInserted: countsAsInserted, generation: generation)
        return model
    }

    /// The bookkeeping after `model` was registered: change tracking, indexes and observers.
    func didInsert<M: Model>(_ model: M, countsAsInserted: Bool, generation: UInt32) {
        model.quietEpoch = 0  // its writes must now be noted by this context
        model.insertedGeneration = countsAsInserted ? generation : 0
        if tombstoneTables > 0 { noteReturn(model.metadata.modelId) }
        indexRegistry.forEach(of: M.self) { $0.inserted(model) }
        if undoManager != nil { registerUndoOfInsert(model) }
        if !changeObservers.isEmpty {
            let event = ModelChangeEvent(kind: .inserted, modelId: model.modelId, modelName: M.modelName)
            changeObservers.notify(event, model: model)
        }
    }

    /// Removes `model` from the context, with the models its relationships' delete rules remove
    /// along with it (``DeleteRule/cascade``), and brings the inverses of its relationships in
    /// line (``DeleteRule/nullify``). References to it read as `nil` from now on, and arrays drop
    /// it (``ModelArray/ids`` included). A ``DeleteRule/deny`` rule acts as nullify here;
    /// ``delete(_:)`` checks it.
    ///
    /// Removing a model the context doesn't hold does nothing.
    ///
    /// - Complexity: O(1) for a model of a type without relationships; otherwise O(r) in the
    ///   references of the models removed.
    public func remove<M: Model>(_ model: M) {
        // Without checking deny rules this can't fail.
        try? remove(applyingRulesFrom: model, checkingDeny: false)
    }

    /// - Parameter typeSlot: Where the model is in this context's list of its type, when the
    ///   caller knows it; `nil` reads it from the model under the lock (removing another model
    ///   moves one, under the lock).
    func remove<M: Model>(_ model: M, typeSlot: Int?) {
        // Its writes in the open batch are reported (and undone) before its removal.
        if openBatch != nil, model.context === self { model.leaveContextBatch() }
        let id = model.metadata.modelId
        let insertedSinceReset = model.insertedGeneration == changeGeneration
        let removed = withRegistry { registry -> Bool in
            guard let held = registry.models[id], held === model else { return false }
            registry.models[id] = nil
            registry.removeFromTypeList(model, at: typeSlot ?? model.typeSlot)
            if let objectId = model.metadata.objectId {
                let key = ObjectKey(type: ObjectIdentifier(M.self), objectId: objectId)
                if registry.objectIds[key] === model { registry.objectIds[key] = nil }
            }
            registry.log.removed(id, insertedSinceReset: insertedSinceReset)
            registry.removedIds.insert(id)
            return true
        }
        guard removed else { return }
        if tombstoneTables > 0 {
            noteRemoval(
                id, name: M.modelName, objectId: model.metadata.objectId,
                createdAt: model.metadata.createdAt)
        }
        hasRemovedIds = true
        if undoManager != nil { registerUndoOfRemove(model) }
        indexRegistry.forEach(of: M.self) { $0.removed(model) }
        model.context = nil
        model.metadata.membership = .removed
        if !changeObservers.isEmpty {
            changeObservers.notify(ModelChangeEvent(kind: .removed, modelId: id, modelName: M.modelName), model: model)
        }
    }

    /// Removes every model from the context, releasing them.
    ///
    /// - Complexity: O(n).
    public func clear() {
        let generation = changeGeneration
        let models = withRegistry { registry -> [any Model] in
            // Retained before the type lists that own them go.
            let models = registry.models.models
            var log = registry.log
            let inserted = registry.insertedIds(generation: generation)
            for id in registry.models.ids where !inserted.contains(id) { log.removed.insert(id) }
            log.insertedCount = 0
            log.updated = []
            let removedIds = registry.removedIds
            let removals = registry.removals &+ 1
            registry = Registry()
            registry.log = log
            registry.removedIds = removedIds
            registry.removals = removals
            return models
        }
        if !indexRegistry.isEmpty { indexRegistry.clear() }
        for model in models { detach(model) }
    }

    private func detach<M: Model>(_ model: M) {
        model.context = nil
        model.metadata.membership = .removed
        guard !changeObservers.isEmpty else { return }
        let event = ModelChangeEvent(kind: .removed, modelId: model.modelId, modelName: M.modelName)
        changeObservers.notify(event, model: model)
    }

    /// Re-indexes a model whose object id changed from `old` to its current value.
    func objectIdChanged<M: Model>(_ model: M, from old: String?) {
        let type = ObjectIdentifier(M.self)
        let id = model.metadata.modelId
        let new = model.metadata.objectId
        withRegistry { registry in
            guard registry.models[id] === model else { return }
            if let old, registry.objectIds[ObjectKey(type: type, objectId: old)] === model {
                registry.objectIds[ObjectKey(type: type, objectId: old)] = nil
            }
            if let new { registry.objectIds[ObjectKey(type: type, objectId: new)] = model }
        }
    }
}

/// A context's list of the models of one type, as code that walks every type sees it.
protocol DetachableList: AnyObject {
    /// Clears every model's pointer to the context, which is going away.
    func detachAll()

    /// Adds the ids of the models inserted at change generation `generation` to `ids`.
    func collectInserted(generation: UInt32, into ids: inout Set<ModelID>)
}
