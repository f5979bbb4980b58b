import Foundation
import ModelKit
import Observation
import Testing

@Suite("Notifications", .serialized)
@MainActor struct NotificationTests {
    @Test("Each property change posts one notification with the property, old and new value")
    func perPropertyNotifications() {
        inFreshContext { _ in
            let center = NotificationCenter()
            ModelNotifications.center = center
            defer { ModelNotifications.center = .default }
            let author = Author.instance()
            author.postsNotifications = true
            let received = Box<[(String, ModelValue, ModelValue)]>([])
            let observer = center.addObserver(forName: .modelPropertyDidChange, object: author, queue: nil) { note in
                let info = note.userInfo ?? [:]
                received.value.append(
                    (
                        info[ModelNotifications.propertyKey] as? String ?? "?",
                        info[ModelNotifications.oldValueKey] as? ModelValue ?? .null,
                        info[ModelNotifications.newValueKey] as? ModelValue ?? .null
                    ))
            }
            defer { center.removeObserver(observer) }
            author.name = "Jon"
            author.name = "Jon"  // same value: no notification
            author.age = 39
            #expect(received.value.map(\.0) == ["name", "age"])
            #expect(received.value.first?.1 == "")
            #expect(received.value.first?.2 == "Jon")
            #expect(received.value.last?.2 == 39)
        }
    }

    @Test("beginChanges/endChanges post one modelDidChange notification instead")
    func batchedNotification() throws {
        try inFreshContext { _ in
            let center = NotificationCenter()
            ModelNotifications.center = center
            defer { ModelNotifications.center = .default }
            let author = Author.instance()
            author.postsNotifications = true
            let properties = Box(0)
            let whole = Box<[ModelChanges]>([])
            let o1 = center.addObserver(forName: .modelPropertyDidChange, object: author, queue: nil) { _ in
                properties.value += 1
            }
            let o2 = center.addObserver(forName: .modelDidChange, object: author, queue: nil) { note in
                if let changes = note.userInfo?[ModelNotifications.changesKey] as? ModelChanges {
                    whole.value.append(changes)
                }
            }
            defer {
                center.removeObserver(o1)
                center.removeObserver(o2)
            }
            author.beginChanges()
            for i in 0..<1000 { author.age = i }
            author.name = "Joe Blow"
            try author.endChanges()
            #expect(properties.value == 0)
            #expect(whole.value.count == 1)
            #expect(whole.value.first?.properties == ["name", "age"])
            #expect(whole.value.first?["age"]?.newValue == 999)
        }
    }

    @Test("Models post nothing while notifications are off")
    func offByDefault() {
        inFreshContext { _ in
            let center = NotificationCenter()
            ModelNotifications.center = center
            defer { ModelNotifications.center = .default }
            let note = Note.instance()
            let count = Box(0)
            let observer = center.addObserver(forName: .modelPropertyDidChange, object: note, queue: nil) { _ in
                count.value += 1
            }
            defer { center.removeObserver(observer) }
            note.text = "quiet"
            #expect(count.value == 0)
            note.postsNotifications = true
            note.text = "loud"
            #expect(count.value == 1)
        }
    }
}

extension NotificationTests {
    @Test("ModelNotifications.isEnabled switches notifications on for every model")
    func globalSwitch() {
        inFreshContext { _ in
            let center = NotificationCenter()
            ModelNotifications.center = center
            let note = Note.instance()
            note.text = "quiet before"
            let count = Box(0)
            let observer = center.addObserver(forName: .modelPropertyDidChange, object: note, queue: nil) { _ in
                count.value += 1
            }
            ModelNotifications.isEnabled = true
            note.text = "loud"
            ModelNotifications.isEnabled = false
            note.text = "quiet after"
            center.removeObserver(observer)
            ModelNotifications.center = .default
            #expect(count.value == 1)
        }
    }
}

@Suite("Observation")
@MainActor struct ObservationTests {
    @Test("withObservationTracking fires when a property that was read changes")
    func observationTracking() {
        inFreshContext { _ in
            let author = Author.instance()
            let fired = Box(0)
            let name = withObservationTracking {
                author.name
            } onChange: {
                fired.value += 1
            }
            #expect(name == "")
            author.age = 3  // quiet until now: still must fire (per-model granularity)
            #expect(fired.value == 1)
            author.age = 4  // tracking is one-shot
            #expect(fired.value == 1)
        }
    }

