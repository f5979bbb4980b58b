/// The check both graph readers run before they commit: a context holds one model per type and
/// object id, so two models that share one would leave a model out at commit, silently.
enum ObjectIdCheck {
    /// A model of the data that has an object id.
    struct Entry {
        let index: Int
        let name: String
        let id: ModelID
        let objectId: String
        let type: any Model.Type
    }

    /// Fails when two entries of one type share an object id, or when an entry's object id
    /// belongs to another model of its type in `context` that the data does not hold
    /// (`isInData`), and so does not move elsewhere.
    ///
    /// - Throws: ``SerializationError/Code/duplicateObjectId`` at the later model.
    /// - Complexity: O(n) in the number of entries.
    static func check(
        _ entries: some Sequence<Entry>, against context: ModelContext?, isInData: (ModelID) -> Bool
    ) throws {
        var holders: [ModelContext.ObjectKey: Entry] = [:]
        for entry in entries {
            let key = ModelContext.ObjectKey(type: ObjectIdentifier(entry.type), objectId: entry.objectId)
            if let first = holders.updateValue(entry, forKey: key) {
                throw SerializationError(
                    .duplicateObjectId, modelIndex: entry.index, modelName: entry.name, path: "objectId",
                    expected: "an object id no other \(entry.name) in the data has",
                    found: "\"\(entry.objectId)\", already the object id of model index \(first.index)")
            }
        }
        guard let context else { return }
        for entry in holders.values.sorted(by: { $0.index < $1.index }) {
            guard let holder = holder(of: entry.type, objectId: entry.objectId, in: context), holder != entry.id,
                !isInData(holder)
            else { continue }
            throw SerializationError(
                .duplicateObjectId, modelIndex: entry.index, modelName: entry.name, path: "objectId",
                expected: "an object id no other \(entry.name) in the context has",
                found: "\"\(entry.objectId)\", the object id of model \(holder) in the context")
        }
    }

    private static func holder<M: Model>(of type: M.Type, objectId: String, in context: ModelContext) -> ModelID? {
        context.model(M.self, objectId: objectId)?.modelId
    }
}
