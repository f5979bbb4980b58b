import Foundation
import ModelKit

// The authors the query benchmarks scan, in ModelKit and as plain classes: the same data in the
// same graph shape. Each author has one post that references it and that it holds, so that every
// queried author is referenced, as authors are in the blog (one post each rather than the blog's
// ten keeps a million authors within memory; one reference is what changes how a model is held).

/// An author for the query benchmarks.
final class QueryAuthor: ModelObject<QueryAuthor.Properties> {
    struct Properties: ModelProperties {
        var name = ""
        var age = 0
        var city = ""
        var score = 0.0
        var tags: [String] = []
        var posts = ModelArray<QueryPost>()
    }
}

/// The post that references a ``QueryAuthor``.
final class QueryPost: ModelObject<QueryPost.Properties> {
    struct Properties: ModelProperties {
        var title = ""
        var author = ModelRef<QueryAuthor>()
    }
}

/// The peer of ``QueryAuthor``: a plain final class with the same stored data.
final class PlainQueryAuthor {
    var name = ""
    var age = 0
    var city = ""
    var score = 0.0
    var tags: [String] = []
    var posts: [PlainQueryPost] = []
}

/// The peer of ``QueryPost``. Its author is held strongly, as plain code would; the cycle is
/// broken when the fixture goes away.
final class PlainQueryPost {
    var title = ""
    var author: PlainQueryAuthor?
}

/// The data of query author `i` of `n`: age `i * 7919 % 10_000` (a permutation of 0..<10,000 when
/// n is a multiple), a name starting with one of 100 two-letter prefixes, one of 10 cities and one
/// tag of 50.
struct QueryAuthorData {
    static let cities = ["Paris", "Lyon", "Berlin", "Zürich", "Oslo", "Rome", "Porto", "Gent", "Graz", "Lund"]

    let name: String
    let age: Int
    let city: String
    let score: Double
    let tags: [String]
    let title: String

    init(_ i: Int) {
        age = i &* 7919 % 10_000
        name = QueryFixture.prefix(i % 100) + "-\(i)"
        city = Self.cities[i % 10]
        score = Double(i % 1000) / 10
        tags = ["t\(i % 50)"]
        title = "Post \(i)"
    }
}

/// The authors of one size and their posts, in a context.
struct QueryFixture {
    let context = ModelContext()
    let authors: [QueryAuthor]
    let posts: [QueryPost]

    /// With `indexed`, the context indexes age, name and city.
    init(n: Int, indexed: Bool = false) {
        var authors: [QueryAuthor] = []
        var posts: [QueryPost] = []
        authors.reserveCapacity(n)
        posts.reserveCapacity(n)
        for i in 0..<n {
            let data = QueryAuthorData(i)
            let author = QueryAuthor.instance(in: context)
            author.age = data.age
            author.name = data.name
            author.city = data.city
            author.score = data.score
            author.tags = data.tags
            let post = QueryPost.instance(in: context)
            post.title = data.title
            post.author = author
            author.posts.append(post)
            authors.append(author)
            posts.append(post)
        }
        self.authors = authors
        self.posts = posts
        if indexed {
            context.addIndex(on: \.age, of: QueryAuthor.self)
            context.addIndex(on: \.name, of: QueryAuthor.self)
            context.addIndex(on: \.city, of: QueryAuthor.self, kind: .hash)
        }
    }

    /// A two-letter prefix per number below 100: "aa", "ab", … "ao", "ba", …: 15 second letters,
    /// so that each of the first letters "a" to "f" starts 15 of the 100 prefixes.
    static func prefix(_ k: Int) -> String {
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        return String(letters[k / 15]) + String(letters[k % 15])
    }
}

/// The same authors and posts as plain classes.
final class PlainQueryFixture {
    let authors: [PlainQueryAuthor]

    init(n: Int) {
        var authors: [PlainQueryAuthor] = []
        authors.reserveCapacity(n)
        for i in 0..<n {
            let data = QueryAuthorData(i)
            let author = PlainQueryAuthor()
            author.age = data.age
            author.name = data.name
            author.city = data.city
            author.score = data.score
            author.tags = data.tags
            let post = PlainQueryPost()
            post.title = data.title
            post.author = author
            author.posts.append(post)
            authors.append(author)
        }
        self.authors = authors
    }

    deinit {
        for author in authors { author.posts = [] }
    }
}
