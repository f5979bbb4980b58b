import Foundation
import Testing

@testable import ModelKit

/// What an offline sync keeps beside the models (issue #34): the entries of removed models (the
/// deletes still to push) and context-wide values (the versions collections were pulled at). They
/// change atomically with the models, in the same store save, and survive a relaunch.
@Suite("Removed entries and package values")
struct RemovedEntriesTests {
    static let namespace = "Tests.sync versions"

    /// A context with a table that keeps removed entries and two synced authors.
    static func synced(_ context: ModelContext) -> (ModelMetadataTable, Author, Author) {
        let table = context.metadataTable(namespace)
        table.keepsRemovedEntries = true
        let ann = Author.instance(objectId: "ann", in: context)
        ann.name = "Ann"
        let bo = Author.instance(objectId: "bo", in: context)
        bo.name = "Bo"
        table[ann.modelId] = "10"
        table[bo.modelId] = "11"
        return (table, ann, bo)
    }

    @Test("Removing a model moves its entry to the removed entries, with its name, object id and creation date")
    func removalKeepsEntry() {
        let context = ModelContext()
        let (table, ann, bo) = Self.synced(context)
        let id = ann.modelId
        ann.removeFromContext()
        #expect(table[id] == nil)
        #expect(table.removed[id] == .init(modelName: "Author", objectId: "ann", value: "10", createdAt: ann.createdAt))
        #expect(table[bo.modelId] == "11")
        table.forgetRemoved(id)
        #expect(table.removed.isEmpty)
    }

    @Test("A table that does not keep removed entries leaves them where they were, and files do not carry them")
    func defaultTableKeepsNothing() throws {
        try ModelRegistry.register(Author.self, Post.self)
        let context = ModelContext()
        let table = context.metadataTable(Self.namespace)
        let ann = Author.instance(objectId: "ann", in: context)
        table[ann.modelId] = "10"
        let id = ann.modelId
        ann.removeFromContext()
        #expect(table.removed.isEmpty)
        #expect(table[id] == "10")
        let text = String(decoding: try context.data(format: .json), as: UTF8.self)
        #expect(!text.contains("\"removed\""))
        #expect(!text.contains("\"values\""))
    }

    @Test("Undoing a removal moves the entry back")
    func undoMovesBack() {
        let context = ModelContext()
        let undo = ModelUndoManager()
        context.undoManager = undo
        let (table, ann, _) = Self.synced(context)
        let id = ann.modelId
        context.resetChanges()
        context.remove(ann)
        #expect(table.removed[id] != nil)
        undo.undo()
        #expect(context.model(withId: id) != nil)
        #expect(table.removed[id] == nil)
        #expect(table[id] == "10")
    }

    @Test(
        "Removed entries and package values come back from a whole-graph file in every format",
        arguments: PersistenceFormat.allCases)
    func fileRoundTrip(format: PersistenceFormat) throws {
        try ModelRegistry.register(Author.self, Post.self)
        let context = ModelContext()
        let (_, ann, bo) = Self.synced(context)
        let id = ann.modelId
        ann.removeFromContext()
        context.setPackageValue("1234", forKey: "since Author")
        let reloaded = ModelContext()
        try reloaded.load(context.data(format: format))
        let table = reloaded.metadataTable(Self.namespace)
        #expect(table.keepsRemovedEntries)
        // The creation date comes back exactly (`==`), as model dates do.
        #expect(table.removed == [id: .init(modelName: "Author", objectId: "ann", value: "10", createdAt: ann.createdAt)])
        #expect(table[bo.modelId] == "11")
        #expect(reloaded.packageValue("since Author") == "1234")
    }

