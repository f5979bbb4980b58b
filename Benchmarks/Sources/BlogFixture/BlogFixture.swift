import Foundation
import ModelKit

// The blog that the benchmark suite (ModelKitBenchmarks) and the profiling executable
// (ModelKitProfile) both build: one module, so that a profile of ModelKitProfile is a profile of
// the graph the suite times. The peers' plain Swift equivalents stay in the suite.

// MARK: - ModelKit models

public final class BenchAuthor: ModelObject<BenchAuthor.Properties> {
    public struct Properties: ModelProperties {
        public var name = ""
        public var email = ""
        public var age = 0
        public var posts = ModelArray<BenchPost>()

        public init() {}
    }
    override public class var modelName: String { "Author" }
}

public final class BenchPost: ModelObject<BenchPost.Properties> {
    public struct Properties: ModelProperties {
        public var title = ""
        public var body = ""
        public var publishedAt = Date()
        public var author = ModelRef<BenchAuthor>()
        public var tags: [String] = []

        public init() {}
    }
    override public class var modelName: String { "Post" }
}

/// The root that makes the whole graph reachable for serialization: it holds every author, and
/// the authors hold every post.
public final class BenchBlog: ModelObject<BenchBlog.Properties> {
    public struct Properties: ModelProperties {
        public var authors = ModelArray<BenchAuthor>()

        public init() {}
    }
    override public class var modelName: String { "Blog" }
}

// MARK: - The content

/// The deterministic content of a blog of `n` posts and `n / 10` authors, built once per size
/// and shared by every subject, so that the timed regions don't format strings.
///
/// Post `i` belongs to author `i % authorCount`, so every author has about ten posts.
public struct BlogData: Sendable {
    public let n: Int
    public let authorCount: Int
    public let authorNames: [String]
    public let authorEmails: [String]
    public let authorAges: [Int]
    public let titles: [String]
    public let bodies: [String]
    public let dates: [Date]
    public let tags: [[String]]

    public init(posts n: Int) {
        precondition(n >= 10, "a blog needs at least 10 posts")
        self.n = n
        authorCount = n / 10
        authorNames = (0..<authorCount).map { "Author \($0)" }
        authorEmails = (0..<authorCount).map { "author\($0)@example.com" }
        authorAges = (0..<authorCount).map { 20 + $0 % 50 }
        titles = (0..<n).map { "Post \($0)" }
        bodies = (0..<n).map { "This is the body of post \($0). It is about object graphs, Swift and persistence." }
        dates = (0..<n).map { Date(timeIntervalSinceReferenceDate: Double($0) * 60.5) }
        tags = (0..<n).map { ["swift", "tag\($0 % 50)", "t\($0 % 7)"] }
    }

    /// The author of post `i`.
    public func author(ofPost i: Int) -> Int { i % authorCount }

    /// The posts of author `a`, in order.
    public func posts(ofAuthor a: Int) -> StrideTo<Int> { stride(from: a, to: n, by: authorCount) }

    /// The object id given to post `i` by the object-id lookups.
    public static func objectId(ofPost i: Int) -> String { "p\(i)" }
}

// MARK: - Building the graph

/// The models of a blog built in a ModelKit context.
public struct ModelKitGraph {
    public var authors: [BenchAuthor]
    public var posts: [BenchPost]
}

/// Creates the whole blog in `context`: authors, posts, each post's author and each author's posts.
/// This is the timed body of the "create" benchmark.
///
/// - Parameter objectIds: Also gives post `i` the object id `p<i>` (for the object-id lookups).
public func buildModelKitGraph(_ data: BlogData, in context: ModelContext, objectIds: Bool = false) -> ModelKitGraph {
    var authors: [BenchAuthor] = []
    authors.reserveCapacity(data.authorCount)
    for a in 0..<data.authorCount {
        let author = BenchAuthor.instance(in: context)
        author.name = data.authorNames[a]
        author.email = data.authorEmails[a]
        author.age = data.authorAges[a]
        authors.append(author)
    }
    var posts: [BenchPost] = []
    posts.reserveCapacity(data.n)
    for i in 0..<data.n {
        let post = BenchPost.instance(in: context)
        if objectIds { post.objectId = BlogData.objectId(ofPost: i) }
        post.title = data.titles[i]
        post.body = data.bodies[i]
        post.publishedAt = data.dates[i]
        post.tags = data.tags[i]
        let author = authors[data.author(ofPost: i)]
        post.author = author
        author.posts.append(post)
        posts.append(post)
    }
    return ModelKitGraph(authors: authors, posts: posts)
}

/// The blog in `context` under a ``BenchBlog`` root holding every author, for serialization.
public func buildModelKitBlog(_ data: BlogData, in context: ModelContext) -> BenchBlog {
    let graph = buildModelKitGraph(data, in: context)
    let blog = BenchBlog.instance(in: context)
    blog.authors = ModelArray(graph.authors)
    return blog
}
