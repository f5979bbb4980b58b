import Foundation

// Removal with delete rules: the models to remove are found first (the root and what cascades
// reach, breadth first with a queue, so a tree of any depth needs no recursion, and each model
// once, so cycles end), deny rules are checked against that whole set before anything changes,
// then the inverses of nullify relationships drop the removed models, and the models go.

extension ModelContext {
    /// Removes `model` from the context, applying the delete rules of its relationships: models
    /// reached through ``DeleteRule/cascade`` relationships are removed too, ``DeleteRule/nullify``
    /// relationships drop the removed models from their inverses, and a ``DeleteRule/deny``
    /// relationship that still leads to a model not being removed stops the removal.
    ///
    /// ```swift
    /// try context.delete(folder)     // its notes go too (cascade), their tags forget them (nullify)
    /// ```
    ///
    /// Everything happens in one change of the context; a failed removal changes nothing.
    /// Removing a model the context doesn't hold does nothing.
    ///
    /// - Throws: ``RelationshipError/deleteDenied(model:relationship:target:)`` naming the model
    ///   whose deny relationship holds a model that would stay, and that model.
    /// - Complexity: O(r) in the references of the removed models, O(1) for a model of a type
    ///   without relationships.
    public func delete<M: Model>(_ model: M) throws(RelationshipError) {
        try remove(applyingRulesFrom: model, checkingDeny: true)
    }

    func remove<M: Model>(applyingRulesFrom root: M, checkingDeny: Bool) throws(RelationshipError) {
        guard root.storage.context === self else { return }
        guard RelationshipTable.of(M.self) != nil else { return remove(root, typeSlot: nil) }
        var order: [any Model] = [root]
        var seen: Set<ObjectIdentifier> = [ObjectIdentifier(root)]
        var next = 0
        while next < order.count {
            let model = order[next]
            next += 1
            guard let table = model.relationshipTable else { continue }
            for field in table.fields where field.rule == .cascade {
                for id in field.side.ids(in: model) {
                    guard let target = field.side.resolve(id, from: model) as? any Model, target.modelContext === self,
                        seen.insert(ObjectIdentifier(target)).inserted
                    else { continue }
                    order.append(target)
                }
            }
        }
        let removing = Set(order.map(\.modelId))
        if checkingDeny {
            for model in order {
                guard let table = model.relationshipTable else { continue }
                for field in table.fields where field.rule == .deny {
                    for id in field.side.ids(in: model) where !removing.contains(id) {
                        guard let target = field.side.resolve(id, from: model) as? any Model, target.modelContext === self
                        else { continue }
                        throw .deleteDenied(
                            model: ModelDescription(model), relationship: field.name, target: ModelDescription(target))
                    }
                }
            }
        }
        undoGroup {
            for model in order {
                guard let table = model.relationshipTable else { continue }
                for field in table.fields where field.rule != .noAction && field.rule != .cascade {
                    guard let inverse = field.inverse else { continue }
                    for id in field.side.ids(in: model) where !removing.contains(id) {
                        guard let target = field.side.resolve(id, from: model) else { continue }
                        inverse.remove(model.modelId, from: target)
                    }
                }
            }
            for model in order { removeOne(model) }
        }
    }

    private func removeOne<N: Model>(_ model: N) {
        remove(model, typeSlot: nil)
    }
}

extension Model {
    /// The relationships the model's type declares, or `nil`.
    var relationshipTable: RelationshipTable? { RelationshipTable.of(Self.self) }
}
