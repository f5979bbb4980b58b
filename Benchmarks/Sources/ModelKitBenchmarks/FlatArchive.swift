import Foundation

// The blog for NSKeyedArchiver without arrays (issue #13): the same cyclic graph as in
// PeerArchives.swift, but every collection is written one object per key ("0", "1", … under a
// count) instead of as an NSArray.
//
// This is the form that measures the archiver rather than a weakness of it: on Linux,
// swift-corelibs-foundation's archiver finds the objects it has already written by `isEqual`, and
// an NSArray's hash is its count, so every author's ten-post array and every post's three-tag
// array land in one hash bucket and archiving grows quadratically (see `Benchmarks.slowPeerLimit`).
// Strings, dates and these objects hash well. Posts archive their author (a reference to an object
// already written), and an author restores its posts' back references after decoding them, as in
// PeerArchives.swift (Linux's unarchiver cannot decode a cycle).

final class FlatArchivedBlog: NSObject, NSSecureCoding {
    static var supportsSecureCoding: Bool { true }

    let authors: [FlatArchivedAuthor]

    init(authors: [FlatArchivedAuthor]) {
        self.authors = authors
    }

    func encode(with coder: NSCoder) {
        encodeEach(authors, with: coder)
    }

    init?(coder: NSCoder) {
        guard let authors = decodeEach(FlatArchivedAuthor.self, with: coder) else { return nil }
        self.authors = authors
    }
}

final class FlatArchivedAuthor: NSObject, NSSecureCoding {
    static var supportsSecureCoding: Bool { true }

    let name: String
    let email: String
    let age: Int
    var posts: [FlatArchivedPost] = []

    init(name: String, email: String, age: Int) {
        self.name = name
        self.email = email
        self.age = age
    }

    func encode(with coder: NSCoder) {
        coder.encode(name, forKey: "name")
        coder.encode(email, forKey: "email")
        coder.encode(age, forKey: "age")
        encodeEach(posts, with: coder)
    }

    init?(coder: NSCoder) {
        guard let name = coder.decodeObject(of: NSString.self, forKey: "name"),
            let email = coder.decodeObject(of: NSString.self, forKey: "email"),
            let posts = decodeEach(FlatArchivedPost.self, with: coder)
        else { return nil }
        self.name = name as String
        self.email = email as String
        age = coder.decodeInteger(forKey: "age")
        self.posts = posts
        super.init()
        for post in posts { post.author = self }
    }
}

final class FlatArchivedPost: NSObject, NSSecureCoding {
    static var supportsSecureCoding: Bool { true }

    let title: String
    let body: String
    let publishedAt: Date
    let tags: [String]
    /// Weak, as Cocoa code holds a parent: the blog owns the authors and the authors own the posts.
    weak var author: FlatArchivedAuthor?

    init(title: String, body: String, publishedAt: Date, tags: [String]) {
        self.title = title
        self.body = body
        self.publishedAt = publishedAt
        self.tags = tags
    }

    func encode(with coder: NSCoder) {
        coder.encode(title, forKey: "title")
        coder.encode(body, forKey: "body")
        coder.encode(publishedAt, forKey: "publishedAt")
        encodeEach(tags.map { $0 as NSString }, with: coder)
        coder.encode(author, forKey: "author")
    }

    /// Leaves `author` to the author that decodes this post.
    init?(coder: NSCoder) {
        guard let title = coder.decodeObject(of: NSString.self, forKey: "title"),
            let body = coder.decodeObject(of: NSString.self, forKey: "body"),
            let publishedAt = coder.decodeObject(of: NSDate.self, forKey: "publishedAt"),
            let tags = decodeEach(NSString.self, with: coder)
        else { return nil }
        self.title = title as String
        self.body = body as String
        self.publishedAt = publishedAt as Date
        self.tags = tags.map { $0 as String }
    }
}

/// Writes `objects` one per key: their count under "count", object `i` under "i".
private func encodeEach(_ objects: [NSObject], with coder: NSCoder) {
    coder.encode(objects.count, forKey: "count")
    for (index, object) in objects.enumerated() {
        coder.encode(object, forKey: String(index))
    }
}

