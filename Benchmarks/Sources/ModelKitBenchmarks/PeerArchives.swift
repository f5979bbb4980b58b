import BlogFixture
import Foundation

// The blog as NSObject subclasses adopting NSSecureCoding, for NSKeyedArchiver and
// NSKeyedUnarchiver: the same cyclic graph as ModelKit's (each post references its author, each
// author holds its posts), archived as a whole from one root, in one of two layouts:
//
// - Array-free (the peer "NSKeyedArchiver", issue #13): every collection is written one object
//   per key, its count under "count" and element `i` under "i".
// - With arrays ("NSKeyedArchiver (arrays)"): the blog's authors, an author's posts and a post's
//   tags as NSArrays. On Linux, swift-corelibs-foundation's archiver finds the objects it has
//   already written by `isEqual`, and an NSArray's hash is its count, so every author's ten-post
//   array and every post's three-tag array land in one hash bucket and archiving grows
//   quadratically (see `Benchmarks.slowPeerLimit`): that form measures the bug more than the
//   archiver. Strings, dates and these objects hash well.
//
// On Linux, swift-corelibs-foundation cannot decode a cycle: an object is only registered with
// the unarchiver once its `init(coder:)` has returned, so a post decoding its author while that
// author is still decoding its posts recurses until the stack overflows. Posts therefore still
// archive their author (the archiver walks the cycle and writes the back reference), but an
// author restores its posts' back references after decoding them, instead of each post decoding
// its author. The loaded graph is the same cyclic graph.

/// How an archived object writes its collections.
enum ArchiveLayout {
    case arrayFree
    case arrays
}

final class ArchivedBlog: NSObject, NSSecureCoding {
    static var supportsSecureCoding: Bool { true }

    let layout: ArchiveLayout
    let authors: [ArchivedAuthor]

    init(authors: [ArchivedAuthor], layout: ArchiveLayout) {
        self.authors = authors
        self.layout = layout
    }

    func encode(with coder: NSCoder) {
        encodeCollection(authors, forKey: "authors", layout: layout, with: coder)
    }

    init?(coder: NSCoder) {
        layout = decodedLayout(coder)
        guard let authors = decodeCollection(ArchivedAuthor.self, forKey: "authors", layout: layout, with: coder) else { return nil }
        self.authors = authors
    }
}

final class ArchivedAuthor: NSObject, NSSecureCoding {
    static var supportsSecureCoding: Bool { true }

    let layout: ArchiveLayout
    let name: String
    let email: String
    let age: Int
    var posts: [ArchivedPost] = []

    init(name: String, email: String, age: Int, layout: ArchiveLayout) {
        self.name = name
        self.email = email
        self.age = age
        self.layout = layout
    }

    func encode(with coder: NSCoder) {
        coder.encode(name, forKey: "name")
        coder.encode(email, forKey: "email")
        coder.encode(age, forKey: "age")
        encodeCollection(posts, forKey: "posts", layout: layout, with: coder)
    }

    init?(coder: NSCoder) {
        layout = decodedLayout(coder)
        guard let name = coder.decodeObject(of: NSString.self, forKey: "name"),
            let email = coder.decodeObject(of: NSString.self, forKey: "email"),
            let posts = decodeCollection(ArchivedPost.self, forKey: "posts", layout: layout, with: coder)
        else { return nil }
        self.name = name as String
        self.email = email as String
        age = coder.decodeInteger(forKey: "age")
        self.posts = posts
        super.init()
        for post in posts { post.author = self }
    }
}

final class ArchivedPost: NSObject, NSSecureCoding {
    static var supportsSecureCoding: Bool { true }

    let layout: ArchiveLayout
    let title: String
    let body: String
    let publishedAt: Date
    let tags: [String]
    /// Weak, as Cocoa code holds a parent: the blog owns the authors and the authors own the posts.
    weak var author: ArchivedAuthor?

    init(title: String, body: String, publishedAt: Date, tags: [String], layout: ArchiveLayout) {
        self.title = title
        self.body = body
        self.publishedAt = publishedAt
        self.tags = tags
        self.layout = layout
    }

