import Foundation
import ModelKit
import Observation
import Testing

@Suite("Changes")
@MainActor struct ChangeTests {
    @Test("properties holds every persisted property by name, references as pointers")
    func propertiesDictionary() throws {
        try inFreshContext { _ in
            let author = Author.instance()
            author.name = "Jon Gilkison"
            author.age = 39
            let post = Post.instance()
            post.author = author
            let values = try author.properties
            #expect(values["name"] == "Jon Gilkison")
            #expect(values["age"] == 39)
            #expect(values["birthday"] == .null)
            #expect(values.keys.first == "name")
            let pointer = try post.properties["author"]
            #expect(pointer?["__type"] == "ModelPointer")
            #expect(pointer?["modelId"] == .string(author.modelId.description))
        }
    }

    @Test("A new model's changes list what was set, with old and new values")
    func changesOfNewModel() {
        inFreshContext { _ in
            let author = Author.instance()
            #expect(!author.hasChanges)
            #expect(author.changes.isEmpty)
            author.email = "jon@interfacelab.com"
            author.name = "Jon Gilkison"
            #expect(author.hasChanges)
            #expect(author.changes.properties == ["name", "email"])
            #expect(author.changes["email"] == PropertyChange(property: "email", oldValue: "", newValue: "jon@interfacelab.com"))
            #expect(author.changes.newValues == ModelValue.Object([("name", "Jon Gilkison"), ("email", "jon@interfacelab.com")]))
            #expect(author.changes.oldValues == ModelValue.Object([("name", ""), ("email", "")]))
        }
    }

    @Test("resetChanges forgets changes; later changes compare with the reset values")
    func resetChanges() {
        inFreshContext { _ in
            let author = Author.instance()
            author.name = "Jon"
            author.resetChanges()
            #expect(!author.hasChanges)
            author.name = "Joe"
            #expect(author.changes["name"]?.oldValue == "Jon")
            #expect(author.changes["name"]?.newValue == "Joe")
        }
    }

    @Test("A property set back to its value at the reset is not a change")
    func backToOriginal() {
        inFreshContext { _ in
            let author = Author.instance()
            author.age = 5
            author.age = 0
            #expect(!author.hasChanges)
        }
    }

    @Test("Optional properties change from nil to a value and back")
    func nilToValue() {
        inFreshContext { _ in
            let author = Author.instance()
            let date = Date(timeIntervalSinceReferenceDate: 1000)
            author.birthday = date
            #expect(author.changes["birthday"] == PropertyChange(property: "birthday", oldValue: .null, newValue: .date(date)))
            author.resetChanges()
            author.birthday = nil
            #expect(author.changes["birthday"] == PropertyChange(property: "birthday", oldValue: .date(date), newValue: .null))
        }
    }

    @Test("References and arrays of references are tracked and reverted")
    func referencesCount() {
        inFreshContext { _ in
            let author = Author.instance()
            let post = Post.instance()
            author.resetChanges()
            post.resetChanges()
            post.author = author
            author.posts.append(post)
            #expect(post.changes.properties == ["author"])
            #expect(post.changes["author"]?.oldValue == .null)
            #expect(post.changes["author"]?.newValue["modelId"] == .string(author.modelId.description))
            #expect(author.changes.properties == ["posts"])
            #expect(author.changes["posts"]?.newValue[0]?["modelId"] == .string(post.modelId.description))
            post.revertChanges()
            author.revertChanges()
            #expect(post.author == nil)
            #expect(author.posts.isEmpty)
            #expect(!post.hasChanges && !author.hasChanges)
        }
    }

    @Test("revertChanges after several changes restores the values at the reset")
    func revertAfterSeveral() {
        inFreshContext { _ in
            let post = Post.instance()
            post.title = "First"
            post.tags = ["a"]
            post.resetChanges()
            post.title = "Second"
            post.title = "Third"
            post.tags.append("b")
            post.body = "text"
            post.revertChanges()
            #expect(post.title == "First")
            #expect(post.tags == ["a"])
            #expect(post.body == "")
            #expect(!post.hasChanges)
            post.revertChanges()  // nothing to revert
            #expect(post.title == "First")
        }
    }

    @Test("Writing a non-Equatable property with its current value is not a change")
    func nonEquatableSameValue() {
        inFreshContext { _ in
            let model = HasLoop()
            model.box = nil
            #expect(!model.hasChanges)
        }
    }

