import Foundation

/// A ``TreeDocument`` over a ``ModelValue`` tree, so that trees are read by the same decoder and
/// loader as files: ``Model/instance(from:in:options:isolation:)``, a property's default value where the
/// data lacks it, and the layout probe's templates.
///
/// The tree is flattened once into nodes (a container's children are consecutive entries of
/// `children`, an object's keys and values alternating), which gives every value the node number
/// the decoder works with. Leaves keep their `ModelValue`, whose strings and data share storage
/// with the tree.
final class ModelValueDocument: TreeDocument {
    struct Node {
        var kind: NodeKind
        var count: Int
        /// Containers: where their children start in `children`.
        var first: Int
        var leaf: ModelValue
    }

    private(set) var nodes: [Node] = []
    private(set) var children: [Int] = []

    /// The deepest nesting a tree may have: the values of a model's properties may nest
    /// ``SerializationError/maximumDepth`` levels, inside the array of models, the model and its
    /// `properties` (the decoder reports deeper values where they are, with their path).
    static let maximumTreeDepth = SerializationError.maximumDepth + 4

    /// Flattens `root`, which becomes node 0.
    ///
    /// - Throws: ``SerializationError/Code/nestingTooDeep`` beyond ``maximumTreeDepth`` levels
    ///   (a tree built in code can nest without limit; flattening it must not exhaust the stack).
    /// - Complexity: O(n) in the number of values in the tree.
    init(_ root: ModelValue) throws {
        _ = try add(root, depth: 0)
    }

    private func add(_ value: ModelValue, depth: Int) throws -> Int {
        let index = nodes.count
        switch value {
        case .array(let elements):
            try checkDepth(depth)
            nodes.append(Node(kind: .array, count: elements.count, first: 0, leaf: .null))
            var added: [Int] = []
            added.reserveCapacity(elements.count)
            for element in elements { added.append(try add(element, depth: depth + 1)) }
            nodes[index].first = children.count
            children.append(contentsOf: added)
        case .object(let object):
            try checkDepth(depth)
            nodes.append(Node(kind: .object, count: object.count, first: 0, leaf: .null))
            var added: [Int] = []
            added.reserveCapacity(object.count * 2)
            for (key, member) in object {
                added.append(nodes.count)
                nodes.append(Node(kind: .string, count: 0, first: 0, leaf: .string(key)))
                added.append(try add(member, depth: depth + 1))
            }
            nodes[index].first = children.count
            children.append(contentsOf: added)
        case .null: nodes.append(Node(kind: .null, count: 0, first: 0, leaf: value))
        case .bool: nodes.append(Node(kind: .bool, count: 0, first: 0, leaf: value))
        case .int, .uint: nodes.append(Node(kind: .integer, count: 0, first: 0, leaf: value))
        case .double: nodes.append(Node(kind: .real, count: 0, first: 0, leaf: value))
        case .string: nodes.append(Node(kind: .string, count: 0, first: 0, leaf: value))
        case .date: nodes.append(Node(kind: .date, count: 0, first: 0, leaf: value))
        case .data: nodes.append(Node(kind: .data, count: 0, first: 0, leaf: value))
        }
        return index
    }

    private func checkDepth(_ depth: Int) throws {
        guard depth < Self.maximumTreeDepth else {
            throw SerializationError(
                .nestingTooDeep, expected: "at most \(SerializationError.maximumDepth) levels of nested values",
                found: "deeper nesting")
        }
    }

    // MARK: TreeDocument

    func kind(of node: Int) -> NodeKind { nodes[node].kind }

    /// Trees have no bytes: callers drop the offset from errors (`withoutByteOffset()`).
    func byteOffset(of node: Int) -> Int { 0 }

    func count(of node: Int) throws -> Int { nodes[node].count }

    func startCursor(of node: Int) -> Int { 0 }

    func next(in node: Int, cursor: inout Int) throws -> (key: Int, value: Int) {
        let container = nodes[node]
        defer { cursor += 1 }
        if container.kind == .object {
            return (children[container.first + 2 * cursor], children[container.first + 2 * cursor + 1])
        }
        let value = children[container.first + cursor]
        return (value, value)
    }

    func member(of object: Int, named key: String) throws -> Int? {
        let container = nodes[object]
        for offset in stride(from: container.first, to: container.first + 2 * container.count, by: 2) {
            if case .string(let text) = nodes[children[offset]].leaf, text == key { return children[offset + 1] }
        }
        return nil
    }

    func bool(_ node: Int) -> Bool {
        if case .bool(let flag) = nodes[node].leaf { return flag }
        return false
    }

    func number(_ node: Int) throws -> NodeNumber {
        switch nodes[node].leaf {
        case .int(let value): return .int(value)
        case .uint(let value): return .uint(value)
        case .double(let value): return .double(value)
        default: return .int(0)
        }
    }

    func string(_ node: Int) throws -> String {
        if case .string(let text) = nodes[node].leaf { return text }
        return ""
    }

    func stringEquals(_ node: Int, _ text: StaticString) throws -> Bool {
        try string(node) == text.description
    }

    func stringEquals(_ node: Int, _ text: String) throws -> Bool {
        try string(node) == text
    }

    func modelId(_ node: Int) throws -> ModelID? {
        ModelID(try string(node))
    }

    func date(_ node: Int) throws -> Double {
        if case .date(let date) = nodes[node].leaf { return date.timeIntervalSinceReferenceDate }
        return 0
    }

    func data(_ node: Int) throws -> Data {
        if case .data(let data) = nodes[node].leaf { return data }
        return Data()
    }

    func isoDate(_ node: Int) throws -> Date? {
        ISODate.date(from: try string(node))
    }

    func forEach(in node: Int, _ body: (_ key: Int, _ value: Int) throws -> Bool) throws {
        let container = nodes[node]
        if container.kind == .object {
            for offset in stride(from: container.first, to: container.first + 2 * container.count, by: 2) {
                guard try body(children[offset], children[offset + 1]) else { return }
            }
        } else {
            for offset in container.first..<(container.first + container.count) {
                guard try body(children[offset], children[offset]) else { return }
            }
        }
    }

    static var nodesAreShared: Bool { false }
}

extension ModelValue {
    /// Whether the value reads as null: `null`, or the property-list form `{"__type": "Null"}`.
    var isNullForm: Bool {
        switch self {
        case .null: return true
        case .object(let object): return object.count == 1 && object["__type"] == "Null"
        default: return false
        }
    }
}
