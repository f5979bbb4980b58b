import Foundation

// The blog as NSObject subclasses adopting NSSecureCoding, for NSKeyedArchiver and
// NSKeyedUnarchiver: the same cyclic graph as ModelKit's (each post references its author, each
// author holds its posts), archived as a whole from one root.
//
// On Linux, swift-corelibs-foundation cannot decode a cycle: an object is only registered with
// the unarchiver once its `init(coder:)` has returned, so a post decoding its author while that
// author is still decoding its posts recurses until the stack overflows. Posts therefore still
// archive their author (the archiver walks the cycle and writes the back reference), but an
// author restores its posts' back references after decoding them, instead of each post decoding
// its author. The loaded graph is the same cyclic graph.

final class ArchivedBlog: NSObject, NSSecureCoding {
    static var supportsSecureCoding: Bool { true }

    let authors: [ArchivedAuthor]

    init(authors: [ArchivedAuthor]) {
        self.authors = authors
    }

    func encode(with coder: NSCoder) {
        coder.encode(authors, forKey: "authors")
    }

    init?(coder: NSCoder) {
        guard let authors = coder.decodeObject(of: [NSArray.self, ArchivedAuthor.self], forKey: "authors") as? [ArchivedAuthor]
        else { return nil }
        self.authors = authors
    }
}

final class ArchivedAuthor: NSObject, NSSecureCoding {
    static var supportsSecureCoding: Bool { true }

    let name: String
    let email: String
    let age: Int
    var posts: [ArchivedPost] = []

    init(name: String, email: String, age: Int) {
        self.name = name
        self.email = email
        self.age = age
    }

    func encode(with coder: NSCoder) {
        coder.encode(name, forKey: "name")
        coder.encode(email, forKey: "email")
        coder.encode(age, forKey: "age")
        coder.encode(posts, forKey: "posts")
    }

    init?(coder: NSCoder) {
        guard let name = coder.decodeObject(of: NSString.self, forKey: "name"),
            let email = coder.decodeObject(of: NSString.self, forKey: "email"),
            let posts = coder.decodeObject(of: [NSArray.self, ArchivedPost.self], forKey: "posts") as? [ArchivedPost]
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

    let title: String
    let body: String
    let publishedAt: Date
    let tags: [String]
    /// Weak, as Cocoa code holds a parent: the blog owns the authors and the authors own the posts.
    weak var author: ArchivedAuthor?

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
        coder.encode(tags, forKey: "tags")
        coder.encode(author, forKey: "author")
    }

    /// Leaves `author` to the author that decodes this post (see the top of the file).
    init?(coder: NSCoder) {
        guard let title = coder.decodeObject(of: NSString.self, forKey: "title"),
            let body = coder.decodeObject(of: NSString.self, forKey: "body"),
            let publishedAt = coder.decodeObject(of: NSDate.self, forKey: "publishedAt"),
            let tags = coder.decodeObject(of: [NSArray.self, NSString.self], forKey: "tags") as? [String]
        else { return nil }
        self.title = title as String
        self.body = body as String
        self.publishedAt = publishedAt as Date
        self.tags = tags
    }
}

/// The blog as archivable objects: the same content as every other subject's.
func buildArchivedBlog(_ data: BlogData) -> ArchivedBlog {
    let authors = (0..<data.authorCount).map { a in
        ArchivedAuthor(name: data.authorNames[a], email: data.authorEmails[a], age: data.authorAges[a])
    }
    for i in 0..<data.n {
        let post = ArchivedPost(title: data.titles[i], body: data.bodies[i], publishedAt: data.dates[i], tags: data.tags[i])
        let author = authors[data.author(ofPost: i)]
        post.author = author
        author.posts.append(post)
    }
    return ArchivedBlog(authors: authors)
}
