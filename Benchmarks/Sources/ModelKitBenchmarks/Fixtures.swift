import Foundation
import ModelKit

// The types of the blog graph: ModelKit models, and the peers' plain Swift equivalents.

// MARK: - ModelKit models

final class BenchAuthor: Model {
    struct Properties: Codable {
        var name = ""
        var email = ""
        var age = 0
        var posts = ModelArray<BenchPost>()
    }
    let storage = ModelStorage(Properties())
    static var modelName: String { "Author" }
}

final class BenchPost: Model {
    struct Properties: Codable {
        var title = ""
        var body = ""
        var publishedAt = Date()
        var author = ModelRef<BenchAuthor>()
        var tags: [String] = []
    }
    let storage = ModelStorage(Properties())
    static var modelName: String { "Post" }
}

/// The root that makes the whole graph reachable for serialization: it holds every author, and
/// the authors hold every post.
final class BenchBlog: Model {
    struct Properties: Codable {
        var authors = ModelArray<BenchAuthor>()
    }
    let storage = ModelStorage(Properties())
    static var modelName: String { "Blog" }
}

// MARK: - Plain Codable structs (acyclic: references are ids)

struct PlainAuthor: Codable {
    var id: UUID
    var name, email: String
    var age: Int
    var postIds: [UUID]
}

struct PlainPost: Codable {
    var id: UUID
    var title, body: String
    var publishedAt: Date
    var authorId: UUID
    var tags: [String]
}

struct PlainBlog: Codable {
    var authors: [PlainAuthor]
    var posts: [PlainPost]
}

// MARK: - Plain classes (for creation and lookups)

// `init(id:)` defaults to `UUID()`, as plain code would write it. On Linux each `UUID()` reads
// /dev/urandom (open, read, close), which dominates creating small objects; the create benchmark
// also times ids made from a counter, to show what is left without that.

final class PlainAuthorObject {
    var id: UUID
    var name = ""
    var email = ""
    var age = 0
    var posts: [PlainPostObject] = []

    init(id: UUID = UUID()) { self.id = id }
}

final class PlainPostObject {
    var id: UUID
    var title = ""
    var body = ""
    var publishedAt = Date()
    /// Strong, as plain code would write it; the cycle with `PlainAuthorObject.posts` is broken
    /// when the graph goes away (see ``PlainObjectGraph``).
    var author: PlainAuthorObject?
    var tags: [String] = []

    init(id: UUID = UUID()) { self.id = id }
}

/// Plain objects registered by id in a dictionary: the peer of a context.
///
/// Authors hold their posts and posts their author strongly, so the graph is a cycle; releasing
/// this breaks it (after the clock has stopped) so that runs don't leak into each other.
final class PlainObjectGraph {
    var objects: [UUID: AnyObject] = [:]
    var authors: [PlainAuthorObject] = []
    var posts: [PlainPostObject] = []

    deinit {
        for author in authors { author.posts = [] }
    }
}
