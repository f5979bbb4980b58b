import Foundation
import Synchronization

/// One side of a relationship: the field at `offset` of `Owner.Properties`, a ``ModelRef`` or a
/// ``ModelArray`` leading to `Target`. Reads and writes it in place; every write is tracked and
/// reported as a change of the owner, as a write through the owner's property is.
///
/// Sides are classes, so that handing one out (on every write of a reference) copies a pointer,
/// not an existential's contents.
protocol RelationshipSide: AnyObject, Sendable {
    var offset: Int { get }
    var isArray: Bool { get }
    /// The ids the field holds, in order.
    func ids(in owner: AnyModelObject) -> [ModelID]
    /// The ids the field holds in the properties at `base` (a value of `Owner.Properties`).
    func ids(at base: UnsafeRawPointer) -> [ModelID]
    /// The id a to-one field holds (the first of a to-many field).
    func firstId(in owner: AnyModelObject) -> ModelID?
    /// Whether the field holds `id`.
    func contains(_ id: ModelID, in owner: AnyModelObject) -> Bool
    /// Sets the field to `target` (to-one) or appends `target` (to-many).
    func insert(_ target: AnyModelObject, into owner: AnyModelObject)
    /// Sets a to-one field to `target` unless it already leads to it; returns the id it held
    /// before (`target`'s own when nothing changed). One call, where reading and then setting
    /// would look the generic types up twice (this code is not specialized).
    func exchange(_ target: AnyModelObject, in owner: AnyModelObject) -> ModelID?
    /// Empties the field if it holds `id` (to-one), or drops every occurrence of `id` (to-many).
    func remove(_ id: ModelID, from owner: AnyModelObject)
    /// The model with `id` as the owner's references resolve it.
    func resolve(_ id: ModelID, from owner: AnyModelObject) -> AnyModelObject?
}

final class RelationshipAccess<Owner: Model, Target: Model>: RelationshipSide {
    let offset: Int
    let isArray: Bool
    /// Where `Owner`'s properties start in its objects (-1 until known), learned from the first
    /// owner handed in: the same for every object of the type.
    private let valuesOffset = Atomic<Int>(-1)

    init(offset: Int, isArray: Bool) {
        self.offset = offset
        self.isArray = isArray
        // A to-one field is read and written as the id it stores: a `ModelRef` is nothing else.
        assert(MemoryLayout<ModelRef<Target>>.size == MemoryLayout<ModelID>.size)
    }

    /// The owner, typed: every model this side is handed is an `Owner` (the table of `Owner`
    /// made it, and inverses lead only to models of the declared type).
    @inline(__always) private func typed(_ owner: AnyModelObject) -> Owner { unsafeDowncast(owner, to: Owner.self) }

    /// The address of the field in `owner`, valid while `owner` lives and is not written
    /// through its properties. Why not `withUnsafeMutablePointer(to: &values)`: this code is
    /// not specialized, and that costs run-time lookups of `Owner.Properties` on every call.
    @inline(__always) private func field(in owner: AnyModelObject) -> UnsafeMutableRawPointer {
        var start = valuesOffset.load(ordering: .relaxed)
        if _slowPath(start < 0) {
            let box = typed(owner).storage.box
            start = withUnsafeMutablePointer(to: &box.values) {
                UnsafeRawPointer($0) - UnsafeRawPointer(Unmanaged.passUnretained(box).toOpaque())
            }
            valuesOffset.store(start, ordering: .relaxed)
        }
        return Unmanaged.passUnretained(owner).toOpaque() + start + offset
    }

    func ids(in owner: AnyModelObject) -> [ModelID] {
        ids(at: UnsafeRawPointer(field(in: owner)) - offset)
    }

    func ids(at base: UnsafeRawPointer) -> [ModelID] {
        if isArray { return base.load(fromByteOffset: offset, as: ModelArray<Target>.self).references.compactMap { $0.id } }
        let id = base.load(fromByteOffset: offset, as: ModelID.self)
        return id.isZero ? [] : [id]
    }

    func firstId(in owner: AnyModelObject) -> ModelID? {
        let field = self.field(in: owner)
        if isArray { return field.load(as: ModelArray<Target>.self).references.first?.id }
        let id = field.load(as: ModelID.self)
        return id.isZero ? nil : id
    }

    func contains(_ id: ModelID, in owner: AnyModelObject) -> Bool {
        let field = self.field(in: owner)
        if isArray { return field.load(as: ModelArray<Target>.self).references.contains { $0.storedId == id } }
        return field.load(as: ModelID.self) == id
    }

    func exchange(_ target: AnyModelObject, in owner: AnyModelObject) -> ModelID? {
        let previous = field(in: owner).load(as: ModelID.self)
        guard previous != target.metadata.modelId else { return previous }
        insert(target, into: owner)
        return previous.isZero ? nil : previous
    }

    func insert(_ target: AnyModelObject, into owner: AnyModelObject) {
        // Both in one context (the usual case): nothing to adopt or hold.
        if owner.context == nil || owner.context !== target.context {
            typed(owner).adopt(unsafeDowncast(target, to: Target.self))
        }
        if isArray {
            mutate(owner) {
                field(in: owner).assumingMemoryBound(to: ModelArray<Target>.self).pointee.references.append(
                    ModelRef(id: target.metadata.modelId))
            }
        } else {
            mutate(owner) { field(in: owner).storeBytes(of: target.metadata.modelId, as: ModelID.self) }
        }
    }