    func encode(with coder: NSCoder) {
        coder.encode(title, forKey: "title")
        coder.encode(body, forKey: "body")
        coder.encode(publishedAt, forKey: "publishedAt")
        encodeCollection(tags.map { $0 as NSString }, forKey: "tags", layout: layout, with: coder)
        coder.encode(author, forKey: "author")
    }

    /// Leaves `author` to the author that decodes this post (see the top of the file).
    init?(coder: NSCoder) {
        layout = decodedLayout(coder)
        guard let title = coder.decodeObject(of: NSString.self, forKey: "title"),
            let body = coder.decodeObject(of: NSString.self, forKey: "body"),
            let publishedAt = coder.decodeObject(of: NSDate.self, forKey: "publishedAt"),
            let tags = decodeCollection(NSString.self, forKey: "tags", layout: layout, with: coder)
        else { return nil }
        self.title = title as String
        self.body = body as String
        self.publishedAt = publishedAt as Date
        self.tags = tags.map { $0 as String }
    }
}

/// Writes `objects` under `key` in `layout`: an NSArray, or one object per key (the count under
/// "count", object `i` under "i"; each archived object has one collection).
private func encodeCollection(_ objects: [NSObject], forKey key: String, layout: ArchiveLayout, with coder: NSCoder) {
    switch layout {
    case .arrays:
        coder.encode(objects, forKey: key)
    case .arrayFree:
        coder.encode(objects.count, forKey: "count")
        for (index, object) in objects.enumerated() {
            coder.encode(object, forKey: String(index))
        }
    }
}

/// The layout of the object being decoded: array-free objects have a "count".
private func decodedLayout(_ coder: NSCoder) -> ArchiveLayout {
    coder.containsValue(forKey: "count") ? .arrayFree : .arrays
}

/// Reads what ``encodeCollection(_:forKey:layout:with:)`` wrote, or `nil` if anything is missing
/// or of another class.
private func decodeCollection<Object: NSObject & NSSecureCoding>(
    _ type: Object.Type, forKey key: String, layout: ArchiveLayout, with coder: NSCoder
) -> [Object]? {
    switch layout {
    case .arrays:
        return coder.decodeObject(of: [NSArray.self, type], forKey: key) as? [Object]
    case .arrayFree:
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
}

/// The blog as archivable objects in `layout`: the same content as every other subject's.
func buildArchivedBlog(_ data: BlogData, layout: ArchiveLayout) -> ArchivedBlog {
    let authors = (0..<data.authorCount).map { a in
        ArchivedAuthor(name: data.authorNames[a], email: data.authorEmails[a], age: data.authorAges[a], layout: layout)
    }
    for i in 0..<data.n {
        let post = ArchivedPost(
            title: data.titles[i], body: data.bodies[i], publishedAt: data.dates[i], tags: data.tags[i], layout: layout)
        let author = authors[data.author(ofPost: i)]
        post.author = author
        author.posts.append(post)
    }
    return ArchivedBlog(authors: authors, layout: layout)
}

/// Archives `blog` with NSKeyedArchiver (a binary property list) to `url`: the archive in memory,
/// then one atomic write.
func writeKeyedArchive(_ blog: ArchivedBlog, to url: URL) throws {
    try NSKeyedArchiver.archivedData(withRootObject: blog, requiringSecureCoding: true).write(to: url, options: .atomic)
}

/// Reads the blog that ``writeKeyedArchive(_:to:)`` wrote.
func loadKeyedArchive(from url: URL) throws -> ArchivedBlog {
    let archive = try Data(contentsOf: url)
    guard let blog = try NSKeyedUnarchiver.unarchivedObject(ofClass: ArchivedBlog.self, from: archive) else {
        throw VerificationError(description: "NSKeyedUnarchiver found no blog in \(url.lastPathComponent)")
    }
    return blog
}

/// Checks an unarchived blog (see ``LoadedBlogCheck``); returns the number of posts.
func verifyLoadedBlog(_ blog: ArchivedBlog, _ data: BlogData, layout: ArchiveLayout) throws -> Int {
    let held = blog.authors.reduce(0) { $0 + $1.posts.count }
    try check(blog.layout == layout, "the layout of the archive")
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
