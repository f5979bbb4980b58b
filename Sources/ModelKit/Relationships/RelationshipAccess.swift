import Foundation
import Synchronization

/// One side of a relationship: the field at `offset` of `Owner.Properties`, a ``ModelRef`` or a
/// ``ModelArray`` leading to `Target`. Reads and writes it in place; every write is tracked and
/// reported as a change of the owner, as a write through the owner's property is.
protocol RelationshipSide: Sendable {
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

struct RelationshipAccess<Owner: Model, Target: Model>: RelationshipSide {
    let offset: Int
    let isArray: Bool

    /// The owner, typed: every model this side is handed is an `Owner` (the table of `Owner`
    /// made it, and inverses lead only to models of the declared type).
    @inline(__always) private func typed(_ owner: AnyModelObject) -> Owner { unsafeDowncast(owner, to: Owner.self) }

    func ids(in owner: AnyModelObject) -> [ModelID] {
        typed(owner).storage.box.withValuesPointer { ids(at: $0) }
    }

    func ids(at base: UnsafeRawPointer) -> [ModelID] {
        if isArray { return base.load(fromByteOffset: offset, as: ModelArray<Target>.self).references.compactMap { $0.id } }
        return base.load(fromByteOffset: offset, as: ModelRef<Target>.self).id.map { [$0] } ?? []
    }

    func firstId(in owner: AnyModelObject) -> ModelID? {
        typed(owner).storage.box.withValuesPointer { base in
            if isArray { return base.load(fromByteOffset: offset, as: ModelArray<Target>.self).references.first?.id }
            return base.load(fromByteOffset: offset, as: ModelRef<Target>.self).id
        }
    }

    func contains(_ id: ModelID, in owner: AnyModelObject) -> Bool {
        typed(owner).storage.box.withValuesPointer { base in
            if isArray {
                return base.load(fromByteOffset: offset, as: ModelArray<Target>.self).references.contains { $0.storedId == id }
            }
            return base.load(fromByteOffset: offset, as: ModelRef<Target>.self).storedId == id
        }
    }

    func exchange(_ target: AnyModelObject, in owner: AnyModelObject) -> ModelID? {
        let previous = typed(owner).storage.box.withValuesPointer {
            $0.load(fromByteOffset: offset, as: ModelRef<Target>.self).id
        }
        guard previous != target.metadata.modelId else { return previous }
        insert(target, into: owner)
        return previous
    }

    func insert(_ target: AnyModelObject, into owner: AnyModelObject) {
        let owner = typed(owner)
        let target = unsafeDowncast(target, to: Target.self)
        // Both in one context (the usual case): nothing to adopt or hold.
        if owner.context == nil || owner.context !== target.context { owner.adopt(target) }
        mutate(owner) { field in
            if isArray {
                field.assumingMemoryBound(to: ModelArray<Target>.self).pointee.references.append(ModelRef(target))
            } else {
                field.assumingMemoryBound(to: ModelRef<Target>.self).pointee = ModelRef(target)
            }
        }
    }

    func remove(_ id: ModelID, from owner: AnyModelObject) {
        guard contains(id, in: owner) else { return }
        mutate(typed(owner)) { field in
            if isArray {
                field.assumingMemoryBound(to: ModelArray<Target>.self).pointee.references.removeAll { $0.storedId == id }
            } else {
                field.assumingMemoryBound(to: ModelRef<Target>.self).pointee = ModelRef()
            }
        }
    }

    func resolve(_ id: ModelID, from owner: AnyModelObject) -> AnyModelObject? {
        let storage = typed(owner).storage
        return ModelRef<Target>(id: id).target(lookupIn: storage.context, held: storage.box.held)
    }

    /// A tracked write of the field: the owner's change bookkeeping runs as for a property write.
    private func mutate(_ owner: Owner, _ body: (UnsafeMutableRawPointer) -> Void) {
        let pending = owner._willChange()
        withUnsafeMutablePointer(to: &owner.storage.box.values) { body(UnsafeMutableRawPointer($0) + offset) }
        owner._didChange(pending)
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

    var removed: [ModelID] = []
    var added: [AnyModelObject] = []

    init() { Self.open.add(1, ordering: .relaxed) }
    deinit { Self.open.subtract(1, ordering: .relaxed) }
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
