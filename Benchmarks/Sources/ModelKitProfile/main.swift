import Foundation
import ModelKit

// One ModelKit operation on the suite's blog, for a profiler: no peers, no timing loop, no
// dispatch main (valgrind 3.19 stops with an internal error on the suite's binary, in
// libdispatch's signal thread). The models and their contents are those of the suite's
// `BlogData` and `Fixtures` (n posts, n / 10 authors, each post referencing its author and each
// author holding its posts, under one blog).
//
//     swift build -c release --product ModelKitProfile
//     objcopy --strip-debug .build/release/ModelKitProfile /tmp/profile   # valgrind cannot read Swift's DWARF here
//     valgrind --tool=callgrind --toggle-collect='*jsonData7options*' /tmp/profile jsonData 10000
//     valgrind --tool=callgrind --toggle-collect='*ContextC4data6format*' /tmp/profile context-json 10000
//
// Prints the output's size, so that the two can be compared.

final class ProfileAuthor: ModelObject<ProfileAuthor.Properties> {
    struct Properties: ModelProperties {
        var name = ""
        var email = ""
        var age = 0
        var posts = ModelArray<ProfilePost>()
    }
    override class var modelName: String { "Author" }
}

final class ProfilePost: ModelObject<ProfilePost.Properties> {
    struct Properties: ModelProperties {
        var title = ""
        var body = ""
        var publishedAt = Date()
        var author = ModelRef<ProfileAuthor>()
        var tags: [String] = []
    }
    override class var modelName: String { "Post" }
}

final class ProfileBlog: ModelObject<ProfileBlog.Properties> {
    struct Properties: ModelProperties {
        var authors = ModelArray<ProfileAuthor>()
    }
    override class var modelName: String { "Blog" }
}

let arguments = CommandLine.arguments
guard arguments.count >= 3, let posts = Int(arguments[2]), posts >= 10 else {
    FileHandle.standardError.write(Data("usage: ModelKitProfile <jsonData|context-json|context-bplist> POSTS [REPEATS]\n".utf8))
    exit(2)
}
let repeats = arguments.count > 3 ? Int(arguments[3]) ?? 1 : 1
try ModelRegistry.register(ProfileAuthor.self, ProfilePost.self, ProfileBlog.self)
let context = ModelContext()
let authorCount = posts / 10
var authors: [ProfileAuthor] = []
for a in 0..<authorCount {
    let author = ProfileAuthor.instance(in: context)
    author.name = "Author \(a)"
    author.email = "author\(a)@example.com"
    author.age = 20 + a % 50
    authors.append(author)
}
for i in 0..<posts {
    let post = ProfilePost.instance(in: context)
    post.title = "Post \(i)"
    post.body = "This is the body of post \(i). It is about object graphs, Swift and persistence."
    post.publishedAt = Date(timeIntervalSinceReferenceDate: Double(i) * 60.5)
    post.tags = ["swift", "tag\(i % 50)", "t\(i % 7)"]
    let author = authors[i % authorCount]
    post.author = author
    author.posts.append(post)
}
let blog = ProfileBlog.instance(in: context)
blog.authors = ModelArray(authors)
var bytes = 0
for _ in 0..<repeats {
    switch arguments[1] {
    case "jsonData": bytes = try blog.jsonData().count
    case "context-bplist": bytes = try context.data(format: .binaryPropertyList).count
    default: bytes = try context.data(format: .json).count
    }
}
print("output", bytes)