    @Test("A store saves a removal's entry, a forgotten entry and package values, and they survive a relaunch")
    func storeRelaunch() throws {
        try withStore { url, options in
            var annId: ModelID?
            var boId: ModelID?
            var annCreated: Date?
            do {
                let store = try ModelStore(url: url, options: options)
                let (table, ann, bo) = Self.synced(store.context)
                try store.save()
                annId = ann.modelId
                annCreated = ann.createdAt
                boId = bo.modelId
                ann.removeFromContext()
                try store.save()
                // Only a package value changes: that alone is a save.
                let saves = store.statistics.saves
                store.context.setPackageValue("99", forKey: "since Author")
                #expect(store.needsSaving)
                try store.save()
                #expect(store.statistics.saves == saves + 1)
                #expect(!store.needsSaving)
                // Removed and forgotten (its delete pushed) in one save, the journal's last: the
                // replay must not bring the entry back when it replays the removal.
                bo.removeFromContext()
                table.forgetRemoved(bo.modelId)
                try store.save()
            }
            let ann = try #require(annId)
            let bo = try #require(boId)
            let reopened = try ModelStore(url: url, options: options)
            let table = reopened.context.metadataTable(Self.namespace)
            #expect(table.keepsRemovedEntries)
            #expect(
                table.removed == [ann: .init(modelName: "Author", objectId: "ann", value: "10", createdAt: annCreated)])
            #expect(table.removed[bo] == nil && table[bo] == nil)
            #expect(reopened.context.packageValue("since Author") == "99")
            // A compaction writes them into the base.
            try reopened.compact()
            reopened.close()
            let again = try ModelStore(url: url, options: options)
            #expect(again.context.metadataTable(Self.namespace).removed.keys.sorted() == [ann])
            #expect(again.context.packageValue("since Author") == "99")
        }
    }

    @Test("Removed entries that are not a model name, an object id, a string and an optional date fail with the path")
    func malformedEntry() throws {
        try ModelRegistry.register(Author.self, Post.self)
        let context = ModelContext()
        _ = Self.synced(context)
        context.setPackageValue("1", forKey: "k")
        let text = String(decoding: try context.data(format: .json), as: UTF8.self)
        let id = "00000000-0000-4000-8000-000000000001"
        for (bad, path) in [
            ("\"removed\":{\"ns\":{\"\(id)\":[\"Author\",\"ann\"]}}", "tracking.removed.ns.\(id)"),
            ("\"removed\":{\"ns\":{\"\(id)\":[\"Author\",\"ann\",3]}}", "tracking.removed.ns.\(id)"),
            ("\"removed\":{\"ns\":{\"\(id)\":[\"Author\",\"ann\",\"3\",\"not a date\"]}}", "tracking.removed.ns.\(id)[3]"),
            (
                "\"removed\":{\"ns\":{\"\(id)\":[\"Author\",\"ann\",\"3\",\"2026-01-01T00:00:00Z\",\"x\"]}}",
                "tracking.removed.ns.\(id)"
            ),
            ("\"removed\":{\"ns\":{\"not an id\":[\"Author\",\"ann\",\"3\"]}}", "tracking.removed.ns"),
            ("\"removed\":[]", "tracking.removed"),
        ] {
            let broken = try #require(
                text.range(of: "\"removed\":{").map { range in
                    text.replacingCharacters(in: range.lowerBound..<text.range(of: ",\"values\"")!.lowerBound, with: bad)
                })
            let fresh = ModelContext()
            let error = #expect(throws: SerializationError.self) { try fresh.load(Data(broken.utf8)) }
            #expect(error?.path == path)
            #expect(fresh.isEmpty)
        }
    }

    @Test("A removed entry written without a creation date (an older file) loads with none")
    func entryWithoutDate() throws {
        try ModelRegistry.register(Author.self, Post.self)
        let context = ModelContext()
        _ = Self.synced(context)
        let text = String(decoding: try context.data(format: .json), as: UTF8.self)
        let id = "00000000-0000-4000-8000-000000000001"
        let range = try #require(text.range(of: "\"removed\":{"))
        let end = try #require(text.range(of: ",\"values\""))
        let old = text.replacingCharacters(
            in: range.lowerBound..<end.lowerBound, with: "\"removed\":{\"ns\":{\"\(id)\":[\"Author\",\"ann\",\"3\"]}}")
        let reloaded = ModelContext()
        try reloaded.load(Data(old.utf8))
        let entry = try #require(reloaded.metadataTable("ns").removed[ModelID(id)!])
        #expect(entry == .init(modelName: "Author", objectId: "ann", value: "3", createdAt: nil))
    }

    @Test("A save that removes a model and gives its object id to a new one opens again")
    func objectIdReusedInOneSave() throws {
        try withStore { url, options in
            do {
                let store = try ModelStore(url: url, options: options)
                let first = Author.instance(objectId: "x", in: store.context)
                first.name = "First"
                try store.save()
                first.removeFromContext()
                let second = Author.instance(objectId: "x", in: store.context)
                second.name = "Second"
                try store.save()
            }
            let reopened = try ModelStore(url: url, options: options)
            #expect(reopened.context.models(of: Author.self).map(\.name) == ["Second"])
            #expect(reopened.context.model(Author.self, objectId: "x")?.name == "Second")
        }
    }

    @Test("A placeholder comes back as a placeholder, from a store and from a file, not as a model with default values")
    func placeholderSurvives() throws {
        try withStore { url, options in
            var placeholderId: ModelID?
            do {
                let store = try ModelStore(url: url, options: options)
                _ = Self.synced(store.context)
                let placeholder = Author.instance(objectId: "elsewhere", in: store.context)
                #expect(placeholder.modelState == .needsData)
                placeholderId = placeholder.modelId
                try store.save()
            }
            let id = try #require(placeholderId)
            let reopened = try ModelStore(url: url, options: options)
            #expect(reopened.context.model(withId: id)?.modelState == .needsData)
            let copy = ModelContext()
            try copy.load(reopened.context.data(format: .binaryPropertyList))
            #expect(copy.model(withId: id)?.modelState == .needsData)
        }
    }
}
