import BlogFixture
import Foundation

// The Codable peers of the whole-graph files (issue #13), as a user would write them: acyclic
// structs in which references are ids.
//
// - The same information as ModelKit's file: every object has a `UUID` id and the two dates
//   ModelKit keeps per model (created, updated), the blog root lists its authors, authors list
//   their posts' ids and posts carry their author's id. The dates use the coders' default
//   strategy (a number), the fastest the coders offer and as exact as ModelKit's ISO 8601 text.
// - The compact shape a user might choose instead: integer ids and no dates. It is cheaper to
//   encode and decode (a UUID is 36 characters of text each way), so it is also timed.
//
// The structs are concrete, not generic over the id, so that the synthesized Codable code calls
// the coders' concrete `Int` and `String` methods as hand-written peers do.

struct RecordAuthor: Codable {
    var id: UUID
    var createdAt, updatedAt: Date
    var name, email: String
    var age: Int
    var postIds: [UUID]
}

struct RecordPost: Codable {
    var id: UUID
    var createdAt, updatedAt: Date
    var title, body: String
    var publishedAt: Date
    var authorId: UUID
    var tags: [String]
}

/// The root, like ModelKit's `Blog` model.
struct RecordBlogRoot: Codable {
    var id: UUID
    var createdAt, updatedAt: Date
    var authorIds: [UUID]
}

/// The file of the same-information peers.
struct RecordFile: Codable {
    var blog: RecordBlogRoot
    var authors: [RecordAuthor]
    var posts: [RecordPost]
}

struct CompactAuthor: Codable {
    var id: Int
    var name, email: String
    var age: Int
    var postIds: [Int]
}

struct CompactPost: Codable {
    var id: Int
    var title, body: String
    var publishedAt: Date
    var authorId: Int
    var tags: [String]
}

/// The file of the compact peers: the authors in the blog's order, then the posts.
struct CompactFile: Codable {
    var authors: [CompactAuthor]
    var posts: [CompactPost]
}

/// The blog with the same information as ModelKit's file: fixed `UUID` ids (made from counters,
/// as `counterUUID` does) and, per object, the time it was made as both dates, as a new model has.
func buildRecordFile(_ data: BlogData) -> RecordFile {
    let authorIds = (0..<data.authorCount).map { counterUUID($0) }
    let postIds = (0..<data.n).map { counterUUID(data.authorCount + $0) }
    let authors = (0..<data.authorCount).map { a in
        let now = Date()
        return RecordAuthor(
            id: authorIds[a], createdAt: now, updatedAt: now, name: data.authorNames[a], email: data.authorEmails[a],
            age: data.authorAges[a], postIds: data.posts(ofAuthor: a).map { postIds[$0] })
    }
    let posts = (0..<data.n).map { i in
        let now = Date()
        return RecordPost(
            id: postIds[i], createdAt: now, updatedAt: now, title: data.titles[i], body: data.bodies[i],
            publishedAt: data.dates[i], authorId: authorIds[data.author(ofPost: i)], tags: data.tags[i])
    }
    let now = Date()
    let blog = RecordBlogRoot(id: counterUUID(data.authorCount + data.n), createdAt: now, updatedAt: now, authorIds: authorIds)
    return RecordFile(blog: blog, authors: authors, posts: posts)
}

/// The blog in the compact shape: author `a` has id `a`, post `i` id `authorCount + i`.
func buildCompactFile(_ data: BlogData) -> CompactFile {
    let authors = (0..<data.authorCount).map { a in
        CompactAuthor(
            id: a, name: data.authorNames[a], email: data.authorEmails[a], age: data.authorAges[a],
            postIds: data.posts(ofAuthor: a).map { data.authorCount + $0 })
    }
    let posts = (0..<data.n).map { i in
        CompactPost(
            id: data.authorCount + i, title: data.titles[i], body: data.bodies[i], publishedAt: data.dates[i],
            authorId: data.author(ofPost: i), tags: data.tags[i])
    }
    return CompactFile(authors: authors, posts: posts)
}

