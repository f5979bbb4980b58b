import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@Suite("Contexts")
@MainActor struct ContextTests {
    @Test("instance(objectId:) returns the instance already in the context")
    func identityByObjectId() {
        inFreshContext { context in
            let author = Author.instance(objectId: "001")
            #expect(author.modelState == .needsData)
            author.name = "Jon"
            let again = Author.instance(objectId: "001")
            #expect(again === author)
            #expect(again.name == "Jon")
            #expect(Post.instance(objectId: "001") !== (author as AnyObject))  // per type
            #expect(context.model(Author.self, objectId: "001") === author)
            #expect(context.count == 2)
        }
    }

    @Test("instance(modelId:) returns the instance already in the context or a placeholder")
    func identityByModelId() {
        inFreshContext { context in
            let author = Author.instance()
            #expect(Author.instance(modelId: author.modelId) === author)
            let id = ModelID(UUID())
            let placeholder = Author.instance(modelId: id)
            #expect(placeholder.modelId == id)
            #expect(placeholder.modelState == .needsData)
            #expect(Author.instance(modelId: id) === placeholder)
            #expect(context.model(withId: id) === placeholder)
        }
    }

    @Test("Changing an object id re-indexes the model")
    func objectIdChange() {
        inFreshContext { context in
            let author = Author.instance()
            author.objectId = "x"
            #expect(context.model(Author.self, objectId: "x") === author)
            author.objectId = "y"
            #expect(context.model(Author.self, objectId: "x") == nil)
            #expect(context.model(Author.self, objectId: "y") === author)
            author.objectId = nil
            #expect(context.model(Author.self, objectId: "y") == nil)
        }
    }

    @Test("Removing and adding a model updates the context")
    func removeAndAdd() {
        inFreshContext { context in
            let author = Author.instance(objectId: "a")
            #expect(context.count == 1)
            author.removeFromContext()
            #expect(context.count == 0)
            #expect(author.modelContext == nil)
            #expect(context.model(Author.self, objectId: "a") == nil)
            author.removeFromContext()  // removing twice is harmless
            author.addToContext()
            #expect(context.count == 1)
            #expect(Author.instance(objectId: "a") === author)
        }
    }

    @Test("A model moves when added to another context")
    func move() {
        let first = ModelContext(), second = ModelContext()
        let author = Author.instance(in: first)
        author.addToContext(second)
        #expect(first.count == 0)
        #expect(second.count == 1)
        #expect(author.modelContext === second)
    }

    @Test("A model is not moved into a context that already has an instance with its id")
    func moveRefusedOnConflict() throws {
        let first = ModelContext(), second = ModelContext()
        let author = Author.instance(in: first)
        let twin = Author.instance(modelId: author.modelId, in: second)
        #expect(second.insert(author) === twin)
        #expect(author.modelContext === first)
        #expect(first.count == 1 && second.count == 1)
    }

    @Test("Context-free models are not added unless asked")
    func contextFree() {
        inFreshContext { context in
            let draft = Draft.instance()
            #expect(context.count == 0)
            #expect(draft.modelContext == nil)
            let placeholder = Draft.instance(objectId: "d")
            #expect(placeholder.objectId == "d")
            #expect(context.count == 0)
            draft.addToContext()
            #expect(context.count == 1)
            #expect(Draft.instance(modelId: draft.modelId) === draft)
        }
    }

    @Test("count and estimatedByteSize describe the context")
    func info() {
        let context = ModelContext()
        #expect(context.isEmpty)
        #expect(context.estimatedByteSize == 0)
        makeBlog(authors: 2, postsPerAuthor: 5, in: context)
        #expect(context.count == 12)
        let size = context.estimatedByteSize
        #expect(size > 12 * 64)
        #expect(context.models(of: Post.self).count == 10)
        #expect(context.allModels.count == 12)
        _ = Author.instance(in: context)
        #expect(context.estimatedByteSize > size)
    }