    @Test("Loading data into a model resets its changes")
    func loadResets() throws {
        try inFreshContext { context in
            let note = Note.instance()
            note.text = "saved"
            let saved = try note.serialize()
            note.text = "edited"
            #expect(note.hasChanges)
            let loaded = try Note.instance(from: saved, in: context)
            #expect(loaded === note)
            #expect(note.text == "saved")
            #expect(!note.hasChanges)
        }
    }

    @Test("updatedAt advances with a write, is stable between writes, and is serialized")
    func updatedAtSemantics() throws {
        try inFreshContext { _ in
            let note = Note.instance()
            let created = note.updatedAt
            Thread.sleep(forTimeInterval: 0.002)
            for i in 0..<100 { note.count = i }
            let stamp = note.updatedAt
            #expect(stamp > created)
            #expect(note.updatedAt == stamp)
            Thread.sleep(forTimeInterval: 0.002)
            note.count = 1000
            let value = try note.serialize()
            #expect(value["updatedAt"] == .date(note.updatedAt))
            #expect(note.updatedAt > stamp)
        }
    }
}

@Suite("Batches")
@MainActor struct BatchTests {
    @Test("endChanges without beginChanges throws and leaves the model as it was")
    func unbalancedEnd() {
        inFreshContext { _ in
            let author = Author.instance()
            #expect(throws: ChangeTrackingError.endWithoutBegin(modelName: "Author", modelId: author.modelId)) {
                try author.endChanges()
            }
            author.beginChanges()
            author.name = "Jon"
            #expect(throws: Never.self) { try author.endChanges() }
            #expect(throws: ChangeTrackingError.self) { try author.endChanges() }
            #expect(author.name == "Jon")
        }
    }

    @Test("Nested batches report once, at the outermost endChanges")
    func nestedBatches() throws {
        try inFreshContext { _ in
            let author = Author.instance()
            let recorder = Recorder()
            let token = author.observeChanges { _, changes in recorder.append(changes.properties) }
            author.beginChanges()
            author.name = "Joe Blow"
            author.beginChanges()
            author.age = 29
            try author.endChanges()
            #expect(recorder.all.isEmpty)
            author.email = "whutwhut@interfacelab.com"
            try author.endChanges()
            #expect(recorder.all == [["name", "email", "age"]])
            token.cancel()
        }
    }

    @Test("A batch that changes nothing reports nothing")
    func emptyBatch() {
        inFreshContext { _ in
            let author = Author.instance()
            let recorder = Recorder()
            let token = author.observeChanges { _, changes in recorder.append(changes.properties) }
            author.batchChanges {
                author.name = "x"
                author.name = ""
            }
            #expect(recorder.all.isEmpty)
            withExtendedLifetime(token) {}
        }
    }
}

/// Collects values from callbacks, thread-safely.
final class Recorder: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [[String]] = []
    func append(_ value: [String]) { lock.withLock { values.append(value) } }
    var all: [[String]] { lock.withLock { values } }
}

@Suite("Changes and loading")
@MainActor struct ChangeLoadingTests {
    @Test("Reloading a model in place tells its observers and the Observation framework")
    func reloadIsReported() throws {
        try inFreshContext { context in
            let note = Note.instance()
            note.text = "saved"
            let saved = try note.serialize()
            note.text = "edited"
            let seen = Recorder()
            let token = note.observeChanges { _, changes in seen.append(changes.properties) }
            let fired = Box(0)
            _ = withObservationTracking {
                note.text
            } onChange: {
                fired.value += 1
            }
            _ = try Note.instance(from: saved, in: context)
            #expect(seen.all == [["text"]])
            #expect(fired.value == 1)
            token.cancel()
        }
    }

    @Test("properties throws the encoding error that serialize would throw")
    func propertiesThrows() {
        inFreshContext { _ in
            let model = HasLoop()
            let box = LoopingBox()
            box.next = box
            model.box = box
            #expect(throws: SerializationError.self) { try model.properties }
            #expect(!model.hasChanges)  // changes of values that don't encode are not reported
        }
    }

    @Test("A context observer may use the context and read the model from its callback")
    func observerUsesContext() {
        let context = ModelContext()
        let names = Recorder()
        let token = context.observeChanges { event in
            if let note = context.model(Note.self, modelId: event.modelId) {
                names.append([note.text])
            }
        }
        let note = Note.instance(in: context)
        note.text = "read back"
        #expect(names.all == [[""], ["read back"]])
        token.cancel()
    }
}
