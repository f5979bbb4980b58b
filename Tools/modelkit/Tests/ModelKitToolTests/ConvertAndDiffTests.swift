import Foundation
import ModelKit
import Testing

@Suite("convert, pretty and diff") @MainActor
struct ConvertAndDiffTests {
    @Test("convert writes each format, and the library loads the same models back", arguments: ["json", "binary", "xml"])
    func convert(to format: String) throws {
        let directory = try temporaryDirectory()
        let path = try blogFile(posts: 4, in: directory)
        let output = directory.appendingPathComponent("out").path
        let run = try modelkit("convert", path, "--to", format, output)
        #expect(run.status == 0, "\(run.stderr)")
        let original = ModelContext()
        try original.load(from: URL(fileURLWithPath: path))
        let converted = ModelContext()
        try converted.load(from: URL(fileURLWithPath: output))
        #expect(converted.count == 5)
        // The same bytes when each is written as JSON: the same models, dates to the last digit.
        #expect(try converted.data() == original.data())
        #expect(try modelkit("diff", path, output).status == 0)
    }

    @Test("convert never writes over its input")
    func notInPlace() throws {
        let path = try blogFile(posts: 1, in: try temporaryDirectory())
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let run = try modelkit("convert", path, "--to", "binary", path)
        #expect(run.status == 2)
        #expect(run.stderr.contains("expected an output file other than the input"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test("pretty prints indented JSON that parses to the same document")
    func pretty() throws {
        let path = try blogFile(posts: 2, in: try temporaryDirectory())
        let run = try modelkit("pretty", path)
        #expect(run.status == 0)
        #expect(run.stdout.contains("\n  \"models\" : [") || run.stdout.contains("\n  \"models\": ["))
        #expect(try ModelValue(json: Data(run.stdout.utf8)) == ModelValue(json: Data(contentsOf: URL(fileURLWithPath: path))))
    }

    @Test("diff lists models added, removed and changed field by field, and exits 1")
    func diff() throws {
        let directory = try temporaryDirectory()
        let old = try blogFile(posts: 3, in: directory, name: "old")
        let context = ModelContext()
        try context.load(from: URL(fileURLWithPath: old))
        let post = try #require(context.model(Post.self, objectId: "post-1"))
        post.title = "Renamed"
        post.views = 11
        context.model(Post.self, objectId: "post-2")!.removeFromContext()
        Post.instance(objectId: "post-9", in: context).title = "New"
        let new = directory.appendingPathComponent("new").path
        try context.write(to: URL(fileURLWithPath: new), format: .binaryPropertyList)
        let run = try modelkit("diff", old, new)
        #expect(run.status == 1)
        let id = { (objectId: String) in context.model(Post.self, objectId: objectId)!.modelId.description }
        #expect(run.stdout.contains("- Post "))
        #expect(run.stdout.contains(" (post-2)\n"))
        #expect(run.stdout.contains("+ Post \(id("post-9")) (post-9)\n"))
        #expect(run.stdout.contains("~ Post \(id("post-1")) (post-1)\n    updatedAt: "))
        #expect(run.stdout.contains("    properties.title: \"Post 1\" → \"Renamed\"\n    properties.views: 10 → 11\n"))
        #expect(run.stdout.contains("~ Author "))
        #expect(run.stdout.contains("    properties.posts: 3 elements → 2: - Post:"))
        #expect(run.stdout.hasSuffix("1 added, 1 removed, 2 changed\n"), "the author's posts changed too")
    }

    @Test("diff of a file with itself in another format is status 0; of a missing file status 2")
    func same() throws {
        let directory = try temporaryDirectory()
        let a = try blogFile(posts: 3, in: directory, name: "a")
        let b = directory.appendingPathComponent("b").path
        #expect(try modelkit("convert", a, "--to", "xml", b).status == 0)
        let run = try modelkit("diff", a, b)
        #expect(run.status == 0)
        #expect(run.stdout == "no differences\n")
        #expect(try modelkit("diff", a, directory.appendingPathComponent("none").path).status == 2)
    }
}
