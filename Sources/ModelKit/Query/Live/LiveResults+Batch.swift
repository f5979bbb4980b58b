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
// start, not by the values its event carried), the batch takes its models out by walking the
// results once instead (O(n), reading identifiers only); both ways put them back in alike.
// Only a filter or order that reads other models runs the query again, once a batch.

/// What a live result set collected during its context's open batch. A class: it is added to
/// in place, once per event.
///
/// Not generic over the model type: the live results' code runs unspecialized for an app's
/// models, and a dictionary of generic tuples paid for type metadata and value witnesses at
/// every event (14% of a batch of 1,000 renames of 1,000 results, in a `perf record -g` of
/// `ModelKitProfile live-batch`).
/// The models are kept as objects of the results' type, cast back without a check.
final class LiveBatch {
    /// Where the results hold a model the batch changed, as its first event of the batch says.
    enum Placed {
        /// Not in the results: the batch inserted it.
        case absent
        /// Where these values put it (an update's values before it; a removal's values then),
        /// kept as the event gave them: cast only if the batch's end searches (a cast from
        /// `Any` per event showed in a batch's time).
        case by(Any?)
    }
    /// The models the batch's events were about (of the results' type): the walk asks about
    /// every result (see ``IdentitySet``).
    var collected = IdentitySet()
    /// The models of the results' type that events were about, in the order of their first
    /// events.
    var models: [AnyObject] = []
    /// Where the results held each of `models` before its first event.
    var placed: [Placed] = []
    /// The first event, while it is the only one: placed as outside a batch.
    var only: (event: ModelChangeEvent, model: AnyObject?, before: Any?)?
    var events = 0

    /// The identifiers of the collected models.
    var identifiers: Set<ObjectIdentifier> { Set(models.lazy.map { ObjectIdentifier($0) }) }
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
        guard batch.collected.insert(ObjectIdentifier(model)) else { return }
        batch.models.append(model)
        // The first event of a model says where the results still hold it.
        switch event.kind {
        case .inserted: batch.placed.append(.absent)
        // A model written in the batch reports that (an update) before its removal, so a
        // removal that comes first finds the values the model was placed by.
        case .removed: batch.placed.append(.by(model.withReportedValues { model.storage.values }))
        case .updated: batch.placed.append(.by(before))
        }
    }

    /// The collected models of `batch`, which are all of the results' type.
    func collectedModels(of batch: LiveBatch) -> [M] {
        batch.models.map { unsafeDowncast($0, to: M.self) }
    }

    /// What the open batch collected so far; made, and the context asked to call back at the
    /// batch's end, at the first call of a batch.
    private func openPending() -> LiveBatch {
        if let pending { return pending }
        let batch = LiveBatch()
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
            rerun(modified: batch.identifiers)
        } else if !batch.models.isEmpty {
            do {
                // A search costs about 2 log n comparisons a model, each several times a step
                // of the walk (a set lookup): past about n / (8 log n) models, walking is less.
                let cost = batch.models.count * (Int.bitWidth - matches.count.leadingZeroBitCount) * searchCostFactor
                let searched = cost <= matches.count ? try replaceBySearch(batch) : false
                if !searched { try replace(batch) }
            } catch {
                lastError = error
            }
        }
    }

    /// Takes the batch's models out of the results, walking them once, and puts those that
    /// match back where they belong now: for a batch whose models' old values aren't all known,
    /// or too many to search for.
    ///
    /// On an error the results are as they were.
    ///
    /// - Complexity: O(n + k log n) for n results and k changed models.
    private func replace(_ batch: LiveBatch) throws(QueryError) {
        walkedBatches += 1
        // Out in place: the rest are moved, not copied (a copy retained and released every
        // result, each a cache miss at 15,000 results, in a `perf record -g` of live-batch).
        let oldWindow = windowBeforeBatch()
        let removed = matches.removeAll { batch.collected.contains($0) }
        try putBack(collectedModels(of: batch), removed: removed, oldWindow: oldWindow, batch: batch)
    }

    /// What a windowed query showed before the batch's models were taken out; `nil` without a
    /// window (the change set then comes from the positions alone).
    func windowBeforeBatch() -> [ObjectIdentifier]? {
        window.offset == 0 && window.limit == nil ? nil : windowIdentifiers()
    }

    /// Puts the batch's `models` that match into the results (from which the batch's models
    /// were taken out, at `removed`), each where it belongs now, and delivers the change
    /// (against `oldWindow`, what a windowed query showed before).
    ///
    /// On an error the results are as they were before the batch's models were taken out.
    ///
    /// - Complexity: O(k log n) comparisons for k models among n results, and per model put in,
    ///   moving at most a chunk of pointers and shifting the later chunks' starts (O(n / 512)).
    func putBack(_ models: [M], removed: [(index: Int, model: M, key: UInt64)], oldWindow: [ObjectIdentifier]?, batch: LiveBatch)
        throws(QueryError)
    {
        var added: [(index: Int, id: ObjectIdentifier)] = []
        do {
            try query.guarded {
                var accepted: [M] = []
                for model in models where model.storage.context === context {
                    if try order.accepts(model) { accepted.append(model) }
                }
                // Each model's values are read once (a model in an open batch of its own by its
                // values at the batch's start), then sorted as the query's own sort sorts them;
                // each goes in at or after the one before, so the positions of those already in
                // stay right.
                for probe in try order.sorted(accepted.map { try order.probe($0) }) {
                    let at = try order.position(of: probe, in: matches)
                    matches.insert(probe.model, key: probe.key, at: at)
                    added.append((at, ObjectIdentifier(probe.model)))
                }
            }
        } catch {
            // Back as they were: the new ones out, last first, the old ones in, first first.
            for entry in added.reversed() { matches.remove(at: entry.index) }
            for entry in removed { matches.insert(entry.model, key: entry.key, at: entry.index) }
            throw error
        }
        if let oldWindow {
            deliver(LiveChangeSet.between(oldWindow, windowIdentifiers(), modified: batch.identifiers))
        } else {
            deliver(Self.change(removed: removed.map { ($0.index, ObjectIdentifier($0.model)) }, added: added))
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
