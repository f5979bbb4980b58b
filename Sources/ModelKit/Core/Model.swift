import Foundation
import Observation

/// A class whose persisted properties ModelKit manages: the Swift counterpart of `MKitModel`.
///
/// Declare the persisted properties in a nested `Codable` struct named `Properties`, with default
/// values, and add one line of framework state:
///
/// ```swift
/// final class Author: Model {
///     struct Properties: Codable {
///         var name = ""
///         var email = ""
///         var birthday: Date?
///         var age = 0
///         var posts = ModelArray<Post>()      // to-many reference, weak
///     }
///     let storage = ModelStorage(Properties())
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
/// - Use a `final class`, and let the struct have default values for every property so that the
///   class gets its `init()`.
/// - Reference other models with ``ModelRef`` (to-one) and ``ModelArray`` (to-many). Both are weak:
///   the context owns models, so cyclic graphs never leak.
/// - A model is used by one thread (or task) at a time, like any other class instance; contexts
///   are thread-safe. See ``ModelContext``.
///
/// ## Changes and observation
/// ModelKit tracks which persisted properties changed since the last ``resetChanges()``, posts
/// notifications, feeds change streams and closure observers, and works with the Observation
/// framework (`withObservationTracking`, SwiftUI): every model is `Observable`, without macros.
/// See ``changes``, ``observeChanges(_:)``, ``changeEvents()`` and ``beginChanges()``.
@dynamicMemberLookup
public protocol Model: AnyObject, Observable {
    /// The persisted properties of the model, as a `Codable` struct with default values.
    associatedtype Properties: Codable

    /// The model's framework state and persisted properties. Declare it as
    /// `let storage = ModelStorage(Properties())` and leave it to ModelKit.
    ///
    /// Declare it with `let`: a `var` works too, but then every property write pays for Swift's
    /// run-time exclusivity check on the model's stored property.
    var storage: ModelStorage<Properties> { get }

    /// Creates a model with default properties, outside any context.
    ///
    /// Prefer ``instance(in:)``, which also registers the new model in a context.
    init()

    /// The name written to serialized data and used to find the type again when reading it.
    ///
    /// Defaults to the type's name. Override it to keep files readable after renaming the class,
    /// or to match a backend's class name, like `modelName` in ModelKit for Objective-C.
    static var modelName: String { get }
}

extension Model {
    public static var modelName: String { String(describing: Self.self) }
}

/// A model that is never added to a context automatically: the counterpart of `MKitNoContext`.
///
/// ``Model/instance(in:)`` and friends return unregistered instances for such types; the app keeps
/// them alive. ``Model/addToContext(_:)`` still registers one explicitly.
///
/// ```swift
/// final class Draft: Model, ContextFreeModel {
///     struct Properties: Codable { var text = "" }
///     let storage = ModelStorage(Properties())
/// }
/// ```
public protocol ContextFreeModel: Model {}
