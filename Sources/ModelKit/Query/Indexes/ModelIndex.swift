import Foundation

/// An index over one property of one model type in one context: a hash index for equality and
/// `in`, or an ordered index that also serves ranges, `between` and `beginsWith`.
///
/// The index is kept up to date lazily: inserts and removals update it at once; a write only
/// marks the model, and the next query that uses the index re-reads the marked models first.
final class ModelIndex<M: Model, Value: IndexableValue>: MaintainedIndex, PlannedIndex {
    let typedKeyPath: KeyPath<M.Properties, Value>
    let key: String?
    /// The order of an ordered index; `nil` for a hash index.
    private let less: ((Value, Value) -> Bool)?
    private let offset: Int?

    private var buckets: [Value: [M]] = [:]
    private var sortedValues: [Value] = []
    private var sortedModels: [M] = []
    /// The value each model is indexed under.
    private var indexed: [ObjectIdentifier: Value] = [:]
    /// Models written since the last refresh.
    private var dirty: [ObjectIdentifier: M] = [:]

    var keyPath: AnyKeyPath { typedKeyPath }
    var count: Int { indexed.count }

    init(keyPath: KeyPath<M.Properties, Value>, key: String?, less: ((Value, Value) -> Bool)?, models: [M]) {
        typedKeyPath = keyPath
        self.key = key
        self.less = less
        offset = MemoryLayout<M.Properties>.offset(of: keyPath)
        rebuild(models)
    }

    func queryValue(of model: M) -> ModelValue {
        value(of: model).queryValue
    }

    private func value(of model: M) -> Value {
        if let offset {
            return model.storage.box.withValuesPointer { $0.load(fromByteOffset: offset, as: Value.self) }
        }
        return model.storage.values[keyPath: typedKeyPath]
    }

    private func rebuild(_ models: [M]) {
        indexed = Dictionary(minimumCapacity: models.count)
        dirty = [:]
        if let less {
            var pairs = models.map { (value: value(of: $0), model: $0) }
            for pair in pairs { indexed[ObjectIdentifier(pair.model)] = pair.value }
            pairs.removeAll { $0.value != $0.value }  // NaN: matches no condition, breaks the order
            pairs.sort { less($0.value, $1.value) }
            sortedValues = pairs.map(\.value)
            sortedModels = pairs.map(\.model)
        } else {
            buckets = [:]
            for model in models {
                let value = value(of: model)
                indexed[ObjectIdentifier(model)] = value
                if value == value { buckets[value, default: []].append(model) }
            }
        }
    }

    // MARK: Upkeep

    func inserted(_ model: M) {
        dirty[ObjectIdentifier(model)] = model
    }

    func written(_ model: M) {
        dirty[ObjectIdentifier(model)] = model
    }

    func removed(_ model: M) {
        let id = ObjectIdentifier(model)
        dirty[id] = nil
        guard let old = indexed.removeValue(forKey: id) else { return }
        remove(model, from: old)
    }

    func removedAll() {
        buckets = [:]
        sortedValues = []
        sortedModels = []
        indexed = [:]
        dirty = [:]
    }

    func refresh() {
        guard !dirty.isEmpty else { return }
        // The models read now may write quietly from here on: make their next write slow again,
        // so that it marks them for the next refresh.
        defer { ChangeEpoch.advance() }
        // Many changes: sorting everything again is cheaper than moving entries one by one.
        if less != nil, dirty.count > max(64, indexed.count / 16) {
            var models = sortedModels
            for (id, model) in dirty where indexed[id] == nil { models.append(model) }
            rebuild(models)
            return
        }
        for (id, model) in dirty {
            let new = value(of: model)
            if let old = indexed[id] {
                if old == new || (old != old && new != new) { continue }
                remove(model, from: old)
            }
            indexed[id] = new
            add(model, at: new)
        }
        dirty = [:]
    }

    private func add(_ model: M, at value: Value) {
        guard value == value else { return }  // NaN: see rebuild
        guard let less else {
            buckets[value, default: []].append(model)
            return
        }
        let position = upperBound(value, less)
        sortedValues.insert(value, at: position)
        sortedModels.insert(model, at: position)
    }