    func remove(_ id: ModelID, from owner: AnyModelObject) {
        guard contains(id, in: owner) else { return }
        if isArray {
            mutate(owner) {
                field(in: owner).assumingMemoryBound(to: ModelArray<Target>.self).pointee.references.removeAll {
                    $0.storedId == id
                }
            }
        } else {
            mutate(owner) { field(in: owner).storeBytes(of: ModelID.zero, as: ModelID.self) }
        }
    }

    func resolve(_ id: ModelID, from owner: AnyModelObject) -> AnyModelObject? {
        let storage = typed(owner).storage
        return ModelRef<Target>(id: id).target(lookupIn: storage.context, held: storage.box.held)
    }

    /// A tracked write of the field: the owner's change bookkeeping runs as for a property write
    /// (and is skipped as for one, when the owner writes quietly). `write` finds the field
    /// itself, after `_willChange` has saved the values it needs.
    private func mutate(_ owner: AnyModelObject, _ write: () -> Void) {
        // Most models written here are new and untracked (the other side of an append): their
        // first write settles without the generic `_willChange`.
        if owner.writesQuietlyKeepingInverses
            || (typed(owner).storage.tracker == nil && owner.settleUntrackedWrite())
        {
            write()
        } else {
            let model = typed(owner)
            let pending = model._willChange()
            write()
            model._didChange(pending)
        }
    }
}

extension RelationshipTable.Field {
    /// Brings the inverse side in line after `owner`'s field stopped holding `removed` (it may
    /// still hold some of them: an array may hold a model twice) and started holding `added`.
    func propagate(owner: AnyModelObject, removed: [ModelID], added: [AnyModelObject]) {
        guard let inverse else { return }
        let ownerId = owner.metadata.modelId
        for id in removed {
            if side.isArray, side.contains(id, in: owner) { continue }
            guard let target = side.resolve(id, from: owner) else { continue }
            inverse.remove(ownerId, from: target)
        }
        for target in added {
            if inverse.isArray {
                // One-to-many seen from the to-one side: the target's array can't hold the owner
                // already (the owner's reference did not lead to it), so no search is needed.
                if !side.isArray || !inverse.contains(ownerId, in: target) { inverse.insert(owner, into: target) }
            } else {
                let current = inverse.exchange(owner, in: target)
                if current == ownerId { continue }
                // The target left the model its to-one side led to: that one's side drops it.
                if let current, let previous = inverse.resolve(current, from: target) {
                    side.remove(target.metadata.modelId, from: previous)
                }
            }
        }
    }
}

/// What a mutation of a ``ModelArray`` with an inverse removed and added, for the owner to bring
/// the inverse side in line afterwards. Put first in the array's `held` models while the
/// owner mutates it (it is no model, so lookups pass over it).
final class ModelArrayJournal {
    /// How many journals are open, on any thread: arrays look for one only while some are.
    static let open = Atomic<Int>(0)

    // Only the mutation that opened the journal touches it.
    @exclusivity(unchecked) var removed: [ModelID] = []
    @exclusivity(unchecked) var added: [AnyModelObject] = []

    /// A journal with an array that holds only it, to stand for the `held` models of an array
    /// that holds none (most do): a context keeps one between mutations, so that a mutation
    /// allocates neither.
    final class Spare {
        let journal = ModelArrayJournal()
        private(set) lazy var alone: [AnyObject] = [journal]
    }

    /// Opens a journal for a mutation of `array`, reusing `context`'s spare one when it is free
    /// (a mutation made while another is open, from an observer say, gets its own).
    static func open<Element>(for array: inout ModelArray<Element>, in context: ModelContext?) -> Spare {
        let spare: Spare
        if let context, let kept = context.spareJournal {
            context.spareJournal = nil
            spare = kept
        } else {
            spare = Spare()
        }
        open.add(1, ordering: .relaxed)
        if array.held.isEmpty { array.held = spare.alone } else { array.held.insert(spare.journal, at: 0) }
        return spare
    }

    /// Closes the journal of `spare`, once the array no longer holds it and its entries are
    /// used, and gives it back to `context` for the next mutation.
    static func close(_ spare: Spare, in context: ModelContext?) {
        open.subtract(1, ordering: .relaxed)
        let journal = spare.journal
        if !journal.removed.isEmpty { journal.removed.removeAll(keepingCapacity: true) }
        if !journal.added.isEmpty { journal.added.removeAll(keepingCapacity: true) }
        if let context, context.spareJournal == nil { context.spareJournal = spare }
    }
}

extension ModelArray {
    /// The journal of the mutation running, if the owner keeps one.
    var journal: ModelArrayJournal? {
        guard ModelArrayJournal.open.load(ordering: .relaxed) != 0, let first = held.first else { return nil }
        return first as? ModelArrayJournal
    }
}

extension Model {
    /// The relationship field at `keyPath` when it has an inverse to keep in line.
    func inverseField<Value>(_ keyPath: WritableKeyPath<Properties, Value>) -> RelationshipTable.Field? {
        guard let table = RelationshipTable.of(Self.self), let offset = MemoryLayout<Properties>.offset(of: keyPath),
            let field = table.field(at: offset), field.inverse != nil
        else { return nil }
        return field
    }
}
