import Foundation

/// Writes a graph of models to a ``GraphSink`` as it walks it: the one writer of every output,
/// files (inside their envelope), ``Model/jsonData(options:)`` text and ``Model/serialize(as:)``
/// trees (through a ``ModelValueSink``).
///
/// The walk is breadth-first with a queue (no recursion per model, so chains of any length are
/// fine); a whole context is written from its own lists instead (`GraphStreamWriter+Context`),
/// and only models reached outside it are queued. Each model's output is streamed by
/// ``ValueEncoder``, and the output buffer is handed to the file between models, so the whole
/// output is never in memory at once.
final class GraphStreamWriter {
    // The stored properties are `@exclusivity(unchecked)`: they are touched for every value
    // written or read, one instance is used by one thread, and the dynamic checks cost more than
    // the work they guard.
    // `sink` is a constant: a value written costs a few calls to it, and loading a variable
    // would retain and release the sink around each.
    let sink: any GraphSink
    /// `sink` when it is an open tree: then containers are nodes that stay open, every container
    /// use focuses its node first, and nothing is out of order (see ``OpenTreeSink``).
    let tree: OpenTreeSink?
    /// The position of every model written or queued so far, by id.
    @exclusivity(unchecked) var positions = ModelIDTable()
    /// Models queued by reaching them, which are written after the context's own (positions
    /// from `queueBase` on), and what the writer needs to know of each without reading it again
    /// (its identity, to catch two instances with one id; its class and context, to see that a
    /// reference resolves to it). `queue` holds the models that nothing else keeps alive during
    /// the walk: all of them, except models of ``slotContext`` (see ``TypeSlotPositions``).
    @exclusivity(unchecked) private var queue: [any Model] = []
    @exclusivity(unchecked) var queued: [QueuedModel] = []
    /// The position of the first model in `queue`: 0 when writing a subgraph; the number of
    /// models in the context when writing a context.
    @exclusivity(unchecked) var queueBase = 0
    /// When walking from a root: the number of models in the root's context, the most the walk
    /// can reach there. The tables grow towards it in larger steps (see ``makeRoom()``).
    @exclusivity(unchecked) var expectedModels = 0
    /// When walking from a root in a context: that context, whose models get their positions
    /// from `slotPositions` (by type slot) instead of `positions` (by id), which then holds only
    /// the models reached outside it.
    @exclusivity(unchecked) var slotContext: ModelContext? {
        didSet { slotContextIdentity = slotContext.map(ObjectIdentifier.init) }
    }
    @exclusivity(unchecked) private(set) var slotContextIdentity: ObjectIdentifier?
    @exclusivity(unchecked) var slotPositions: TypeSlotPositions? {
        didSet {
            unretainedSlots = slotPositions.map(Unmanaged.passUnretained)
            ownerUsesSlots = slotPositions != nil && ownerContextIdentity != nil && ownerContextIdentity == slotContextIdentity
        }
    }
    /// `slotContext`'s ``ModelContext/removalCount`` when the walk began: while it holds, every
    /// model has the type slot it had when its class's list was kept.
    @exclusivity(unchecked) var slotRemovals = 0
    /// The positions by type slot after the walk stopped using them (a model left the context
    /// mid-walk): kept because their copies of the context's lists keep the models they
    /// positioned alive until the walk ends.
    @exclusivity(unchecked) var retiredSlots: TypeSlotPositions?
    /// `slotPositions`, read for every reference without retaining it.
    @exclusivity(unchecked) private(set) var unretainedSlots: Unmanaged<TypeSlotPositions>?
    /// Whether the model being written is in `slotContext`: then its references' targets found
    /// there are positioned by type slot.
    @exclusivity(unchecked) private(set) var ownerUsesSlots = false
    /// The object ids of the models that have one, by position, so that pointers to a model need
    /// not read its storage. Most models have none.
    @exclusivity(unchecked) var objectIds: [Int: String] = [:]
    /// When writing a whole context: that context. Every model with a position below
    /// `queueBase` is one of its models, and a reference whose id is there points to it.
    @exclusivity(unchecked) var writtenContext: ModelContext?
    /// The context of the model being written: its references resolve there.
    @exclusivity(unchecked) var ownerContext: ModelContext? {
        didSet {
            ownerContextIdentity = ownerContext.map(ObjectIdentifier.init)
            unretainedOwnerContext = ownerContext.map(Unmanaged.passUnretained)
            ownerUsesSlots = slotPositions != nil && ownerContextIdentity != nil && ownerContextIdentity == slotContextIdentity
        }
    }
    /// `ownerContext`, for looking models up in it without retaining it (`ownerContext` keeps
    /// it alive): see ``ownerContextIdentity``.
    @exclusivity(unchecked) private(set) var unretainedOwnerContext: Unmanaged<ModelContext>?
    /// `ownerContext`'s identity, compared for every reference: reading the context itself
    /// would retain it, and a context has a side table (it is weakly referenced), which makes
    /// each retain and release slow.
    @exclusivity(unchecked) private(set) var ownerContextIdentity: ObjectIdentifier?
    /// What the model being written holds while it is in no context (see ``ModelObject/held``).
    @exclusivity(unchecked) var ownerHeld: [AnyObject] = []
    /// Whether a reference property (a `ModelRef` or `ModelArray`, even an empty one) was written:
    /// the serialized form of a model without any is its dictionary alone, as in ModelKit for
    /// Objective-C.
    @exclusivity(unchecked) var sawReference = false
    /// Whether references are resolved and their targets written too (a graph); otherwise each
    /// is written as the pointer its id makes (one model's values).
    @exclusivity(unchecked) var followsReferences = true
    /// When writing a store's save record: the store's context. A reference to one of its models
    /// that is not among those written is written as a pointer, and its target is not followed
    /// (the store has it already), so the record holds what changed and nothing more.
    @exclusivity(unchecked) var boundary: ModelContext?
    /// Whether every reference to a queued model looks its target up in the owner's context, as
    /// all of them did before the check by context and class (``pointerToQueued(_:id:at:)``): the
    /// tests compare the two outputs byte for byte.
    @exclusivity(unchecked) var looksUpQueuedTargets = false
    /// What a long write reports its models to, and asks whether to stop (asynchronous writes).
    @exclusivity(unchecked) var progress: WriteProgress?
    /// Open containers inside the current model's properties, innermost last (true: object).
    @exclusivity(unchecked) private var open: [Bool] = []
    /// Where a container was used out of nesting order, if one was.
    @exclusivity(unchecked) private(set) var misuse: String?
    /// The last model type written and its name: model names are looked up under a lock, and
    /// consecutive models and pointers are mostly of the same type.
    @exclusivity(unchecked) private var lastType: ObjectIdentifier?
    @exclusivity(unchecked) private var lastName = ""
    @exclusivity(unchecked) private var names: [ObjectIdentifier: String] = [:]
    /// The last type checked for being a reference, and the answer (a cast costs a lookup).
    @exclusivity(unchecked) fileprivate var lastValueType: ObjectIdentifier?
    @exclusivity(unchecked) fileprivate var lastReferenceType: (any StreamReference.Type)?
    /// Whether `lastValueType` is written in a stable order (a set or a dictionary).
    @exclusivity(unchecked) fileprivate var lastIsStableOrder = false
    let propertiesPath: [any CodingKey] = [IndexKey(stringValue: "properties")]

