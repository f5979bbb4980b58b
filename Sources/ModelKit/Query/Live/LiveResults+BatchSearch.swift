import Foundation

// The end of a context batch that changed k models, placed without a walk of the n results (see
// LiveResults+Batch.swift for when the walk is still needed).

extension LiveResults {
    /// Takes the changed models out of the results and puts those that match back where they
    /// belong now, each found by binary search. Returns `false`, having changed nothing, when a
    /// model's place can't be searched for (its old values are unknown, or it is in an open
    /// batch of its own, whose entry is read by that batch's start).
    ///
    /// On an error the results are as they were.
    ///
    /// - Complexity: O(k log n) comparisons for k changed models among n results, and per
    ///   model taken out or put in, moving at most a chunk of pointers and shifting the later
    ///   chunks' starts (O(n / 512)).
    func replaceBySearch(_ batch: LiveBatch) throws(QueryError) -> Bool {
        let models = collectedModels(of: batch)
        var placedBy: [(model: M, values: M.Properties)] = []
        placedBy.reserveCapacity(models.count)
        for (model, placed) in zip(models, batch.placed) {
            guard !model.isInOpenBatch else { return false }
            switch placed {
            case .absent: break
            case .by(let values):
                guard let values = values as? M.Properties else { return false }
                placedBy.append((model, values))
            }
        }
        let oldWindow = windowBeforeBatch()
        let removed = try oldPositions(of: placedBy)
        // Out, last first, so that the positions before stay right.
        for entry in removed.reversed() { matches.remove(at: entry.index) }
        try putBack(models, removed: removed, oldWindow: oldWindow, batch: batch)
        return true
    }

    /// Where the results hold the models of `placedBy`, ascending; the ones not in them are
    /// left out. Every one of them is given the values it was placed by for the whole search,
    /// as their entries are compared too: with them, the results are in order.
    ///
    /// - Complexity: O(k log n) comparisons for k models.
    private func oldPositions(of placedBy: [(model: M, values: M.Properties)]) throws(QueryError) -> [(
        index: Int, model: M, key: UInt64
    )] {
        var current: [M.Properties] = []
        current.reserveCapacity(placedBy.count)
        for entry in placedBy {
            current.append(entry.model.storage.values)
            entry.model.storage.values = entry.values
        }
        defer { for (entry, values) in zip(placedBy, current) { entry.model.storage.values = values } }
        // Positions with the entry of `placedBy` found there: pairs of integers sort without
        // the generic value witnesses a tuple holding a model would need.
        var found: [(index: Int, entry: Int)] = []
        found.reserveCapacity(placedBy.count)
        try query.guarded {
            for (slot, entry) in placedBy.enumerated() {
                let index = try order.position(of: order.probe(entry.model), in: matches)
                if index < matches.count && matches[index] === entry.model { found.append((index, slot)) }
            }
        }
        found.sort { $0.index < $1.index }
        return found.map { ($0.index, placedBy[$0.entry].model, matches.key(at: $0.index)) }
    }
}
