import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

/// Thousands of random changes, undos, saves, compactions and reopenings, each reopening compared
/// with the state after the last save, kept in memory as plain values.
@Suite("Model store: randomized against a reference")
struct ModelStoreRandomTests {
    /// The whole blog as values: every author with its posts in order, every post with its author.
    struct State: Equatable, CustomStringConvertible {
        var authors: [ModelID: String] = [:]
        var posts: [ModelID: String] = [:]

        init(_ context: ModelContext) {
            for author in context.models(of: Author.self) {
                authors[author.modelId] = "\(author.name) \(author.posts.map(\.modelId.description))"
            }
            for post in context.models(of: Post.self) {
                posts[post.modelId] = "\(post.title) by \(post.author?.modelId.description ?? "nobody")"
            }
        }

        var description: String { "\(authors.count) authors, \(posts.count) posts" }
    }

    /// A store with an undo manager, as an app would open it.
    static func open(_ url: URL, options: ModelStore.Options) throws -> (ModelStore, ModelUndoManager) {
        let store = try ModelStore(url: url, options: options)
        let undo = ModelUndoManager()
        store.context.undoManager = undo
        return (store, undo)
    }

    @Test(
        "random changes, undos, saves, compactions and reopenings always reopen to the last saved state",
        arguments: [PersistenceFormat.json, .binaryPropertyList])
    func randomized(format: PersistenceFormat) throws {
        try withStore(format: format) { url, options in
            var options = options
            options.compactionThreshold = nil
            options.durability = .relaxed  // flushing is not what this tests; it would take most of the time
            var random = SplitMix64(seed: format == .json ? 7 : 8)
            var (store, undo) = try Self.open(url, options: options)
            var saved = State(store.context)
            var checks = 0
            for step in 0..<3_000 {
                let context = store.context
                let authors = context.models(of: Author.self)
                let posts = context.models(of: Post.self)
                switch random.next() % 20 {
                case 0..<3:
                    Author.instance(in: context).name = "author \(step)"
                case 3..<7 where !authors.isEmpty:
                    let post = Post.instance(in: context)
                    post.title = "post \(step)"
                    let author = authors[Int(random.next() % UInt64(authors.count))]
                    post.author = author
                    author.posts.append(post)
                case 7..<10 where !posts.isEmpty:
                    posts[Int(random.next() % UInt64(posts.count))].title = "edited \(step)"
                case 10 where !authors.isEmpty:
                    authors[Int(random.next() % UInt64(authors.count))].name = "renamed \(step)"
                case 11 where !posts.isEmpty:
                    let post = posts[Int(random.next() % UInt64(posts.count))]
                    post.author?.posts.removeAll { $0 === post }
                    post.removeFromContext()
                case 12 where !authors.isEmpty && random.next() % 4 == 0:
                    let author = authors[Int(random.next() % UInt64(authors.count))]
                    for post in author.posts { post.removeFromContext() }
                    author.removeFromContext()
                case 13 where undo.canUndo:
                    undo.undo()
                case 14..<17:
                    try store.save()
                    #expect(!store.needsSaving)
                    saved = State(context)
                case 17 where random.next() % 4 == 0:
                    try store.compact()
                    saved = State(context)
                case 18..<20 where random.next() % 3 == 0:
                    // Quit, with or without the unsaved changes, and launch again.
                    store.close()
                    (store, undo) = try Self.open(url, options: options)
                    let reopened = State(store.context)
                    #expect(reopened == saved, "step \(step): \(reopened) instead of \(saved)")
                    checks += 1
                    if reopened != saved { return }
                default:
                    break
                }
            }
            #expect(checks > 50)
        }
    }
}
