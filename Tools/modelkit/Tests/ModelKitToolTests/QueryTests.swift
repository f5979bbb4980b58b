import Foundation
import ModelKit
import Testing

@Suite("query") @MainActor
struct QueryTests {
    @Test("a query with type, descending sort and limit prints an aligned table")
    func table() throws {
        let path = try blogFile(posts: 10, in: try temporaryDirectory())
        let run = try modelkit(
            "query", path, #"title BEGINSWITH[c] "post" AND tags CONTAINS "swift""#, "--type", "Post", "--sort", "-views",
            "--limit", "2")
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        #expect(
            lines[0].hasPrefix(
                "model  objectId  modelId                               title   views  published             tags       author"))
        #expect(lines[1].hasPrefix("Post   post-8    "))
        #expect(lines[1].contains("  Post 8  80     2026-01-09T00:00:00Z  swift, t8  Author:"))
        #expect(lines[2].hasPrefix("Post   post-6    "))
        #expect(lines[3] == "(2 models)")
    }

    @Test(
        "dates compare with DATE(…) in a JSON file and in a binary property list alike",
        arguments: [PersistenceFormat.json, .binaryPropertyList])
    func dates(format: PersistenceFormat) throws {
        let path = try blogFile(posts: 10, format: format, in: try temporaryDirectory())
        let run = try modelkit("query", path, #"published >= DATE("2026-01-09T00:00:00Z")"#, "--ndjson")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.split(separator: "\n").count == 2)
        #expect(run.stdout.contains(#""objectId":"post-8""#) && run.stdout.contains(#""objectId":"post-9""#))
    }

    @Test("--json prints the models as the file holds them, and they read back as JSON")
    func json() throws {
        let path = try blogFile(posts: 3, in: try temporaryDirectory())
        let run = try modelkit("query", path, "views > 0", "--json", "--sort", "title")
        #expect(run.status == 0)
        let value = try ModelValue(json: Data(run.stdout.utf8))
        guard case .array(let models) = value else { Issue.record("not an array: \(run.stdout)"); return }
        #expect(models.map { $0["objectId"]?.stringValue } == ["post-1", "post-2"])
        #expect(models[0]["properties"]?["author"]?["__type"] == "ModelPointer")
    }

    @Test("a limit without a sort stops at the limit; a limit of 0 prints no model")
    func limits() throws {
        let path = try blogFile(posts: 50, in: try temporaryDirectory())
        #expect(
            try modelkit("query", path, "--type", "Post", "--limit", "3", "--ndjson").stdout.split(separator: "\n").count == 3)
        #expect(try modelkit("query", path, "--limit", "0").stdout == "model  modelId\n(0 models)\n")
        // Sorting keeps the whole order even when it trims what it holds to twice the limit.
        let sorted = try modelkit("query", path, "--type", "Post", "--sort", "-views", "--limit", "2", "--ndjson")
        #expect(sorted.stdout.contains("post-49") && sorted.stdout.contains("post-48"))
    }

    @Test("a query that does not parse is status 2 with the column; a comparison of the wrong kind is status 1")
    func errors() throws {
        let path = try blogFile(posts: 2, in: try temporaryDirectory())
        let syntax = try modelkit("query", path, "title BEGINSWITH")
        #expect(syntax.status == 2)
        #expect(syntax.stderr.contains("column 17"))
        let kind = try modelkit("query", path, #"views > "many""#, "--type", "Post")
        #expect(kind.status == 1)
        #expect(kind.stderr.contains("a Post: expected a value comparable with a number for >, found a string"))
        let both = try modelkit("query", path, "--json", "--ndjson")
        #expect(both.status == 2)
        #expect(both.stderr.contains("Expected one of --json and --ndjson"))
    }

    @Test("a key the models lack reads as nil, so it matches nothing and fails nothing")
    func unknownKey() throws {
        let path = try blogFile(posts: 2, in: try temporaryDirectory())
        let run = try modelkit("query", path, "color = 'red'", "--ndjson")
        #expect(run.status == 0)
        #expect(run.stdout.isEmpty)
    }
}
