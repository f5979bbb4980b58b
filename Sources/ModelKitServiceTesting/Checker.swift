import Foundation
import ModelKit
import ModelKitServices

/// Runs one ``ServiceConformance/Check`` on one service. Every model lives in contexts of the
/// check's own, made in the caller's isolation domain (the checks run in no actor).
struct Checker {
    let check: ServiceConformance.Check
    let service: any ModelService

    func run() async throws {
        switch check {
        case .writesAndVersions: try await writesAndVersions()
        case .saveAndFetch: try await saveAndFetch()
        case .references: try await references()
        case .query: try await query()
        case .delete: try await delete()
        case .notFound: try await notFound()
        case .updateConflict: try await updateConflict()
        case .createConflict: try await createConflict()
        case .deleteConflict: try await deleteConflict()
        case .partialSave: try await partialSave()
        }
    }

    // MARK: Expectations

    func expect(_ condition: Bool, _ expected: String, found: @autoclosure () -> String) throws(ConformanceFailure) {
        if !condition { throw ConformanceFailure(check, expected: expected, found: found()) }
    }

    /// Runs `body`, which must throw a ``ServiceError`` with `code`; returns it.
    func expectError(
        _ code: ServiceError.Code, _ what: String, _ body: () async throws(ServiceError) -> Void
    ) async throws(ConformanceFailure) -> ServiceError {
        do {
            try await body()
        } catch {
            try expect(error.code == code, "\(what) to fail with \(code)", found: "\(error.code): \(error)")
            return error
        }
        throw ConformanceFailure(check, expected: "\(what) to fail with \(code)", found: "success")
    }

    static func unique() -> String { "c" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased() }

    // MARK: Checks

    func writesAndVersions() async throws {
        let collection = ConformanceNote.modelName
        let first = RecordID(collection: collection, id: Self.unique())
        let second = RecordID(collection: collection, id: Self.unique())
        let created = try await service.perform([
            .create(first, fields: ["title": "one", "stars": 1]), .create(second, fields: ["title": "two", "stars": 2]),
        ])
        try expect(created.count == 2, "one result per write (2)", found: "\(created.count)")
        guard case .written(let firstVersion) = created[0], case .written = created[1] else {
            throw ConformanceFailure(check, expected: "both creates written", found: "\(created)")
        }
        let read = try await service.read(first)
        try expect(read.id == first, "the record read to be \(first)", found: "\(read.id)")
        try expect(read.version == firstVersion, "the version the create returned", found: "\(read.version.rawValue)")
        try expect(read.fields["title"] == "one" && read.fields["stars"] == 1, "the fields written", found: "\(read.fields)")

        let updated = try await service.perform([.update(first, fields: ["title": "uno"], expected: firstVersion)])
        guard updated.count == 1, case .written(let newVersion) = updated[0] else {
            throw ConformanceFailure(check, expected: "the update written", found: "\(updated)")
        }
        try expect(newVersion != firstVersion, "a new version after an update", found: "the same, \(newVersion.rawValue)")
        let reread = try await service.read(first)
        try expect(
            reread.fields["title"] == "uno" && reread.fields["stars"] == nil, "the fields replaced", found: "\(reread.fields)")

        // A stale precondition fails, and the writes after a failure are not carried out.
        let third = RecordID(collection: collection, id: Self.unique())
        let refused = try await service.perform([
            .update(first, fields: ["title": "stale"], expected: firstVersion), .create(third, fields: ["title": "three"]),
        ])
        try expect(refused.count == 2, "one result per write (2)", found: "\(refused.count)")
        guard case .failed(let conflict) = refused[0] else {
            throw ConformanceFailure(check, expected: "a stale update to fail", found: "\(refused[0])")
        }
        try expect(conflict.code == .conflict, "a stale update to be a conflict", found: "\(conflict)")
        try expect(conflict.record == first, "the conflict to name \(first)", found: "\(String(describing: conflict.record))")
        let after = try await service.read(first)
        try expect(
            after.version == newVersion && after.fields["title"] == "uno", "the record unchanged", found: "\(after.fields)")
        if case .failed(let skipped) = refused[1] {
            // A backend that stops at the first failure says so for the rest.
            try expect(
                [.notAttempted, .conflict].contains(skipped.code) && skipped.record == third,
                "a write after a failure to be notAttempted, naming its record", found: "\(skipped)")
        }
    }

