import Foundation
import ModelKit

// What the tests share: models like an app's, files made of them by the library, and the tool
// run as a process, as a user runs it.

final class Author: ModelObject<Author.Properties> {
    struct Properties: ModelProperties {
        var name = ""
        var posts = ModelArray<Post>()
    }
}

final class Post: ModelObject<Post.Properties> {
    struct Properties: ModelProperties {
        var title = ""
        var views = 0
        var published: Date?
        var tags: [String] = []
        var author = ModelRef<Author>()
    }
}

/// A fresh directory for one test's files.
func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("modelkit-tool-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A blog: one author ("Ann") with `posts` posts titled "Post 0", "Post 1", …; post i has i * 10
/// views, the tag "swift" on even posts, and a publication date i days after 2026-01-01.
@MainActor
func blog(posts: Int, in context: ModelContext = ModelContext()) -> ModelContext {
    let ann = Author.instance(objectId: "ann", in: context)
    ann.name = "Ann"
    for index in 0..<posts {
        let post = Post.instance(objectId: "post-\(index)", in: context)
        post.title = "Post \(index)"
        post.views = index * 10
        post.published = Date(timeIntervalSince1970: 1_767_225_600 + Double(index) * 86_400)
        post.tags = index % 2 == 0 ? ["swift", "t\(index)"] : ["t\(index)"]
        post.author = ann
        ann.posts.append(post)
    }
    return context
}

/// Writes a blog of `posts` posts to a new file in `format`.
@MainActor
func blogFile(posts: Int, format: PersistenceFormat = .json, in directory: URL, name: String = "blog") throws -> String {
    let url = directory.appendingPathComponent(name)
    try blog(posts: posts).write(to: url, format: format)
    return url.path
}

/// What a run of the tool printed and how it ended.
struct Run {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// The built `modelkit`: beside the test bundle (`swift build --build-tests` builds both).
let toolURL: URL = {
    let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("modelkit")
    if FileManager.default.isExecutableFile(atPath: beside.path) { return beside }
    let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    return package.appendingPathComponent(".build/debug/modelkit")
}()

/// Runs `modelkit arguments…` to the end, its output in files (no pipe to fill up).
func modelkit(_ arguments: String...) throws -> Run {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let out = directory.appendingPathComponent("stdout")
    let err = directory.appendingPathComponent("stderr")
    _ = FileManager.default.createFile(atPath: out.path, contents: nil)
    _ = FileManager.default.createFile(atPath: err.path, contents: nil)
    let process = Process()
    process.executableURL = toolURL
    process.arguments = arguments
    process.standardOutput = try FileHandle(forWritingTo: out)
    process.standardError = try FileHandle(forWritingTo: err)
    process.standardInput = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    return Run(
        status: process.terminationStatus, stdout: try String(contentsOf: out, encoding: .utf8),
        stderr: try String(contentsOf: err, encoding: .utf8))
}

/// The fuzz corpus of the root package (damaged and hostile files).
let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus")