    init(sink: any GraphSink) {
        self.sink = sink
        tree = sink as? OpenTreeSink
    }

    /// Writes the envelope, then the models `body` writes, then every model they reach, then the
    /// `tracking` member when `tracking` gives one (a context with package metadata).
    ///
    /// - Returns: The number of models written.
    func writeDocument(_ body: () throws -> Void, tracking: () -> TrackingMember? = { nil }) throws -> Int {
        sink.beginObject()
        sink.key("format")
        sink.string(Envelope.formatName)
        sink.key("version")
        sink.int(Envelope.version)
        sink.key("writtenBy")
        sink.string(Envelope.writtenBy)
        sink.key("models")
        sink.beginArray()
        try body()
        try writeQueue()
        sink.endArray()
        if let member = tracking() {
            sink.key("tracking")
            member.write(to: sink)
        }
        sink.endObject()
        try sink.finish()
        // The buffer's owner writes what is left (`AtomicFile` on this thread; memory keeps it).
        return queueBase + queued.count
    }

    /// Writes every model reachable from `root` without the envelope, as an array with the root
    /// first: the layout of ``Model/serialize(as:)``. Afterwards ``sawReference`` tells whether the
    /// root has reference properties, which decides whether that layout is the array or the
    /// root's dictionary alone.
    func writeModels(root: any Model) throws {
        try writeModels(roots: [root])
    }

