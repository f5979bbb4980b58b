import Foundation
import ModelKit
import Testing

// A model that nobody listens to writes "quietly" after its first write: no bookkeeping at all.
// For a type with relationships a quiet write of a reference must still keep the inverse; these
// tests write each model several times without reading it in between (a read ends the quiet
// path), so that the writes after the first are quiet ones.

@Suite("Quiet writes of relationships")
@MainActor struct RelationshipQuietWriteTests {
    @Test("New models of types with and without relationships, written in turns, each keep inverses where declared")
    func typesWrittenInTurnsKeepTheirOwnQuietWrites() {
        // The first write of a new model asks whether its type declares relationships, and the
        // last answer is remembered: writing models of two types in turns must never hand one
        // type the other's answer.
        inFreshContext { _ in
            let folders = (0..<3).map { _ in Folder.instance() }
            var memos: [Memo] = []
            for round in 0..<9 {
                let attachment = Attachment.instance()
                attachment.fileName = "file \(round)"  // no relationships: remembered as such
                let memo = Memo.instance()
                memo.title = "memo \(round)"  // the first write: Memo declares relationships
                memo.folder = folders[round % 3]  // quiet now, and must still keep the inverse
                memo.attachments.append(attachment)
                memos.append(memo)
            }
            for (index, folder) in folders.enumerated() {
                #expect(folder.notes.ids == memos.indices.filter { $0 % 3 == index }.map { memos[$0].modelId })
            }
            #expect(memos.allSatisfy { $0.attachments.count == 1 })
        }
    }

    @Test("Writes after the first, with nothing read in between, still keep both sides in line")
    func quietWritesKeepInverses() {
        inFreshContext { context in
            let home = Folder.instance()
            let work = Folder.instance()
            let notes = (0..<4).map { _ in Memo.instance() }
            let label = Label.instance()
            context.resetChanges()
            // Each append after the first is a quiet write of `home`; each note's folder is set
            // by the inverse.
            for note in notes { home.notes.append(note) }
            // `notes[0]` was written by the inverse already: this write of its to-one is quiet.
            notes[0].folder = work
            // A quiet append to `work` moves `notes[1]` out of `home`.
            work.notes.append(notes[1])
            // Many-to-many, both sides quiet by now.
            notes[2].tags.append(label)
            notes[3].tags.append(label)
            label.memos.removeAll { $0 === notes[2] }
            // Replacing a whole array quietly.
            home.notes = ModelArray([notes[3]])

            #expect(home.notes.ids == [notes[3].modelId])
            #expect(work.notes.ids == [notes[0].modelId, notes[1].modelId])
            #expect(notes.map { $0.folder?.modelId } == [work.modelId, work.modelId, nil, home.modelId])
            #expect(label.memos.ids == [notes[3].modelId])
            #expect(notes.map { $0.tags.ids } == [[], [], [], [label.modelId]])
        }
    }

    @Test("A to-one reference is stored as its target's id alone, which the inverse side writes in place")
    func referenceLayout() {
        #expect(MemoryLayout<ModelRef<Folder>>.size == MemoryLayout<ModelID>.size)
        #expect(MemoryLayout<ModelRef<Folder>>.alignment == MemoryLayout<ModelID>.alignment)
    }

    @Test("Quiet writes on either side are still tracked changes, with updatedAt stamped")
    func quietWritesAreTracked() {
        inFreshContext { context in
            let folder = Folder.instance()
            let first = Memo.instance()
            let second = Memo.instance()
            context.resetChanges()
            let before = first.updatedAt
            folder.notes.append(first)
            folder.notes.append(second)
            #expect(context.updatedModels.count == 3)
            #expect(folder.hasChanges && first.hasChanges && second.hasChanges)
            #expect(first.updatedAt >= before)
            // The saved file holds both sides.
            let loaded = ModelContext()
            #expect(throws: Never.self) { try loaded.load(try context.data()) }
            let copy = loaded.models(of: Folder.self).first
            #expect(copy?.notes.ids == [first.modelId, second.modelId])
            #expect(loaded.models(of: Memo.self).allSatisfy { $0.folder === copy })
        }
    }

    @Test("A model that starts being observed leaves the quiet path: its inverse writes are reported")
    func observersSeeInverseWrites() {
        inFreshContext { context in
            let folder = Folder.instance()
            let notes = (0..<3).map { _ in Memo.instance() }
            context.resetChanges()
            folder.notes.append(notes[0])
            folder.notes.append(notes[1])  // quiet for both by now
            var reported: [ModelID] = []
            let token = context.observeChanges { event in reported.append(event.modelId) }
            folder.notes.append(notes[2])
            notes[1].folder = nil
            withExtendedLifetime(token) {}
            #expect(reported.contains(notes[2].modelId))
            #expect(reported.contains(notes[1].modelId))
            #expect(reported.filter { $0 == folder.modelId }.count >= 2)
            #expect(folder.notes.ids == [notes[0].modelId, notes[2].modelId])
        }
    }
}
