import Foundation

/// An actor that works on models in a context of its own: the isolation domain for background
/// work, as the main actor is for UI code.
///
/// The context is the actor's state like any other: only the actor's own methods reach it and its
/// models, so the compiler keeps them off every other thread. What crosses to other domains is
/// `Sendable`: ``ModelID``s, values, and ``ModelSnapshot``s that another context merges.
///
/// ```swift
/// actor Importer: ModelActor {
///     let modelContext = ModelContext()
///
///     func importFeed(_ json: Data) throws -> ModelSnapshot {
///         _ = try Feed.instance(fromJSON: json, in: modelContext)
///         return try modelContext.snapshotOfChanges()
///     }
/// }
///
/// @MainActor func refresh(_ importer: Importer, json: Data) async throws {
///     let snapshot = try await importer.importFeed(json)
///     try ModelContext.main.merge(snapshot)   // instances the UI holds are updated in place
/// }
/// ```
///
/// Conforming is optional: any actor may store a context. The protocol names the pattern, and
/// lets generic code reach an actor's context.
public protocol ModelActor: Actor {
    /// The context the actor's models live in. Declare it as a stored `let`.
    var modelContext: ModelContext { get }
}
