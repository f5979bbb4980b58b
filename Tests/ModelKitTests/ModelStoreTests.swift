import Foundation
import ModelKit
import Testing

@testable import ModelKit

/// A store in a fresh folder, registered with the blog fixtures.
func withStore<Result>(
    format: PersistenceFormat = .json, _ body: (URL, ModelStore.Options) throws -> Result
) throws -> Result {
    try? ModelRegistry.register(Author.self, Post.self, Node.self)
    var options = ModelStore.Options()
    options.format = format
    options.deserialization.unknownKeys = .fail
    return try withTemporaryDirectory { directory in
        try body(directory.appendingPathComponent("blog.store"), options)
    }
}

/// The authors of a context, with their posts' titles, by name: what the tests compare.
func blogSummary(_ context: ModelContext) -> [String: [String]] {
    Dictionary(
        uniqueKeysWithValues: context.models(of: Author.self).map { author in
            (author.name, author.posts.map(\.title))
        })
}

@Suite("Model store: saving and opening")
struct ModelStoreTests {
    @Test(
        "a new store saves insertions, and a reopened store has them with their references",
        arguments: [PersistenceFormat.json, .binaryPropertyList])
    func savesAndReopens(format: PersistenceFormat) throws {
        try withStore(format: format) { url, options in
            do {
                let store = try ModelStore(url: url, options: options)
                #expect(store.context.isEmpty)
                #expect(!store.needsSaving)
                let author = Author.instance(in: store.context)
                author.name = "Ann"
                for title in ["One", "Two"] {
                    let post = Post.instance(in: store.context)
                    post.title = title
                    post.author = author
                    author.posts.append(post)
                }
                #expect(store.needsSaving)
                try store.save()
                #expect(!store.needsSaving)
                #expect(store.statistics.saves == 1)
                #expect(store.statistics.syncs == 2)  // the new journal's header, then the save
            }
            let reopened = try ModelStore(url: url, options: options)
            #expect(!reopened.needsSaving)
            #expect(blogSummary(reopened.context) == ["Ann": ["One", "Two"]])
            let post = try #require(reopened.context.models(of: Post.self).first)
            #expect(post.author?.name == "Ann")
        }
    }

    @Test("updates and removals are journaled, and the base file alone still loads the state before them")
    func updatesAndRemovals() throws {
        try withStore { url, options in
            do {
                let store = try ModelStore(url: url, options: options)
                let author = Author.instance(in: store.context)
                author.name = "Ann"
                let post = Post.instance(in: store.context)
                post.title = "Draft"
                author.posts.append(post)
                try store.compact()
                post.title = "Final"
                let extra = Post.instance(in: store.context)
                extra.title = "Extra"
                author.posts.append(extra)
                try store.save()
                extra.removeFromContext()
                author.posts.removeAll { $0.title != "Final" && $0.title != "Kept" }
                try store.save()
                // A reader of the base alone, while the store is open.
                let reader = ModelContext()
                try reader.load(from: url)
                #expect(blogSummary(reader) == ["Ann": ["Draft"]])
            }
            let reopened = try ModelStore(url: url, options: options)
            #expect(blogSummary(reopened.context) == ["Ann": ["Final"]])
            #expect(reopened.context.models(of: Post.self).count == 1)
        }
    }

    @Test("a save of one change appends a record the size of that change, not of the store")
    func saveCostsWhatChanged() throws {
        try withStore(format: .binaryPropertyList) { url, options in
            let store = try ModelStore(url: url, options: options)
            let author = Author.instance(in: store.context)
            for index in 0..<2_000 {
                let post = Post.instance(in: store.context)
                post.title = "Post \(index)"
                post.body = String(repeating: "text ", count: 20)
                post.author = author
                author.posts.append(post)
            }
            try store.compact()
            let before = store.statistics
            store.context.models(of: Post.self)[7].title = "Changed"
            try store.save()
            let after = store.statistics
            #expect(after.journalBytes - before.journalBytes < 1_000)
            #expect(after.baseBytes > 200_000)
            #expect(after.syncs - before.syncs == 1)
        }
    }

    @Test("a save with nothing changed writes nothing and syncs nothing")
    func emptySave() throws {
        try withStore { url, options in
            let store = try ModelStore(url: url, options: options)
            let before = store.statistics
            try store.save()
            #expect(store.statistics == before)
        }
    }

    @Test("a second store on the same files is refused with storeLocked until the first is closed")
    func oneWriter() throws {
        try withStore { url, options in
            let first = try ModelStore(url: url, options: options)
            let locked = #expect(throws: PersistenceError.self) { try ModelStore(url: url, options: options) }
            #expect(locked?.code == .storeLocked)
            first.close()
            let closed = #expect(throws: PersistenceError.self) { try first.save() }
            #expect(closed?.code == .storeClosed)
            _ = try ModelStore(url: url, options: options)
        }
    }