    private func remove(_ model: M, from value: Value) {
        guard let less else {
            buckets[value]?.removeAll { $0 === model }
            if buckets[value]?.isEmpty == true { buckets[value] = nil }
            return
        }
        var position = lowerBound(value, less)
        while position < sortedValues.count, sortedValues[position] == value {
            if sortedModels[position] === model {
                sortedValues.remove(at: position)
                sortedModels.remove(at: position)
                return
            }
            position += 1
        }
    }

    private func lowerBound(_ value: Value, _ less: (Value, Value) -> Bool) -> Int {
        var low = 0
        var high = sortedValues.count
        while low < high {
            let mid = (low + high) / 2
            if less(sortedValues[mid], value) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    private func upperBound(_ value: Value, _ less: (Value, Value) -> Bool) -> Int {
        var low = 0
        var high = sortedValues.count
        while low < high {
            let mid = (low + high) / 2
            if less(value, sortedValues[mid]) { high = mid } else { low = mid + 1 }
        }
        return low
    }

    // MARK: Lookups

    func candidates(for plan: IndexPlan<Value>) -> [M]? {
        switch plan {
        case .equals(let value):
            guard let less else { return buckets[value] ?? [] }
            return Array(sortedModels[lowerBound(value, less)..<upperBound(value, less)])
        case .oneOf(let values):
            var result: [M] = []
            for value in Set(values) {
                if let less {
                    result += sortedModels[lowerBound(value, less)..<upperBound(value, less)]
                } else {
                    result += buckets[value] ?? []
                }
            }
            return result
        case .range(let lower, let lowerInclusive, let upper, let upperInclusive):
            guard let less else { return nil }
            let start = lower.map { lowerInclusive ? lowerBound($0, less) : upperBound($0, less) } ?? 0
            let end = upper.map { upperInclusive ? upperBound($0, less) : lowerBound($0, less) } ?? sortedValues.count
            return start < end ? Array(sortedModels[start..<end]) : []
        case .prefix(let prefix):
            guard let less, Value.self == String.self else { return nil }
            let start = lowerBound(prefix as! Value, less)
            // Every string that begins with `prefix` sorts at or after it and before `prefix`
            // followed by the last scalar; the query checks each candidate exactly.
            let limit = (prefix + "\u{10FFFF}") as! Value
            var end = start
            while end < sortedValues.count, !less(limit, sortedValues[end]) { end += 1 }
            return Array(sortedModels[start..<end])
        }
    }

    func candidates(for condition: QueryCondition) -> [M]? {
        guard condition.options.isEmpty else { return nil }
        func values(_ all: [ModelValue]) -> [Value]? {
            var result: [Value] = []
            for value in all {
                guard let converted = Value(queryValue: value) else { return nil }
                result.append(converted)
            }
            return result
        }
        switch condition.op {
        case .equal:
            return values(condition.values).flatMap { candidates(for: IndexPlan<Value>.equals($0[0])) }
        case .in:
            return values(condition.values).flatMap { candidates(for: IndexPlan<Value>.oneOf($0)) }
        case .greater, .greaterOrEqual, .less, .lessOrEqual, .between:
            guard let bounds = values(condition.values) else { return nil }
            switch condition.op {
            case .greater:
                return candidates(
                    for: IndexPlan<Value>.range(lower: bounds[0], lowerInclusive: false, upper: nil, upperInclusive: false))
            case .greaterOrEqual:
                return candidates(
                    for: IndexPlan<Value>.range(lower: bounds[0], lowerInclusive: true, upper: nil, upperInclusive: false))
            case .less:
                return candidates(
                    for: IndexPlan<Value>.range(lower: nil, lowerInclusive: false, upper: bounds[0], upperInclusive: false))
            case .lessOrEqual:
                return candidates(
                    for: IndexPlan<Value>.range(lower: nil, lowerInclusive: false, upper: bounds[0], upperInclusive: true))
            default:
                return candidates(
                    for: IndexPlan<Value>.range(lower: bounds[0], lowerInclusive: true, upper: bounds[1], upperInclusive: true))
            }
        case .beginsWith:
            guard case .string(let prefix) = condition.values[0] else { return nil }
            return candidates(for: IndexPlan<Value>.prefix(prefix))
        default:
            return nil
        }
    }
}
