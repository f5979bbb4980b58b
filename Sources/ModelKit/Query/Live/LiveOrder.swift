import Foundation

// Where a model belongs in a live result set: the query's order (its sort keys, then model id,
// exactly as `Query.results()` orders), and whether the query's filter accepts it, both read from
// the values the context last *reported* for each model.
//
// Models keep their values while a `beginChanges()` batch is open, and report the change only at
// its end; until then, the results hold such a model where its values at the batch's start put
// it. So a model in an open batch is read with those values, swapped in for the comparison.

extension Model {
    /// Runs `body` with the model's properties as they were last reported: the values at the
    /// start of an open `beginChanges()` batch, else the current ones.
    func withReportedValues<Result>(_ body: () throws -> Result) rethrows -> Result {
        guard let tracker = storage.tracker, tracker.batchDepth > 0, let start = tracker.batchStart else { return try body() }
        return try withValues(start, body)
    }

    /// Whether a `beginChanges()` batch of the model is open (its own, or one it joined in its
    /// context's batch).
    var isInOpenBatch: Bool { (storage.tracker?.batchDepth ?? 0) > 0 }

    /// Runs `body` with `values` in place of the model's properties, then puts them back: to
    /// find where the model was before a change, by the order that reads models in place.
    func withValues<Result>(_ values: Properties, _ body: () throws -> Result) rethrows -> Result {
        let current = storage.values
        storage.values = values
        defer { storage.values = current }
        return try body()
    }
}

/// The order and filter of one live query, read for one model at a time.
///
/// The filter's program and the sort keys' readers are made once, not per update (making them
/// cost more than using them). Their value reader keeps the encoding of the last model it read
/// (for keys that can't be read in place), which a write since, or a model's values swapped in,
/// would make stale: each question starts by making it forget.
final class LiveOrder<M: Model> {
    let query: Query<M>
    private let evaluator = PropertyValues<M>()
    /// Made at the first question (a live query that failed to run never asks one).
    private lazy var program: ScanProgram? = {
        let node = query.predicate.node
        if case .always = node { return nil }
        return ScanProgram(node, reader: evaluator, indexes: [])
    }()
    private lazy var sortOrder = SortOrder(query.sortKeys, evaluator: evaluator)
    /// For an order by one key path to a stored `String` (`sorted(by: \.name)`, the common list
    /// order): where the string lies in the properties, and the direction. Probes and a search's
    /// entries are then read in place and compared as strings, without the key's reader closures
    /// and their generic thunks (a third of a batch end's time went to its comparisons, in a
    /// `perf record -g` of live-batch). `nil` for any other order.
    private lazy var stringKey: (offset: Int, ascending: Bool)? = {
        guard query.sortKeys.count == 1, case .typed(let ascending, let field?, _, _) = query.sortKeys[0],
            !field.optional, field.isString
        else { return nil }
        return (field.offset, ascending)
    }()

    init(query: Query<M>) {
        self.query = query
    }

    /// Whether the results keep keys for this order's searches (see ``Probe/key``).
    var hasKeys: Bool { stringKey != nil }

    /// One model's place in the order, read once: for an order by one `String` key path, the
    /// string and its key; else its values for the sort keys (strings of
    /// string keys folded under their options), and keys of other types compare the models.
    struct Probe {
        let model: M
        let id: ModelID
        /// The string of an order by one `String` key path; else empty.
        let text: String
        /// The key the results keep the model with (see OrderedModels): for an order by one
        /// `String` key path, the string's first 8 bytes (see ``prefixKey(_:)``); else none.
        let key: UInt64
        /// The sort values of any other order; else empty.
        let values: [SortValue]
    }

    /// Reads `model`'s sort values, with its reported values.
    func probe(_ model: M) throws -> Probe {
        try model.withReportedValues { try probe(valuesNowOf: model) }
    }