    func saveAndFetch() async throws {
        let context = ModelContext()
        let note = ConformanceNote.instance(in: context)
        note.title = "Grüße, 世界 🎉 \"quoted\"\n"
        note.stars = -42
        note.score = 3.25
        note.done = true
        note.written = Date(timeIntervalSince1970: 1_234_567_890.125)
        note.attachment = Data([0, 1, 2, 254, 255])
        note.tags = ["a", "b"]
        try await service.save(note)
        let objectId = note.objectId ?? ""
        try expect(!objectId.isEmpty, "an object id after the save", found: "none")
        try expect(
            note.modelState == .loaded && !note.hasChanges, "the model loaded without changes", found: "\(note.modelState)")

        let other = ModelContext()
        let copy = ConformanceNote.instance(objectId: objectId, in: other)
        try await service.fetch(copy)
        try expect(copy.modelState == .loaded, "the copy loaded", found: "\(copy.modelState)")
        try expect(
            copy.title == note.title && copy.stars == -42 && copy.score == 3.25 && copy.done && copy.tags == ["a", "b"],
            "the saved values", found: "\(copy.title.debugDescription) \(copy.stars) \(copy.score) \(copy.done) \(copy.tags)")
        try expect(copy.written == note.written, "the saved date", found: "\(String(describing: copy.written))")
        try expect(copy.attachment == note.attachment, "the saved bytes", found: "\(String(describing: copy.attachment))")
        try expect(other.count == 1, "one model in the other context", found: "\(other.count)")

        // A change saves as an update, and nil replaces a value.
        note.written = nil
        note.stars = 7
        try await service.save(note)
        try await service.fetch(copy)
        try expect(
            copy.written == nil && copy.stars == 7, "the update fetched",
            found: "\(String(describing: copy.written)) \(copy.stars)")
    }

    func references() async throws {
        let context = ModelContext()
        let author = ConformanceAuthor.instance(in: context)
        author.name = "Ann"
        let notes = (0..<3).map { index in
            let note = ConformanceNote.instance(in: context)
            note.title = "Note \(index)"
            note.author = author
            return note
        }
        author.notes = ModelArray(notes)
        try await service.save(notes[1])  // reaches the author, and through it the other notes
        try expect(author.modelState == .loaded, "the author saved with the note", found: "\(author.modelState)")
        for note in notes {
            try expect(note.modelState == .loaded && note.objectId != nil, "every note saved", found: "\(note.modelState)")
        }

        let reader = ModelContext()
        let copy = ConformanceAuthor.instance(objectId: author.objectId ?? "", in: reader)
        try await service.fetch(copy, referenceDepth: 1)
        let fetched = Array(copy.notes)
        try expect(fetched.count == 3, "3 notes", found: "\(fetched.count)")
        try expect(
            fetched.map(\.objectId) == notes.map(\.objectId), "the notes in order", found: "\(fetched.map(\.objectId))")
        for note in fetched {
            try expect(note.modelState == .loaded, "each note loaded", found: "\(note.modelState)")
            try expect(note.author === copy, "each note's author to be the fetched author", found: "another instance")
        }
        try expect(reader.count == 4, "4 models in the reader's context", found: "\(reader.count)")
    }

