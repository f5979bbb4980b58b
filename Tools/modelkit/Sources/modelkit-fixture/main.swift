import Foundation
import ModelKit

// Writes a blog made by the library, for the tool's benchmark (Scripts/modelkit-benchmark):
//
//     modelkit-fixture POSTS PATH [json|binary|xml]
//
// One author per 1,000 posts; each post has a title, a body, a view count, a publication date,
// two tags and its author; each author a name and its posts.

final class Author: ModelObject<Author.Properties> {
    struct Properties: ModelProperties {
        var name = ""
        var posts = ModelArray<Post>()
    }
}

final class Post: ModelObject<Post.Properties> {
    struct Properties: ModelProperties {
        var title = ""
        var body = ""
        var views = 0
        var published = Date(timeIntervalSince1970: 0)
        var tags: [String] = []
        var author = ModelRef<Author>()
    }
}

let arguments = CommandLine.arguments
guard arguments.count >= 3, let count = Int(arguments[1]), count >= 0 else {
    FileHandle.standardError.write(Data("usage: modelkit-fixture POSTS PATH [json|binary|xml]\n".utf8))
    exit(2)
}
let format: PersistenceFormat =
    switch arguments.count > 3 ? arguments[3] : "json" {
    case "binary": .binaryPropertyList
    case "xml": .xmlPropertyList
    default: .json
    }
let context = ModelContext()
let authors = (0..<max(1, count / 1_000)).map { index in
    let author = Author.instance(in: context)
    author.name = "Author \(index)"
    return author
}
for index in 0..<count {
    let post = Post.instance(in: context)
    post.title = "Post \(index) about \(["Swift", "Linux", "graphs", "persistence"][index % 4])"
    post.body = "The body of post \(index), long enough to look like a short paragraph of text."
    post.views = (index * 7_919) % 100_000
    post.published = Date(timeIntervalSince1970: 1_700_000_000 + Double(index) * 60)
    post.tags = ["tag\(index % 50)", index % 3 == 0 ? "swift" : "other"]
    let author = authors[index % authors.count]
    post.author = author
    author.posts.append(post)
}
do {
    try context.write(to: URL(fileURLWithPath: arguments[2]), format: format)
} catch {
    FileHandle.standardError.write(Data("modelkit-fixture: \(error)\n".utf8))
    exit(1)
}
