import Foundation
import ModelKit
import Testing
import ModelKitTestSupport

/// The graph of folders, notes and tags as plain sets: what the inverses must agree with.
private struct ReferenceGraph: Equatable {
    var folders: Set<ModelID> = []
    var labels: Set<ModelID> = []
    /// Every live note, with its folder.
    var noteFolder: [ModelID: ModelID?] = [:]
    var noteTags: [ModelID: Set<ModelID>] = [:]

    mutating func removeNote(_ note: ModelID) {
        noteFolder[note] = nil
        noteTags[note] = nil
    }

    /// Reads the graph from a context, checking on the way that both sides of each inverse agree.
    static func read(_ context: ModelContext) -> ReferenceGraph {
        var graph = ReferenceGraph()
        let notes = context.models(of: Memo.self)
        for note in notes {
            graph.noteFolder[note.modelId] = .some(note.folder?.modelId)
            graph.noteTags[note.modelId] = Set(note.tags.ids)
        }
        for folder in context.models(of: Folder.self) {
            graph.folders.insert(folder.modelId)
            let expected = Set(notes.filter { $0.folder === folder }.map(\.modelId))
            #expect(Set(folder.notes.ids) == expected, "folder \(folder.modelId) and its notes' folder disagree")
        }
        for label in context.models(of: Label.self) {
            graph.labels.insert(label.modelId)
            let expected = Set(notes.filter { $0.tags.ids.contains(label.modelId) }.map(\.modelId))
            #expect(Set(label.memos.ids) == expected, "label \(label.modelId) and its notes' tags disagree")
        }
        return graph
    }
}

@Suite("Relationships against a reference graph")
@MainActor struct RelationshipRandomTests {
    @Test(
        "Random edits, removals, cascades, undos and redos keep both sides of every inverse in agreement, and a save and load gives the same graph",
        arguments: [1, 2, 3, 4, 5, 6, 7, 8])
    func randomEdits(seed: UInt64) throws {
        try inFreshContext { context in
            var random = SplitMix64(seed: seed)
            // Seeds 7 and 8 read the graph only every few steps: reading a model ends its quiet
            // writes (no bookkeeping), so that more of the edits in between are quiet ones.
            let checkEvery = seed > 6 ? 4 : 1
            var expected = ReferenceGraph()
            // Odd seeds also undo and redo, against the history of graphs.
            let undo = seed % 2 == 1 ? ModelUndoManager() : nil
            context.undoManager = undo
            var history = [expected]
            var position = 0
            var undos = 0
            var largest = 0
            func pick<T>(_ values: [T]) -> T? { values.isEmpty ? nil : values[Int(random.next() % UInt64(values.count))] }
            for step in 0..<400 {
                let folders = context.models(of: Folder.self)
                let notes = context.models(of: Memo.self)
                let labels = context.models(of: Label.self)
                // Kinds weighted so that the graph grows: creating and linking more often than
                // removing.
                let weights = [2, 2, 4, 2, 3, 1, 3, 1, 1, 1, 1, 1] + (undo == nil ? [] : [2, 0, 1])
                var draw = Int(random.next() % UInt64(weights.reduce(0, +)))
                var kind = 0
                while draw >= weights[kind] {
                    draw -= weights[kind]
                    kind += 1
                }
                switch kind {
                case 0:
                    expected.folders.insert(Folder.instance().modelId)
                case 1:
                    expected.labels.insert(Label.instance().modelId)
                case 2:
                    let note = Memo.instance()
                    expected.noteFolder[note.modelId] = .some(nil)
                    expected.noteTags[note.modelId] = []
                case 3:
                    guard let note = pick(notes) else { continue }
                    let folder = random.next() % 4 == 0 ? nil : pick(folders)
                    guard note.folder !== folder else { continue }
                    note.folder = folder
                    expected.noteFolder[note.modelId] = .some(folder?.modelId)
                case 4:
                    guard let note = pick(notes), let folder = pick(folders), note.folder !== folder else { continue }
                    folder.notes.append(note)
                    expected.noteFolder[note.modelId] = .some(folder.modelId)
                case 5:
                    guard let folder = pick(folders), let note = pick(folder.notes.models) else { continue }
                    folder.notes.removeAll { $0 === note }
                    expected.noteFolder[note.modelId] = .some(nil)
                case 6:
                    guard let note = pick(notes), let label = pick(labels), !note.tags.ids.contains(label.modelId) else {
                        continue
                    }
                    if random.next() % 2 == 0 { note.tags.append(label) } else { label.memos.append(note) }
                    expected.noteTags[note.modelId, default: []].insert(label.modelId)
                case 7:
                    guard let note = pick(notes), let label = pick(note.tags.models) else { continue }
                    if random.next() % 2 == 0 {
                        note.tags.removeAll { $0 === label }
                    } else {
                        label.memos.removeAll { $0 === note }
                    }
                    expected.noteTags[note.modelId]?.remove(label.modelId)
                case 8:
                    guard let note = pick(notes) else { continue }
                    note.removeFromContext()
                    expected.removeNote(note.modelId)
                case 9:
                    // Cascade: the folder's notes go with it.
                    guard let folder = pick(folders) else { continue }
                    try context.delete(folder)
                    expected.folders.remove(folder.modelId)
                    for (note, holder) in expected.noteFolder where holder == folder.modelId { expected.removeNote(note) }
                case 10:
                    guard let label = pick(labels) else { continue }
                    label.removeFromContext()
                    expected.labels.remove(label.modelId)
                    for note in expected.noteTags.keys { expected.noteTags[note]?.remove(label.modelId) }
                case 11:
                    // Replace a note's tags wholesale.
                    guard let note = pick(notes) else { continue }
                    let chosen = labels.filter { _ in random.next() % 3 == 0 }
                    guard Set(chosen.map(\.modelId)) != Set(note.tags.ids) else { continue }
                    note.tags = ModelArray(chosen)
                    expected.noteTags[note.modelId] = Set(chosen.map(\.modelId))
                case 12, 13:
                    guard let undo, position > 0 else { continue }
                    undo.undo()
                    undos += 1
                    position -= 1
                    expected = history[position]
                default:
                    guard let undo, position < history.count - 1 else { continue }
                    undo.redo()
                    position += 1
                    expected = history[position]
                }
                if expected != history[position] {
                    // A new step: what could be redone is gone.
                    history = Array(history[...position]) + [expected]
                    position += 1
                }
                largest = max(largest, expected.noteFolder.count + expected.noteTags.values.reduce(0) { $0 + $1.count })
                guard step % checkEvery == checkEvery - 1 else { continue }
                let actual = ReferenceGraph.read(context)
                #expect(actual == expected, "step \(step)")
                if actual != expected { return }
                if step % 48 == 47 {
                    let loaded = ModelContext()
                    try loaded.load(try context.data())
                    #expect(ReferenceGraph.read(loaded) == expected, "round trip at step \(step)")
                }
            }
            // The rounds did something: notes and tags existed, and the undo runs undid steps.
            #expect(largest > 10)
            #expect(undo == nil || undos > 10)
        }
    }
}
