import Foundation

// A live result set in a context's batch (`ModelContext.batchChanges`): while the batch is open
// it only collects the models its events are about, and keeps the results it had; at the end it
// places them all at once and delivers one change set.
//
// One model changed once is placed as outside a batch, by binary search. More are placed by
// binary search too, without a walk of the results: each changed model's first event of the
// batch says where the results hold it (an update carries the values it had before, which are
// the ones it was placed by; a removal or an insertion leaves the values alone). With those
// values put back into every changed model at once, the results are in order again, so each
// changed model's old place is found by binary search; they are taken out, the changed models
// get their values back, and the ones that match now go in, in order, each by binary search
// (O(k log n) comparisons for k models, and moving at most a chunk's pointers per model). The
// change set comes from the positions before and after; no comparison of whole result arrays.
// When k models' searches would cost more than one walk of the results (about k * 8 log n > n),
// or a changed model is still in an open batch of its own (its entry is read by that batch's
// start, not by the values its event carried), the batch walks the results once instead
// (O(n + k log n)). Only a filter or order that reads other
// models runs the query again, once a batch.

/// What a live result set collected during its context's open batch. A class: it is added to
/// in place, once per event.
final class LiveBatch<M: Model> {
    /// Where the results hold a model the batch changed, as its first event of the batch says.
    enum Placed {
        /// Not in the results: the batch inserted it.
        case absent
        /// Where these values put it (an update's values before it; a removal's values then),
        /// kept as the event gave them: cast only if the batch's end searches (a cast from
        /// `Any` per event showed in a batch's time).
        case by(Any?)
    }
    /// The models of the results' type that events were about, with where the results held
    /// each one before its first event.
    var models: [ObjectIdentifier: (model: M, placed: Placed)] = [:]
    /// The first event, while it is the only one: placed as outside a batch.
    var only: (event: ModelChangeEvent, model: AnyObject?, before: Any?)?
    var events = 0
}

extension LiveResults {
    /// Notes the model an event of the open batch is about; the first note of a batch asks the
    /// context to call back at its end.
    func collect(_ event: ModelChangeEvent, model: AnyObject?, before: Any?) {
        let batch = openPending()
        batch.events += 1
        if batch.events == 1 {
            batch.only = (event, model, before)
        } else if batch.events == 2 {
            batch.only = nil
        }
        guard let model = model as? M else { return }
        let id = ObjectIdentifier(model)
        guard batch.models[id] == nil else { return }
        // The first event of a model says where the results still hold it.
        let placed: LiveBatch<M>.Placed
        switch event.kind {
        case .inserted: placed = .absent
        // A model written in the batch reports that (an update) before its removal, so a
        // removal that comes first finds the values the model was placed by.
        case .removed: placed = .by(model.withReportedValues { model.storage.values })
        case .updated: placed = .by(before)
        }
        batch.models[id] = (model, placed)
    }

    /// What the open batch collected so far; made, and the context asked to call back at the
    /// batch's end, at the first call of a batch.
    private func openPending() -> LiveBatch<M> {
        if let pending { return pending }
        let batch = LiveBatch<M>()
        pending = batch
        context.afterBatch { [weak self] in self?.placeCollected() }
        return batch
    }

    /// Places what the ended batch collected, and tells observers once.
    func placeCollected() {
        guard let batch = pending else { return }
        pending = nil
        if let only = batch.only {
            place(only.event, model: only.model, before: only.before)
        } else if readsOtherModels {
            rerun(modified: Set(batch.models.keys))
        } else if !batch.models.isEmpty {
            do {
                // A search costs about 2 log n comparisons a model, each several times a step
                // of the walk (a set lookup): past about n / (8 log n) models, walking is less.
                let cost = batch.models.count * (Int.bitWidth - matches.count.leadingZeroBitCount) * searchCostFactor
                let searched = cost <= matches.count ? try replaceBySearch(batch.models) : false
                if !searched { try replace(batch.models.mapValues(\.model)) }
            } catch {
                lastError = error
            }
        }
    }

