import Foundation
import ModelKitTestSupport
import Testing

@testable import ModelKit

/// Journals cut short and damaged at every byte: a torn last record loses only the save it held,
/// damage before the last record is a typed error naming its offset, and recovery keeps the saves
/// before it.
@Suite("Model store: torn and damaged journals")
struct ModelStoreDamageTests {
    /// A store with three saves; returns the journal's bytes, where each record starts, and the
    /// blog after each save.
    static func threeSaves(at url: URL, options: ModelStore.Options) throws -> (Data, [Int], [[String: [String]]]) {
        let store = try ModelStore(url: url, options: options)
        var starts: [Int] = []
        var states: [[String: [String]]] = [blogSummary(store.context)]
        let author = Author.instance(in: store.context)
        author.name = "Ann"
        for round in 0..<3 {
            let post = Post.instance(in: store.context)
            post.title = "Post \(round)"
            author.posts.append(post)
            if round == 2 { author.name = "Ann B." }
            starts.append(store.statistics.journalBytes)
            try store.save()
            states.append(blogSummary(store.context))
        }
        store.close()
        return (try Data(contentsOf: store.journalURL), starts, states)
    }

    /// Opens a copy of the store whose journal is `journal`.
    static func open(_ url: URL, journal: Data, options: ModelStore.Options) throws -> ModelStore {
        try journal.write(to: URL(fileURLWithPath: url.path + "-journal"))
        return try ModelStore(url: url, options: options)
    }

    @Test(
        "a journal cut at any byte of its last record opens with every earlier save, and the next save follows them",
        arguments: [PersistenceFormat.json, .binaryPropertyList])
    func truncatedAtEveryByte(format: PersistenceFormat) throws {
        try withStore(format: format) { url, options in
            let (journal, starts, states) = try Self.threeSaves(at: url, options: options)
            let last = starts[2]
            for cut in last..<journal.count {
                let store = try Self.open(url, journal: journal.prefix(cut), options: options)
                #expect(blogSummary(store.context) == states[2], "cut at \(cut)")
                #expect(store.statistics.journalBytes == last)
                store.close()
            }
            // After a torn save, a new save goes where the torn one was, and both survive.
            let store = try Self.open(url, journal: journal.prefix(journal.count - 1), options: options)
            store.context.models(of: Author.self)[0].name = "Cy"
            try store.save()
            store.close()
            let reopened = try ModelStore(url: url, options: options)
            #expect(blogSummary(reopened.context) == ["Cy": ["Post 0", "Post 1"]])
        }
    }

    @Test("a journal with any byte of its last record changed opens with every earlier save")
    func corruptedAtEveryByteOfTheLastRecord() throws {
        try withStore { url, options in
            let (journal, starts, states) = try Self.threeSaves(at: url, options: options)
            for position in starts[2]..<journal.count {
                var damaged = journal
                damaged[position] ^= 0x5A
                let store = try Self.open(url, journal: damaged, options: options)
                #expect(blogSummary(store.context) == states[2], "byte \(position)")
                store.close()
            }
        }
    }

