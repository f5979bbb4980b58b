import Foundation
import ModelKit
import Testing

@Suite("Removal drops references")
@MainActor struct RemovalDropsReferencesTests {
    @Test("A removed model leaves every array's ids, and no saved file points to it")
    func removedLeavesIds() throws {
        try inFreshContext { context in
            let author = Author.instance()
            let posts = (0..<3).map { _ in Post.instance() }
            author.posts.append(contentsOf: posts)
            author.posts.append(posts[1])
            posts[1].removeFromContext()
            #expect(author.posts.ids == [posts[0].modelId, posts[2].modelId])
            let data = try context.data()
            let text = String(decoding: data, as: UTF8.self)
            #expect(!text.contains(posts[1].modelId.description))
            let loaded = ModelContext()
            try loaded.load(data)
            #expect(loaded.model(Author.self, modelId: author.modelId)?.posts.ids == [posts[0].modelId, posts[2].modelId])
        }
    }
}

@Suite("Inverse relationships")
@MainActor struct InverseTests {
    @Test("Appending to a to-many side sets the to-one side, and moving a note takes it out of its old folder")
    func oneToMany() {
        inFreshContext { _ in
            let inbox = Folder.instance()
            let archive = Folder.instance()
            let note = Memo.instance()
            inbox.notes.append(note)
            #expect(note.folder === inbox)
            note.folder = archive
            #expect(inbox.notes.isEmpty)
            #expect(archive.notes.map(\.modelId) == [note.modelId])
            archive.notes.removeAll()
            #expect(note.folder == nil)
            inbox.notes = [note]
            #expect(note.folder === inbox)
            archive.notes.insert(note, at: archive.notes.startIndex)
            #expect(note.folder === archive)
            #expect(inbox.notes.ids.isEmpty)
            archive.notes.removeAll { $0 === note }
            #expect(note.folder == nil)
        }
    }

    @Test("Both sides of a one-to-one relationship follow each other")
    func oneToOne() {
        inFreshContext { _ in
            let ann = Citizen.instance()
            let bob = Citizen.instance()
            let passport = Passport.instance()
            ann.passport = passport
            #expect(passport.holder === ann)
            bob.passport = passport
            #expect(ann.passport == nil)
            #expect(passport.holder === bob)
            passport.holder = nil
            #expect(bob.passport == nil)
        }
    }

    @Test("Many-to-many sides add and drop each other")
    func manyToMany() {
        inFreshContext { _ in
            let memo = Memo.instance()
            let work = Label.instance()
            let home = Label.instance()
            memo.tags.append(work)
            home.memos.append(memo)
            #expect(Set(memo.tags.map(\.modelId)) == [work.modelId, home.modelId])
            #expect(work.memos.map(\.modelId) == [memo.modelId])
            memo.tags.remove(at: memo.tags.startIndex)
            #expect(work.memos.isEmpty)
            #expect(home.memos.count == 1)
        }
    }

    @Test("Each side's change is tracked as a change of that model")
    func bothSidesTracked() {
        inFreshContext { context in
            let folder = Folder.instance()
            let note = Memo.instance()
            context.resetChanges()
            folder.notes.append(note)
            #expect(folder.hasChanges)
            #expect(note.hasChanges)
        }
    }

    @Test("A declaration whose partner names no inverse, or refers to another type, is reported")
    func mismatches() {
        #expect(throws: RelationshipDeclarationError.self) { try ModelRegistry.register(Lopsided.self) }
        #expect(throws: RelationshipDeclarationError.self) { try ModelRegistry.register(WrongType.self) }
        inFreshContext { _ in
            // In use, the relationship keeps no inverse (a warning was written) and nothing crashes.
            let lopsided = Lopsided.instance()
            let partner = LopsidedPartner.instance()
            lopsided.other = partner
            #expect(partner.back == nil)
        }
    }
}

@Suite("Delete rules")
@MainActor struct DeleteRuleTests {
    @Test("Cascade removes notes and their attachments; nullify drops them from their tags")
    func cascadeAndNullify() throws {
        try inFreshContext { context in
            let folder = Folder.instance()
            let tag = Label.instance()
            let notes = (0..<3).map { _ in Memo.instance() }
            for note in notes {
                folder.notes.append(note)
                note.tags.append(tag)
                note.attachments.append(Attachment.instance())
            }
            #expect(context.count == 1 + 1 + 3 + 3)
            try context.delete(folder)
            #expect(context.count == 1)
            #expect(tag.memos.isEmpty)
            #expect(tag.memos.ids.isEmpty)
        }
    }