    /// Writes every model reachable from `roots` (the roots first, in order), as
    /// ``writeModels(root:)`` does; with a ``boundary``, only the roots.
    func writeModels(roots: [any Model]) throws {
        guard let root = roots.first else {
            sink.beginArray()
            sink.endArray()
            return try sink.finish()
        }
        expectedModels = root.modelContext?.unobservedCount ?? 0
        // (The tests that look every queued target up compare with the walk by id.)
        if !looksUpQueuedTargets, let context = root.modelContext {
            slotContext = context
            slotPositions = TypeSlotPositions()
        }
        // Type slots move when a model leaves its context's list (a value's `encode(to:)` may
        // remove one mid-walk): the walk notes the count of removals, and the first look-up
        // that a moved slot could mislead checks it (see `dropSlotsIfMoved()`).
        slotRemovals = slotContext?.removalCount ?? 0
        sink.beginArray()
        for root in roots { try enqueue(root) }
        try writeQueue()
        sink.endArray()
        try sink.finish()
    }

    /// Writes the queued models, and those they reach, until the queue is done.
    private func writeQueue() throws {
        var next = 0
        while next < queued.count {
            let entry = queued[next]
            try writeQueued(entry.modelType, identity: entry.identity, index: queueBase + next)
            next += 1
            try sink.buffer.flushIfNeeded()
        }
    }

    /// Writes the queued model whose identity is `identity` and whose class is `type`, without
    /// retaining it: `queue` holds it until the write ends. (Copying it out of `queue` retains
    /// and releases it, and a model that is weakly referenced has a side table, which makes each
    /// of those slow.)
    private func writeQueued<M: Model>(_ type: M.Type, identity: ObjectIdentifier, index: Int) throws {
        let address = UnsafeRawPointer(bitPattern: UInt(bitPattern: identity)).unsafelyUnwrapped
        try Unmanaged<M>.fromOpaque(address)._withUnsafeGuaranteedRef { try writeModel($0, index: index) }
    }

    /// Makes room in the walk's tables for more models than they hold, before one more is added
    /// to full ones. Walking from a root, they grow eightfold (up to the root context's size,
    /// when that is more than twice what they hold): a walk that goes on is likely to reach
    /// much of its context, and each doubling moves every entry again. Eightfold costs at most
    /// eight times the memory the walk needs, and never more than the whole context would.
    private func makeRoom() {
        let count = positions.count
        var target = 2 * count
        if queueBase == 0 { target = Swift.max(target, Swift.min(8 * count, expectedModels)) }
        positions.reserveCapacity(target)
        queue.reserveCapacity(target - queueBase)
        queued.reserveCapacity(target - queueBase)
    }

    /// Writes the envelope and every model reachable from `roots`, the roots first.
    ///
    /// - Returns: The number of models written.
    ///
    /// With `tracking`, the envelope also gets the `tracking` member of the first root's context
    /// for the models written, when that context keeps package metadata (snapshots); with a
    /// `store` context, that context's member, its package state included when it changed (a
    /// store's save record, which may hold no model).
    @discardableResult
    func writeDocument(roots: [any Model], tracking: Bool = false, store: ModelContext? = nil) throws -> Int {
        try writeDocument {
            queue.reserveCapacity(roots.count)
            for root in roots { try enqueue(root) }
        } tracking: {
            if let store { return TrackingMember.gather(queuedModels, context: store, packageState: store.packageStateChanged) }
            guard tracking, let context = roots.first?.modelContext else { return nil }
            return TrackingMember.gather(queuedModels, context: context, packageState: false)
        }
    }

    @discardableResult
    func enqueue(_ model: any Model) throws -> Int {
        try enqueueRoot(model)
    }

    private func enqueueRoot<M: Model>(_ model: M) throws -> Int {
        let storage = model.storage
        let metadata = storage.metadata
        return try enqueueModel(model, id: metadata.modelId, objectId: metadata.objectId, context: storage.contextIdentity)
    }

