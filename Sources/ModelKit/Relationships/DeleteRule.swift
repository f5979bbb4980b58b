import Foundation

/// What removing a model does to the models one of its relationships leads to: the counterpart of
/// Core Data's and SwiftData's `deleteRule`.
///
/// Declare it where the reference is declared, in the default value of the property:
///
/// ```swift
/// final class Folder: ModelObject<Folder.Properties> {
///     struct Properties: ModelProperties {
///         var name = ""
///         var notes = ModelArray<Note>(inverse: \Note.Properties.folder, deleteRule: .cascade)
///     }
/// }
/// ```
public enum DeleteRule: Sendable, Hashable {
    /// The default: the models the relationship leads to stay, and drop the removed model from
    /// the inverse relationship, if one is declared.
    case nullify
    /// The models the relationship leads to are removed too (and their own rules applied).
    case cascade
    /// Removal fails with ``RelationshipError/deleteDenied(model:relationship:target:)`` while the
    /// relationship leads to a model that is not being removed with it.
    case deny
    /// Nothing is done to the models the relationship leads to: their inverse keeps the removed
    /// model's id (which reads as no model, and is not saved).
    case noAction
}

/// Why ``ModelContext/delete(_:)`` removed nothing.
///
/// ```swift
/// do {
///     try context.delete(folder)
/// } catch let error as RelationshipError {
///     print(error)   // Folder 6F1C… can't be removed: its "notes" (rule deny) still holds Note 19A0…
/// }
/// ```
public enum RelationshipError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A relationship with the ``DeleteRule/deny`` rule of `model` (the one being removed, or one
    /// its cascade reached) still leads to `target`, which is not being removed.
    case deleteDenied(model: ModelDescription, relationship: String, target: ModelDescription)

    public var description: String {
        switch self {
        case .deleteDenied(let model, let relationship, let target):
            "\(model) can't be removed: its \"\(relationship)\" (delete rule deny) still holds \(target); "
                + "nothing was removed"
        }
    }
}

extension RelationshipError: LocalizedError {
    /// The same text as ``description``.
    public var errorDescription: String? { description }
}

/// A model named in an error: its model name and id.
public struct ModelDescription: Hashable, Sendable, CustomStringConvertible {
    /// The model's ``Model/modelName``.
    public let modelName: String
    /// The model's ``Model/modelId``.
    public let modelId: ModelID

    /// Names `model`.
    public init<M: Model>(_ model: M) {
        modelName = M.modelName
        modelId = model.modelId
    }

    public var description: String { "\(modelName) \(modelId)" }
}

/// A relationship declaration that can't work: its inverse is of another type, or the two sides
/// name different partners. Thrown by ``ModelRegistry/register(_:)``; a type first met in use
/// writes it to standard error once, and its relationships that don't match keep no inverse.
public struct RelationshipDeclarationError: Error, Sendable, CustomStringConvertible {
    /// The model whose declaration is wrong.
    public let modelName: String
    /// What is wrong, in a sentence.
    public let problem: String

    public var description: String { "\(modelName): \(problem)" }
}

extension RelationshipDeclarationError: LocalizedError {
    /// The same text as ``description``.
    public var errorDescription: String? { description }
}
