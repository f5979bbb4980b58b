import Foundation

/// A ``GraphSink`` that builds a ``ModelValue`` tree in stream order: the streaming writer's
/// output where a tree is asked for (``Model/serialize(as:)``, one model's values for change
/// tracking and queries). Each container becomes its value when it ends, so the tree is built
/// with no bookkeeping left over; values that cannot be streamed go through an ``OpenTreeSink``.
///
/// Values are written in the same forms as the text and binary sinks: with ``usesJSONForms``,
/// dates, data and non-finite numbers become their `__type` objects; otherwise they stay native,
/// as in a property list.
final class ModelValueSink: GraphSink {
    private struct Frame {
        var isObject: Bool
        var object = ModelValue.Object()
        var elements: [ModelValue] = []
        var pendingKey: String?
    }

    /// Never written to: the tree is the output. The writer flushes it between models.
    let buffer = OutputBuffer(descriptor: nil)
    let usesJSONForms: Bool
    /// The values written outside any container, in order.
    private(set) var roots: [ModelValue] = []
    private var stack: [Frame] = []
    private var checkpoints: [(depth: Int, count: Int, pendingKey: String?)] = []

    init(usesJSONForms: Bool) {
        self.usesJSONForms = usesJSONForms
    }

    private func append(_ value: ModelValue) {
        guard !stack.isEmpty else { return roots.append(value) }
        let top = stack.count - 1
        if stack[top].isObject {
            // A later duplicate key replaces the earlier value, as in ModelValue.Object.
            stack[top].object[stack[top].pendingKey ?? ""] = value
            stack[top].pendingKey = nil
        } else {
            stack[top].elements.append(value)
        }
    }

    func beginObject() { stack.append(Frame(isObject: true)) }
    func beginArray() { stack.append(Frame(isObject: false)) }

    func endObject() {
        let frame = stack.removeLast()
        append(.object(frame.object))
    }

    func endArray() {
        let frame = stack.removeLast()
        append(.array(frame.elements))
    }

    func key(_ key: String) { stack[stack.count - 1].pendingKey = key }

    func null() { append(.null) }
    func bool(_ value: Bool) { append(.bool(value)) }
    func int(_ value: Int64) { append(.int(value)) }
    func uint(_ value: UInt64) { append(value <= UInt64(Int64.max) ? .int(Int64(value)) : .uint(value)) }
    func double(_ value: Double) { append(usesJSONForms ? ModelValue.jsonNumber(value) : .double(value)) }
    func string(_ value: String) { append(.string(value)) }
    func sharedValue(_ value: String) { append(.string(value)) }
    func date(_ value: Date) { append(usesJSONForms ? ModelValue.jsonDate(value) : .date(value)) }
    func data(_ value: Data) { append(usesJSONForms ? ModelValue.jsonBytes(value) : .data(value)) }
    func modelId(_ value: ModelID) { append(.string(value.description)) }

    func beginModel(name: String, id: ModelID, objectId: String?, createdAt: Date, updatedAt: Date) {
        beginModelMemberByMember(name: name, id: id, objectId: objectId, createdAt: createdAt, updatedAt: updatedAt)
    }

    func pointer(name: String, id: ModelID, objectId: String?) {
        append(ModelValue.pointer(name: name, id: id, objectId: objectId))
    }

    func checkpoint() -> Int {
        let top = stack.last
        let count = top.map { $0.isObject ? $0.object.count : $0.elements.count } ?? roots.count
        checkpoints.append((stack.count, count, top?.pendingKey))
        return checkpoints.count - 1
    }

    func rollback(to checkpoint: Int) {
        let saved = checkpoints[checkpoint]
        checkpoints.removeSubrange(checkpoint...)
        stack.removeSubrange(saved.depth...)
        guard !stack.isEmpty else { return roots.removeSubrange(saved.count...) }
        let top = stack.count - 1
        if stack[top].isObject {
            for key in stack[top].object.keys[saved.count...] { stack[top].object[key] = nil }
            stack[top].pendingKey = saved.pendingKey
        } else {
            stack[top].elements.removeSubrange(saved.count...)
        }
    }

    func finish() throws {}
}

extension ModelValue {
    /// A `ModelPointer` value. A nil object id is left out, as ModelKit for Objective-C's
    /// dictionaries could not hold it.
    static func pointer(name: String, id: ModelID, objectId: String?) -> ModelValue {
        var pointer = Object()
        pointer["__type"] = "ModelPointer"
        pointer["model"] = .string(name)
        pointer["modelId"] = .string(id.description)
        if let objectId { pointer["objectId"] = .string(objectId) }
        return .object(pointer)
    }

    /// The parts of a pointer as ``pointer(name:id:objectId:)`` makes it, or nil for any other
    /// object.
    static func pointerParts(of object: Object) -> (name: String, id: ModelID, objectId: String?)? {
        guard object.count == 3 || object.count == 4, object["__type"] == "ModelPointer",
            case .string(let name)? = object["model"], case .string(let text)? = object["modelId"], let id = ModelID(text)
        else { return nil }
        guard object.count == 4 else { return (name, id, nil) }
        guard case .string(let objectId)? = object["objectId"] else { return nil }
        return (name, id, objectId)
    }
}
