import Foundation

/// A ``GraphSink`` that builds a ``ModelValue`` tree in any order: where values cannot be
/// streamed (see ``GraphStreamWriter/treeValue(of:)``).
///
/// Unlike text (or a ``ModelValueSink``, which builds a tree in stream order), this tree can be
/// written out of order: every container is a node that stays open
/// until the end, and the writer *focuses* the node of the container it writes to before each
/// member. That is what `Codable` allows and a stream cannot follow: a super encoder filled in
/// after its parent's later members, a nested container written to after its parent moved on.
/// A value whose kind is not known yet (a nested value's encoder before it asks for a
/// container) is a *pending* node, filled in place; one left pending is an empty object.
///
/// Values are written in the same forms as the text and binary sinks: with ``usesJSONForms``,
/// dates, data and non-finite numbers become their `__type` objects; otherwise they stay native,
/// as in a property list.
final class OpenTreeSink: GraphSink {
    private enum Kind { case pending, object, array, leaf }

    private enum Slot {
        case value(ModelValue)
        case node(Int)
    }

    private struct Node {
        var kind: Kind
        let parent: Int
        var keys: [String] = []
        var slots: [Slot] = []
        /// The key of the next member (objects).
        var pendingKey: String?
        var leaf: ModelValue = .null
    }

    /// Never written to: the tree is the output. The writer flushes it between models.
    let buffer = OutputBuffer(descriptor: nil)
    let usesJSONForms: Bool
    /// Node 0 is the root, pending until the first value or container.
    private var nodes = [Node(kind: .pending, parent: 0)]
    /// The node that values and containers go into.
    private(set) var focused = 0
    private var checkpoints: [(nodes: Int, focused: Int, keys: Int, slots: Int, pendingKey: String?, kind: Kind)] = []

    init(usesJSONForms: Bool) {
        self.usesJSONForms = usesJSONForms
    }

    /// The tree written so far.
    ///
    /// - Complexity: O(n) in the number of values.
    func tree() -> ModelValue { value(of: 0) }

    /// Makes `node` the one that values and containers go into.
    func focus(_ node: Int) { focused = node }

    /// A place for a value written later, in the focused node (the focused node itself when it
    /// is pending): the node of a nested value's encoder.
    func reserve() -> Int {
        if nodes[focused].kind == .pending { return focused }
        let child = nodes.count
        nodes.append(Node(kind: .pending, parent: focused))
        put(.node(child))
        return child
    }

    private func value(of node: Int) -> ModelValue {
        let node = nodes[node]
        switch node.kind {
        case .pending: return .object(ModelValue.Object())
        case .leaf: return node.leaf
        case .array: return .array(node.slots.map(value(of:)))
        case .object:
            var object = ModelValue.Object()
            // A later duplicate key replaces the earlier value, as in ModelValue.Object.
            for (key, slot) in zip(node.keys, node.slots) { object[key] = value(of: slot) }
            return .object(object)
        }
    }

    private func value(of slot: Slot) -> ModelValue {
        switch slot {
        case .value(let value): return value
        case .node(let node): return value(of: node)
        }
    }

    private func put(_ slot: Slot) {
        switch nodes[focused].kind {
        case .object:
            nodes[focused].keys.append(nodes[focused].pendingKey ?? "")
            nodes[focused].slots.append(slot)
            nodes[focused].pendingKey = nil
        case .array:
            nodes[focused].slots.append(slot)
        case .pending, .leaf:
            // A pending value takes what is written; containers convert it instead (`begin`).
            if case .value(let value) = slot {
                nodes[focused].kind = .leaf
                nodes[focused].leaf = value
            }
        }
    }

    private func begin(_ kind: Kind) {
        if nodes[focused].kind == .pending {
            nodes[focused].kind = kind
            return
        }
        let child = nodes.count
        nodes.append(Node(kind: kind, parent: focused))
        put(.node(child))
        focused = child
    }

    private func end() { focused = nodes[focused].parent }

    func beginObject() { begin(.object) }
    func beginArray() { begin(.array) }
    func endObject() { end() }
    func endArray() { end() }

    func key(_ key: String) { nodes[focused].pendingKey = key }

    func null() { put(.value(.null)) }
    func bool(_ value: Bool) { put(.value(.bool(value))) }
    func int(_ value: Int64) { put(.value(.int(value))) }
    func uint(_ value: UInt64) { put(.value(value <= UInt64(Int64.max) ? .int(Int64(value)) : .uint(value))) }
    func double(_ value: Double) { put(.value(usesJSONForms ? ModelValue.jsonNumber(value) : .double(value))) }
    func string(_ value: String) { put(.value(.string(value))) }
    func sharedValue(_ value: String) { put(.value(.string(value))) }
    func date(_ value: Date) { put(.value(usesJSONForms ? ModelValue.jsonDate(value) : .date(value))) }
    func data(_ value: Data) { put(.value(usesJSONForms ? ModelValue.jsonBytes(value) : .data(value))) }
    func modelId(_ value: ModelID) { put(.value(.string(value.description))) }

    func beginModel(name: String, id: ModelID, objectId: String?, createdAt: Date, updatedAt: Date) {
        beginModelMemberByMember(name: name, id: id, objectId: objectId, createdAt: createdAt, updatedAt: updatedAt)
    }

    func pointer(name: String, id: ModelID, objectId: String?) {
        put(.value(ModelValue.pointer(name: name, id: id, objectId: objectId)))
    }

    // The writer never abandons a value written to this tree (it takes every order), but the
    // protocol asks for it: the focused node is restored as it was.
    func checkpoint() -> Int {
        let node = nodes[focused]
        checkpoints.append((nodes.count, focused, node.keys.count, node.slots.count, node.pendingKey, node.kind))
        return checkpoints.count - 1
    }

    func rollback(to checkpoint: Int) {
        let saved = checkpoints[checkpoint]
        checkpoints.removeSubrange(checkpoint...)
        nodes.removeSubrange(saved.nodes...)
        focused = saved.focused
        nodes[focused].keys.removeSubrange(saved.keys...)
        nodes[focused].slots.removeSubrange(saved.slots...)
        nodes[focused].pendingKey = saved.pendingKey
        nodes[focused].kind = saved.kind
    }

    func finish() throws {}
}
