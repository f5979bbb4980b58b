import BlogFixture
import Foundation
import GRDB

// The peer of the store benchmarks (issue #31): the blog in SQLite through GRDB 7, in WAL mode with
// `synchronous = FULL`, so that a commit is durable when it returns, as a ModelStore save is with
// `.full` durability. One table per kind of model and one for the posts' tags (the blog's only
// to-many of values), with the fields the blog's models have; references are integer keys.
//
// Its saves are what a GRDB app does after changing some posts: one transaction, one reused prepared
// statement. Its opens are what an app with the same graph in memory does at launch: open the
// database and read every row into plain classes shaped like the ModelKit graph (authors holding
// their posts, posts referencing their author, tags in their order).

/// The blog's database, opened by one `DatabaseQueue` (a single connection, as the store's one
/// writer).
final class GRDBBlog {
    let url: URL
    let queue: DatabaseQueue

    /// The SQL of the saves, prepared once per connection (GRDB caches the statement).
    static let updatePost = "UPDATE post SET title = ?, body = ? WHERE id = ?"

    /// The default automatic checkpoint: SQLite checkpoints after a commit once the WAL holds this
    /// many pages.
    static let defaultAutocheckpointPages = 1000

    /// Opens (or creates) the database at `url` in WAL mode with `synchronous = FULL`.
    init(url: URL) throws {
        self.url = url
        var configuration = Configuration()
        configuration.journalMode = .wal
        queue = try DatabaseQueue(path: url.path, configuration: configuration)
        // GRDB's WAL set-up chooses `synchronous = NORMAL` (no fsync per commit); the benchmarks
        // compare equal durability, so it is set back to FULL for this connection.
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            let level = try Int.fetchOne(db, sql: "PRAGMA synchronous")
            guard level == 2 else { throw VerificationError(description: "SQLite synchronous is \(level ?? -1), not FULL (2)") }
        }
    }

    /// Creates the tables and inserts the whole blog in one transaction, then checkpoints the WAL
    /// into the database file (untimed: the fixture).
    static func create(_ data: BlogData, at url: URL) throws -> GRDBBlog {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
        let blog = try GRDBBlog(url: url)
        try blog.queue.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE author (
                        id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL, age INTEGER NOT NULL);
                    CREATE TABLE post (
                        id INTEGER PRIMARY KEY, authorId INTEGER NOT NULL REFERENCES author(id),
                        title TEXT NOT NULL, body TEXT NOT NULL, publishedAt REAL NOT NULL);
                    CREATE INDEX post_authorId ON post(authorId);
                    CREATE TABLE postTag (
                        postId INTEGER NOT NULL REFERENCES post(id), position INTEGER NOT NULL, name TEXT NOT NULL,
                        PRIMARY KEY (postId, position)) WITHOUT ROWID;
                    """)
            let author = try db.makeStatement(sql: "INSERT INTO author (id, name, email, age) VALUES (?, ?, ?, ?)")
            for a in 0..<data.authorCount {
                try author.execute(arguments: [a + 1, data.authorNames[a], data.authorEmails[a], data.authorAges[a]])
            }
            let post = try db.makeStatement(
                sql: "INSERT INTO post (id, authorId, title, body, publishedAt) VALUES (?, ?, ?, ?, ?)")
            let tag = try db.makeStatement(sql: "INSERT INTO postTag (postId, position, name) VALUES (?, ?, ?)")
            for i in 0..<data.n {
                try post.execute(arguments: [
                    i + 1, data.author(ofPost: i) + 1, data.titles[i], data.bodies[i],
                    data.dates[i].timeIntervalSinceReferenceDate,
                ])
                for (position, name) in data.tags[i].enumerated() {
                    try tag.execute(arguments: [i + 1, position, name])
                }
            }
        }
        try blog.checkpoint()
        return blog
    }

    /// Sets the posts' titles and bodies in one transaction with the cached prepared statement: the
    /// timed body of the peer's saves. `edits` holds (post index, title, body).
    ///
    /// With the default automatic checkpoint, a commit that leaves more than 1,000 pages in the WAL
    /// also checkpoints it, as an app's commit would.
    func save(_ edits: [PostEdit]) throws {
        try queue.write { db in
            let statement = try db.cachedStatement(sql: Self.updatePost)
            for edit in edits {
                try statement.execute(arguments: [edit.title, edit.body, edit.post + 1])
            }
        }
    }

    /// Turns SQLite's automatic checkpoint on (`pages`) or off (0), for this connection.
    func setAutocheckpoint(pages: Int) throws {
        try queue.writeWithoutTransaction { db in
            _ = try Int.fetchOne(db, sql: "PRAGMA wal_autocheckpoint = \(pages)")
        }
    }

    /// Copies the WAL into the database file and truncates it to zero bytes (the peer's
    /// compaction: what folds SQLite's log into its base).
    func checkpoint() throws {
        try queue.writeWithoutTransaction { db in
            _ = try db.checkpoint(.truncate)
        }
    }

    /// Rebuilds the whole database file (also timed in `store-compact`: SQLite's full rewrite).
    func vacuum() throws {
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "VACUUM")
        }
    }

    /// The bytes of the database file and of its WAL.
    var fileSizes: (database: Int, wal: Int) {
        (fileSize(url), fileSize(URL(fileURLWithPath: url.path + "-wal")))
    }

    /// Opens the database at `url` and reads every row into plain classes: the timed body of the
    /// peer's opens. The connection is closed when the returned value is released.
    static func open(_ url: URL) throws -> (blog: GRDBBlog, graph: PlainObjectGraph<Int>) {
        let blog = try GRDBBlog(url: url)
        let graph = try blog.queue.read { db in try readGraph(db) }
        return (blog, graph)
    }

    /// Every author, post and tag as plain objects, references resolved through dictionaries by
    /// id (an app cannot assume its keys are dense).
    private static func readGraph(_ db: Database) throws -> PlainObjectGraph<Int> {
        let graph = PlainObjectGraph<Int>()
        var authorsById: [Int: PlainAuthorObject<Int>] = [:]
        let authors = try Row.fetchCursor(db, sql: "SELECT id, name, email, age FROM author ORDER BY id")
        while let row = try authors.next() {
            let author = PlainAuthorObject<Int>(id: row[0])
            author.name = row[1]
            author.email = row[2]
            author.age = row[3]
            authorsById[author.id] = author
            graph.authors.append(author)
        }
        var postsById: [Int: PlainPostObject<Int>] = [:]
        postsById.reserveCapacity(graph.authors.count * 10)
        let posts = try Row.fetchCursor(db, sql: "SELECT id, authorId, title, body, publishedAt FROM post ORDER BY id")
        while let row = try posts.next() {
            let post = PlainPostObject<Int>(id: row[0])
            let author = authorsById[row[1] as Int]
            post.author = author
            post.title = row[2]
            post.body = row[3]
            post.publishedAt = Date(timeIntervalSinceReferenceDate: row[4])
            author?.posts.append(post)
            postsById[post.id] = post
            graph.posts.append(post)
        }
        let tags = try Row.fetchCursor(db, sql: "SELECT postId, name FROM postTag ORDER BY postId, position")
        while let row = try tags.next() {
            postsById[row[0] as Int]?.tags.append(row[1])
        }
        return graph
    }
}

/// A change of one post's title and body, made before a timed save.
struct PostEdit {
    let post: Int
    let title: String
    let body: String
}

/// Checks a graph read by ``GRDBBlog/open(_:)``: counts, every author's posts, and the spot-checked
/// posts' content and author (both ways). Returns the number of objects.
func verifyLoadedBlog(_ graph: PlainObjectGraph<Int>, _ data: BlogData) throws -> Int {
    _ = try expect(graph.authors.count, data.authorCount, "authors read")
    _ = try expect(graph.posts.count, data.n, "posts read")
    _ = try expect(graph.authors.reduce(0) { $0 + $1.posts.count }, data.n, "posts held by the authors read")
    for i in data.spotCheckedPosts {
        let author = graph.authors[data.author(ofPost: i)]
        let post = graph.posts[i]
        try check(
            post.title == data.titles[i] && post.body == data.bodies[i] && post.publishedAt == data.dates[i]
                && post.tags == data.tags[i],
            "post \(i)")
        try check(post.author === author && author.posts[i / data.authorCount] === post, "the author of post \(i)")
    }
    return graph.authors.count + graph.posts.count
}
