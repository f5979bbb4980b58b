import Foundation

/// Reads a model's properties by string key (a dotted path), through the properties' `Codable`
/// conformance: the properties are encoded once, in the property-list form of ``ModelValue``,
/// and the path is walked in that tree. A path continues through a to-one reference into the
/// referenced model, through a to-many reference into each referenced model (giving an array),
/// and into nested structs.
///
/// One reader serves one run of a query, and remembers the encoded properties of the models it
/// reached through references, which many models often share (every post's author).
final class PropertyReader {
    private var referenced: [ObjectIdentifier: ModelValue.Object] = [:]

    /// The value at `path` in `model`'s properties, already encoded as `properties`.
    func value(at path: [String], in properties: ModelValue.Object, of model: some Model) throws -> ModelValue {
        try walk(
            .object(properties), path[...], fullPath: path, modelName: type(of: model).modelName,
            context: model.storage.lookupContext)
    }

    /// The encoded properties of `model`.
    static func properties<M: Model>(of model: M) throws -> ModelValue.Object {
        let value: ModelValue
        do {
            value = try GraphStreamWriter.valueTree(of: model.storage.values)
        } catch {
            throw QueryError(
                .incompatibleTypes, modelName: M.modelName, expected: "properties that encode",
                found: "an encoding error: \(error)")
        }
        guard case .object(let object) = value else { return ModelValue.Object() }
        return object
    }

    private func walk(
        _ value: ModelValue, _ path: ArraySlice<String>, fullPath: [String], modelName: String, context: ModelContext?
    ) throws -> ModelValue {
        guard let key = path.first else { return value }
        switch value {
        case .null:
            return .null
        case .array(let elements):
            return .array(try elements.map { try walk($0, path, fullPath: fullPath, modelName: modelName, context: context) })
        case .object(let object):
            if case .string("ModelPointer")? = object["__type"] {
                guard let target = resolve(object, in: context) else { return .null }
                return try walk(
                    .object(try properties(ofReferenced: target)), path, fullPath: fullPath,
                    modelName: type(of: target).modelName, context: Self.lookupContext(of: target))
            }
            guard let next = object[key] else {
                throw QueryError(
                    .unknownKey, modelName: modelName, key: fullPath.joined(separator: "."),
                    expected: "one of " + object.keys.joined(separator: ", "), found: "\"\(key)\"")
            }
            return try walk(next, path.dropFirst(), fullPath: fullPath, modelName: modelName, context: context)
        default:
            throw QueryError(
                .unknownKey, modelName: modelName, key: fullPath.joined(separator: "."),
                expected: "a struct or reference before \"\(key)\"", found: value.kindName)
        }
    }

    private static func lookupContext(of model: some Model) -> ModelContext? {
        model.storage.lookupContext
    }

    private func resolve(_ pointer: ModelValue.Object, in context: ModelContext?) -> (any Model)? {
        guard case .string(let text)? = pointer["modelId"], let id = ModelID(text) else { return nil }
        return context?.model(withId: id)
    }

    private func properties(ofReferenced model: any Model) throws -> ModelValue.Object {
        let key = ObjectIdentifier(model)
        if let known = referenced[key] { return known }
        let object = try Self.properties(of: model)
        referenced[key] = object
        return object
    }
}