    /// Queues `model` (whose id is `id`, in the context whose identity is `context`) if it is new
    /// to this graph; returns its position.
    @discardableResult
    func enqueueModel<M: Model>(_ model: M, id: ModelID, objectId: String?, context: ObjectIdentifier?) throws -> Int {
        let next = queueBase + queued.count
        if let slots = unretainedSlots, context != nil, context == slotContextIdentity,
            ObjectIdentifier(Swift.type(of: model)) == ObjectIdentifier(M.self)
        {
            // Positioned by slot only when it is in the kept copy of its class's list at its
            // slot: then no other model has that class's slot (one listed under another type,
            // a subclass, goes by id below), and the copy keeps it alive.
            let slot = model.storage.box.typeSlot
            if slot >= 0 {
                let table = slots._withUnsafeGuaranteedRef { $0.table(for: ObjectIdentifier(M.self)) }
                if !slots._withUnsafeGuaranteedRef({ $0.hasList(table: table) }) { keepList(of: M.self, table: table) }
                if slots._withUnsafeGuaranteedRef({ $0.keepsAlive(ObjectIdentifier(model), table: table, slot: slot) }) {
                    let known = slots._withUnsafeGuaranteedRef { $0.position(table: table, slot: slot) }
                    if known >= 0 { return known }
                    // A model outside the context may have taken the id first.
                    if positions.count != 0, let other = positions.index(of: id) {
                        try checkSameInstance(model, id: id, as: other, next: next)
                        return other
                    }
                    slots._withUnsafeGuaranteedRef { $0.setPosition(next, table: table, slot: slot) }
                    if queued.count == queued.capacity { makeQueueRoom() }
                    append(model, context: context, objectId: objectId, at: next, retaining: false)
                    return next
                }
            }
        }
        // (Models outside the context come here, and models that are not at their slot in the
        // kept list: one that moved, because a model left the context, must be found by id.)
        if unretainedSlots != nil { dropSlotsIfMoved() }
        if slotPositions != nil, let twin = slottedPosition(of: id) {
            try checkSameInstance(model, id: id, as: twin, next: next)
            return twin
        }
        if positions.isFull { makeRoom() }
        let known = positions.insert(id, index: next) ?? next
        if known == next {
            append(model, context: context, objectId: objectId, at: next)
            return next
        }
        // A model of the written context is its context's instance; the others must be the
        // instance queued first.
        if known >= queueBase { try checkSameInstance(model, id: id, as: known, next: next) }
        return known
    }

    @inline(__always)
    private func append<M: Model>(
        _ model: M, context: ObjectIdentifier?, objectId: String?, at next: Int, retaining: Bool = true
    ) {
        let modelType = Swift.type(of: model)
        queued.append(
            QueuedModel(
                identity: ObjectIdentifier(model), type: ObjectIdentifier(modelType), context: context, modelType: modelType))
        if retaining { queue.append(model) }
        if let objectId { objectIds[next] = objectId }
    }

    /// Throws unless `model` is the instance queued at `known` with the same id.
    func checkSameInstance<M: Model>(_ model: M, id: ModelID, as known: Int, next: Int) throws {
        guard queued[known - queueBase].identity == ObjectIdentifier(model) else {
            throw SerializationError(
                .duplicateModelId, modelIndex: next, modelName: M.modelName,
                expected: "one instance per model id in a graph", found: "two different instances with model id \(id)")
        }
    }

    /// The models written or queued by walking a graph (``writeModels(root:)``), in the order
    /// written.
    var queuedModels: [any Model] { queue.count == queued.count ? queue : queued.map(\.model) }

    func name<M: Model>(of type: M.Type) -> String {
        let key = ObjectIdentifier(type)
        if key == lastType { return lastName }
        let name = names[key] ?? ModelRegistry.name(of: type)
        names[key] = name
        lastType = key
        lastName = name
        return name
    }

    func writeModel<M: Model>(_ model: M, index: Int) throws {
        let name = name(of: M.self)
        // One read of the storage: each read through the protocol copies it.
        let storage = model.storage
        _ = storage.resolveUpdatedAt()  // a write marks the stamp as due without reading the clock
        let metadata = storage.metadata
        // A whole context's own models all resolve there (set once: a context is weakly
        // referenced, which makes retaining it slow); models reached outside it, in their own,
        // which is set only when it changes (in a walk, it mostly does not), for the same reason.
        // A queued model's context is the one noted when it was queued: reading it from the model
        // again forms a reference to the context, which costs the same slow retain and release.
        if index >= queueBase {
            if queued[index - queueBase].context != ownerContextIdentity { ownerContext = storage.lookupContext }
        } else if writtenContext == nil, storage.contextIdentity != ownerContextIdentity {
            ownerContext = storage.lookupContext
        }
        ownerHeld = storage.box.held
        // Later pointers to this model use its actual object id.
        if metadata.objectId != nil || !objectIds.isEmpty { objectIds[index] = metadata.objectId }
        sink.beginModel(
            name: name, id: metadata.modelId, objectId: metadata.objectId, createdAt: metadata.createdAt,
            updatedAt: metadata.updatedAt)
        // In a tree, the model's node, to come back to once its properties are written.
        let modelNode = tree?.focused ?? -1
        do {
            let checkpoint = sink.checkpoint()
            let encoder = ValueEncoder(
                writer: self, level: 1, depth: 1, codingPath: propertiesPath, node: tree?.reserve() ?? -1)
            do {
                // Encoded in place (see `encodeInPlace(to:)`).
                try storage.box.values.encodeInPlace(to: encoder)
            } catch let error as SerializationError where misuse != nil && error.code == .invalidValue {
                // Reported below: the model is written the slow way.
            }
            if let tree {
                tree.focus(modelNode)
            } else if misuse == nil, !encoder.started {
                sink.beginObject()
                sink.endObject()
            }
            _ = closeContainers(above: 0)
            if misuse != nil {
                // The properties cannot be streamed (super encoders, or containers used out of
                // order): encode them as a tree, whose containers stay open, and write that.
                misuse = nil
                sink.rollback(to: checkpoint)
                try treeValue(of: storage.values).write(to: sink)
            }
        } catch {
            throw SerializationError(encoding: error, modelIndex: index, modelName: name)
        }
        sink.endObject()
        if let progress { try progress.modelWritten() }
    }

