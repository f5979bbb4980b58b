import Foundation

// Quiet writes, and the part of a write's bookkeeping that does not depend on the model's type, so that code not
// specialized for it (the sides of relationships, which keep inverses) can do it without the
// generic `_willChange`, whose run-time type lookups cost more than the write itself.

extension AnyModelObject {
    /// Whether a write may skip all change bookkeeping (see ``ModelObject/quietEpoch``): the
    /// model's type declares no relationships. One comparison: it is on every property write.
    @inlinable final var writesQuietly: Bool {
        quietEpoch == ChangeEpoch.current
    }

    /// Whether a write of a model whose type declares relationships may skip all change
    /// bookkeeping; a write of a reference must still keep its inverse.
    @inlinable final var writesQuietlyKeepingInverses: Bool {
        quietEpoch == ChangeEpoch.current ^ ChangeEpoch.relationshipsBit
    }

    /// Makes the following writes quiet, once a write has done what they would all do: marks
    /// `updatedAt` for stamping and tells the context the model changed (unless it was inserted
    /// since the context's last reset, when it counts as inserted).
    @usableFromInline final func settleQuietly(hasRelationships: Bool) {
        stampPending = true
        let epoch = ChangeEpoch.current
        quietEpoch = hasRelationships ? epoch ^ ChangeEpoch.relationshipsBit : epoch
        if let context, context.changeGeneration != insertedGeneration { context.noteUpdated(metadata.modelId) }
    }

    /// Does the bookkeeping of a write of a model whose type declares relationships and that has
    /// no tracker, when nothing more is needed: no values to save (the model is new), nobody
    /// observing or listening, no index. Returns `false`, having done nothing, otherwise; the
    /// write must then go through `_willChange`.
    ///
    /// - Complexity: O(1).
    final func settleUntrackedWrite() -> Bool {
        guard baseline != .saved, !observed else { return false }
        guard context?.nobodyListens() ?? !ModelNotifications.isEnabled else { return false }
        baseline = .newWritten
        settleQuietly(hasRelationships: true)
        return true
    }
}