// MARK: - Checks (untimed)

/// What every loaded blog is checked for, whatever loaded it: counts, the posts every author
/// holds, and the spot-checked posts' content and links to their author (both ways).
struct LoadedBlogCheck {
    var authorCount: Int
    var postCount: Int
    /// The number of posts the authors hold, summed.
    var postsHeld: Int
    var author: (Int) -> (name: String, email: String, age: Int)
    var post: (Int) -> (title: String, body: String, publishedAt: Date, tags: [String])
    /// Whether post `i` and its author point at each other (post `i` is author `i % authorCount`'s
    /// post number `i / authorCount`).
    var linked: (Int) -> Bool

    /// Throws where the loaded blog differs from `data`; returns the number of posts.
    func verify(_ data: BlogData, _ what: String) throws -> Int {
        _ = try expect(authorCount, data.authorCount, "authors \(what)")
        _ = try expect(postCount, data.n, "posts \(what)")
        _ = try expect(postsHeld, data.n, "posts held by the authors \(what)")
        for i in data.spotCheckedPosts {
            let a = data.author(ofPost: i)
            let author = author(a)
            let post = post(i)
            try check(author == (data.authorNames[a], data.authorEmails[a], data.authorAges[a]), "author \(a)")
            try check(
                post.title == data.titles[i] && post.body == data.bodies[i] && post.publishedAt == data.dates[i]
                    && post.tags == data.tags[i],
                "post \(i)")
            try check(linked(i), "the links between post \(i) and its author")
        }
        return data.n
    }
}

/// A Codable peer's file: authors and posts that reference each other by id.
protocol PeerBlogFile {
    associatedtype Author: PeerAuthorRecord
    associatedtype Post: PeerPostRecord where Post.ID == Author.ID
    var authors: [Author] { get }
    var posts: [Post] { get }
}

protocol PeerAuthorRecord {
    associatedtype ID: Equatable
    var id: ID { get }
    var name: String { get }
    var email: String { get }
    var age: Int { get }
    var postIds: [ID] { get }
}

protocol PeerPostRecord {
    associatedtype ID: Equatable
    var id: ID { get }
    var title: String { get }
    var body: String { get }
    var publishedAt: Date { get }
    var authorId: ID { get }
    var tags: [String] { get }
}

extension RecordFile: PeerBlogFile {}
extension RecordAuthor: PeerAuthorRecord {}
extension RecordPost: PeerPostRecord {}
extension CompactFile: PeerBlogFile {}
extension CompactAuthor: PeerAuthorRecord {}
extension CompactPost: PeerPostRecord {}
extension PlainBlog: PeerBlogFile {}
extension PlainAuthor: PeerAuthorRecord {}
extension PlainPost: PeerPostRecord {}

/// Checks a decoded peer file (see ``LoadedBlogCheck``); returns the number of posts.
func verifyLoadedBlog<File: PeerBlogFile>(_ file: File, _ data: BlogData) throws -> Int {
    if let file = file as? RecordFile {
        _ = try expect(file.blog.authorIds.count, data.authorCount, "authors of the decoded blog root")
    }
    return try LoadedBlogCheck(
        authorCount: file.authors.count, postCount: file.posts.count, postsHeld: file.authors.reduce(0) { $0 + $1.postIds.count },
        author: { (file.authors[$0].name, file.authors[$0].email, file.authors[$0].age) },
        post: { (file.posts[$0].title, file.posts[$0].body, file.posts[$0].publishedAt, file.posts[$0].tags) },
        linked: { i in
            let author = file.authors[data.author(ofPost: i)]
            return file.posts[i].authorId == author.id && author.postIds[i / data.authorCount] == file.posts[i].id
        }
    ).verify(data, "decoded")
}
