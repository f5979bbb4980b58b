import BlogFixture
import Foundation
import ModelKit

// The blog's content (`BlogData`) and its ModelKit graph (`buildModelKitGraph`,
// `buildModelKitBlog`) are in the BlogFixture module, which ModelKitProfile shares; here are the
// peers' builders.

// MARK: - Building the graphs

/// Creates the blog as plain objects with ids of type `ID`, one new id per object: the timed body
/// of the peers of "create", and the peer of "graph-memory".
///
/// - Parameter registered: Also registers every object by id in a dictionary, as a context does.
func buildPlainObjectGraph<ID: PlainID>(_ data: BlogData, ids: ID.Type, registered: Bool = false) -> PlainObjectGraph<ID> {
    let graph = PlainObjectGraph<ID>()
    var counter = 0
    graph.authors.reserveCapacity(data.authorCount)
    for a in 0..<data.authorCount {
        let author = PlainAuthorObject(id: ID.next(&counter))
        author.name = data.authorNames[a]
        author.email = data.authorEmails[a]
        author.age = data.authorAges[a]
        if registered { graph.objects[author.id] = author }
        graph.authors.append(author)
    }
    graph.posts.reserveCapacity(data.n)
    for i in 0..<data.n {
        let post = PlainPostObject(id: ID.next(&counter))
        post.title = data.titles[i]
        post.body = data.bodies[i]
        post.publishedAt = data.dates[i]
        post.tags = data.tags[i]
        let author = graph.authors[data.author(ofPost: i)]
        post.author = author
        author.posts.append(post)
        if registered { graph.objects[post.id] = post }
        graph.posts.append(post)
    }
    return graph
}

/// The blog as plain Codable structs, with fixed ids (`UUID`s made from counters).
func buildPlainBlog(_ data: BlogData) -> PlainBlog {
    let authorIds = (0..<data.authorCount).map { counterUUID($0) }
    let postIds = (0..<data.n).map { counterUUID(data.authorCount + $0) }
    let authors = (0..<data.authorCount).map { a in
        PlainAuthor(
            id: authorIds[a], name: data.authorNames[a], email: data.authorEmails[a], age: data.authorAges[a],
            postIds: data.posts(ofAuthor: a).map { postIds[$0] })
    }
    let posts = (0..<data.n).map { i in
        PlainPost(
            id: postIds[i], title: data.titles[i], body: data.bodies[i], publishedAt: data.dates[i],
            authorId: authorIds[data.author(ofPost: i)], tags: data.tags[i])
    }
    return PlainBlog(authors: authors, posts: posts)
}

/// A version-4-shaped UUID whose last bytes are `counter`.
func counterUUID(_ counter: Int) -> UUID {
    let c = UInt64(counter)
    func byte(_ index: Int) -> UInt8 { UInt8(truncatingIfNeeded: c >> (8 * (7 - index))) }
    return UUID(uuid: (
        0x4D, 0x4B, 0x42, 0x45, 0x4E, 0x43, 0x40, 0x48,
        0x80 | byte(0) & 0x3F, byte(1), byte(2), byte(3), byte(4), byte(5), byte(6), byte(7)
    ))
}

/// A fixed pseudo-random generator (SplitMix64), for shuffling lookups the same way every time.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The indices `0..<count` in a fixed shuffled order.
func shuffledIndices(_ count: Int, seed: UInt64 = 42) -> [Int] {
    var generator = SplitMix64(state: seed)
    var indices = Array(0..<count)
    indices.shuffle(using: &generator)
    return indices
}
