import Foundation

/// The values of an XML property list, recorded as they are read: a container's members are
/// recorded the first time a reader asks for them, never before.
///
/// Parsing a document checks all of it once and records only its top value. A member nobody
/// asks for stays one entry however large it is, so memory follows what is read, not what a
/// file adds: an unknown member holding a 100 MB array costs one entry, and its check costs
/// memory for its nesting only.
final class XMLPlistTape {
    struct Entry {
        var kind: NodeKind
        /// Strings and other text: whether it holds references or CDATA (its bytes are not its
        /// characters). Booleans: the value.
        var flag: Bool
        /// Containers: the number of members or elements.
        var count: UInt32
        /// The offset of the element's `<`.
        var tagStart: Int
        /// Text: its first byte. Containers: the first byte after the start tag.
        var contentStart: Int
        /// Text: the offset of the end tag. Containers: the offset after the end tag.
        var end: Int
        /// Containers: the entry of the first member's key (dictionaries) or the first element,
        /// once recorded; -1 until then.
        var children: Int
    }

    @exclusivity(unchecked) var entries: [Entry] = []
    let bytes: UnsafeBufferPointer<UInt8>
    /// The most entries the tape has held: what it costs in memory (tests check it).
    private(set) var highWater = 0

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        entries.reserveCapacity(64)
    }

    /// Checks the whole document and records its top value as the only entry (0).
    ///
    /// - Throws: ``SerializationError`` with the byte offset of the first problem.
    /// - Complexity: O(n) in the length of the document; memory O(d) in its nesting.
    func parseDocument() throws -> Int {
        entries.removeAll(keepingCapacity: true)
        var scanner = XMLPlistScanner(bytes: bytes, position: 0, validates: true)
        entries.append(try scanner.document())
        highWater = max(highWater, entries.count)
        return 0
    }

    /// Records the value whose element starts at `offset` as the only entry (0), replacing what
    /// the tape held: for text ``parseDocument()`` has checked.
    func parse(at offset: Int) throws -> Int {
        entries.removeAll(keepingCapacity: true)
        var scanner = XMLPlistScanner(bytes: bytes, position: offset, validates: false)
        entries.append(try scanner.value(depth: 0))
        return 0
    }

    /// The entry of the first member or element of `node`, recording its members (keys and
    /// values alternating) or elements at the end of the tape the first time.
    ///
    /// - Complexity: O(n) in the length of the container's text, the first time.
    func children(of node: Int) throws -> Int {
        let entry = entries[node]
        if entry.children >= 0 { return entry.children }
        let first = entries.count
        if entry.kind == .object || entry.kind == .array, entry.count > 0 {
            var scanner = XMLPlistScanner(bytes: bytes, position: entry.contentStart, validates: false)
            try scanner.children(isDictionary: entry.kind == .object, count: Int(entry.count), into: &entries)
            highWater = max(highWater, entries.count)
        }
        entries[node].children = first
        return first
    }
}

/// A ``TreeDocument`` over an ``XMLPlistTape``: nodes are tape entries.
struct XMLPlistDocument: TreeDocument {
    let tape: XMLPlistTape
    var bytes: UnsafeBufferPointer<UInt8> { tape.bytes }

    @inline(__always) private func entry(_ node: Int) -> XMLPlistTape.Entry { tape.entries[node] }

    @inline(__always) private func text(_ entry: XMLPlistTape.Entry) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: bytes[entry.contentStart..<entry.end])
    }

    func kind(of node: Int) -> NodeKind { entry(node).kind }

    func byteOffset(of node: Int) -> Int { entry(node).tagStart }

    func count(of node: Int) throws -> Int { Int(entry(node).count) }

    /// The first child's entry; -1 when the children could not be read, for ``next(in:cursor:)``
    /// to report why (it cannot happen for text the document checked).
    func startCursor(of node: Int) -> Int { (try? tape.children(of: node)) ?? -1 }

    func next(in node: Int, cursor: inout Int) throws -> (key: Int, value: Int) {
        if cursor < 0 { cursor = try tape.children(of: node) }
        let child = cursor
        if entry(node).kind == .object {
            cursor += 2
            return (child, child + 1)
        }
        cursor += 1
        return (child, child)
    }

    static var nodesAreShared: Bool { false }

    func forEach(in node: Int, _ body: (_ key: Int, _ value: Int) throws -> Bool) throws {
        let first = try tape.children(of: node)
        let container = entry(node)
        let isObject = container.kind == .object
        for index in 0..<Int(container.count) {
            let child = first + (isObject ? 2 * index : index)
            guard try body(child, isObject ? child + 1 : child) else { return }
        }
    }

    func member(of object: Int, named key: String) throws -> Int? {
        guard entry(object).kind == .object else { return nil }
        let first = try tape.children(of: object)
        for index in 0..<Int(entry(object).count) where try stringEquals(first + 2 * index, key) {
            return first + 2 * index + 1
        }
        return nil
    }

    func bool(_ node: Int) -> Bool { entry(node).flag }

    func number(_ node: Int) throws -> NodeNumber {
        let entry = entry(node)
        switch entry.kind {
        case .integer:
            if let number = XMLPlistValues.integer(text(entry)) { return number }
        case .real:
            if let value = XMLPlistValues.real(text(entry)) { return .double(value) }
        default:
            break
        }
        throw SerializationError(.typeMismatch, byteOffset: entry.tagStart, expected: "a number", found: describeNode(node))
    }

    func string(_ node: Int) throws -> String {
        let entry = entry(node)
        guard entry.flag else { return String(decoding: text(entry), as: UTF8.self) }
        return try XMLPlistValues.decodeText(text(entry), offset: entry.contentStart)
    }

    func stringEquals(_ node: Int, _ text: StaticString) throws -> Bool {
        let entry = entry(node)
        if entry.flag { return try string(node) == text.description }
        return ModelKit.bytes(bytes, from: entry.contentStart, to: entry.end, equal: text)
    }

    func stringEquals(_ node: Int, _ text: String) throws -> Bool {
        let entry = entry(node)
        if entry.flag { return try string(node) == text }
        return ModelKit.bytes(bytes, from: entry.contentStart, to: entry.end, equal: text)
    }

    func modelId(_ node: Int) throws -> ModelID? {
        let entry = entry(node)
        if entry.flag { return ModelID(try string(node)) }
        return ModelID.parse(text(entry))
    }

    func date(_ node: Int) throws -> Double {
        let entry = entry(node)
        guard entry.kind == .date, let seconds = XMLPlistValues.date(text(entry)) else {
            throw SerializationError(.typeMismatch, byteOffset: entry.tagStart, expected: "a date", found: describeNode(node))
        }
        return seconds
    }

    func data(_ node: Int) throws -> Data {
        let entry = entry(node)
        guard entry.kind == .data, let data = XMLPlistValues.base64(text(entry), decoding: true) else {
            throw SerializationError(.typeMismatch, byteOffset: entry.tagStart, expected: "data", found: describeNode(node))
        }
        return data
    }

    func isoDate(_ node: Int) throws -> Date? {
        let entry = entry(node)
        if !entry.flag, let date = FastISODate.parse(text(entry)) { return date }
        return ISODate.date(from: try string(node))
    }
}
