import Foundation
import ModelKit
import Observation
import Testing

/// Whether `change` notifies an observer of what `read` reads, with `withObservationTracking`.
@MainActor private func notifies(_ read: () -> Void, when change: () throws -> Void) rethrows -> Bool {
    let fired = Box(false)
    withObservationTracking(read) { fired.value = true }
    try change()
    return fired.value
}

@Suite("Observation of a context")
@MainActor struct ContextObservationTests {
    @Test("hasChanges notifies when it turns true and false, and not for changes in between")
    func hasChangesNotifiesItsTransitions() {
        inFreshContext { context in
            let read = { _ = context.hasChanges }
            #expect(!context.hasChanges)
            #expect(notifies(read) { _ = Author.instance() })
            let author = Author.instance()
            #expect(!notifies(read) { author.name = "Ann" })
            #expect(!notifies(read) { _ = Author.instance() })
            #expect(notifies(read) { context.resetChanges() })
            #expect(!notifies(read) { _ = context.count })  // reading is no change
            #expect(notifies(read) { author.name = "Bea" })  // a write after the reset
            context.resetChanges()
            #expect(notifies(read) { context.remove(author) })
        }
    }

    @Test("count and isEmpty notify when models are inserted or removed, not when changed or reset")
    func countNotifiesInsertionsAndRemovals() {
        inFreshContext { context in
            let read = { _ = context.count }
            #expect(context.isEmpty)
            #expect(notifies({ _ = context.isEmpty }) { _ = Author.instance() })
            let author = Author.instance()
            #expect(context.count == 2)
            #expect(!notifies(read) { author.name = "Ann" })
            #expect(!notifies(read) { context.resetChanges() })
            #expect(notifies(read) { context.remove(author) })
            #expect(context.count == 1)
            #expect(notifies(read) { context.clear() })
            #expect(context.isEmpty)
        }
    }

    @Test("Undo notifies count and hasChanges when it changes them")
    func undoNotifies() {
        inFreshContext { context in
            let undo = ModelUndoManager()
            context.undoManager = undo
            let author = Author.instance()
            context.resetChanges()
            #expect(notifies({ _ = context.count }) { undo.undo() })  // the insertion is undone
            #expect(context.count == 0)
            #expect(notifies({ _ = context.count }) { undo.redo() })
            #expect(context.count == 1)
            context.resetChanges()
            author.name = "Ann"
            context.resetChanges()
            #expect(notifies({ _ = context.hasChanges }) { undo.undo() })  // the write is undone
            #expect(author.name == "")
        }
    }

    @Test("A store's needsSaving notifies on the first change and on save, not otherwise")
    func needsSavingNotifiesChangesAndSaves() throws {
        try withStore { url, options in
            let store = try ModelStore(url: url, options: options)
            let read = { _ = store.needsSaving }
            #expect(!store.needsSaving)
            let author = Author.instance(in: store.context)
            #expect(store.needsSaving)
            #expect(!notifies(read) { author.name = "Ann" })
            #expect(try notifies(read) { try store.save() })
            #expect(!store.needsSaving)
            #expect(try !notifies(read) { try store.save() })  // nothing to save: no change
            #expect(notifies(read) { author.age = 3 })
        }
    }

    @Test("An observer that reads the context when notified sees the new values")
    func observerSeesNewValues() {
        inFreshContext { context in
            let seen = Box<(Bool, Int)?>(nil)
            withObservationTracking {
                _ = context.hasChanges
            } onChange: { [context = UncheckedSendable(value: context)] in
                MainActor.assumeIsolated { seen.value = (context.value.hasChanges, context.value.count) }
            }
            _ = Author.instance()
            #expect(seen.value?.0 == true)
            #expect(seen.value?.1 == 1)
        }
    }
}

/// A non-Sendable value carried into a `@Sendable` closure that runs on the same actor.
private struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
}
