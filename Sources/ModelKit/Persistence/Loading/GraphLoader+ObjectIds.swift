import Foundation

// Matching by object id, for merges: a background actor that imports records by their server id
// makes its own instance of "bob" (`instance(objectId:in:)`), with a model id of its own, while
// the main context already holds "bob". The merge updates the main context's "bob" with it, and
// every pointer in the snapshot to the actor's instance leads to the main context's one.

extension GraphLoader {
    /// Gives each model of the data whose model id the context lacks, but whose type and object
    /// id a model of the context has (one the data does not hold itself), that model's id: the
    /// model is loaded as an update of the context's model, and pointers to its own id are
    /// redirected (see ``redirected(_:)``). Its creation date stays the context's model's.
    ///
    /// Runs once every header is read, before any properties are decoded.
    ///
    /// - Throws: ``SerializationError/Code/duplicateObjectId`` when two models of the data claim
    ///   the same model of the context; nothing has been changed then.
    /// - Complexity: O(n) in the number of models of the data (a lookup per model with an
    ///   object id).
    func matchObjectIds() throws {
        var claimedBy: [ModelID: Int] = [:]
        for index in headers.indices {
            let header = headers[index]
            guard let objectId = header.objectId, let type = type(named: header.name),
                context.model(withId: header.id) == nil,
                let holder = Self.holder(of: type, objectId: objectId, in: context), holder != header.id,
                positions.index(of: holder) == nil || claimedBy[holder] != nil
            else { continue }
            if let first = claimedBy[holder] {
                throw SerializationError(
                    .duplicateObjectId, modelIndex: index, modelName: header.name, path: "objectId",
                    expected: "an object id no other \(header.name) in the data has",
                    found: "\"\(objectId)\", already the object id of model index \(first)")
            }
            claimedBy[holder] = index
            redirects[header.id] = holder
            headers[index] = Header(
                name: header.name, id: holder, objectId: objectId, createdAt: nil, updatedAt: header.updatedAt,
                properties: header.properties)
            // The data's own id stays in the table too, so that pointers to it find the model.
            positions.insert(holder, index: index)
        }
    }

    /// The id a pointer to `id` stands for: the context's model's, when `id` is a model of the
    /// data matched to it by object id.
    @inline(__always)
    func redirected(_ id: ModelID) -> ModelID {
        redirects.isEmpty ? id : redirects[id] ?? id
    }

    private static func holder<M: Model>(of type: M.Type, objectId: String, in context: ModelContext) -> ModelID? {
        context.model(M.self, objectId: objectId)?.modelId
    }
}
