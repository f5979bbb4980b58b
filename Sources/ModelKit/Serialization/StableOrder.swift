import Foundation

// Sets and dictionaries iterate in an order that depends on their hash seeds and history, not on
// their value: two equal sets can list their elements differently, in the same process or in
// two runs. Encoded in iteration order, equal models would give different bytes, and `properties`
// that compare unequal (arrays compare in order). So both encoders write them in a stable order:
// ascending by each element's (each key's) encoded form, in the total order below.

/// A value whose iteration order isn't part of its value, encoded through a stably ordered stand-in.
protocol StableOrderEncodable {
    /// A value that encodes as `self` does, with elements (or keys) in the stable order.
    ///
    /// - Throws: What encoding an element throws (the real encoding would throw it too).
    func inStableOrder() throws -> any Encodable
}

extension Set: StableOrderEncodable where Element: Encodable {
    func inStableOrder() throws -> any Encodable {
        // The common sets directly, in the order the general path gives them.
        if let strings = self as? Set<String> { return strings.sorted(by: ModelValue.precedesInUTF8) }
        if let integers = self as? Set<Int> { return integers.sorted() }
        return try sortedByEncoding(Array(self)) { $0 }
    }
}

extension Dictionary: StableOrderEncodable where Key: Encodable, Value: Encodable {
    func inStableOrder() throws -> any Encodable {
        SortedDictionary(pairs: try sortedByEncoding(Array(self)) { $0.key })
    }
}

/// A dictionary's pairs, sorted, encoded in the containers `Dictionary` itself uses: a keyed
/// container for `String` and `Int` keys (and `CodingKeyRepresentable` ones), else an unkeyed
/// container of alternating keys and values.
private struct SortedDictionary<Key: Encodable & Hashable, Value: Encodable>: Encodable {
    let pairs: [(key: Key, value: Value)]

    func encode(to encoder: any Encoder) throws {
        if Key.self == String.self || Key.self == Int.self || Key.self is any CodingKeyRepresentable.Type {
            var container = encoder.container(keyedBy: IndexKey.self)
            for (key, value) in pairs {
                let codingKey: IndexKey =
                    switch key {
                    case let text as String: IndexKey(stringValue: text)
                    case let number as Int: IndexKey(stringValue: "\(number)")
                    default: IndexKey(stringValue: (key as! any CodingKeyRepresentable).codingKey.stringValue)
                    }
                try container.encode(value, forKey: codingKey)
            }
        } else {
            var container = encoder.unkeyedContainer()
            for (key, value) in pairs {
                try container.encode(key)
                try container.encode(value)
            }
        }
    }
}

/// `elements` sorted by the encoded form of `sortKey(element)`.
private func sortedByEncoding<Element, SortKey: Encodable>(_ elements: [Element], by sortKey: (Element) -> SortKey) throws
    -> [Element]
{
    let keys = try elements.map { element in
        let key = sortKey(element)
        // A reference's encoding depends on a context to resolve it in; its id doesn't.
        if let reference = key as? any StableSortKey { return reference.stableSortKey }
        return try GraphStreamWriter.valueTree(of: key)
    }
    return keys.indices.sorted { ModelValue.stableOrder(keys[$0], keys[$1]) == .orderedAscending }.map { elements[$0] }
}

/// A value sorted by a key of its own rather than by its encoding.
protocol StableSortKey {
    var stableSortKey: ModelValue { get }
}

extension ModelRef: StableSortKey {
    /// The id as text: references to no model first.
    var stableSortKey: ModelValue { id.map { .string($0.description) } ?? .null }
}

extension ModelValue {
    /// A total order on encoded values: by kind (null, booleans, numbers, strings, dates, data,
    /// arrays, objects), then numbers by value (NaN last), strings by their UTF-8 bytes (so by
    /// Unicode scalars), dates by time, data by bytes, arrays element by element, objects key by
    /// key in their order.
    ///
    /// - Complexity: O(n) in the size of the smaller value.
    static func stableOrder(_ a: ModelValue, _ b: ModelValue) -> ComparisonResult {
        let (rankA, rankB) = (a.stableRank, b.stableRank)
        if rankA != rankB { return rankA < rankB ? .orderedAscending : .orderedDescending }
        switch (a, b) {
        case (.string(let x), .string(let y)):
            return order(x.utf8, y.utf8)
        case (.data(let x), .data(let y)):
            return order(x, y)
        case (.array(let x), .array(let y)):
            for (u, v) in zip(x, y) {
                let result = stableOrder(u, v)
                if result != .orderedSame { return result }
            }
            return compareCounts(x.count, y.count)
        case (.object(let x), .object(let y)):
            for (u, v) in zip(x, y) {
                let keys = order(u.key.utf8, v.key.utf8)
                if keys != .orderedSame { return keys }
                let values = stableOrder(u.value, v.value)
                if values != .orderedSame { return values }
            }
            return compareCounts(x.count, y.count)
        default:
            if let result = a.compare(to: b) { return result }
            // NaN after every number.
            let (nanA, nanB) = (a.isNaN, b.isNaN)
            return nanA == nanB ? .orderedSame : (nanA ? .orderedDescending : .orderedAscending)
        }
    }

    /// Whether `a` comes before `b` by UTF-8 bytes: the stable order of strings.
    static func precedesInUTF8(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    private var stableRank: Int {
        switch self {
        case .null: 0
        case .bool: 1
        case .int, .uint, .double: 2
        case .string: 3
        case .date: 4
        case .data: 5
        case .array: 6
        case .object: 7
        }
    }

    private var isNaN: Bool {
        if case .double(let value) = self { return value.isNaN }
        return false
    }

    private static func order<C: Sequence>(_ x: C, _ y: C) -> ComparisonResult where C.Element == UInt8 {
        if x.elementsEqual(y) { return .orderedSame }
        return x.lexicographicallyPrecedes(y) ? .orderedAscending : .orderedDescending
    }

    private static func compareCounts(_ x: Int, _ y: Int) -> ComparisonResult {
        x == y ? .orderedSame : (x < y ? .orderedAscending : .orderedDescending)
    }
}
