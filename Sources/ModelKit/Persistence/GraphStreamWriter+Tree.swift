import Foundation

// Values that could not be streamed (their containers were used out of nesting order) are
// encoded as a tree first (`treeValue(of:)`), then written from the tree.

extension GraphStreamWriter {
    /// Writes a tree made by ``treeValue(of:)``, each pointer in it through the sink's `pointer`
    /// call, as a streamed model's pointers are: a sink may write pointers in a form of its own
    /// (records name their targets by object id), and count them.
    ///
    /// - Complexity: O(*n*) in the size of the tree.
    func writeTree(_ value: ModelValue) {
        switch value {
        case .array(let elements):
            sink.beginArray()
            for element in elements { writeTree(element) }
            sink.endArray()
        case .object(let object):
            if let (name, id, objectId) = Self.pointerParts(of: object) {
                return sink.pointer(name: name, id: id, objectId: objectId)
            }
            sink.beginObject()
            for (key, member) in object {
                sink.key(key)
                writeTree(member)
            }
            sink.endObject()
        default:
            value.write(to: sink)
        }
    }

    /// The parts of a pointer as ``ModelValue/pointer(name:id:objectId:)`` makes it, or nil.
    private static func pointerParts(of object: ModelValue.Object) -> (String, ModelID, String?)? {
        guard object.count == 3 || object.count == 4, object["__type"] == "ModelPointer",
            case .string(let name)? = object["model"], case .string(let text)? = object["modelId"], let id = ModelID(text)
        else { return nil }
        guard object.count == 4 else { return (name, id, nil) }
        guard case .string(let objectId)? = object["objectId"] else { return nil }
        return (name, id, objectId)
    }
}