    /// Reads `model`'s sort values as its properties hold them now, even in an open batch of
    /// its own: for values put into the model for a search.
    private func probe(valuesNowOf model: M) throws -> Probe {
        if let stringKey {
            return probe(
                model, text: model.storage.box.withValuesPointer { $0.load(fromByteOffset: stringKey.offset, as: String.self) })
        }
        evaluator.forget()
        var values: [SortValue] = []
        values.reserveCapacity(sortOrder.width)
        try sortOrder.append(model, to: &values)
        return Probe(model: model, id: model.modelId, text: "", key: OrderedModels<M>.noKey, values: values)
    }

    /// The first position in `models` at or after where `values` put `model`, as if they were
    /// its reported values: an update's values before, to find where the results hold the
    /// model.
    ///
    /// For an order by one `String` key path the string is read from `values`, and the model
    /// is left alone: the search meets the model's own entry as equal to the probe (see
    /// ``compareReported(_:_:)``). Any other order may compare models through their values
    /// (keys of other types), so `values` are put into the model for the whole search, and
    /// read as they are, also when the model is in an open batch of its own (whose start values
    /// would otherwise be read: an observer that began one on hearing of the update made the
    /// search miss the model, which was then held twice).
    ///
    /// - Complexity: O(log n) comparisons.
    func position(of model: M, placedBy values: M.Properties, in models: OrderedModels<M>) throws -> Int {
        guard let stringKey else {
            return try model.withValues(values) { try position(of: probe(valuesNowOf: model), in: models) }
        }
        let text = withUnsafeBytes(of: values) { $0.load(fromByteOffset: stringKey.offset, as: String.self) }
        return try position(of: probe(model, text: text), in: models)
    }

    /// The probe of `model` in an order by one `String` key path, whose string is `text`.
    private func probe(_ model: M, text: String) -> Probe {
        Probe(model: model, id: model.modelId, text: text, key: Self.prefixKey(text), values: [])
    }

    /// Whether the query's filter accepts `model`, with its reported values.
    func accepts(_ model: M) throws -> Bool {
        guard let program else { return true }
        return try model.withReportedValues {
            evaluator.forget()
            return try program.matches(model)
        }
    }

    /// The first position in `models` at or after `probe` in the order. Where the probe's key
    /// and an entry's differ, they decide, and the entry's model is not read.
    ///
    /// - Complexity: O(log n) comparisons.
    func position(of probe: Probe, in models: OrderedModels<M>) throws -> Int {
        evaluator.forget()
        let probeKey = probe.key
        let ascending = stringKey?.ascending ?? true
        let noKey = OrderedModels<M>.noKey
        return try models.partitioningIndex(
            byKey: { entryKey in
                guard probeKey != noKey, entryKey != noKey, probeKey != entryKey else { return nil }
                return ascending ? probeKey < entryKey : probeKey > entryKey
            },
            else: { entry in try compareReported(probe, entry) != .orderedDescending })
    }

    /// The first 8 UTF-8 bytes of `text`, big-endian and padded with zeros, when its first 9
    /// (or all, if fewer) are ASCII; else `OrderedModels.noKey`. Two such keys that differ
    /// order their strings as `<` does: ASCII is its own normalized form, and no combining
    /// mark follows the eighth character to join it. Equal keys say nothing (one string may
    /// be the other followed by NULs, or they differ later).
    static func prefixKey(_ text: String) -> UInt64 {
        var key: UInt64 = 0
        var count = 0
        for byte in text.utf8 {
            guard byte < 0x80 else { return OrderedModels<M>.noKey }
            if count == 8 { return key }
            key = key << 8 | UInt64(byte)
            count += 1
        }
        // A smart shift: by 64 (an empty string) it gives 0.
        return key << (8 * (8 - count))
    }

    /// `probes` in the order: their values (read once, with the models' reported values) sorted
    /// as the query's own sort sorts them.
    ///
    /// - Complexity: O(k log k) comparisons.
    func sorted(_ probes: [Probe]) throws -> [Probe] {
        // Closures, not key paths: a key path into a generic type is made anew at every use
        // (`_swift_getKeyPath`), which showed in a batch's sort.
        let ids = probes.map { $0.id }
        let positions: [Int]
        if let stringKey {
            positions = stringOrderPositions(
                texts: probes.map { $0.text }, keys: probes.map { $0.key }, ids: ids, ascending: stringKey.ascending)
        } else {
            var values: [SortValue] = []
            values.reserveCapacity(probes.count * sortOrder.width)
            for probe in probes { values.append(contentsOf: probe.values) }
            positions = try sortOrder.sortedPositions(values, ids: ids, models: probes.map { $0.model })
        }
        return positions.map { probes[$0] }
    }

