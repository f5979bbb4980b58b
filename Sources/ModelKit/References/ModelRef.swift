import Foundation

/// A weak to-one reference to another model, stored in `Properties`.
///
/// ```swift
/// final class Post: Model {
///     struct Properties: Codable {
///         var title = ""
///         var author = ModelRef<Author>()
///     }
///     let storage = ModelStorage(Properties())
/// }
///
/// post.author = author          // read and write it as `Author?`
/// post.author?.name             // "Jon"
/// ```
///
/// The reference does not retain its target: the context does. It remembers the target's
/// ``ModelID``, so it behaves well when the target goes away and comes back:
/// - when the target is removed from its context (or its context is destroyed), the reference
///   reads as `nil`, where ModelKit for Objective-C crashed;
/// - when a model with that id is in the context again (re-added, or loaded from a file), the
///   reference resolves to it.
///
/// Declare it as a non-optional property with a default (`var author = ModelRef<Author>()`):
/// the reference has its own empty state.
public struct ModelRef<Target: Model> {
    @usableFromInline weak var cached: Target?
    /// The id of the referenced model, or `nil` for an empty reference.
    public private(set) var id: ModelID?

    /// Creates an empty reference.
    public init() {}

    /// Creates a reference to `target`, or an empty one when `target` is `nil`.
    public init(_ target: Target?) {
        cached = target
        id = target?.modelId
    }

    /// Creates a reference to the model with `id`, resolved when it is read.
    public init(id: ModelID?) {
        self.id = id
    }

    /// The referenced model, looked up in `context` if the remembered instance is gone; `nil`
    /// when the target is not live.
    ///
    /// ```swift
    /// let reference = ModelRef<Author>(id: authorId)
    /// let author = reference.resolve(in: context)
    /// ```
    ///
    /// - Complexity: O(1).
    public func resolve(in context: ModelContext) -> Target? {
        target(lookupIn: context)
    }

    /// ``resolve(in:)`` in the main actor's ``ModelContext/current`` context.
    ///
    /// - Complexity: O(1).
    @MainActor public func resolve() -> Target? {
        target(lookupIn: .current)
    }

    /// The remembered instance if it is live, else the model with this id in `context`; with no
    /// context, only the remembered instance.
    func target(lookupIn context: ModelContext?) -> Target? {
        guard let id else { return nil }
        if let cached, cached.storage.isLive, cached.storage.metadata.modelId == id {
            return cached
        }
        return context?.model(Target.self, modelId: id)
    }

    /// Whether the reference is empty (it was never set, or was set to `nil`).
    public var isEmpty: Bool { id == nil }
}

extension ModelRef: Equatable {
    /// Two references are equal when they refer to the same model id.
    public static func == (lhs: ModelRef, rhs: ModelRef) -> Bool { lhs.id == rhs.id }
}

extension ModelRef: Hashable {
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}

extension ModelRef: CustomStringConvertible {
    public var description: String {
        guard let id else { return "ModelRef<\(Target.modelName)>(nil)" }
        return "ModelRef<\(Target.modelName)>(\(id))"
    }
}
