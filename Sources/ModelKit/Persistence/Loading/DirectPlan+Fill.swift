import Foundation

extension DirectPlan {
    /// Fills the properties at `base` (a new model's, holding its default values) from the
    /// properties object `node` of a JSON tape (property lists have
    /// ``fillPlist(_:from:in:loader:keyNodes:)``).
    ///
    /// Returns `false`, with the properties partly filled, whenever the data is anything but
    /// what the `Codable` path reads without error or fallback (a missing key, another type, an
    /// ISO date in another form, …): the caller then decodes them through `Codable`, which
    /// overwrites them all or reports the error. Unknown keys are left to `Codable` too, which
    /// reports them (skipped when ``DeserializationOptions/unknownKeys`` ignores them), and the
    /// first of duplicate keys wins, as with `Codable`.
    func fill<D: TreeDocument>(_ base: UnsafeMutableRawPointer, from node: Int, in document: D, loader: GraphLoader) throws
        -> Bool
    {
        guard document.kind(of: node) == .object else { return false }
        let keys = self.keys
        var filled: UInt64 = 0
        // Keys come in the order the fields were written, which is the plan's order.
        var expected = 0
        var complete = true
        try document.forEach(in: node) { key, value in
            var found = -1
            guard document.kind(of: key) == .string else {
                complete = false
                return false
            }
            if expected < keys.count, try document.stringEquals(key, keys[expected]) {
                found = expected
            } else {
                for position in keys.indices where try document.stringEquals(key, keys[position]) {
                    found = position
                    break
                }
            }
            guard found >= 0 else {
                // A key the type does not know: the Codable path reports it, unless ignored.
                guard loader.checksUnknownKeys else { return true }
                complete = false
                return false
            }
            expected = found + 1
            let bit: UInt64 = 1 << UInt64(found)
            guard filled & bit == 0 else { return true }
            filled |= bit
            complete = try assign(found, value, to: base + plainFields[found].offset, document, loader)
            return complete
        }
        return complete && filled == (keys.count == 64 ? ~0 : (1 << UInt64(keys.count)) - 1)
    }

    /// Assigns the value at `node` to the field at `index` (read by its tag: switching over its
    /// `Kind` would copy, so retain, a reference field's payload).
    private func assign<D: TreeDocument>(
        _ index: Int, _ node: Int, to field: UnsafeMutableRawPointer, _ document: D, _ loader: GraphLoader
    ) throws -> Bool {
        switch plainFields[index].tag {
        case .string:
            guard document.kind(of: node) == .string else { return false }
            field.assumingMemoryBound(to: String.self).pointee = try document.string(node)
        case .int:
            guard document.kind(of: node) == .integer, case .int(let number) = try document.number(node) else { return false }
            field.assumingMemoryBound(to: Int.self).pointee = Int(number)
        case .double:
            guard let value = Self.double(node, document) else { return false }
            field.assumingMemoryBound(to: Double.self).pointee = value
        case .date:
            guard let date = try Self.date(node, document) else { return false }
            field.assumingMemoryBound(to: Date.self).pointee = date
        case .strings:
            guard document.kind(of: node) == .array else { return false }
            let count = try document.count(of: node)
            try document.charge(elements: count, of: node)
            var strings: [String] = []
            strings.reserveCapacity(count)
            var allStrings = true
            try document.forEach(in: node) { _, element in
                allStrings = document.kind(of: element) == .string
                if allStrings { strings.append(try document.string(element)) }
                return allStrings
            }
            guard allStrings else { return false }
            field.assumingMemoryBound(to: [String].self).pointee = strings
        case .reference:
            guard let reference = references[index] else { return false }
            return try reference.assign(node, in: document, loader: loader, to: field)
        }
        return true
    }

    /// A number node as a `Double`, or `nil` for anything else.
    static func double<D: TreeDocument>(_ node: Int, _ document: D) -> Double? {
        let nodeKind = document.kind(of: node)
        guard nodeKind == .integer || nodeKind == .real else { return nil }
        // Unreadable or out of range: the Codable path reports it, with the property's path.
        switch try? document.number(node) {
        case .int(let number)?: return Double(number)
        case .uint(let number)?: return Double(number)
        case .double(let number)?: return number
        case nil: return nil
        }
    }

    /// A date as `TreeDecoder.date` reads the forms ModelKit writes: a native date, or a
    /// `{"__type": "Date", "iso": …}` object (or bare ISO text) that the fast ISO parser or the
    /// general one reads.
    static func date<D: TreeDocument>(_ node: Int, _ document: D) throws -> Date? {
        switch document.kind(of: node) {
        case .date:
            return Date(timeIntervalSinceReferenceDate: try document.date(node))
        case .string:
            return try document.isoDate(node)
        case .object:
            guard let tag = try document.typeTag(of: node), try document.stringEquals(tag, "Date"),
                let iso = try document.member(of: node, named: "iso"), document.kind(of: iso) == .string
            else { return nil }
            return try document.isoDate(iso)
        default:
            return nil
        }
    }
}