    @Test("withCurrent scopes the current context to a synchronous block")
    func scopedSync() {
        let outer = ModelContext(), inner = ModelContext()
        ModelContext.withCurrent(outer) {
            #expect(ModelContext.current === outer)
            ModelContext.withCurrent(inner) {
                #expect(ModelContext.current === inner)
                _ = Note.instance()
            }
            #expect(ModelContext.current === outer)
        }
        #expect(inner.count == 1)
        #expect(outer.count == 0)
    }

    @Test("Actors working in their own contexts never see each other's models")
    func actorsKeepTheirOwnModels() async {
        let workers = (0..<8).map { _ in NoteWorker() }
        await withTaskGroup(of: Void.self) { group in
            for (index, worker) in workers.enumerated() {
                group.addTask { await worker.makeNotes(count: 500, value: index) }
            }
        }
        for (index, worker) in workers.enumerated() {
            #expect(await worker.count() == 500)
            #expect(await worker.allValues() == [index])
        }
    }

    @Test("Many tasks asking one actor for the same object ids get one model per id")
    func oneInstancePerIdAcrossCallers() async {
        let worker = NoteWorker()
        let ids = (0..<200).map { "shared-\($0)" }
        let results = await withTaskGroup(of: [ModelID].self) { group in
            for _ in 0..<8 {
                group.addTask { await worker.modelIds(forObjectIds: ids) }
            }
            var all: [[ModelID]] = []
            for await result in group { all.append(result) }
            return all
        }
        for result in results { #expect(result == results[0]) }
        #expect(Set(results[0]).count == ids.count)
        #expect(await worker.count() == ids.count)
    }

    @Test("a context keeps its models alive exactly while it holds them, whether inserted or loaded")
    func modelLifetimes() throws {
        let tracker = LifetimeTracker()
        let context = ModelContext()
        var ids: [ModelID] = []
        for index in 0..<50 {
            let author = Author.instance(in: context)
            author.name = "Author \(index)"
            author.lifetime = tracker.token()
            ids.append(author.modelId)
        }
        #expect(tracker.liveCount == 50)
        // Lookups by id hand out live models; removing one releases it.
        for (index, id) in ids.enumerated() {
            #expect(context.model(Author.self, modelId: id)?.name == "Author \(index)")
        }
        for id in ids.prefix(10) {
            context.remove(try #require(context.model(withId: id) as? Author))
        }
        #expect(tracker.liveCount == 40)
        #expect(context.model(withId: ids[0]) == nil)
        #expect(context.model(withId: ids[10]) != nil)

        // Models handed out before a clear stay alive while held, and only then go.
        let data = try context.data(format: .json)
        var held = context.allModels
        context.clear()
        #expect(tracker.liveCount == 40)
        #expect(context.model(withId: ids[10]) == nil)
        held.removeAll()
        #expect(tracker.liveCount == 0)

        // Loaded models are held the same way (`lifetime` is not persisted).
        try context.load(data)
        let loaded = context.allModels.count
        #expect(loaded == 40)
        let reloaded = try #require(context.model(Author.self, modelId: ids[49]))
        reloaded.lifetime = tracker.token()
        context.remove(reloaded)
        #expect(tracker.liveCount == 1)
        #expect(context.count == 39)
        _ = consume reloaded
        #expect(tracker.liveCount == 0)
        #expect(context.model(Author.self, modelId: ids[48])?.name == "Author 48")
    }
}

/// These tests change the process-wide stack, so they run one at a time; every other test works
/// in a task-local context and is unaffected.
@Suite("Context stack", .serialized)
@MainActor struct ContextStackTests {
    @Test("push makes a new current context and pop releases it with its models")
    func pushPop() {
        let tracker = LifetimeTracker()
        let root = ModelContext.current
        do {
            let pushed = ModelContext.push()
            #expect(ModelContext.current === pushed)
            #expect(pushed !== root)
            for index in 0..<100 {
                Author.instance(objectId: "\(index)").lifetime = tracker.token()
            }
            #expect(pushed.count == 100)
            #expect(root.model(Author.self, objectId: "1") == nil)
            #expect(ModelContext.pop() === pushed)
            #expect(ModelContext.current === root)
            #expect(tracker.liveCount == 100)  // `pushed` is still held here
        }
        #expect(tracker.liveCount == 0)
    }

    @Test("The root context is never popped")
    func rootStays() {
        let root = ModelContext.stackSnapshot[0]
        while ModelContext.pop() != nil {}
        #expect(ModelContext.pop() == nil)
        #expect(ModelContext.current === root)
        root.deactivate()
        #expect(ModelContext.current === root)
    }

    @Test("A kept context can be activated and deactivated later")
    func activateDeactivate() {
        let root = ModelContext.current
        let kept = ModelContext.push()
        _ = Note.instance(objectId: "first")
        ModelContext.pop()
        #expect(ModelContext.current === root)
        #expect(!kept.isActive)
        kept.activate()
        #expect(ModelContext.current === kept)
        #expect(Note.instance(objectId: "first").modelContext === kept)
        _ = Note.instance(objectId: "second")
        kept.deactivate()
        #expect(ModelContext.current === root)
        #expect(kept.count == 2)
        #expect(root.model(Note.self, objectId: "second") == nil)
    }

    @Test("clearAll clears every context on the stack and pops all but the root")
    func clearAll() {
        let root = ModelContext.current
        _ = Note.instance(objectId: "in-root")
        let first = ModelContext.push()
        _ = Note.instance()
        let second = ModelContext.push()
        _ = Note.instance()
        let aside = ModelContext()
        _ = Note.instance(in: aside)
        ModelContext.clearAll()
        #expect(ModelContext.stackSnapshot.count == 1)
        #expect(ModelContext.current === root)
        #expect(root.count == 0 && first.count == 0 && second.count == 0)
        #expect(aside.count == 1)
    }

    @Test("A scoped context wins over the stack")
    func scopedOverStack() {
        let scoped = ModelContext()
        let pushed = ModelContext.push()
        ModelContext.withCurrent(scoped) {
            #expect(ModelContext.current === scoped)
        }
        #expect(ModelContext.current === pushed)
        ModelContext.pop()
    }
}

@Suite("Models by type")
@MainActor struct ModelsByTypeTests {
    @Test("models(of:) stays exact through random inserts, removes, moves and clears")
    func randomOperations() {
        var random = SplitMix64(seed: 99)
        let context = ModelContext()
        let other = ModelContext()
        var pool: [Note] = (0..<50).map { _ in Note.instance(in: context) }
        var expected = Set(pool.map(ObjectIdentifier.init))
        for step in 0..<2_000 {
            let note = pool[Int(random.next() % UInt64(pool.count))]
            switch random.next() % 5 {
            case 0:
                context.remove(note)
                expected.remove(ObjectIdentifier(note))
            case 1:
                context.insert(note)
                expected.insert(ObjectIdentifier(note))
            case 2:
                other.insert(note)  // moves it out of `context`
                expected.remove(ObjectIdentifier(note))
            case 3:
                let fresh = Note.instance(in: context)
                pool.append(fresh)
                expected.insert(ObjectIdentifier(fresh))
            default:
                if step % 400 == 399 {
                    context.clear()
                    expected.removeAll()
                }
            }
            let listed = context.models(of: Note.self)
            #expect(listed.count == Set(listed.map(ObjectIdentifier.init)).count)
            #expect(Set(listed.map(ObjectIdentifier.init)) == expected, "step \(step)")
            if Set(listed.map(ObjectIdentifier.init)) != expected { return }
        }
        #expect(context.models(of: Author.self).isEmpty)
    }
}

/// A background domain with a context of its own, as the docs' `ModelActor` pattern has it.
actor NoteWorker: ModelActor {
    let modelContext = ModelContext()

    func makeNotes(count: Int, value: Int) async {
        for item in 0..<count {
            Note.instance(objectId: "\(item)", in: modelContext).count = value
            if item % 100 == 0 { await Task.yield() }
        }
    }

    func modelIds(forObjectIds objectIds: [String]) -> [ModelID] {
        objectIds.map { Note.instance(objectId: $0, in: modelContext).modelId }
    }

    func count() -> Int { modelContext.count }

    func allValues() -> Set<Int> { Set(modelContext.models(of: Note.self).map(\.count)) }
}