    /// `values` as a tree, whose containers stay open until the end: for values that use
    /// containers out of nesting order, which a stream cannot follow. The same encoder writes
    /// them, into an ``OpenTreeSink``, with a writer that takes over this one's graph for the
    /// time (its queue, positions and owner), so that references queue their targets here as
    /// streamed ones do.
    func treeValue<P: Encodable>(of values: P) throws -> ModelValue {
        let tree = OpenTreeSink(usesJSONForms: sink.usesJSONForms)
        let writer = GraphStreamWriter(sink: tree)
        Self.moveGraph(from: self, to: writer)
        defer { Self.moveGraph(from: writer, to: self) }
        try writer.box(values, level: 1, depth: 1, path: { writer.propertiesPath })
        return tree.tree()
    }

    /// Hands the graph being written from one writer to another: the tables move (swapped, so
    /// nothing is copied), the rest is copied.
    private static func moveGraph(from source: GraphStreamWriter, to target: GraphStreamWriter) {
        swap(&source.positions, &target.positions)
        swap(&source.queue, &target.queue)
        swap(&source.queued, &target.queued)
        swap(&source.objectIds, &target.objectIds)
        target.queueBase = source.queueBase
        target.expectedModels = source.expectedModels
        target.slotContext = source.slotContext
        target.slotPositions = source.slotPositions
        target.slotRemovals = source.slotRemovals
        target.retiredSlots = source.retiredSlots
        target.writtenContext = source.writtenContext
        target.ownerContext = source.ownerContext
        target.ownerHeld = source.ownerHeld
        target.followsReferences = source.followsReferences
        target.looksUpQueuedTargets = source.looksUpQueuedTargets
        target.boundary = source.boundary
        target.sawReference = target.sawReference || source.sawReference
    }

    /// A value (one model's properties, or any part of them) as a tree, in the property-list
    /// forms, each reference as the pointer its id makes (not followed): what change tracking,
    /// indexes, queries and stable orders compare.
    static func valueTree<T: Encodable>(of value: T) throws -> ModelValue {
        let sink = ModelValueSink(usesJSONForms: false)
        let writer = GraphStreamWriter(sink: sink)
        writer.followsReferences = false
        do {
            try writer.box(value, level: 1, depth: 1, path: { writer.propertiesPath })
        } catch let error as SerializationError where writer.misuse != nil && error.code == .invalidValue {
            // Encoded as an open tree below.
        }
        _ = writer.closeContainers(above: 0)
        if writer.misuse != nil { return try writer.treeValue(of: value) }
        return sink.roots.first ?? .object(ModelValue.Object())
    }

    /// The pointer to `model` as a value, queuing the model if it is new to this graph (for
    /// ``PropertyEncoder``).
    func pointerValue<M: Model>(to model: M) throws -> ModelValue {
        sawReference = true
        let storage = model.storage
        let metadata = storage.metadata
        if try !isBeyondBoundary(model) {
            try enqueueModel(model, id: metadata.modelId, objectId: metadata.objectId, context: storage.contextIdentity)
        }
        return ModelValue.pointer(name: name(of: M.self), id: metadata.modelId, objectId: metadata.objectId)
    }

    /// Writes a pointer to `model`, queuing the model if it is new to this graph.
    ///
    /// - Parameter inOwnersContext: Whether `model` was found in ``ownerContext`` (then that is its
    ///   context, and it is not read from the model: see ``writeModel(_:index:)``).
    func pointer<M: Model>(to model: M, inOwnersContext: Bool = false) throws {
        let storage = model.storage
        let metadata = storage.metadata
        if try !isBeyondBoundary(model) {
            let context = inOwnersContext ? ownerContextIdentity : storage.contextIdentity
            try enqueueModel(model, id: metadata.modelId, objectId: metadata.objectId, context: context)
        }
        writePointer(name: name(of: M.self), id: metadata.modelId, objectId: metadata.objectId)
    }

