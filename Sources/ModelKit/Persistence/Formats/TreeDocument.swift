import Foundation

/// The kinds of values a persisted document holds.
enum NodeKind: UInt8 {
    case null, bool, integer, real, string, date, data, array, object
    /// Something ModelKit never writes (a property-list UID or set).
    case other
}

/// A parsed number, kept exact: integers as integers, the rest as doubles.
enum NodeNumber {
    case int(Int64)
    case uint(UInt64)
    case double(Double)
}

/// Read access to a parsed document (a JSON tape or a binary property list) by node number.
///
/// The decoder works on nodes, never on a tree of values: a node is an index into the JSON tape
/// or an object number in the property list, and values are read from the input bytes when the
/// decoder asks for them.
protocol TreeDocument {
    func kind(of node: Int) -> NodeKind
    /// Where the node starts in the input, for error messages.
    func byteOffset(of node: Int) -> Int
    /// The number of members or elements of a container.
    func count(of node: Int) throws -> Int
    /// The first member or element of a container, as a cursor for ``next(in:cursor:)``.
    func startCursor(of node: Int) -> Int
    /// The member or element at `cursor` (its key node for objects) and advances the cursor.
    func next(in node: Int, cursor: inout Int) throws -> (key: Int, value: Int)
    /// The value of the member of `object` whose key is `key`.
    func member(of object: Int, named key: String) throws -> Int?
    func bool(_ node: Int) -> Bool
    func number(_ node: Int) throws -> NodeNumber
    func string(_ node: Int) throws -> String
    /// Whether a string node holds exactly `text` (without building a String when possible).
    func stringEquals(_ node: Int, _ text: StaticString) throws -> Bool
    func stringEquals(_ node: Int, _ text: String) throws -> Bool
    /// A model id from a string node, or `nil` when the text is not one.
    func modelId(_ node: Int) throws -> ModelID?
    /// A native date (property lists), in seconds since 2001.
    func date(_ node: Int) throws -> Double
    /// A native data value (property lists).
    func data(_ node: Int) throws -> Data
    /// A date from ISO text, parsed from the string node's bytes.
    func isoDate(_ node: Int) throws -> Date?
    /// Calls `body` with the key and value of each member of an object node (for an array, each
    /// element twice), in order, until it returns `false`: ``next(in:cursor:)`` without finding
    /// and checking the container again for each member.
    func forEach(in node: Int, _ body: (_ key: Int, _ value: Int) throws -> Bool) throws
    func keysLeftOut(of node: Int) throws -> [String]
    /// Whether a node number names the same value wherever it appears, so that a node found to
    /// hold a key can be recognized by its number (property-list objects, which writers share;
    /// not JSON tape entries, which are reused from model to model).
    static var nodesAreShared: Bool { get }
    /// The target's id when `node` is a pointer to a `model` in the exact compact form ModelKit's
    /// writer gives it, else `nil` (the general reading then decides). A shortcut for text
    /// documents, where reading a pointer member by member costs more than matching its bytes.
    func compactPointerId(_ node: Int, model: UnsafeRawBufferPointer) -> ModelID?
    /// The target's id when `node` is a pointer made of exactly the `known` key, tag and name
    /// nodes, in the order ModelKit's writer gives them, with no object id; else `nil`. The
    /// shortcut for documents whose nodes are shared (``nodesAreShared``): matching six object
    /// numbers instead of reading each member.
    func pointerId(_ node: Int, matching known: GraphLoader.PointerKeys) -> ModelID?
    /// Counts `count` elements of the container `node` as decoded, for documents that limit
    /// what they decode to (see ``DecodedSizeLimit``).
    func charge(elements count: Int, of node: Int) throws
    /// Fails unless every key of the object node is a readable string: `allKeys` of a keyed
    /// container cannot throw, so a key it could not read would be dropped silently.
    func checkKeys(of object: Int) throws
    /// The object node `object`, or the same object with every member when a reader left some
    /// out (a JSON tape keeps only the members a decoder is expected to read).
    func allMembers(of object: Int) throws -> Int
}

extension TreeDocument {
    /// The keys of members of object `node` that the document checked but did not record
    /// (JSON's tape keeps only the members a type is known to read); none elsewhere.
    func keysLeftOut(of node: Int) throws -> [String] { [] }
    func compactPointerId(_ node: Int, model: UnsafeRawBufferPointer) -> ModelID? { nil }
    func pointerId(_ node: Int, matching known: GraphLoader.PointerKeys) -> ModelID? { nil }
    /// JSON decodes to no more than its text spells out.
    func charge(elements count: Int, of node: Int) throws {}
    /// JSON keys are strings by the grammar, and the parser has checked their text.
    func checkKeys(of object: Int) throws {}
    func allMembers(of object: Int) throws -> Int { object }

    /// The elements of an array node.
    func elements(of node: Int) throws -> [Int] {
        var cursor = startCursor(of: node)
        let count = try count(of: node)
        var result: [Int] = []
        result.reserveCapacity(count)
        for _ in 0..<count { result.append(try next(in: node, cursor: &cursor).value) }
        return result
    }

    /// Whether the node is null: JSON `null`, a property list's `{"__type": "Null"}`, or the
    /// property-list null marker.
    func isNull(_ node: Int) throws -> Bool {
        switch kind(of: node) {
        case .null: return true
        case .object:
            guard try count(of: node) == 1, let type = try member(of: node, named: "__type"), kind(of: type) == .string
            else { return false }
            return try stringEquals(type, "Null")
        default: return false
        }
    }

    /// The `__type` tag of an object node, if it has one.
    func typeTag(of node: Int) throws -> Int? {
        guard kind(of: node) == .object, let type = try member(of: node, named: "__type"), kind(of: type) == .string
        else { return nil }
        return type
    }

    /// Describes a node for error messages, as ``ModelValue/kindDescription`` does for trees.
    func describeNode(_ node: Int) -> String {
        switch kind(of: node) {
        case .null: return "null"
        case .bool: return bool(node) ? "true" : "false"
        case .integer, .real:
            switch try? number(node) {
            case .int(let value)?: return "number \(value)"
            case .uint(let value)?: return "number \(value)"
            case .double(let value)?: return "number \(value)"
            case nil: return "a number"
            }
        case .string:
            guard let text = try? string(node) else { return "a string" }
            return text.count > 40 ? "a string \"\(text.prefix(40))…\"" : "\"\(text)\""
        case .date: return "a date"
        case .data: return "data"
        case .array: return "an array"
        case .object: return "an object"
        case .other: return "an unsupported property-list object"
        }
    }
}
