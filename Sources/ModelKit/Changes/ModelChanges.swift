import Foundation

/// One persisted property whose value changed: its name (the coding key) and its value before
/// and after, in the property-list form of ``ModelValue``.
///
/// References are written as `ModelPointer` objects and arrays of references as arrays of them,
/// as in serialized data; a property that is `nil` (or absent from the encoded form) reads as
/// ``ModelValue/null``.
public struct PropertyChange: Equatable, Sendable {
    /// The property's coding key, usually the name of the `var` in `Properties`.
    public let property: String
    /// The value before the change.
    public let oldValue: ModelValue
    /// The value after the change.
    public let newValue: ModelValue

    /// Creates a change record.
    public init(property: String, oldValue: ModelValue, newValue: ModelValue) {
        self.property = property
        self.oldValue = oldValue
        self.newValue = newValue
    }
}

/// The properties that differ between two states of a model, in declaration order.
///
/// ```swift
/// author.name = "Jon"
/// author.changes["name"]?.oldValue     // .string("")
/// author.changes.newValues             // ["name": "Jon"], the seed's `modelChanges`
/// ```
public struct ModelChanges: Equatable, Sendable, RandomAccessCollection {
    /// The changed properties, in the order `Properties` encodes them.
    public private(set) var elements: [PropertyChange]

    /// Creates a set of changes from `elements`.
    public init(_ elements: [PropertyChange] = []) {
        self.elements = elements
    }

    public var startIndex: Int { elements.startIndex }
    public var endIndex: Int { elements.endIndex }
    public subscript(position: Int) -> PropertyChange { elements[position] }

    /// The change of the property named `property`, or `nil` when it did not change.
    public subscript(property: String) -> PropertyChange? {
        elements.first { $0.property == property }
    }

    /// The names of the changed properties, in declaration order.
    public var properties: [String] { elements.map(\.property) }

    /// The new value of each changed property: what ModelKit for Objective-C returned as
    /// `modelChanges`.
    public var newValues: ModelValue.Object { ModelValue.Object(elements.map { ($0.property, $0.newValue) }) }

    /// The old value of each changed property.
    public var oldValues: ModelValue.Object { ModelValue.Object(elements.map { ($0.property, $0.oldValue) }) }

    /// The differences between two encoded property objects: keys of `new` first, in its order,
    /// then keys only `old` has. A key missing on one side counts as `null` there.
    static func between(_ old: ModelValue.Object, _ new: ModelValue.Object) -> ModelChanges {
        var elements: [PropertyChange] = []
        for (key, value) in new {
            let before = old[key] ?? .null
            if before != value { elements.append(PropertyChange(property: key, oldValue: before, newValue: value)) }
        }
        for (key, value) in old where new[key] == nil && value != .null {
            elements.append(PropertyChange(property: key, oldValue: value, newValue: .null))
        }
        return ModelChanges(elements)
    }
}

/// Something that happened to a model, as reported by the change streams and observers of
/// models and contexts.
///
/// Events carry the model's id rather than the model, so that they can cross tasks and threads
/// (models are not `Sendable`); look the model up with ``ModelContext/model(withId:)``.
public struct ModelChangeEvent: Equatable, Sendable {
    /// What happened.
    public enum Kind: Equatable, Sendable {
        /// The model was added to the context.
        case inserted
        /// Persisted properties of the model changed: see ``ModelChangeEvent/changes``.
        case updated
        /// The model was removed from the context (or the context was cleared).
        case removed
    }

    /// What happened.
    public let kind: Kind
    /// The id of the model it happened to.
    public let modelId: ModelID
    /// The ``Model/modelName`` of the model's type.
    public let modelName: String
    /// For ``Kind/updated``, the properties that changed, with their old and new values (for a
    /// `beginChanges()`/`endChanges()` block, from its start to its end). Empty otherwise.
    public let changes: ModelChanges

    /// Creates an event.
    public init(kind: Kind, modelId: ModelID, modelName: String, changes: ModelChanges = ModelChanges()) {
        self.kind = kind
        self.modelId = modelId
        self.modelName = modelName
        self.changes = changes
    }
}

/// Misuse of ``Model/beginChanges()`` and ``Model/endChanges()``.
public enum ChangeTrackingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `endChanges()` was called more often than `beginChanges()` on the model named here.
    case endWithoutBegin(modelName: String, modelId: ModelID)

    public var description: String {
        switch self {
        case .endWithoutBegin(let name, let id):
            "endChanges() without a matching beginChanges() on \(name) \(id)"
        }
    }
}