    /// Whether the references of the model being written are looked up by id in ``positions``
    /// before their targets are found: not when the owner is in ``slotContext`` and nothing is
    /// positioned by id (then every target is found in the context and positioned by slot).
    var checksPositionsFirst: Bool { !ownerUsesSlots || positions.count != 0 }

    /// The target of the reference at `reference` for the model being written, and whether it
    /// was found in ``ownerContext`` (see ``pointer(to:inOwnersContext:)``).
    @inline(__always)
    func target<M: Model>(of reference: UnsafePointer<ModelRef<M>>) -> (model: M, inOwnersContext: Bool)? {
        guard let id = reference.pointee.id else { return nil }
        if let owner = unretainedOwnerContext,
            let found = owner._withUnsafeGuaranteedRef({ $0.registeredModel(M.self, modelId: id) })
        {
            return (found, true)
        }
        guard !ownerHeld.isEmpty, let held = ModelRef<M>.live(id, among: ownerHeld) else { return nil }
        return (held, false)
    }

    /// Whether `model` belongs to the ``boundary`` context, so that a pointer to it is written
    /// without writing the model.
    ///
    /// - Throws: ``SerializationError/Code/foreignReference`` for a model outside the boundary
    ///   context: a store's record would hold it once, and the store would never see its later
    ///   changes.
    @inline(__always)
    private func isBeyondBoundary<M: Model>(_ model: M) throws -> Bool {
        guard let boundary else { return false }
        if model.storage.lookupContext === boundary { return true }
        throw SerializationError(
            .foreignReference, path: "properties", expected: "a reference to a model of the store's context",
            found: "a reference to \(M.modelName) \(model.modelId), which is \(model.modelContext == nil ? "in no context" : "in another context")")
    }

    /// Writes the pointer for the reference at `reference` if its target is already queued;
    /// returns `false` otherwise. Skipping the resolution matters: it costs more than writing the
    /// pointer.
    ///
    /// A target with a position in the written context is that context's model with the id,
    /// which is where the reference resolves. A target queued by reaching it must be the very
    /// instance the reference resolves to in its owner's context (else it resolves afresh, and a
    /// second instance with the id is an error). It is when it is the owner's context's own
    /// model with the id, of the reference's class exactly: a context holds one instance per id,
    /// so this needs no look-up in the context (a look-up per reference, on top of the one
    /// that found the position, is what a whole context's writer never pays).
    func pointerToQueued<M: Model>(_ reference: UnsafePointer<ModelRef<M>>) -> Bool {
        guard let id = reference.pointee.id else { return false }
        return pointerToQueued(reference, id: id, at: positions.index(of: id))
    }

    /// ``pointerToQueued(_:)`` for a reference to `id`, which has the position `known`.
    @inline(__always)
    func pointerToQueued<M: Model>(_ reference: UnsafePointer<ModelRef<M>>, id: ModelID, at known: Int?) -> Bool {
        guard let known else { return false }
        if known >= queueBase {
            let entry = queued[known - queueBase]
            let isOwnersModel =
                !looksUpQueuedTargets && entry.context != nil && entry.context == ownerContextIdentity
                && entry.type == ObjectIdentifier(M.self)
            if !isOwnersModel, !resolvesToQueued(M.self, id: id, entry: entry) { return false }
        }
        writePointer(name: name(of: M.self), id: id, objectId: objectIds.isEmpty ? nil : objectIds[known])
        return true
    }

    /// Whether a reference to `id` of target type `M`, written by the current model, resolves to
    /// the queued model `entry` (by looking it up: models of other classes, other contexts).
    private func resolvesToQueued<M: Model>(_ type: M.Type, id: ModelID, entry: QueuedModel) -> Bool {
        guard let target = ownerContext?.model(M.self, modelId: id) else { return false }
        return entry.identity == ObjectIdentifier(target)
    }

    func writePointer(name: String, id: ModelID, objectId: String?) {
        sink.pointer(name: name, id: id, objectId: objectId)
    }

    // MARK: Containers

    /// Opens a container in the current place; returns its node in a tree (else -1).
    func openContainer(isObject: Bool) -> Int {
        if isObject { sink.beginObject() } else { sink.beginArray() }
        if let tree { return tree.focused }
        open.append(isObject)
        return -1
    }