    /// Takes `changed` out of the results and puts those that match back where they belong now,
    /// walking the results to find them: for a batch whose models' old values aren't all known.
    ///
    /// - Complexity: O(n + k log n) for n results and k changed models.
    private func replace(_ changed: [ObjectIdentifier: M]) throws(QueryError) {
        walkedBatches += 1
        let oldWindow = window.offset == 0 && window.limit == nil ? nil : windowIdentifiers()
        // Out: the rest keep their order, the changed ones leave from `removed` (ascending).
        var kept: [M] = []
        kept.reserveCapacity(matches.count)
        var removed: [(index: Int, id: ObjectIdentifier)] = []
        var index = 0
        for chunk in matches.chunks {
            for model in chunk {
                let id = ObjectIdentifier(model)
                if changed[id] != nil { removed.append((index, id)) } else { kept.append(model) }
                index += 1
            }
        }
        // In: in order, each at or after the one before.
        var merged: [M] = []
        var added: [(index: Int, id: ObjectIdentifier)] = []
        try query.guarded {
            var accepted: [M] = []
            for model in changed.values where model.storage.context === context {
                if try order.accepts(model) { accepted.append(model) }
            }
            // Each model's values are read once (a model in an open batch of its own by its
            // values at the batch's start), then sorted as the query's own sort sorts them.
            let probes = try order.sorted(accepted.map { try order.probe($0) })
            merged.reserveCapacity(kept.count + probes.count)
            var start = 0
            for probe in probes {
                let at = try order.position(of: probe, in: kept, from: start)
                merged.append(contentsOf: kept[start..<at])
                added.append((merged.count, ObjectIdentifier(probe.model)))
                merged.append(probe.model)
                start = at
            }
            merged.append(contentsOf: kept[start...])
        }
        matches = OrderedModels(merged)
        if let oldWindow {
            deliver(LiveChangeSet.between(oldWindow, windowIdentifiers(), modified: Set(changed.keys)))
        } else {
            deliver(Self.change(removed: removed, added: added))
        }
    }

    /// The change set of a batch from where its models were (`removed`) and are (`added`), both
    /// ascending, the other results kept in order. A model in both stays (a modification) when
    /// as many kept results are before it as before, and it is in a longest run that kept its
    /// order among such models; the others move.
    ///
    /// - Complexity: O(k log k) for k models.
    static func change(removed: [(index: Int, id: ObjectIdentifier)], added: [(index: Int, id: ObjectIdentifier)])
        -> LiveChangeSet
    {
        var change = LiveChangeSet()
        var after: [ObjectIdentifier: (index: Int, rank: Int)] = [:]
        after.reserveCapacity(added.count)
        for (rank, entry) in added.enumerated() { after[entry.id] = (entry.index, rank) }
        var before = Set<ObjectIdentifier>()
        before.reserveCapacity(removed.count)
        var common: [(from: Int, to: Int, inPlace: Bool)] = []
        for (rank, entry) in removed.enumerated() {
            before.insert(entry.id)
            guard let new = after[entry.id] else {
                change.deletions.append(entry.index)
                continue
            }
            // The kept results before it, before and after.
            common.append((entry.index, new.index, entry.index - rank == new.index - new.rank))
        }
        for entry in added where !before.contains(entry.id) { change.insertions.append(entry.index) }
        let candidates = common.indices.filter { common[$0].inPlace }
        let staying = LiveChangeSet.longestIncreasingRun(candidates.map { common[$0].to })
        var stays = Set<Int>()
        for position in staying { stays.insert(candidates[position]) }
        for (position, pair) in common.enumerated() {
            if stays.contains(position) {
                change.modifications.append(pair.from)
            } else {
                change.moves.append(LiveChangeSet.Move(from: pair.from, to: pair.to))
            }
        }
        return change
    }
}