    func query() async throws {
        let context = ModelContext()
        let tag = Self.unique()
        let titles = ["delta", "alpha", "echo", "charlie", "bravo", "foxtrot", "golf"]
        for (index, title) in titles.enumerated() {
            let note = ConformanceNote.instance(in: context)
            note.title = title
            note.stars = index
            note.topic = tag
            try await service.save(note)
        }
        let elsewhere = ModelContext()
        let query = try ConformanceNote.query(in: elsewhere)
            .filter("topic == '\(tag)' AND stars >= 2")
            .sorted(by: "title")
            .offset(1)
            .limit(3)
        let found = try await service.fetch(query)
        try expect(
            found.map(\.title) == ["charlie", "echo", "foxtrot"], "[charlie, echo, foxtrot]", found: "\(found.map(\.title))")
        let count = try await service.count(query)
        try expect(count == 5, "a count of 5 (order and window ignored)", found: "\(count)")
        let none = try await service.fetch(try ConformanceNote.query(in: elsewhere).filter("topic == 'no-such-topic'"))
        try expect(none.isEmpty, "nothing for a tag nobody has", found: "\(none.count) notes")
    }

    func delete() async throws {
        let context = ModelContext()
        let note = ConformanceNote.instance(in: context)
        note.title = "Short-lived"
        try await service.save(note)
        let objectId = note.objectId ?? ""
        try await service.delete(note)
        try expect(note.modelContext == nil, "the model removed from its context", found: "it is still there")

        let other = ModelContext()
        let gone = ConformanceNote.instance(objectId: objectId, in: other)
        _ = try await expectError(.notFound, "a fetch of a deleted record") { () async throws(ServiceError) in
            try await service.fetch(gone)
        }
        _ = try await expectError(.notFound, "a second delete") { () async throws(ServiceError) in
            try await service.delete(gone)
        }
        try expect(gone.modelContext === other, "a failed delete to leave the model in its context", found: "it was removed")
    }

    func notFound() async throws {
        let context = ModelContext()
        let objectId = Self.unique()
        let missing = ConformanceNote.instance(objectId: objectId, in: context)
        let error = try await expectError(.notFound, "a fetch of a record that never existed") { () async throws(ServiceError) in
            try await service.fetch(missing)
        }
        let id = RecordID(collection: ConformanceNote.modelName, id: objectId)
        try expect(error.record == id, "the error to name \(id)", found: "\(String(describing: error.record))")
        try expect(
            missing.modelState == .needsData && context.count == 1, "the context unchanged", found: "\(missing.modelState)")
        _ = try await expectError(.notFound, "a read of a record that never existed") { () async throws(ServiceError) in
            _ = try await service.read(id)
        }
    }

    /// A note saved as "Original" from one context, then fetched, changed to "Theirs" and saved
    /// from another: the first context's copy is one version behind. The contexts are returned
    /// so that they outlive the models.
    private func noteChangedElsewhere() async throws -> (
        note: ConformanceNote, context: ModelContext, theirs: ConformanceNote, otherContext: ModelContext
    ) {
        let context = ModelContext()
        let note = ConformanceNote.instance(in: context)
        note.title = "Original"
        try await service.save(note)

        let otherContext = ModelContext()
        let theirs = ConformanceNote.instance(objectId: note.objectId ?? "", in: otherContext)
        try await service.fetch(theirs)
        theirs.title = "Theirs"
        try await service.save(theirs)
        return (note, context, theirs, otherContext)
    }

    func updateConflict() async throws {
        let (note, context, theirs, otherContext) = try await noteChangedElsewhere()
        defer { withExtendedLifetime((context, otherContext)) {} }
        let objectId = note.objectId ?? ""

        note.title = "Mine"
        let error = try await expectError(.conflict, "an update of a record changed since") { () async throws(ServiceError) in
            try await service.save(note)
        }
        try expect(error.serverVersion != nil, "the server's version in the conflict", found: "none")
        let id = RecordID(collection: ConformanceNote.modelName, id: objectId)
        try expect(error.record == id, "the conflict to name \(id)", found: "\(String(describing: error.record))")
        try expect(note.title == "Mine" && note.hasChanges, "the model to keep its change", found: note.title)

        try await service.fetch(note)
        try expect(note.title == "Theirs", "the fetch to bring their change", found: note.title)
        note.title = "Merged"
        try await service.save(note)
        try await service.fetch(theirs)
        try expect(theirs.title == "Merged", "the save after the fetch to go through", found: theirs.title)
    }

