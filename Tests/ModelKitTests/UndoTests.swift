import Foundation
import ModelKit
import Testing

@Suite("Undo")
@MainActor struct UndoTests {
    @Test("Property writes, insertions and removals undo and redo")
    func basics() {
        inFreshContext { context in
            let undo = ModelUndoManager()
            context.undoManager = undo
            let note = Memo.instance()
            note.title = "Draft"
            note.title = "Final"
            undo.undo()
            #expect(note.title == "Draft")
            undo.redo()
            #expect(note.title == "Final")
            note.removeFromContext()
            #expect(context.count == 0)
            undo.undo()
            #expect(context.count == 1)
            #expect(note.modelContext === context)
            undo.undo()
            undo.undo()
            undo.undo()  // the insertion
            #expect(context.count == 0)
            #expect(!undo.canUndo)
            undo.redo()
            #expect(context.count == 1)
        }
    }

    @Test("Undo is off by default")
    func offByDefault() {
        inFreshContext { context in
            #expect(context.undoManager == nil)
        }
    }

    @Test("A relationship change is one step that undoes both sides")
    func relationshipStep() {
        inFreshContext { context in
            let inbox = Folder.instance()
            let archive = Folder.instance()
            let note = Memo.instance()
            inbox.notes.append(note)
            let undo = ModelUndoManager()
            context.undoManager = undo
            note.folder = archive
            #expect(inbox.notes.isEmpty)
            undo.undo()
            #expect(note.folder === inbox)
            #expect(inbox.notes.ids == [note.modelId])
            #expect(archive.notes.ids.isEmpty)
            undo.redo()
            #expect(note.folder === archive)
            #expect(inbox.notes.ids.isEmpty)
            #expect(archive.notes.ids == [note.modelId])
        }
    }

    @Test("Undoing a cascade brings back every removed model with its references")
    func cascade() throws {
        try inFreshContext { context in
            let folder = Folder.instance()
            let tag = Label.instance()
            let notes = (0..<3).map { _ in Memo.instance() }
            for note in notes {
                folder.notes.append(note)
                note.tags.append(tag)
                note.attachments.append(Attachment.instance())
            }
            let undo = ModelUndoManager()
            context.undoManager = undo
            try context.delete(folder)
            #expect(context.count == 1)
            undo.undo()
            #expect(context.count == 8)
            #expect(folder.notes.ids == notes.map(\.modelId))
            #expect(Set(tag.memos.ids) == Set(notes.map(\.modelId)))
            #expect(notes.allSatisfy { $0.folder === folder && $0.attachments.count == 1 })
            undo.redo()
            #expect(context.count == 1)
            #expect(tag.memos.ids.isEmpty)
        }
    }
}
