import Foundation

/// A to-one reference to another model, stored in `Properties`.
///
/// ```swift
/// final class Post: ModelObject<Post.Properties> {
///     struct Properties: ModelProperties {
///         var title = ""
///         var author = ModelRef<Author>()
///     }
/// }
///
/// post.author = author          // read and write it as `Author?`
/// post.author?.name             // "Jon"
/// ```
///
/// The reference does not retain its target: the context does. It is the target's ``ModelID``,
/// looked up in the owner's context when it is read, so it behaves well when the target goes away
/// and comes back:
/// - when the target is removed from its context (or its context is destroyed), the reference
///   reads as `nil`, where ModelKit for Objective-C crashed;
/// - when a model with that id is in the context again (re-added, or loaded from a file), the
///   reference resolves to it.
///
/// It holds no Swift `weak` reference: a weak reference gives its target a side table, through
/// which every later retain and release of the target goes, which made scans over referenced
/// models several times slower and cost memory for every model.
///
/// Declare it as a non-optional property with a default (`var author = ModelRef<Author>()`):
/// the reference has its own empty state.
public struct ModelRef<Target: Model> {
    /// The target's id, or ``ModelID/zero`` for an empty reference: 16 bytes where a `ModelID?`
    /// takes 17, which its alignment rounds to 24 in a model's properties and in every element
    /// of a ``ModelArray``. No model has the nil id (files that give one are rejected).
    @usableFromInline var storedId: ModelID

    /// The id of the referenced model, or `nil` for an empty reference.
    public var id: ModelID? { storedId.isZero ? nil : storedId }

    /// Creates an empty reference.
    @inlinable
    public init() {
        storedId = .zero
    }

    /// Creates a reference to `target`, or an empty one when `target` is `nil`.
    @inlinable
    public init(_ target: Target?) {
        storedId = target?.storage.metadata.modelId ?? .zero
    }

    /// Creates a reference to the model with `id`, resolved when it is read. A `nil` id, or the
    /// nil id (all zeros), makes an empty reference.
    public init(id: ModelID?) {
        storedId = id ?? .zero
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

    /// The model with this id in `context`; `nil` without a context.
    @inline(__always)
    func target(lookupIn context: ModelContext?) -> Target? {
        guard let id, let context else { return nil }
        return context.model(Target.self, modelId: id)
    }

    /// The target for an owner in `context`, else among the models the owner holds (see
    /// ``ModelObject/held``: models given to it while it was in no context, or from other contexts).
    ///
    /// `held` is only evaluated when the context has no such model (it rarely is: a model in a
    /// context holds only targets in other contexts).
    func target(lookupIn context: ModelContext?, held: @autoclosure () -> [AnyObject]) -> Target? {
        guard let id else { return nil }
        if let context, let found = context.model(Target.self, modelId: id) { return found }
        let held = held()
        return held.isEmpty ? nil : Self.live(id, among: held)
    }

    /// The live model with `id` among `held`.
    static func live(_ id: ModelID, among held: [AnyObject]) -> Target? {
        for object in held {
            guard let model = object as? Target, model.storage.metadata.modelId == id else { continue }
            return model.storage.isLive ? model : nil
        }
        return nil
    }

    /// Whether the reference is empty (it was never set, or was set to `nil`).
    public var isEmpty: Bool { id == nil }
}

/// A reference is its target's id, so it crosses isolation domains as the id does; the model it
/// leads to is looked up where it arrives (``resolve(in:)``).
extension ModelRef: Sendable {}

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
