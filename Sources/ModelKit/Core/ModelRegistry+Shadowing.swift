import Foundation

// A persisted property is read as `author.name` through `@dynamicMemberLookup`, which the
// compiler uses only when the model has no member of that name. So a property named like one of
// ModelKit's own members (`changes`, `modelId`, …) is silently hidden: `author.changes` reads the
// model's changes, never the property. Registration reports it with a typed error; a type first
// met in use (which cannot throw) gets one warning on standard error.

extension ModelRegistry {
    /// The names of the members every model has, which a property of the same name can't be
    /// reached past. Kept by hand: ModelKit has no reflection to list them (a test checks each).
    static let modelMemberNames: Set<String> = [
        // Identity, dates, state, context.
        "id", "modelId", "objectId", "createdAt", "updatedAt", "modelState", "modelContext",
        "persistedProperties",
        // Changes and observation.
        "changes", "hasChanges", "properties", "resetChanges", "revertChanges", "beginChanges",
        "endChanges", "batchChanges", "observeChanges", "changeEvents", "postsNotifications",
        // Contexts and serialization.
        "addToContext", "removeFromContext", "serialize", "jsonData",
    ]

    /// The persisted properties of `type` hidden by a member of every model, in declaration
    /// order. Properties are known by their coding keys (ModelKit reads no property names): a
    /// property whose key was renamed in `CodingKeys` is checked under the key.
    ///
    /// - Complexity: O(p) in the number of properties, once the type's defaults are encoded.
    static func shadowedProperties<M: Model>(of type: M.Type) -> [String] {
        guard case .object(let defaults)? = DefaultValues.of(type) else { return [] }
        return defaults.keys.filter(modelMemberNames.contains)
    }

    /// Writes one line to standard error when `type` has hidden properties: the report for a
    /// type first met in use, which has no error to throw.
    static func warnAboutShadowedProperties<M: Model>(of type: M.Type) {
        let hidden = shadowedProperties(of: type)
        guard !hidden.isEmpty else { return }
        let message = ModelDeclarationError(modelName: type.modelName, hiddenProperties: hidden).description
        warn(message)
    }
}

/// Thrown by ``ModelRegistry/register(_:)`` when a model's `Properties` has a property that a
/// member of every model hides: `author.changes` reads the model's changes, never a property
/// named `changes`.
///
/// ```swift
/// do {
///     try ModelRegistry.register(Author.self)
/// } catch let error as ModelDeclarationError {
///     print(error.hiddenProperties)   // rename these
/// }
/// ```
public struct ModelDeclarationError: Error, CustomStringConvertible, Sendable {
    /// The model's name.
    public let modelName: String
    /// The properties that can't be read or written through the model, by coding key.
    public let hiddenProperties: [String]

    public var description: String {
        let names = hiddenProperties.map { "\"\($0)\"" }.joined(separator: ", ")
        return "\(modelName).Properties has properties that ModelKit's own members of every model hide: "
            + "\(names); rename them (a property named like a member of Model is never reached through the model)."
    }
}

extension ModelDeclarationError: LocalizedError {
    /// The same text as ``description``.
    public var errorDescription: String? { description }
}