    /// ``compare(_:_:)`` with `entry` read by its reported values. Most entries are in no open
    /// batch: for them the generic swap of values is skipped (it showed in a batch's searches).
    ///
    /// A model is where its probe is: the results hold each model once, and a probe made from
    /// values the model no longer has (``position(of:placedBy:in:)``) finds the model's entry
    /// that way, without putting those values back into it for the search.
    private func compareReported(_ probe: Probe, _ entry: M) throws -> ComparisonResult {
        if entry === probe.model { return .orderedSame }
        guard entry.isInOpenBatch else { return try compare(probe, entry) }
        return try entry.withReportedValues { try compare(probe, entry) }
    }

    /// The order of `probe`'s model and `entry`, by the sort keys, then by id. The entry's values
    /// are read as the comparison needs them (a search reads few entries, each once).
    private func compare(_ probe: Probe, _ entry: M) throws -> ComparisonResult {
        if let key = stringKey {
            let result = entry.storage.box.withValuesPointer { base in
                Self.order(probe.text, base.load(fromByteOffset: key.offset, as: String.self))
            }
            if result != .orderedSame { return key.ascending ? result : Query<M>.flipped(result) }
            let id = entry.modelId
            return probe.id == id ? .orderedSame : (probe.id < id ? .orderedAscending : .orderedDescending)
        }
        let order = sortOrder
        for column in 0..<order.width {
            let value = try order.readers[column](entry)
            let result = try order.order(column, probe.values[column], value, probe.model, entry)
            if result != .orderedSame { return result }
        }
        let id = entry.modelId
        return probe.id == id ? .orderedSame : (probe.id < id ? .orderedAscending : .orderedDescending)
    }

    /// Two strings' order, as `SortValue.typedOrder` and `Query.order` give it.
    @inline(__always)
    private static func order(_ a: String, _ b: String) -> ComparisonResult {
        a == b ? .orderedSame : (a < b ? .orderedAscending : .orderedDescending)
    }

    /// Whether the filter or the order may read other models (through references), so that a
    /// change of any model may move or admit one of the results.
    var readsOtherModels: Bool {
        let layout = PropertyLayout.of(M.self)
        func crosses(_ path: [String]) -> Bool {
            path.count > 1 && layout.fields[path.joined(separator: ".")] == nil
        }
        func crosses(_ node: ModelPredicate<M>.Node) -> Bool {
            switch node {
            case .always, .tooDeep, .typed, .inPlace: false
            case .related: true
            case .keyed(let path, _): crosses(path)
            case .and(let nodes), .or(let nodes): nodes.contains { crosses($0) }
            case .not(let node): crosses(node)
            }
        }
        return crosses(query.predicate.node)
            || query.sortKeys.contains { key in
                switch key {
                case .typed: false
                case .keyed(let path, _, _), .distance(let path, _): crosses(path)
                }
            }
    }
}

/// The positions of strings in the order of a query by one `String` key path, ties by id: their
/// keys decide where they differ (see `LiveOrder.prefixKey`; `UInt64.max` is none), the strings
/// where not. Not generic, so that the sort is specialized for its rows (sorting `Probe`s
/// copied each through value witnesses, a tenth of a batch's end).
///
/// - Complexity: O(k log k) comparisons, most of them of two integers.
private func stringOrderPositions(texts: [String], keys: [UInt64], ids: [ModelID], ascending: Bool) -> [Int] {
    var rows = Array(texts.indices)
    rows.sort { a, b in
        let (keyA, keyB) = (keys[a], keys[b])
        if keyA != keyB && keyA != .max && keyB != .max { return ascending ? keyA < keyB : keyA > keyB }
        let (textA, textB) = (texts[a], texts[b])
        if textA != textB { return ascending ? textA < textB : textA > textB }
        return ids[a] < ids[b]
    }
    return rows
}
