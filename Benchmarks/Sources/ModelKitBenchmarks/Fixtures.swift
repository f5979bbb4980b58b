import Foundation
import ModelKit

// The peers' plain Swift equivalents of the blog graph (its ModelKit models are in BlogFixture).

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

// MARK: - Plain classes (for creation, lookups and graph memory)

/// How plain code gives its objects ids: from a counter (`Int`) or with `UUID()`.
protocol PlainID: Hashable {
    /// The id of the next object, `counter` counting the objects made so far.
    static func next(_ counter: inout Int) -> Self
}

extension Int: PlainID {
    static func next(_ counter: inout Int) -> Int {
        counter += 1
        return counter
    }
}

// On Linux each `UUID()` reads /dev/urandom (open, read, close), which dominates creating small
// objects; hence the create benchmark's two peers.
extension UUID: PlainID {
    static func next(_ counter: inout Int) -> UUID { UUID() }
}

// Generic over the id only so that the Int-id and UUID-id peers are one declaration: the
// benchmarks use them at concrete types, which the optimizer specializes.

final class PlainAuthorObject<ID: PlainID> {
    let id: ID
    var name = ""
    var email = ""
    var age = 0
    var posts: [PlainPostObject<ID>] = []

    init(id: ID) { self.id = id }
}

final class PlainPostObject<ID: PlainID> {
    let id: ID
    var title = ""
    var body = ""
    var publishedAt = Date()
    /// Strong, as plain code would write it; the cycle with `PlainAuthorObject.posts` is broken
    /// when the graph goes away (see ``PlainObjectGraph``).
    var author: PlainAuthorObject<ID>?
    var tags: [String] = []

    init(id: ID) { self.id = id }
}

/// The blog as plain objects: the authors and posts in arrays, and, when the peer also keeps an
/// identity map as a context does, every object registered by id in a dictionary.
///
/// Authors hold their posts and posts their author strongly, so the graph is a cycle; releasing
/// this breaks it (after the clock has stopped) so that runs don't leak into each other.
final class PlainObjectGraph<ID: PlainID> {
    var objects: [ID: AnyObject] = [:]
    var authors: [PlainAuthorObject<ID>] = []
    var posts: [PlainPostObject<ID>] = []

    deinit {
        for author in authors { author.posts = [] }
    }
}
