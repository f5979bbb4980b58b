import Foundation

/// Maps model names to model types, so that deserialization creates the right class.
///
/// A type is registered automatically the first time ModelKit sees it (creating an instance in a
/// context, serializing one, or reading a reference to it while loading). Register types
/// explicitly at launch when a file may contain models the app hasn't touched yet:
///
/// ```swift
/// try ModelRegistry.register(Author.self, Post.self)
/// ```
public enum ModelRegistry {
    struct Entries {
        var byName: [String: any Model.Type] = [:]
        var names: [ObjectIdentifier: String] = [:]
    }

    private static let entries = Locked(Entries())

    /// Registers model types under their ``Model/modelName``.
    ///
    /// Registering a type again is harmless.
    ///
    /// - Throws: ``ModelRegistryError`` when another type is already registered under the same
    ///   name; ``ModelDeclarationError`` when a type has a persisted property that a member of
    ///   every model hides (`changes`, `modelId`, …), and ``RelationshipDeclarationError`` when
    ///   a declared inverse does not match its other side, before any of `types` is registered.
    /// - Complexity: O(p) per type, in its number of properties.
    public static func register(_ types: any Model.Type...) throws {
        for type in types {
            let hidden = shadowedProperties(of: type)
            if !hidden.isEmpty { throw ModelDeclarationError(modelName: type.modelName, hiddenProperties: hidden) }
            if let problem = type.relationshipProblems.first { throw problem }
        }
        for type in types {
            let name = type.modelName
            let conflict: (any Model.Type)? = entries.withLock { entries in
                if let existing = entries.byName[name], existing != type { return existing }
                entries.byName[name] = type
                entries.names[ObjectIdentifier(type)] = name
                return nil
            }
            if let conflict {
                // Module-qualified names, so that two types named alike in different modules can be told apart.
                throw ModelRegistryError(
                    name: name, registered: _typeName(conflict, qualified: true), rejected: _typeName(type, qualified: true))
            }
        }
    }

    /// The type registered under `name`, or `nil`.
    ///
    /// - Complexity: O(1).
    public static func type(named name: String) -> (any Model.Type)? {
        entries.withLock { $0.byName[name] }
    }

    /// Registers `type` if its name is free; a type first seen in use never displaces one
    /// registered earlier. Returns the type's model name.
    @discardableResult
    static func noteUse<M: Model>(of type: M.Type) -> String {
        let key = ObjectIdentifier(type)
        if let name = entries.withLock({ $0.names[key] }) { return name }
        let name = type.modelName
        let first = entries.withLock { entries in
            defer {
                entries.names[key] = name
                if entries.byName[name] == nil { entries.byName[name] = type }
            }
            return entries.names[key] == nil
        }
        // Outside the lock: encoding the type's defaults notes the use of other types.
        if first { warnAboutShadowedProperties(of: type) }
        return name
    }

    /// The model name of `type`, cached (computing it from the type name is not free).
    static func name<M: Model>(of type: M.Type) -> String {
        noteUse(of: type)
    }
}

/// Thrown by ``ModelRegistry/register(_:)`` when two types claim the same model name.
public struct ModelRegistryError: Error, CustomStringConvertible, Sendable {
    /// The contested model name.
    public let name: String
    /// The type already registered under ``name``.
    public let registered: String
    /// The type that could not be registered.
    public let rejected: String

    public var description: String {
        "Model name \"\(name)\" is already registered to \(registered); cannot register \(rejected). Override `modelName` on one of them."
    }
}
