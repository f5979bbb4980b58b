import Foundation
import Observation

/// A class whose persisted properties ModelKit manages: the Swift counterpart of `MKitModel`.
///
/// Subclass ``ModelObject`` and declare the persisted properties in a nested `Codable` struct
/// named `Properties`, with default values:
///
/// ```swift
/// final class Author: ModelObject<Author.Properties> {
///     struct Properties: ModelProperties {
///         var name = ""
///         var email = ""
///         var birthday: Date?
///         var age = 0
///         var posts = ModelArray<Post>()      // to-many reference, weak
///     }
///
///     var avatarCache: Data?                   // outside Properties: never persisted
/// }
///
/// let author = Author.instance()               // created and registered in the current context
/// author.name = "Jon Gilkison"                 // reads and writes go straight to Properties
/// ```
///
/// The compiler's synthesized `Codable` conformance of `Properties` is all ModelKit needs: no
/// `Mirror`, no macros, no Objective-C runtime. Properties are read and written through
/// `@dynamicMemberLookup`, so `author.name` is checked by the compiler and is as fast as a field
/// access; each write also stamps ``updatedAt``.
///
/// Stored properties of the class itself (like `avatarCache` above) are not persisted: they are the
/// counterpart of the Objective-C rule that properties prefixed with `model` are ignored. Inside
/// `Properties`, a `CodingKeys` enum that leaves a property out excludes it too.
///
/// ## Rules
/// - Subclass ``ModelObject`` (a `final class` is best: its accessors need no dynamic dispatch),
///   and give every property of the struct a default value: ``ModelProperties`` asks for the
///   `init()` that gives it.
/// - Reference other models with ``ModelRef`` (to-one) and ``ModelArray`` (to-many). Both are weak:
///   the context owns models, so cyclic graphs never leak.
/// - A model belongs to its context's isolation domain (the main actor, or an actor of the
///   app's); hand other domains its ``modelId`` or a snapshot. See ``ModelContext``.
///
/// ## Changes and observation
/// ModelKit tracks which persisted properties changed since the last ``resetChanges()``, posts
/// notifications, feeds change streams and closure observers, and works with the Observation
/// framework (`withObservationTracking`, SwiftUI): every model is `Observable`, without macros.
/// See ``changes``, ``observeChanges(_:)``, ``changeEvents(bufferingPolicy:)`` and ``beginChanges()``.
@dynamicMemberLookup
public protocol Model: AnyModelObject, Observable {
    /// The persisted properties of the model, as a `Codable` struct with default values.
    associatedtype Properties: ModelProperties

    /// Creates a model with default properties, outside any context.
    ///
    /// Prefer ``instance(in:isolation:)``, which also registers the new model in a context.
    init()

    /// The name written to serialized data and used to find the type again when reading it.
    ///
    /// ``ModelObject`` gives the class's name; override it there (`override class var`).
    static var modelName: String { get }
}

/// A model that is never added to a context automatically: the counterpart of `MKitNoContext`.
///
/// ``Model/instance(in:isolation:)`` and friends return unregistered instances for such types; the app keeps
/// them alive. ``Model/addToContext(_:isolation:)`` still registers one explicitly.
///
/// ```swift
/// final class Draft: ModelObject<Draft.Properties>, ContextFreeModel {
///     struct Properties: ModelProperties { var text = "" }
/// }
/// ```
public protocol ContextFreeModel: Model {}

extension Model {
    /// The model's properties and framework state, typed. Every model is a
    /// `ModelObject<Properties>`: only ``ModelObject`` can subclass ``AnyModelObject``, and its
    /// generic parameter is the conformance's `Properties`.
    @inlinable var storage: ModelStorage<Properties> {
        ModelStorage(box: unsafeDowncast(self, to: ModelObject<Properties>.self))
    }
}
