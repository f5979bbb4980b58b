import Foundation

/// A `Sendable` copy of models, their references and removals, to hand from one isolation domain
/// to another: the way a background context's work reaches the main context.
///
/// A snapshot holds the models in ModelKit's binary file form, so it carries exactly what a file
/// would (ids, object ids, dates, state, every persisted property and the pointers between
/// models), and nothing that belongs to a domain. Merging it into a context updates the instances
/// that context already holds in place, with change events, so references the app keeps stay
/// valid.
///
/// ```swift
/// actor Importer: ModelActor {
///     let modelContext = ModelContext()
///     func importAuthors(_ names: [String]) throws -> ModelSnapshot {
///         for name in names { Author.instance(in: modelContext).name = name }
///         return try modelContext.snapshotOfChanges()
///     }
/// }
///
/// @MainActor func load(_ importer: Importer) async throws {
///     try ModelContext.main.merge(await importer.importAuthors(["Ann", "Bo"]))
/// }
/// ```
public struct ModelSnapshot: Sendable {
    /// The models, and every model they reach, as a binary property-list document.
    let document: Data
    /// The ids of the models the snapshot was taken of, in order.
    public let modelIds: [ModelID]
    /// The ids of models removed from the source context, which a merge removes too.
    public let removedIds: [ModelID]

    /// Whether the snapshot holds no model and no removal.
    public var isEmpty: Bool { modelIds.isEmpty && removedIds.isEmpty }

    init(models: [any Model], removedIds: [ModelID]) throws {
        // With the models' tracking (a backend's versions, unsaved changes), as a context's file.
        document =
            models.isEmpty
            ? Data() : try Persistence.data(Persistence.Roots(models, tracking: true), format: .binaryPropertyList)
        modelIds = models.map(\.modelId)
        self.removedIds = removedIds
    }
}

extension ModelContext {
    /// A snapshot of `models` and every model they reach, to merge into another context.
    ///
    /// ```swift
    /// let snapshot = try context.snapshot(of: [author])   // the author and its posts
    /// ```
    ///
    /// - Throws: ``SerializationError`` when a model fails to encode.
    /// - Complexity: O(n) in the size of the reachable graph.
    public func snapshot(of models: [any Model]) throws -> ModelSnapshot {
        try ModelSnapshot(models: models, removedIds: [])
    }

    /// A snapshot of what changed since the last ``resetChanges()``: the inserted and updated
    /// models (with every model they reach) and the ids of the removed ones. Take it at the end
    /// of a unit of background work, then reset the changes if the work goes on.
    ///
    /// - Throws: ``SerializationError`` when a model fails to encode.
    /// - Complexity: O(n) in the size of the graph the changed models reach.
    public func snapshotOfChanges() throws -> ModelSnapshot {
        try ModelSnapshot(models: insertedModels + updatedModels, removedIds: changes.removed.sorted())
    }

    /// Applies a snapshot taken in another context: each model in it is merged by identity (an
    /// instance this context holds is updated in place and reports the change; the others are
    /// added), then the snapshot's removals are removed here.
    ///
    /// A model is matched by its model id or, when this context has no model with that id, by its
    /// type and object id: a model a background actor made with
    /// ``Model/instance(objectId:in:isolation:)`` updates the model with that object id here, which
    /// keeps its model id, and the snapshot's references to it lead to that model. Declared
    /// inverses of updated models are brought in line on both sides.
    ///
    /// ```swift
    /// try ModelContext.main.merge(snapshot)
    /// ```
    ///
    /// - Parameters:
    ///   - snapshot: What another context handed over.
    ///   - isolation: The caller's domain; leave it to the default. A context made outside any
    ///     actor becomes its own (see ``ModelContext/init(isolation:)``).
    /// - Throws: ``SerializationError`` as ``load(_:options:isolation:)`` does, and
    ///   ``SerializationError/Code/duplicateObjectId`` when two models of the snapshot claim the
    ///   same object id; after an error the context is exactly as before and nothing is removed.
    /// - Complexity: O(n) in the size of the snapshot.
    public func merge(_ snapshot: ModelSnapshot, isolation: (any Actor)? = #isolation) throws {
        claim(for: isolation)
        // One batch: live result sets update once for the whole snapshot.
        try batchChanges {
            if !snapshot.modelIds.isEmpty {
                var options = DeserializationOptions()
                options.matchesObjectIds = true
                try load(snapshot.document, options: options)
            }
            for id in snapshot.removedIds {
                guard let model = model(withId: id) else { continue }
                model.removeFromContext()
            }
        }
    }
}