    @Test("withObservationTracking sees a write after other quiet writes, and a batch once")
    func observationAfterQuietWrites() throws {
        try inFreshContext { _ in
            let post = Post.instance()
            for i in 0..<10 { post.title = "t\(i)" }  // the model is now in the quiet state
            let fired = Box(0)
            _ = withObservationTracking {
                post.tags
            } onChange: {
                fired.value += 1
            }
            post.beginChanges()
            post.tags.append("swift")
            post.title = "new"
            #expect(fired.value == 0)
            try post.endChanges()
            #expect(fired.value == 1)
        }
    }

    @Test("A closure observer gets the model and its changes, and may read it")
    func closureObserver() {
        inFreshContext { _ in
            let author = Author.instance()
            let seen = Box<[String]>([])
            let token = author.observeChanges { model, changes in
                seen.value.append("\(changes.properties.joined()):\(model.name)")
            }
            author.name = "Jon"
            author.name = "Jon"
            token.cancel()
            author.name = "Joe"
            #expect(seen.value == ["name:Jon"])
        }
    }

    @Test("A closure observer stops when its token is released")
    func tokenDeinit() {
        inFreshContext { _ in
            let note = Note.instance()
            let count = Box(0)
            var token: ObservationToken? = note.observeChanges { _, _ in count.value += 1 }
            note.count = 1
            #expect(count.value == 1)
            _ = token
            token = nil
            note.count = 2
            #expect(count.value == 1)
        }
    }

    @Test("An observer that writes the model sees its own write reported")
    func reentrantObserver() {
        inFreshContext { _ in
            let note = Note.instance()
            let seen = Box<[String]>([])
            let token = note.observeChanges { model, changes in
                seen.value += changes.properties
                if model.count < 3 { model.count += 1 }
            }
            note.count = 1
            #expect(note.count == 3)
            #expect(seen.value == ["count", "count", "count"])
            withExtendedLifetime(token) {}
        }
    }

    @Test("A model's change stream yields one event per change and one per batch")
    func modelStream() async throws {
        let context = ModelContext()
        let author = Author.instance(in: context)
        let stream = author.changeEvents()
        author.name = "Jon"
        author.batchChanges {
            author.age = 39
            author.email = "jon@example.com"
        }
        var iterator = stream.makeAsyncIterator()
        let first = await iterator.next()
        let second = await iterator.next()
        #expect(first?.kind == .updated)
        #expect(first?.modelId == author.modelId)
        #expect(first?.changes.properties == ["name"])
        #expect(second?.changes.properties == ["email", "age"])
    }

    @Test("A context's stream reports inserts, updates with their properties, and removals")
    func contextStream() async throws {
        let context = ModelContext()
        let existing = Note.instance(in: context)
        existing.text = "quiet"  // quiet state before anybody listens
        let stream = context.changeEvents()
        let note = Note.instance(in: context)
        note.text = "hello"
        existing.count = 7
        note.removeFromContext()
        var events: [ModelChangeEvent] = []
        for await event in stream {
            events.append(event)
            if events.count == 4 { break }
        }
        #expect(events.map(\.kind) == [.inserted, .updated, .updated, .removed])
        #expect(events[1].changes.properties == ["text"])
        #expect(events[2].modelId == existing.modelId)
        #expect(events[2].changes["count"]?.newValue == 7)
        #expect(events[3].modelId == note.modelId)
    }

    @Test("A context's stream stops observing when iteration ends")
    func contextStreamTermination() async {
        let context = ModelContext()
        do {
            let stream = context.changeEvents()
            _ = Note.instance(in: context)
            for await _ in stream { break }
        }
        let count = Box(0)
        let token = context.observeChanges { _ in count.value += 1 }
        _ = Note.instance(in: context)
        #expect(count.value == 1)
        token.cancel()
        _ = Note.instance(in: context)
        #expect(count.value == 1)
    }
}