    @Test("damage in a record before the last is damagedJournal at that record's offset, at any byte of it")
    func damageInTheMiddle() throws {
        try withStore { url, options in
            let (journal, starts, _) = try Self.threeSaves(at: url, options: options)
            for position in starts[1]..<starts[2] {
                var damaged = journal
                damaged[position] ^= 0x01
                let error = #expect(throws: PersistenceError.self, "byte \(position)") {
                    try Self.open(url, journal: damaged, options: options)
                }
                #expect(error?.code == .damagedJournal)
                #expect(error?.offset == starts[1])
            }
            // The journal was left as it was.
            var damaged = journal
            damaged[starts[1] + 30] ^= 0x01
            _ = try? Self.open(url, journal: damaged, options: options)
            #expect(try Data(contentsOf: URL(fileURLWithPath: url.path + "-journal")) == damaged)
        }
    }

    @Test("recovery opens every save before the damage and keeps the rest of the journal in a file beside it")
    func recovery() throws {
        try withStore { url, options in
            let (journal, starts, states) = try Self.threeSaves(at: url, options: options)
            var damaged = journal
            damaged[starts[1] + 40] ^= 0xFF
            var recovering = options
            recovering.recovery = .savesBeforeDamage
            let store = try Self.open(url, journal: damaged, options: recovering)
            #expect(blogSummary(store.context) == states[1])
            #expect(store.statistics.journalBytes == starts[1])
            store.close()
            let folder = url.deletingLastPathComponent()
            let kept = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains(".damaged-") }
            #expect(kept.count == 1)
            let copy = try Data(contentsOf: folder.appendingPathComponent(kept[0]))
            #expect(copy == damaged.suffix(from: starts[1]))
            // Strict again: the recovered store opens cleanly.
            let reopened = try ModelStore(url: url, options: options)
            #expect(blogSummary(reopened.context) == states[1])
        }
    }

    @Test("a journal header that is not ModelKit's, and a record of a type from a newer version, are damagedJournal")
    func foreignJournal() throws {
        try withStore { url, options in
            let (journal, starts, _) = try Self.threeSaves(at: url, options: options)
            var foreign = journal
            foreign.replaceSubrange(0..<8, with: Array("SQLite f".utf8))
            let header = #expect(throws: PersistenceError.self) { try Self.open(url, journal: foreign, options: options) }
            #expect(header?.code == .damagedJournal)
            #expect(header?.offset == 0)

            // A record of type 9 with valid checksums, before the last record.
            var frame = Array("MKRC".utf8) + [9, 1, 0, 0] + [UInt8](repeating: 0, count: 8)
            frame += withUnsafeBytes(of: UInt32(0).littleEndian) { Array($0) }  // the empty payload's CRC
            frame += withUnsafeBytes(of: frame.withUnsafeBytes { CRC32C.checksum($0) }.littleEndian) { Array($0) }
            var newer = journal
            newer.insert(contentsOf: frame, at: starts[2])
            let type = #expect(throws: PersistenceError.self) { try Self.open(url, journal: newer, options: options) }
            #expect(type?.code == .damagedJournal)
            #expect(type?.offset == starts[2])
            #expect("\(type.map { "\($0)" } ?? "")".contains("type 9"))
        }
    }

    @Test("a journal with saves but no base is fileNotFound, and nothing is created")
    func missingBase() throws {
        try withStore { url, options in
            let (journal, _, _) = try Self.threeSaves(at: url, options: options)
            try FileManager.default.removeItem(at: url)
            let error = #expect(throws: PersistenceError.self) { try Self.open(url, journal: journal, options: options) }
            #expect(error?.code == .fileNotFound)
            #expect(!FileManager.default.fileExists(atPath: url.path))
        }
    }

    @Test("random bit flips over base and journal give typed errors or a store, never a crash", .timeLimit(.minutes(5)))
    func randomFlips() throws {
        try withStore(format: .binaryPropertyList) { url, options in
            let (journal, _, _) = try Self.threeSaves(at: url, options: options)
            let base = try Data(contentsOf: url)
            var random = SplitMix64(seed: 31)
            var opened = 0
            for _ in 0..<400 {
                var damagedBase = base
                var damagedJournal = journal
                for _ in 0..<Int(random.next() % 4 + 1) {
                    if random.next() % 2 == 0 {
                        let at = Int(random.next() % UInt64(damagedBase.count))
                        damagedBase[at] ^= UInt8(1 << (random.next() % 8))
                    } else {
                        let at = Int(random.next() % UInt64(damagedJournal.count))
                        damagedJournal[at] ^= UInt8(1 << (random.next() % 8))
                    }
                }
                try damagedBase.write(to: url)
                do {
                    let store = try Self.open(url, journal: damagedJournal, options: options)
                    opened += 1
                    store.close()
                } catch is PersistenceError {
                } catch is SerializationError {
                }
            }
            #expect(opened > 0)
        }
    }
}

@Suite("Model store: whole records that do not load")
struct ModelStoreUndecodableRecordTests {
    @Test("a whole record that does not load names the record and journal offsets, and recovery keeps the saves before it")
    func undecodableRecord() throws {
        try withStore { url, options in
            let (journal, starts, states) = try ModelStoreDamageTests.threeSaves(at: url, options: options)
            // Make the second record's model name one that is not registered, and seal it again.
            let frameEnd = starts[1] + 24
            let payload = journal.subdata(in: frameEnd..<starts[2])
            let text = String(decoding: payload, as: UTF8.self)
            let renamed = Data(text.replacingOccurrences(of: "\"Post\"", with: "\"Gone\"").utf8)
            #expect(renamed.count == payload.count && renamed != payload)
            var frame = Array(journal.subdata(in: starts[1]..<starts[1] + 16))
            frame += withUnsafeBytes(of: renamed.withUnsafeBytes { CRC32C.checksum($0) }.littleEndian) { Array($0) }
            frame += withUnsafeBytes(of: frame.withUnsafeBytes { CRC32C.checksum($0) }.littleEndian) { Array($0) }
            var sealed = journal
            sealed.replaceSubrange(starts[1]..<frameEnd, with: frame)
            sealed.replaceSubrange(frameEnd..<starts[2], with: renamed)

            let error = #expect(throws: SerializationError.self) {
                try ModelStoreDamageTests.open(url, journal: sealed, options: options)
            }
            #expect(error?.code == .unknownModel || error?.code == .modelTypeConflict)
            #expect(error?.path.hasPrefix("journal record at byte \(starts[1])") == true)
            var recovering = options
            recovering.recovery = .savesBeforeDamage
            let store = try ModelStoreDamageTests.open(url, journal: sealed, options: recovering)
            #expect(blogSummary(store.context) == states[1])
        }
    }
}
