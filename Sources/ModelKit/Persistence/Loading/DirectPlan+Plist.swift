import Foundation

// Filling a new model's properties straight from a binary property list.
//
// Every object of a property list says its kind and size in its marker, and writers share key
// strings between dictionaries: once a key's object number has been matched against a field's
// name, the same key in later dictionaries is matched by that number alone. Each value is read
// as the kind its field expects, looking the object up once, with every check the document
// makes (bounds, counts, references, the decoded-size limit). At anything else (another kind, a
// missing key, an error), the fill says so and the caller decodes the properties through
// `Codable`, which overwrites what was filled or reports the error.
//
// The reading goes through `BinaryPlistDocument` itself rather than `TreeDocument`: through the
// protocol, each node's kind, count and value were separate calls that each found the object
// again, and a reference property's reading was a generic call per pointer.

extension DirectPlan {
    /// Fills the properties at `base` (a new model's, holding its default values) from the
    /// properties dictionary `node`.
    ///
    /// Returns `false`, with the properties partly filled, whenever the data is anything but
    /// what the `Codable` path reads without error or fallback (a missing key, another type, an
    /// ISO date in another form, …), and at an unknown key unless
    /// ``DeserializationOptions/unknownKeys`` ignores them (the `Codable` path reports it). The
    /// first of duplicate keys wins, as with `Codable`.
    ///
    /// `keyNodes` remembers the object number of each field's key (-1 while unknown); it must
    /// have one entry per field.
    func fillPlist(
        _ base: UnsafeMutableRawPointer, from node: Int, in document: BinaryPlistDocument, loader: GraphLoader,
        keyNodes: inout [Int]
    ) throws -> Bool {
        guard let (count, start) = try document.container(node, kind: 0xD) else { return false }
        let keys = self.keys
        let width = document.referenceSize
        var filled: UInt64 = 0
        // Keys come in the order the fields were written, which is the plan's order.
        var expected = 0
        for member in 0..<count {
            // Both references are checked for every member, as the general reading does.
            let key = try document.reference(at: start + member * width)
            let value = try document.reference(at: start + (count + member) * width)
            var found = -1
            if expected < keyNodes.count, keyNodes[expected] == key {
                found = expected
            } else if let known = keyNodes.firstIndex(of: key) {
                found = known
            } else {
                guard document.kind(of: key) == .string else { return false }
                if expected < keys.count, try document.stringEquals(key, keys[expected]) {
                    found = expected
                } else if let named = try keys.indices.first(where: { try document.stringEquals(key, keys[$0]) }) {
                    found = named
                }
                guard found >= 0 else {
                    // A key the type does not know: the Codable path reports it, unless ignored.
                    if loader.checksUnknownKeys { return false }
                    continue
                }
                keyNodes[found] = key
            }
            expected = found + 1
            let bit: UInt64 = 1 << UInt64(found)
            guard filled & bit == 0 else { continue }
            filled |= bit
            guard try assignPlist(found, value, to: base + plainFields[found].offset, document, loader) else { return false }
        }
        return filled == (keys.count == 64 ? ~0 : (1 << UInt64(keys.count)) - 1)
    }

    /// Assigns the value at `node` to the field at `index`. A value of another kind than the
    /// field's fails to read (`string` throws for a non-string), which also means `false`.
    private func assignPlist(
        _ index: Int, _ node: Int, to field: UnsafeMutableRawPointer, _ document: BinaryPlistDocument, _ loader: GraphLoader
    ) throws -> Bool {
        switch plainFields[index].tag {
        case .string:
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
            guard let (count, start) = try document.container(node, kind: 0xA) else { return false }
            try document.charge(elements: count, of: node)
            var strings: [String] = []
            strings.reserveCapacity(count)
            for position in 0..<count {
                strings.append(try document.string(document.reference(at: start + position * document.referenceSize)))
            }
            field.assumingMemoryBound(to: [String].self).pointee = strings
        case .reference:
            guard let reference = references[index] else { return false }
            return try reference.assignPlist(node, in: document, loader: loader, to: field)
        }
        return true
    }
}

extension DirectModelRef {
    func assignPlist(_ node: Int, in document: BinaryPlistDocument, loader: GraphLoader, to field: UnsafeMutableRawPointer)
        throws -> Bool
    {
        let slot = field.assumingMemoryBound(to: ModelRef<Target>.self)
        if let id = loader.sharedPointerId(node, in: document, as: Target.self) {
            slot.pointee = ModelRef(id: id)
        } else if try document.isNull(node) {
            slot.pointee = ModelRef()
        } else {
            slot.pointee = try loader.reference(to: node, in: document, as: Target.self, path: [])
        }
        return true
    }
}

extension DirectModelArray {
    func assignPlist(_ node: Int, in document: BinaryPlistDocument, loader: GraphLoader, to field: UnsafeMutableRawPointer)
        throws -> Bool
    {
        guard let (count, start) = try document.container(node, kind: 0xA) else { return false }
        try document.charge(elements: count, of: node)
        // Loops, not a closure per element: the closure looked up the array's generic type (a
        // hash lookup in the runtime) at every element. The ids come first, each asking for its
        // slot in the id table: resolved one after another, each waited for a memory read
        // (the table is far larger than the cache); asked for together, those reads overlap.
        let width = document.referenceSize
        var references: [ModelRef<Element>] = []
        references.reserveCapacity(count)
        for position in 0..<count {
            let id = loader.unresolvedSharedPointerId(
                try document.reference(at: start + position * width), in: document, as: Element.self)
            if let id { loader.positions.prefetchForLookup(id) }
            references.append(ModelRef(id: id))
        }
        for position in 0..<count {
            if let id = references[position].id, loader.resolvedTarget(id, as: Element.self) != nil { continue }
            let pointer = try document.reference(at: start + position * width)
            references[position] = try loader.reference(to: pointer, in: document, as: Element.self, path: [])
        }
        var array = ModelArray<Element>()
        array.references = references
        field.assumingMemoryBound(to: ModelArray<Element>.self).pointee = array
        return true
    }
}