@Suite("Context changes")
@MainActor struct ContextChangeTests {
    @Test("A context knows what was inserted, updated and removed since its reset")
    func contextChanges() {
        let context = ModelContext()
        let kept = Note.instance(in: context)
        let gone = Note.instance(in: context)
        let changed = Note.instance(in: context)
        changed.text = "before reset"
        #expect(context.hasChanges)
        #expect(context.changes.inserted.count == 3)
        context.resetChanges()
        #expect(!context.hasChanges)
        changed.text = "after reset"  // the model was quiet: the reset must still see this
        gone.removeFromContext()
        let fresh = Note.instance(in: context)
        fresh.text = "new"
        #expect(context.changes.inserted == [fresh.modelId])
        #expect(context.changes.updated == [changed.modelId])
        #expect(context.changes.removed == [gone.modelId])
        #expect(context.updatedModels.first === changed)
        #expect(context.insertedModels.first === fresh)
        kept.text = kept.text  // same value: not an update
        #expect(!context.changes.updated.contains(kept.modelId))
        fresh.removeFromContext()  // inserted, then removed: never there
        #expect(context.changes.inserted.isEmpty)
        #expect(!context.changes.removed.contains(fresh.modelId))
    }

    @Test("A model removed and added back counts as updated, not inserted or removed")
    func removedAndBack() {
        let context = ModelContext()
        let note = Note.instance(in: context)
        context.resetChanges()
        note.removeFromContext()
        #expect(context.changes.removed == [note.modelId])
        note.addToContext(context)
        #expect(context.changes.removed.isEmpty)
        #expect(context.changes.inserted.isEmpty)
        #expect(context.changes.updated == [note.modelId])
    }

    @Test("Clearing a context records every model as removed")
    func clearRecordsRemovals() {
        let context = ModelContext()
        let a = Note.instance(in: context)
        context.resetChanges()
        context.clear()
        #expect(context.changes.removed == [a.modelId])
    }
}

@Suite("Concurrent changes")
@MainActor struct ConcurrentChangeTests {
    @Test("Tasks changing models through the actor that owns their context report every change once")
    func concurrentWrites() async {
        let worker = ObservedWorker()
        let ids = await withTaskGroup(of: ModelID.self) { group in
            for task in 0..<8 {
                group.addTask { await worker.writeNote(base: task * 1000) }
            }
            var ids: [ModelID] = []
            for await id in group { ids.append(id) }
            return ids
        }
        #expect(Set(ids).count == 8)
        #expect(await worker.updateEvents == 8 * 51)
        #expect(await worker.insertedCount() == 8)
    }

    @Test("Tokens and streams can be cancelled from other threads while the model changes")
    func cancelFromOtherThreads() async {
        let context = ModelContext()
        let note = Note.instance(in: context)
        let tokens = (0..<20).map { _ in note.observeChanges { _, _ in } }
        let streams = (0..<20).map { _ in note.changeEvents() }
        let shared = SendableBox(tokens: tokens)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for token in shared.tokens { token.cancel() } }
            group.addTask { [streams] in _ = streams }
            for i in 0..<200 { note.count = i }
        }
        note.count = -1
        #expect(note.count == -1)
    }
}

/// A mutable value shared with callbacks in single-threaded tests.
final class Box<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

struct SendableBox: Sendable {
    let tokens: [ObservationToken]
}

@Suite("Observation across models")
@MainActor struct ObservationScopeTests {
    @Test("A tracking fires for the model it read, not for other models")
    func trackingIsPerModel() {
        inFreshContext { _ in
            let watched = Note.instance()
            let others = (0..<20).map { _ in Note.instance() }
            for other in others { _ = other.count }  // read, so that their writes tell the framework
            let fired = Box(0)
            _ = withObservationTracking {
                watched.count
            } onChange: {
                fired.value += 1
            }
            for (i, other) in others.enumerated() { other.count = i + 1 }
            #expect(fired.value == 0)
            watched.count = 7
            #expect(fired.value == 1)
        }
    }
}

/// An actor whose context is observed: changes made by many callers land in one domain.
actor ObservedWorker: ModelActor {
    let modelContext = ModelContext()
    /// Counted by the context's observer, which runs in this actor's domain.
    private let updates = Counter()
    private var token: ObservationToken?

    var updateEvents: Int { updates.value }

    func writeNote(base: Int) async -> ModelID {
        if token == nil {
            token = modelContext.observeChanges { [updates] event in
                if event.kind == .updated { updates.value += 1 }
            }
        }
        let note = Note.instance(in: modelContext)
        let stream = note.changeEvents()
        for i in 1...50 {
            note.count = base + i
            if i % 10 == 0 { await Task.yield() }
        }
        _ = stream
        let observer = note.observeChanges { model, _ in _ = model.count }
        note.text = "done"
        observer.cancel()
        return note.modelId
    }

    func insertedCount() -> Int { modelContext.changes.inserted.count }
}

/// A counter that only one domain touches (not `Sendable`).
final class Counter {
    var value = 0
}