/// Reads what ``encodeEach(_:with:)`` wrote, or `nil` if anything is missing or of another class.
private func decodeEach<Object: NSObject & NSSecureCoding>(_ type: Object.Type, with coder: NSCoder) -> [Object]? {
    let count = coder.decodeInteger(forKey: "count")
    guard count >= 0 else { return nil }
    var objects: [Object] = []
    objects.reserveCapacity(count)
    for index in 0..<count {
        guard let object = coder.decodeObject(of: type, forKey: String(index)) else { return nil }
        objects.append(object)
    }
    return objects
}

/// The blog as array-free archivable objects: the same content as every other subject's.
func buildFlatArchivedBlog(_ data: BlogData) -> FlatArchivedBlog {
    let authors = (0..<data.authorCount).map { a in
        FlatArchivedAuthor(name: data.authorNames[a], email: data.authorEmails[a], age: data.authorAges[a])
    }
    for i in 0..<data.n {
        let post = FlatArchivedPost(title: data.titles[i], body: data.bodies[i], publishedAt: data.dates[i], tags: data.tags[i])
        let author = authors[data.author(ofPost: i)]
        post.author = author
        author.posts.append(post)
    }
    return FlatArchivedBlog(authors: authors)
}

/// Archives `root` with NSKeyedArchiver (a binary property list) to `url`: the archive in memory,
/// then one atomic write.
func writeKeyedArchive(_ root: NSObject & NSSecureCoding, to url: URL) throws {
    try NSKeyedArchiver.archivedData(withRootObject: root, requiringSecureCoding: true).write(to: url, options: .atomic)
}

/// Reads the root of class `Root` of the archive that ``writeKeyedArchive(_:to:)`` wrote.
func loadKeyedArchive<Root: NSObject & NSSecureCoding>(_ root: Root.Type, from url: URL) throws -> Root {
    let archive = try Data(contentsOf: url)
    guard let blog = try NSKeyedUnarchiver.unarchivedObject(ofClass: root, from: archive) else {
        throw VerificationError(description: "NSKeyedUnarchiver found no \(root) in \(url.lastPathComponent)")
    }
    return blog
}

/// The unarchived blog, with arrays or without: what its check reads.
protocol UnarchivedBlog {
    associatedtype Author: UnarchivedAuthor
    var authors: [Author] { get }
}

protocol UnarchivedAuthor: AnyObject {
    associatedtype Post: UnarchivedPost where Post.Author == Self
    var name: String { get }
    var email: String { get }
    var age: Int { get }
    var posts: [Post] { get }
}

protocol UnarchivedPost: AnyObject {
    associatedtype Author: AnyObject
    var title: String { get }
    var body: String { get }
    var publishedAt: Date { get }
    var tags: [String] { get }
    var author: Author? { get }
}

extension ArchivedBlog: UnarchivedBlog {}
extension ArchivedAuthor: UnarchivedAuthor {}
extension ArchivedPost: UnarchivedPost {}
extension FlatArchivedBlog: UnarchivedBlog {}
extension FlatArchivedAuthor: UnarchivedAuthor {}
extension FlatArchivedPost: UnarchivedPost {}

/// Checks an unarchived blog (see ``LoadedBlogCheck``); returns the number of posts.
func verifyLoadedBlog<Blog: UnarchivedBlog>(_ blog: Blog, _ data: BlogData) throws -> Int {
    let held = blog.authors.reduce(0) { $0 + $1.posts.count }
    return try LoadedBlogCheck(
        authorCount: blog.authors.count, postCount: held, postsHeld: held,
        author: { (blog.authors[$0].name, blog.authors[$0].email, blog.authors[$0].age) },
        post: { i in
            let post = blog.authors[data.author(ofPost: i)].posts[i / data.authorCount]
            return (post.title, post.body, post.publishedAt, post.tags)
        },
        linked: { i in
            let author = blog.authors[data.author(ofPost: i)]
            return author.posts[i / data.authorCount].author === author
        }
    ).verify(data, "unarchived")
}
