import Foundation

// Keeping inverses in line when a model's properties change as a whole (revert, a snapshot
// merged in, an undo) and when a load brings models whose two sides disagree.

extension Model {
    /// Brings the inverses of the model's relationships in line after its properties were
    /// replaced as a whole, `before` being what they were.
    func propagateReplacement(from before: Properties) {
        guard let table = relationshipTable else { return }
        var before = before
        for field in table.fields where field.inverse != nil {
            let old = withUnsafeBytes(of: &before) { field.side.ids(at: $0.baseAddress!) }
            let new = field.side.ids(in: self)
            guard old != new else { continue }
            let (oldSet, newSet) = (Set(old), Set(new))
            let added = Set(new.filter { !oldSet.contains($0) }).compactMap { field.side.resolve($0, from: self) }
            field.propagate(owner: self, removed: old.filter { !newSet.contains($0) }, added: added)
        }
    }
}

extension RelationshipTable {
    /// Makes both sides of every inverse of `models` (just loaded, of this table's type) agree,
    /// by the documented rule: a link one side records and the other side lacks is completed on
    /// the other side when it can take it (an array, or an empty to-one reference); when the
    /// other side is a to-one reference that leads elsewhere, that reference wins and the link
    /// is dropped from this side. Each repair is a tracked change of the model repaired.
    ///
    /// - Complexity: O(r) in the references of `models`.
    func repair(_ models: [AnyModelObject]) {
        for field in fields {
            guard let inverse = field.inverse else { continue }
            // The ids each array on the other side holds, read once per target.
            var held: [ObjectIdentifier: Set<ModelID>] = [:]
            for model in models where model.context != nil {
                let ownerId = model.metadata.modelId
                for id in field.side.ids(in: model) {
                    guard let target = field.side.resolve(id, from: model) else { continue }
                    if inverse.isArray {
                        let key = ObjectIdentifier(target)
                        let ids = held[key] ?? Set(inverse.ids(in: target))
                        held[key] = ids
                        if !ids.contains(ownerId) {
                            inverse.insert(model, into: target)
                            held[key]?.insert(ownerId)
                        }
                    } else {
                        switch inverse.firstId(in: target) {
                        case ownerId?: continue
                        case nil: inverse.insert(model, into: target)
                        case _?: field.side.remove(id, from: model)
                        }
                    }
                }
            }
        }
    }
}

extension ModelContext.LoadedModels {
    func repairInverses() {
        guard let table = RelationshipTable.of(M.self) else { return }
        table.repair(models.filter { $0.modelContext != nil })
    }
}
