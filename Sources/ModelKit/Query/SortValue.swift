import Foundation

// Sorting reads each model's sort keys once, into `SortValue`s, and then compares those: a sort
// of k models makes about k log k comparisons, and reading a key (a key path into generic
// properties, a closure per key) in each of them cost more than the comparison itself. A key
// path of a type sorts read in place (String, Int, Double, Date and their optionals) is compared
// as its value, without generics; one of another type is still compared on the models, through
// its `Comparable` conformance. A single key whose values are all strings, integers or doubles
// is sorted as an array of (value, position) rows by a specialized sort.
//
// The order is exactly the one the keys define, comparison for comparison: ties go to the next
// key, then to the model id, as before.

/// One model's value for one sort key, read before the sort.
enum SortValue {
    /// A nil optional (typed keys) or a missing value (string keys): first in ascending order.
    case null
    case string(String)
    case int(Int)
    /// A `Double` or `Date` (its time since the reference date) of a key path.
    case double(Double)
    /// A string key's value other than a string or nil (and distances): compared as query
    /// conditions compare values.
    case value(ModelValue)
    /// A key path of another type: its key compares the models themselves.
    case model

    /// A value read by string key.
    init(keyed value: ModelValue) {
        switch value {
        case .null: self = .null
        case .string(let text): self = .string(text)
        default: self = .value(value)
        }
    }

    /// The value as a string key read it.
    var keyedValue: ModelValue {
        switch self {
        case .null, .model: .null
        case .string(let text): .string(text)
        case .int(let number): .int(Int64(number))
        case .double(let number): .double(number)
        case .value(let value): value
        }
    }

    /// The order of two values of a key path, as `Comparable` orders them (`Query.order`), nil
    /// first; `nil` when the key compares the models.
    @inline(__always)
    static func typedOrder(_ x: SortValue, _ y: SortValue) -> ComparisonResult? {
        switch (x, y) {
        case (.string(let a), .string(let b)): a == b ? .orderedSame : (a < b ? .orderedAscending : .orderedDescending)
        case (.int(let a), .int(let b)): a == b ? .orderedSame : (a < b ? .orderedAscending : .orderedDescending)
        case (.double(let a), .double(let b)): a == b ? .orderedSame : (a < b ? .orderedAscending : .orderedDescending)
        case (.null, .null): .orderedSame
        case (.null, _): .orderedAscending
        case (_, .null): .orderedDescending
        default: nil
        }
    }
}

/// The sort keys of a query, each with its reader, made once per sort (or per live query).
struct SortOrder<M: Model> {
    let keys: [SortKey<M>]
    let readers: [(M) throws -> SortValue]

    init(_ keys: [SortKey<M>], evaluator: PropertyValues<M>) {
        self.keys = keys
        readers = keys.map { Query<M>.sortValueReader($0, evaluator) }
    }

    var width: Int { keys.count }

    /// Appends `model`'s value for each key to `values`.
    func append(_ model: M, to values: inout [SortValue]) throws {
        for read in readers { values.append(try read(model)) }
    }

    /// The order of two models by the key at `column`, from their values `x` and `y` (or from
    /// the models `a` and `b` themselves for a key path of another type); descending flipped.
    @inline(__always)
    func order(_ column: Int, _ x: SortValue, _ y: SortValue, _ a: M, _ b: M) throws -> ComparisonResult {
        switch keys[column] {
        case .typed(let ascending, _, _, let compare):
            let result = SortValue.typedOrder(x, y) ?? compare(a, b)
            return ascending ? result : Query<M>.flipped(result)
        case .keyed(let path, let ascending, _):
            let result: ComparisonResult
            if case .string(let first) = x, case .string(let second) = y {
                // Already folded under the key's options, compared as `ModelValue.compare` does.
                result = first == second ? .orderedSame : (first < second ? .orderedAscending : .orderedDescending)
            } else {
                result = try Query<M>.order(x.keyedValue, y.keyedValue, options: [], key: path)
            }
            return ascending ? result : Query<M>.flipped(result)
        case .distance(let path, _):
            return try Query<M>.order(x.keyedValue, y.keyedValue, options: [], key: path)
        }
    }

    /// The positions of the rows in order: row `i` is `models[i]`, with id `ids[i]` and its
    /// values at `values[i * width ..< (i + 1) * width]`. Ties by every key go by id.
    ///
    /// - Complexity: O(k log k) comparisons for k rows.
    func sortedPositions(_ values: [SortValue], ids: [ModelID], models: [M]) throws -> [Int] {
        if keys.count == 1, let positions = singleKeyPositions(values, ids: ids) { return positions }
        let width = self.width
        var positions = Array(models.indices)
        try positions.sort { a, b in
            for column in 0..<width {
                let result = try order(column, values[a * width + column], values[b * width + column], models[a], models[b])
                if result != .orderedSame { return result == .orderedAscending }
            }
            return ids[a] < ids[b]
        }
        return positions
    }

    /// For one key whose values are all strings, all integers or (for a key path) all doubles:
    /// the positions by a sort specialized for them; `nil` otherwise.
    private func singleKeyPositions(_ values: [SortValue], ids: [ModelID]) -> [Int]? {
        let ascending: Bool
        switch keys[0] {
        case .typed(let up, _, _, _): ascending = up
        case .keyed(_, let up, _): ascending = up
        case .distance: return nil
        }
        guard let first = values.first else { return [] }
        switch first {
        case .string:
            return column(values) { if case .string(let text) = $0 { text } else { nil } }
                .map { sortedRows($0, ascending: ascending, ids: ids) }
        case .int:
            return column(values) { if case .int(let number) = $0 { number } else { nil } }
                .map { sortedRows($0, ascending: ascending, ids: ids) }
        case .double:
            // Only key paths read doubles (string keys compare `ModelValue`s, NaN included).
            return column(values) { if case .double(let number) = $0 { number } else { nil } }
                .map { sortedRows($0, ascending: ascending, ids: ids) }
        case .null, .value, .model:
            return nil
        }
    }
}

/// The values, when `extract` takes one from each of them; else `nil`.
private func column<Key>(_ values: [SortValue], _ extract: (SortValue) -> Key?) -> [Key]? {
    var keys: [Key] = []
    keys.reserveCapacity(values.count)
    for value in values {
        guard let key = extract(value) else { return nil }
        keys.append(key)
    }
    return keys
}

/// The positions of `keys` in order, ties by `ids`: (key, position) rows sorted by a sort this
/// module specializes for the key's type. A comparison decides as `Query.order` then a flip for
/// descending would, so that the order is the same, comparison for comparison.
private func sortedRows<Key: Comparable>(_ keys: [Key], ascending: Bool, ids: [ModelID]) -> [Int] {
    var rows: [(key: Key, position: Int)] = []
    rows.reserveCapacity(keys.count)
    for (position, key) in keys.enumerated() { rows.append((key, position)) }
    rows.sort { a, b in
        if a.key == b.key { return ids[a.position] < ids[b.position] }
        // Not equal: ascending when `<`, else descending (NaN too, as `Query.order` says).
        return (a.key < b.key) == ascending
    }
    return rows.map(\.position)
}
