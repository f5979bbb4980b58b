import Foundation

// A context-wide batch: `context.batchChanges { … }`. While it is open, every model of the
// context that someone listens to joins it at its first write, as if `beginChanges()` had been
// called on it, so that its later writes are quiet and it reports once, at the end. Live result
// sets only collect what changed while a batch is open, and place it all at the end, as one
// change set. Loads, merges and removals with their cascades run as batches; so do the undo and
// redo of a batch, which the batch registers as one action (see `registerContextUndo`).

/// The bookkeeping of one open context batch.
@usableFromInline final class ContextBatch {
    /// Nesting of `batchChanges`; only the outermost end reports (the depth stays 1 while it does).
    var depth = 1
    /// Models that joined at their first write, to end at the batch's end.
    var models: [any Model] = []
    /// What to do once the models reported: live result sets place what they collected.
    var afterEnd: [() -> Void] = []
    /// The undo actions of the batch, registered at its end as one action that runs them all
    /// (last first) in a batch: undo and redo of a batch are batches, one step each.
    var undoActions: [() -> Void] = []

    init() {}
}

extension ModelContext {
    /// Runs `body` as one batch of changes: every model it changes reports once, at the end, and
    /// every live result set of the context updates once, with one ``LiveChangeSet`` for all of
    /// it.
    ///
    /// ```swift
    /// context.batchChanges {
    ///     for author in authors { author.name = author.name.capitalized }
    /// }   // each live query of Author updates here, once
    /// ```
    ///
    /// Inside the batch, a model's writes are collected as ``Model/beginChanges()`` collects them:
    /// each model changed is one ``ModelChangeEvent`` to observers and one undo action, when the
    /// outermost batch ends. Insertions and removals are reported as they happen, but live result
    /// sets, like everything they show, keep the results they had at the batch's start until its
    /// end: reading them inside the batch (from an observer, say) gives those results. Batches
    /// nest; only the outermost one reports (one begun while it reports, by an observer that
    /// merges, say, nests in it too). With an undo manager, the batch is one undo step, and its
    /// undo and redo are batches too; a model loaded or merged into during the batch is undone
    /// only back to what the load gave it, as a load is not an edit. A live result set made
    /// inside the batch starts with the results at the batch's start, as the others show, and
    /// updates with them at its end.
    ///
    /// When `body` throws, what it changed before stays changed and is reported, as at a normal
    /// end; the error is rethrown.
    ///
    /// Loading into the context, ``merge(_:isolation:)`` and removing a model with its cascade
    /// are batches of their own.
    ///
    /// - Throws: Whatever `body` throws.
    /// - Complexity: O(1) more per model changed, and at the end what each live result set's
    ///   update costs: see ``Query/live()``.
    @discardableResult
    public func batchChanges<Result>(_ body: () throws -> Result) rethrows -> Result {
        beginBatch()
        defer { endBatch() }
        return try body()
    }

    /// Whether a ``batchChanges(_:)`` is open: live result sets collect until it ends.
    var isBatchingChanges: Bool { openBatch != nil }

    func beginBatch() {
        if let openBatch {
            openBatch.depth += 1
            return
        }
        let batch = ContextBatch()
        openBatch = batch
    }

    func endBatch() {
        guard let batch = openBatch else { return }
        guard batch.depth == 1 else {
            batch.depth -= 1
            return
        }
        // The models report while the batch is still open (its depth still 1), so that live
        // result sets collect their events; an observer that writes a model meanwhile makes it
        // join, and report too, and one that begins a batch (a cascade, a merge, a load) nests
        // in this one instead of ending it early.
        while !batch.models.isEmpty {
            let models = batch.models
            batch.models = []
            for model in models { model.leaveContextBatch() }
        }
        batch.depth = 0
        openBatch = nil
        registerUndo(of: batch.undoActions)
        for action in batch.afterEnd { action() }
    }

    /// Makes `model`, written for the first time in the open batch, part of it.
    @usableFromInline func joinBatch<M: Model>(_ model: M) {
        guard let openBatch else { return }
        model.beginChanges()
        model.changeTracker.listeningState.joinedContextBatch = true
        openBatch.models.append(model)
    }

    /// Runs `action` when the open batch ends, after its models reported.
    func afterBatch(_ action: @escaping () -> Void) {
        openBatch?.afterEnd.append(action)
    }

    /// Registers `action` with the undo manager; inside a batch, as part of the batch's step.
    func registerContextUndo(_ action: @escaping () -> Void) {
        guard let undoManager else { return }
        if let openBatch {
            openBatch.undoActions.append(action)
        } else {
            undoManager.registerModelUndo(action)
        }
    }

    /// Registers the undo of a batch: its actions, last first, in a batch of their own, whose
    /// end registers the redo the same way.
    private func registerUndo(of actions: [() -> Void]) {
        guard !actions.isEmpty, let undoManager else { return }
        undoManager.registerModelUndo { [weak self] in
            guard let self else { return actions.reversed().forEach { $0() } }
            batchChanges {
                for action in actions.reversed() { action() }
            }
        }
    }
}

extension Model {
    /// Ends the batch this model joined in its context's open batch, reporting what it changed.
    func leaveContextBatch() {
        guard let listening = storage.tracker?.listening, listening.joinedContextBatch else { return }
        listening.joinedContextBatch = false
        try? endChanges()
    }
}