    func createConflict() async throws {
        let context = ModelContext()
        let objectId = Self.unique()
        let original = ConformanceNote.instance(objectId: objectId, in: context)
        original.title = "First"
        try await service.save(original)
        try expect(original.modelState == .loaded, "a model with a chosen id created", found: "\(original.modelState)")

        let otherContext = ModelContext()
        let intruder = ConformanceNote.instance(objectId: objectId, in: otherContext)
        intruder.title = "Second"
        _ = try await expectError(.conflict, "a create of an existing record") { () async throws(ServiceError) in
            try await service.save(intruder)
        }
        try expect(intruder.title == "Second" && intruder.hasChanges, "the model to keep its values", found: intruder.title)
        let check = ModelContext()
        let stored = ConformanceNote.instance(objectId: objectId, in: check)
        try await service.fetch(stored)
        try expect(stored.title == "First", "the record left as it was", found: stored.title)
    }

    func deleteConflict() async throws {
        let (note, context, _, otherContext) = try await noteChangedElsewhere()
        defer { withExtendedLifetime(otherContext) {} }
        let objectId = note.objectId ?? ""

        _ = try await expectError(.conflict, "a delete with an older version") { () async throws(ServiceError) in
            try await service.delete(note)
        }
        try expect(note.modelContext === context, "the model left in its context", found: "it was removed")
        let check = ModelContext()
        let stored = ConformanceNote.instance(objectId: objectId, in: check)
        try await service.fetch(stored)
        try expect(stored.title == "Theirs", "the record still there", found: stored.title)
    }

    func partialSave() async throws {
        // Another client has the record "taken".
        let takenId = Self.unique()
        let theirContext = ModelContext()
        let theirs = ConformanceNote.instance(objectId: takenId, in: theirContext)
        theirs.title = "Theirs"
        try await service.save(theirs)

        let context = ModelContext()
        let author = ConformanceAuthor.instance(in: context)
        author.name = "Ann"
        let before = ConformanceNote.instance(in: context)
        before.title = "before"
        let taken = ConformanceNote.instance(objectId: takenId, in: context)
        taken.title = "Mine"
        let after = ConformanceNote.instance(in: context)
        after.title = "after"
        author.notes = [before, taken, after]
        let error = try await expectError(.conflict, "a save with a create of an existing record") {
            () async throws(ServiceError) in try await service.save(author)
        }
        let takenRecord = RecordID(collection: ConformanceNote.modelName, id: takenId)
        try expect(
            error.record == takenRecord, "the conflict to name \(takenRecord)", found: "\(String(describing: error.record))")
        let written = Set(error.writtenRecords)
        try expect(!written.contains(takenRecord), "the refused record not reported written", found: "\(error.writtenRecords)")
        for model in [author, before, after] as [any Model] {
            guard let objectId = model.objectId else {
                // Nothing written: the save took its ids back, as before it.
                try expect(written.isEmpty, "an object id kept once records were written", found: "none for a \(type(of: model))")
                continue
            }
            let id = RecordID(collection: type(of: model).modelName, id: objectId)
            if written.contains(id) {
                _ = try await service.read(id)
                try expect(
                    model.modelState == .loaded && !model.hasChanges, "\(id), reported written, saved in the context",
                    found: "\(model.modelState), changes: \(model.hasChanges)")
            } else {
                _ = try await expectError(.notFound, "a read of \(id), not reported written") { () async throws(ServiceError) in
                    _ = try await service.read(id)
                }
                try expect(
                    model.modelState == .new && model.hasChanges, "\(id), not written, to keep its changes",
                    found: "\(model.modelState), changes: \(model.hasChanges)")
            }
        }
        let kept = try await service.read(takenRecord)
        try expect(kept.fields["title"] == "Theirs", "the existing record left as it was", found: "\(kept.fields)")

        // Without the refused note, the rest is written.
        author.notes = [before, after]
        try await service.save(author)
        for model in [author, before, after] as [any Model] {
            let id = RecordID(collection: type(of: model).modelName, id: model.objectId ?? "")
            _ = try await service.read(id)
            try expect(model.modelState == .loaded && !model.hasChanges, "\(id) saved", found: "\(model.modelState)")
        }
    }
}