    /// Closes every container nested deeper than `level`. Returns `false` when the container at
    /// `level` is itself already closed.
    @inline(__always) func closeContainers(above level: Int) -> Bool {
        // A tree's containers never close: the container written to is focused instead.
        if tree != nil { return true }
        guard open.count >= level else { return false }
        while open.count > level {
            if open.removeLast() { sink.endObject() } else { sink.endArray() }
        }
        return true
    }

    func isOpen(level: Int, isObject: Bool) -> Bool {
        tree != nil || (open.count >= level && open[level - 1] == isObject)
    }

    /// Prepares to write into the container at `level`, whose node in a tree is `node`.
    @inline(__always) func enter(level: Int, node: Int, at path: [any CodingKey]) throws {
        if let tree { return tree.focus(node) }
        guard closeContainers(above: level) else {
            noteMisuse(at: path)
            throw SerializationError(
                .invalidValue, path: describe(path), expected: "containers used in nesting order (files are written as a stream)",
                found: "a value written to a container that was already closed")
        }
    }

    func noteMisuse(at path: [any CodingKey]) {
        // A tree takes every order: nothing to fall back from.
        if tree == nil, misuse == nil { misuse = describe(path) }
    }

    // MARK: Values

    /// Writes one value, special-casing the types ModelKit writes in its own forms (as
    /// ``PropertyEncoder/box(_:at:)`` does for the tree).
    func box<T: Encodable>(_ value: T, level: Int, depth: Int, path: () -> [any CodingKey]) throws {
        if T.self == String.self { return sink.string(unsafeBitCast(value, to: String.self)) }
        if T.self == Date.self { return sink.date(unsafeBitCast(value, to: Date.self)) }
        if T.self == [String].self {
            sink.beginArray()
            for text in unsafeBitCast(value, to: [String].self) { sink.string(text) }
            return sink.endArray()
        }
        if T.self == Double.self { return sink.double(unsafeBitCast(value, to: Double.self)) }
        if T.self == Int.self { return sink.int(Int64(unsafeBitCast(value, to: Int.self))) }
        if T.self == Data.self { return sink.data(unsafeBitCast(value, to: Data.self)) }
        if T.self == URL.self { return sink.string((unsafeBitCast(value, to: URL.self)).absoluteString) }
        if T.self == Float.self { return sink.double(floatAsDouble(unsafeBitCast(value, to: Float.self))) }
        if T.self == GeoPoint.self {
            let point = unsafeBitCast(value, to: GeoPoint.self)
            sink.beginObject()
            sink.key("__type")
            sink.sharedValue("GeoPoint")
            sink.key("latitude")
            sink.double(point.latitude)
            sink.key("longitude")
            sink.double(point.longitude)
            return sink.endObject()
        }
        if T.self == [Int].self {
            sink.beginArray()
            for number in unsafeBitCast(value, to: [Int].self) { sink.int(Int64(number)) }
            return sink.endArray()
        }
        if T.self == [Double].self {
            sink.beginArray()
            for number in unsafeBitCast(value, to: [Double].self) { sink.double(number) }
            return sink.endArray()
        }
        if let referenceType = streamReferenceType(of: T.self) {
            do {
                return try withUnsafePointer(to: value) { try referenceType.writePointers(at: UnsafeRawPointer($0), with: self) }
            } catch let error as SerializationError where error.path.isEmpty {
                throw SerializationError(error.code, path: describe(path()), expected: error.expected, found: error.found)
            }
        }
        // Sets and dictionaries in a stable order, so that equal models give equal bytes
        // (`streamReferenceType(of:)` has just classified T).
        if lastIsStableOrder, let unordered = value as? any StableOrderEncodable {
            return try box(unordered.inStableOrder(), level: level, depth: depth, path: path)
        }
        guard depth < SerializationError.maximumDepth else {
            throw SerializationError(
                .nestingTooDeep, path: describe(path()),
                expected: "at most \(SerializationError.maximumDepth) levels of nested values",
                found: "deeper nesting (a cycle among objects that are not models?)")
        }
        let nested = ValueEncoder(writer: self, level: level, depth: depth, codingPath: path(), node: tree?.reserve() ?? -1)
        try value.encode(to: nested)
        if nested.started {
            _ = closeContainers(above: level - 1)
        } else if tree == nil {
            // (A tree's node left pending is an empty object already.)
            // Nothing written: an empty object, as the tree serializer writes it.
            sink.beginObject()
            sink.endObject()
        }
    }
}

/// What the writer keeps of a model it queued, so that references to it need not read it.
struct QueuedModel {
    let identity: ObjectIdentifier
    /// Its class.
    let type: ObjectIdentifier
    /// The context it is in, if any: the context's own instance for its id.
    let context: ObjectIdentifier?
    /// Its class, to write it as one (`type` is this class's identity).
    let modelType: any Model.Type