    @Test("compaction folds the journal into the base, and the store reopens the same")
    func compaction() throws {
        try withStore { url, options in
            do {
                let store = try ModelStore(url: url, options: options)
                let author = Author.instance(in: store.context)
                author.name = "Ann"
                try store.save()
                author.name = "Bo"
                try store.compact()
                #expect(store.statistics.journalBytes == 16)
                #expect(store.statistics.compactions == 1)
                let reader = ModelContext()
                try reader.load(from: url)
                #expect(blogSummary(reader) == ["Bo": []])
            }
            let reopened = try ModelStore(url: url, options: options)
            #expect(blogSummary(reopened.context) == ["Bo": []])
        }
    }

    @Test("a save compacts when the journal passes the threshold of the base's size")
    func automaticCompaction() throws {
        try withStore(format: .binaryPropertyList) { url, options in
            var options = options
            options.compactionThreshold = 0.5
            let store = try ModelStore(url: url, options: options)
            var saves = 0
            while store.statistics.compactions == 0 && saves < 200 {
                let post = Post.instance(in: store.context)
                post.body = String(repeating: "x", count: 20_000)
                try store.save()
                saves += 1
            }
            #expect(store.statistics.compactions == 1)
            #expect(store.statistics.journalBytes == 16)
            #expect(store.context.models(of: Post.self).count == saves)
        }
    }

    @Test("a crash between compaction's new base and its emptied journal replays the journal to the same state")
    func compactionCrash() throws {
        try withStore { url, options in
            let journal = URL(fileURLWithPath: url.path + "-journal")
            var expected: [String: [String]] = [:]
            do {
                let store = try ModelStore(url: url, options: options)
                let author = Author.instance(in: store.context)
                author.name = "Ann"
                let post = Post.instance(in: store.context)
                post.title = "Kept"
                author.posts.append(post)
                try store.save()
                let gone = Post.instance(in: store.context)
                author.posts.append(gone)
                try store.save()
                gone.removeFromContext()
                author.posts.removeAll { $0.title != "Final" && $0.title != "Kept" }
                author.name = "Bo"
                try store.save()
                expected = blogSummary(store.context)
                // What compaction writes first: the new base. The old journal stays.
                try store.context.write(to: url)
            }
            #expect(try Data(contentsOf: journal).count > 16)
            let reopened = try ModelStore(url: url, options: options)
            #expect(blogSummary(reopened.context) == expected)
            #expect(reopened.context.models(of: Post.self).count == 1)
        }
    }

    @Test("the checksum is CRC-32C")
    func checksum() {
        let bytes = Array("123456789".utf8)
        #expect(bytes.withUnsafeBytes { CRC32C.checksum($0) } == 0xE306_9283)
        let long = (0..<1_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let whole = long.withUnsafeBytes { CRC32C.checksum($0) }
        let split = long.withUnsafeBytes { buffer in
            CRC32C.checksum(
                UnsafeRawBufferPointer(rebasing: buffer[13...]),
                continuing: CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[..<13])))
        }
        #expect(whole == split)
    }
}

@Suite("Model store: what a backend keeps")
struct ModelStoreTrackingTests {
    static let namespace = "ModelKitServices.versions test"

    @Test("a server version set on a saved model is saved by the next save, and comes back after a relaunch")
    func versionsSurvive() throws {
        try withStore(format: .binaryPropertyList) { url, options in
            var authorId: ModelID?
            do {
                let store = try ModelStore(url: url, options: options)
                let author = Author.instance(in: store.context)
                author.name = "Ann"
                try store.save()
                authorId = author.modelId
                // What a service does after a push: only the version changes, not the model.
                store.context.metadataTable(Self.namespace)[author.modelId] = "17"
                #expect(!store.context.hasChanges)
                #expect(store.needsSaving)
                try store.save()
                #expect(!store.needsSaving)
            }
            let reopened = try ModelStore(url: url, options: options)
            let id = try #require(authorId)
            #expect(reopened.context.metadataTable(Self.namespace)[id] == "17")
            #expect(!reopened.needsSaving)
            // After a compaction, the base carries it too.
            try reopened.compact()
            let reader = ModelContext()
            try reader.load(from: url)
            #expect(reader.metadataTable(Self.namespace)[id] == "17")
        }
    }
}

@Suite("Model store: models outside the store")
struct ModelStoreForeignModelTests {
    @Test("a save that reaches a model of another context fails with foreignReference and keeps its changes")
    func foreignReference() throws {
        try withStore { url, options in
            let store = try ModelStore(url: url, options: options)
            let author = Author.instance(in: store.context)
            author.name = "Ann"
            let elsewhere = ModelContext()
            let stray = Post.instance(in: elsewhere)
            stray.title = "made in the wrong context"
            author.posts.append(stray)
            let error = #expect(throws: SerializationError.self) { try store.save() }
            #expect(error?.code == .foreignReference)
            #expect(error.map { "\($0)" }?.contains("another context") == true)
            #expect(store.needsSaving)
            #expect(store.statistics.saves == 0)
            // Made where it belongs, the same graph saves.
            author.posts.removeAll()
            let post = Post.instance(in: store.context)
            post.title = "made in the store's context"
            author.posts.append(post)
            try store.save()
            store.close()
            let reopened = try ModelStore(url: url, options: options)
            #expect(blogSummary(reopened.context) == ["Ann": ["made in the store's context"]])
        }
    }
}