    @Test("Removing a note nullifies its folder's array")
    func nullifyFolder() {
        inFreshContext { _ in
            let folder = Folder.instance()
            let notes = (0..<2).map { _ in Memo.instance() }
            folder.notes.append(contentsOf: notes)
            notes[0].removeFromContext()
            #expect(folder.notes.ids == [notes[1].modelId])
        }
    }

    @Test("Deny fails with a typed error naming the holder and removes nothing")
    func deny() throws {
        try inFreshContext { context in
            let vault = Vault.instance()
            let item = Attachment.instance()
            vault.items.append(item)
            #expect(
                throws: RelationshipError.deleteDenied(
                    model: ModelDescription(vault), relationship: "items", target: ModelDescription(item))
            ) {
                try context.delete(vault)
            }
            #expect(context.count == 2)
            item.removeFromContext()
            try context.delete(vault)
            #expect(context.count == 0)
        }
    }

    @Test("Deny inside a cascade checks the whole set being removed")
    func denyWithinCascade() throws {
        try inFreshContext { context in
            let folder = Folder.instance()
            let note = Memo.instance()
            folder.notes.append(note)
            let vault = Vault.instance()
            let attachment = Attachment.instance()
            vault.items.append(attachment)
            note.attachments.append(attachment)
            // Removing the vault is denied; removing the folder cascades to the attachment,
            // which the vault's keep-only relationship doesn't stop.
            #expect(throws: RelationshipError.self) { try context.delete(vault) }
            try context.delete(folder)
            #expect(context.models(of: Attachment.self).isEmpty)
            #expect(vault.items.ids.isEmpty)
        }
    }

    @Test("Cascade follows cycles once and reaches a 100,000-model tree without recursion")
    func deepCascade() throws {
        try inFreshContext { context in
            let root = Branch.instance()
            var last = root
            for index in 1..<100_000 {
                let child = Branch.instance()
                // A long chain with some side branches: depth is what would overflow a stack.
                (index % 10 == 0 ? root : last).children.append(child)
                last = child
            }
            #expect(context.count == 100_000)
            // A cycle: the last node holds the root as a child too.
            last.children.append(root)
            try context.delete(root)
            #expect(context.count == 0)
        }
    }
}

@Suite("Inverses when properties change as a whole")
@MainActor struct InverseReplacementTests {
    @Test("Reverting a note's folder puts it back in its old folder's array")
    func revert() {
        inFreshContext { _ in
            let inbox = Folder.instance()
            let archive = Folder.instance()
            let note = Memo.instance()
            inbox.notes.append(note)
            note.resetChanges()
            note.folder = archive
            #expect(inbox.notes.isEmpty)
            note.revertChanges()
            #expect(note.folder === inbox)
            #expect(inbox.notes.ids == [note.modelId])
            #expect(archive.notes.ids.isEmpty)
        }
    }

    @Test("Loading a file whose two sides disagree repairs them: the to-one side wins, a missing half is completed")
    func repairOnLoad() throws {
        try inFreshContext { context in
            let first = Folder.instance()
            let second = Folder.instance()
            let moved = Memo.instance()
            let staying = Memo.instance()
            first.notes.append(moved)
            second.notes.append(staying)
            var text = String(decoding: try context.data(), as: UTF8.self)
            func pointer(to folder: Folder) -> String {
                #"{"__type":"ModelPointer","model":"Folder","modelId":"\#(folder.modelId)"}"#
            }
            try #require(text.contains(pointer(to: first)))
            // The note says it is in the second folder; the first folder's array still holds it.
            text = text.replacingOccurrences(of: pointer(to: first), with: pointer(to: second))
            let loaded = ModelContext()
            try loaded.load(Data(text.utf8))
            let loadedMoved = try #require(loaded.model(Memo.self, modelId: moved.modelId))
            #expect(loadedMoved.folder?.modelId == second.modelId)
            #expect(loaded.model(Folder.self, modelId: first.modelId)?.notes.ids == [])
            #expect(loaded.model(Folder.self, modelId: second.modelId)?.notes.ids == [staying.modelId, moved.modelId])
        }
    }
}