    /// The model, while the writer keeps it alive.
    var model: any Model { Self.model(modelType, identity: identity) }

    private static func model<M: Model>(_ type: M.Type, identity: ObjectIdentifier) -> any Model {
        Unmanaged<M>.fromOpaque(UnsafeRawPointer(bitPattern: UInt(bitPattern: identity)).unsafelyUnwrapped).takeUnretainedValue()
    }
}

extension Encodable {
    /// `encode(to:)` on a value in place. Calling it on a value stored in a class makes the
    /// compiler copy the value first (the class could change it during the call), and copying
    /// properties retains every string, array and to-many reference's context link in them, an
    /// atomic operation each. An `inout` value is exclusively the callee's, so it is passed by
    /// address as it is. Nothing is written to it.
    @inline(__always) fileprivate mutating func encodeInPlace(to encoder: any Encoder) throws {
        try encode(to: encoder)
    }
}

/// References write themselves as pointers (and queue their targets) instead of encoding.
///
/// The value is passed by address: copying a to-many reference retains its storage and its
/// context link, which costs more than writing it.
protocol StreamReference {
    static func writePointers(at value: UnsafeRawPointer, with writer: GraphStreamWriter) throws
}

extension GraphStreamWriter {
    /// `type` as a ``StreamReference`` type, or `nil`; remembers the last answer, as values of
    /// one type tend to come in runs and the cast looks up conformances.
    @inline(__always) fileprivate func streamReferenceType<T>(of type: T.Type) -> (any StreamReference.Type)? {
        let key = ObjectIdentifier(type)
        if key != lastValueType {
            lastValueType = key
            lastReferenceType = type as? any StreamReference.Type
            lastIsStableOrder = type is any StableOrderEncodable.Type
        }
        return lastReferenceType
    }
}

extension ModelRef: StreamReference {
    static func writePointers(at value: UnsafeRawPointer, with writer: GraphStreamWriter) throws {
        let reference = value.assumingMemoryBound(to: ModelRef.self)
        writer.sawReference = true
        guard writer.followsReferences else {
            guard let id = reference.pointee.id else { return writer.sink.null() }
            return writer.sink.pointer(name: writer.name(of: Target.self), id: id, objectId: nil)
        }
        if writer.checksPositionsFirst {
            if writer.pointerToQueued(reference) { return }
        } else if try writer.pointerBySlot(reference) {
            return
        }
        guard let target = writer.target(of: reference) else { return writer.sink.null() }
        try writer.pointer(to: target.model, inOwnersContext: target.inOwnersContext)
    }
}

extension ModelArray: StreamReference {
    static func writePointers(at value: UnsafeRawPointer, with writer: GraphStreamWriter) throws {
        writer.sink.beginArray()
        writer.sawReference = true
        guard writer.followsReferences else {
            for reference in value.assumingMemoryBound(to: ModelArray.self).pointee.references {
                if let id = reference.id { writer.sink.pointer(name: writer.name(of: Element.self), id: id, objectId: nil) }
            }
            return writer.sink.endArray()
        }
        try value.assumingMemoryBound(to: ModelArray.self).pointee.references.withUnsafeBufferPointer { references in
            guard let base = references.baseAddress else { return }
            if !writer.checksPositionsFirst {
                for offset in references.indices {
                    if try writer.pointerBySlot(base + offset) { continue }
                    guard let target = writer.target(of: base + offset) else { continue }
                    try writer.pointer(to: target.model, inOwnersContext: target.inOwnersContext)
                }
                return
            }
            // Look up a run of elements before writing any of them: the lookups are independent,
            // so their cache misses overlap instead of coming one after the other.
            try withUnsafeTemporaryAllocation(of: Int.self, capacity: 16) { found in
                var start = 0
                while start < references.count {
                    let end = Swift.min(start + 16, references.count)
                    for offset in start..<end {
                        found[offset - start] = base[offset].id.flatMap { writer.positions.index(of: $0) } ?? -1
                    }
                    for offset in start..<end {
                        let known = found[offset - start]
                        if let id = base[offset].id, writer.pointerToQueued(base + offset, id: id, at: known < 0 ? nil : known) {
                            continue
                        }
                        guard let target = writer.target(of: base + offset) else { continue }
                        try writer.pointer(to: target.model, inOwnersContext: target.inOwnersContext)
                    }
                    start = end
                }
            }
        }
        writer.sink.endArray()
    }
}
