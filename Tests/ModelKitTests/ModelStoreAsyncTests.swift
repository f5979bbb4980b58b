import Foundation
import ModelKit
import Testing

/// The asynchronous forms: the same results as the synchronous ones, progress that ends complete,
/// and cancellation that leaves the store, the context and the files as before.
@Suite("Model store: asynchronous, cancellable, with progress")
struct ModelStoreAsyncTests {
    /// Fills a store with `count` posts by one author and compacts it; returns the base's bytes.
    static func filled(_ url: URL, options: ModelStore.Options, count: Int) throws -> Data {
        let store = try ModelStore(url: url, options: options)
        let author = Author.instance(in: store.context)
        author.name = "Ann"
        for index in 0..<count {
            let post = Post.instance(in: store.context)
            post.title = "Post \(index)"
            author.posts.append(post)
        }
        try store.compact()
        store.context.models(of: Post.self)[0].title = "Journaled"
        try store.save()
        return try Data(contentsOf: url)
    }

    @Test("an asynchronous open has the synchronous open's models and reports every byte")
    func openAsync() async throws {
        try await withStoreAsync { url, options in
            _ = try Self.filled(url, options: options, count: 100)
            let progress = Progress(totalUnitCount: 0)
            let store = try await ModelStore.open(url: url, options: options, progress: progress)
            #expect(progress.totalUnitCount > 0)
            #expect(progress.completedUnitCount == progress.totalUnitCount)
            #expect(!store.needsSaving)
            #expect(store.context.models(of: Post.self).count == 100)
            #expect(store.context.models(of: Post.self).contains { $0.title == "Journaled" })
        }
    }

    @Test("a cancelled open throws CancellationError and releases the lock")
    func cancelledOpen() async throws {
        try await withStoreAsync { url, options in
            _ = try Self.filled(url, options: options, count: 10)
            let outcome = await Task { () -> String in
                withUnsafeCurrentTask { $0?.cancel() }
                do {
                    _ = try await ModelStore.open(url: url, options: options)
                    return "opened"
                } catch is CancellationError {
                    return "cancelled"
                } catch {
                    return "\(error)"
                }
            }.value
            #expect(outcome == "cancelled")
            let store = try ModelStore(url: url, options: options)
            #expect(store.context.models(of: Post.self).count == 10)
        }
    }

    @Test("an asynchronous save is on disk when it returns, and a cancelled one leaves its changes to save")
    func saveAsync() async throws {
        try await withStoreAsync { url, options in
            let outcome = await Task { () -> [String] in
                var seen: [String] = []
                do {
                    let store = try ModelStore(url: url, options: options)
                    let author = Author.instance(in: store.context)
                    author.name = "Ann"
                    let progress = Progress(totalUnitCount: 0)
                    try await store.save(progress: progress)
                    seen.append("saved \(progress.completedUnitCount)/\(progress.totalUnitCount)")
                    author.name = "Bo"
                    withUnsafeCurrentTask { $0?.cancel() }
                    do {
                        try await store.save()
                    } catch is CancellationError {
                        seen.append("cancelled, needs saving: \(store.needsSaving)")
                    }
                    store.close()
                    let reopened = try ModelStore(url: url, options: options)
                    seen.append(blogSummary(reopened.context).keys.sorted().joined())
                } catch {
                    seen.append("\(error)")
                }
                return seen
            }.value
            #expect(outcome == ["saved 1/1", "cancelled, needs saving: true", "Ann"])
        }
    }

    @Test("a cancelled compaction leaves the base and the journal as they were, and the store opens the same")
    func cancelledCompaction() async throws {
        try await withStoreAsync { url, options in
            let base = try Self.filled(url, options: options, count: 10_000)
            let journal = try Data(contentsOf: URL(fileURLWithPath: url.path + "-journal"))
            let outcome = await Task { () -> String in
                do {
                    let store = try ModelStore(url: url, options: options)
                    let progress = Progress(totalUnitCount: 0)
                    withUnsafeCurrentTask { $0?.cancel() }
                    try await store.compact(progress: progress)
                    return "compacted"
                } catch is CancellationError {
                    return "cancelled"
                } catch {
                    return "\(error)"
                }
            }.value
            #expect(outcome == "cancelled")
            #expect(try Data(contentsOf: url) == base)
            #expect(try Data(contentsOf: URL(fileURLWithPath: url.path + "-journal")) == journal)
            let folder = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
            #expect(folder.sorted() == ["blog.store", "blog.store-journal"])
        }
    }

    @Test("an asynchronous compaction reports every model and empties the journal")
    func compactAsync() async throws {
        try await withStoreAsync { url, options in
            _ = try Self.filled(url, options: options, count: 5_000)
            let summary = await Task { () -> String in
                do {
                    let store = try ModelStore(url: url, options: options)
                    let progress = Progress(totalUnitCount: 0)
                    try await store.compact(progress: progress)
                    return "\(progress.completedUnitCount)/\(progress.totalUnitCount) \(store.statistics.journalBytes)"
                } catch {
                    return "\(error)"
                }
            }.value
            #expect(summary == "5001/5001 16")
        }
    }

    @Test("a context's asynchronous write and load report progress, and a cancelled write leaves the file as it was")
    func contextFiles() async throws {
        try await withStoreAsync { url, _ in
            let file = url.deletingLastPathComponent().appendingPathComponent("graph.json")
            let outcome = await Task { () -> [String] in
                var seen: [String] = []
                do {
                    let context = ModelContext()
                    for index in 0..<9_000 { Post.instance(in: context).title = "Post \(index)" }
                    let progress = Progress(totalUnitCount: 0)
                    try await context.write(to: file, progress: progress)
                    seen.append("wrote \(progress.completedUnitCount)/\(progress.totalUnitCount)")
                    let before = try Data(contentsOf: file)
                    Post.instance(in: context).title = "One more"
                    // A Progress cancelled (by a view's cancel button) stops the write, as the task's
                    // cancellation does.
                    let cancelled = Progress(totalUnitCount: 0)
                    cancelled.cancel()
                    do {
                        try await context.write(to: file, progress: cancelled)
                    } catch is CancellationError {
                        seen.append("progress cancelled, file kept: \(try Data(contentsOf: file) == before)")
                    }
                    withUnsafeCurrentTask { $0?.cancel() }
                    do {
                        try await context.write(to: file, progress: nil)
                    } catch is CancellationError {
                        seen.append("cancelled, file kept: \(try Data(contentsOf: file) == before)")
                    }
                } catch {
                    seen.append("\(error)")
                }
                return seen
            }.value
            #expect(outcome == ["wrote 9000/9000", "progress cancelled, file kept: true", "cancelled, file kept: true"])
            let loaded = ModelContext()
            let progress = Progress(totalUnitCount: 0)
            try await loaded.load(from: file, progress: progress)
            #expect(loaded.count == 9_000)
            #expect(progress.completedUnitCount == progress.totalUnitCount)
        }
    }
}

/// ``withStore`` for asynchronous bodies.
func withStoreAsync(_ body: (URL, ModelStore.Options) async throws -> Void) async throws {
    try? ModelRegistry.register(Author.self, Post.self, Node.self)
    var options = ModelStore.Options()
    options.deserialization.unknownKeys = .fail
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("modelkit-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    try await body(directory.appendingPathComponent("blog.store"), options)
}
