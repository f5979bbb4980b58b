import Foundation
import ModelKitTestSupport
import Testing

@testable import ModelKit

/// A store's journal read without opening it (what the `modelkit` tool shows and compacts):
/// the same saves, torn tail and damage that opening sees, without changing the files.
@Suite("Model journal: reading a store's saves without its types")
struct ModelJournalTests {
    func journal() throws -> (URL, Data, [Int]) {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("journal-\(UUID().uuidString).store")
        let (bytes, starts, _) = try ModelStoreDamageTests.threeSaves(at: url, options: ModelStore.Options())
        return (URL(fileURLWithPath: url.path + "-journal"), bytes, starts)
    }

    @Test("each save is read in order with its offset, size, removals and document")
    func saves() throws {
        let (url, bytes, starts) = try journal()
        var seen: [ModelJournal.Save] = []
        let summary = try ModelJournal.read(at: url) { seen.append($0) }
        #expect(seen.map(\.offset) == starts)
        #expect(summary.saves == 3 && summary.bytes == bytes.count && summary.validBytes == bytes.count)
        #expect(summary.tornBytes == 0 && summary.damage == nil)
        #expect(seen.allSatisfy { $0.removedIds.isEmpty && !$0.document.isEmpty })
        // A save's document is a file's: it loads with the library.
        let context = ModelContext()
        try context.load(seen[0].document, options: DeserializationOptions(danglingPointers: .placeholder))
        #expect(context.models(of: Author.self).map(\.name) == ["Ann"])
    }

    @Test("a torn last record is counted, not reported as damage, and the file is unchanged")
    func torn() throws {
        let (url, bytes, starts) = try journal()
        try bytes.prefix(bytes.count - 3).write(to: url)
        let summary = try ModelJournal.read(at: url) { _ in }
        #expect(summary.saves == 2 && summary.validBytes == starts[2] && summary.tornBytes == bytes.count - 3 - starts[2])
        #expect(summary.damage == nil)
        #expect(try Data(contentsOf: url).count == bytes.count - 3)
    }

    @Test("damage before a valid record stops the reading with damagedJournal at its offset")
    func damage() throws {
        let (url, bytes, starts) = try journal()
        var damaged = bytes
        damaged[starts[1] + 30] ^= 0xFF
        try damaged.write(to: url)
        var count = 0
        let summary = try ModelJournal.read(at: url) { _ in count += 1 }
        #expect(count == 1 && summary.saves == 1)
        #expect(summary.damage?.code == .damagedJournal && summary.damage?.offset == starts[1])
        #expect(summary.tornBytes == 0)
    }

    @Test("a file that is not a journal, or no file, throws a typed error")
    func notAJournal() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("not-\(UUID().uuidString)")
        #expect { try ModelJournal.read(at: url) { _ in } } throws: { ($0 as? PersistenceError)?.code == .fileNotFound }
        try Data("MKJOURNX and more bytes".utf8).write(to: url)
        #expect { try ModelJournal.read(at: url) { _ in } } throws: {
            ($0 as? PersistenceError)?.code == .damagedJournal && ($0 as? PersistenceError)?.offset == 0
        }
    }
}
