import Foundation
import ModelKit
import Testing

@Suite("info and check") @MainActor
struct InfoAndCheckTests {
    @Test(
        "info shows the format, the writer, the models per type and the size",
        arguments: [PersistenceFormat.json, .binaryPropertyList, .xmlPropertyList])
    func infoOfEachFormat(format: PersistenceFormat) throws {
        let directory = try temporaryDirectory()
        let path = try blogFile(posts: 3, format: format, in: directory)
        let run = try modelkit("info", path)
        #expect(run.status == 0, "\(run.stderr)")
        let title = [
            PersistenceFormat.json: "JSON", .binaryPropertyList: "binary property list", .xmlPropertyList: "XML property list",
        ][format]!
        #expect(run.stdout.contains("format:      \(title), version 1"))
        #expect(run.stdout.contains("written by:  ModelKit-Swift 1.0"))
        #expect(run.stdout.contains("models:      4"))
        #expect(run.stdout.contains("  Author     1"))
        #expect(run.stdout.contains("  Post       3"))
        #expect(run.stdout.contains("sync state:  none"))
        #expect(run.stderr.isEmpty, "no progress when standard error is not a terminal")
    }

    @Test("check passes a file the library wrote and names its models")
    func checkPasses() throws {
        let path = try blogFile(posts: 5, in: try temporaryDirectory())
        let run = try modelkit("check", path)
        #expect(run.status == 0)
        #expect(run.stdout == "ok: 6 models (1 Author, 5 Post)\n")
    }

    @Test("check of a file cut short says at which byte it ends and what was expected")
    func checkTruncated() throws {
        let directory = try temporaryDirectory()
        let path = try blogFile(posts: 5, in: directory)
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        try data.prefix(data.count - 40).write(to: URL(fileURLWithPath: path))
        let run = try modelkit("check", path)
        #expect(run.status == 1)
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.hasPrefix("modelkit: \(path): byte \(data.count - 40): expected the rest of a value"))
    }

    @Test("check of a pointer to a model the file lacks names the model, the key path and the target")
    func checkDanglingPointer() throws {
        let directory = try temporaryDirectory()
        let path = try blogFile(posts: 2, in: directory)
        // The author (first in the file) gets another id: the posts' pointers to it lead nowhere,
        // which a load refuses with danglingPointer.
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let context = ModelContext()
        try context.load(from: URL(fileURLWithPath: path))
        let authorId = try #require(context.model(Author.self, objectId: "ann")).modelId.description
        let other = "00000000-0000-0000-0000-0000000000AA"
        let damaged = text.replacingOccurrences(of: authorId, with: other, options: [], range: text.range(of: authorId))
        try damaged.write(toFile: path, atomically: true, encoding: .utf8)
        let run = try modelkit("check", path)
        #expect(run.status == 1)
        #expect(run.stderr.contains("model 1, properties.author → Author \(authorId): expected the model a pointer names"))
        #expect(run.stderr.contains("danglingPointer"))
    }

    @Test("check of a model without an id says which model and what was expected")
    func checkMissingId() throws {
        let path = try temporaryDirectory().appendingPathComponent("bad.json").path
        try #"{"format":"ModelKit","version":1,"models":[{"model":"Post","properties":{}}]}"#.write(
            toFile: path, atomically: true, encoding: .utf8)
        let run = try modelkit("check", path)
        #expect(run.status == 1)
        #expect(
            run.stderr
                == "modelkit: \(path): byte 43, model 0, modelId: expected a model id such as 5F0C61A2-93D4-4E1B-0000-00000000002A, found no modelId member\n"
        )
    }

    @Test(
        "check and info fail with status 1 on each damaged file of the fuzz corpus, and never crash",
        arguments: [
            "json/deep-nesting.json", "json/huge-version.json", "json/truncated-envelope.json",
            "binary-plist/huge-count.bplist", "binary-plist/overlapping-offset-table.bplist",
            "binary-plist/reference-out-of-range.bplist", "binary-plist/self-referencing-dictionary.bplist",
        ])
    func damagedCorpus(file: String) throws {
        let path = corpus.appendingPathComponent(file).path
        for command in ["check", "info", "query"] {
            let run = try modelkit(command, path)
            #expect(run.status == 1, "\(command) \(file): \(run.stderr)")
            #expect(run.stderr.hasPrefix("modelkit: \(path)"))
            #expect(run.stderr.contains("expected"))
        }
    }

    @Test(
        "check passes the whole files of the fuzz corpus",
        arguments: ["json/graph", "json/everything", "binary-plist/graph", "xml/graph"])
    func wholeCorpus(file: String) throws {
        let path = corpus.appendingPathComponent(file).path
        guard FileManager.default.fileExists(atPath: path) else { return }
        let run = try modelkit("check", path)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.hasPrefix("ok: "))
    }

    @Test("check of a malformed pointer names the model and the key path down to the array position")
    func checkMalformedPointer() throws {
        let path = try temporaryDirectory().appendingPathComponent("pointer.json").path
        let text =
            #"{"format":"ModelKit","version":1,"models":[{"model":"Author","modelId":"00000000-0000-0000-0000-000000000001","#
            + #""properties":{"name":"Ann","posts":[null,{"__type":"ModelPointer","model":"Post"}]}}]}"#
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let run = try modelkit("check", path)
        #expect(run.status == 1)
        #expect(
            run.stderr == "modelkit: \(path): byte 43, model 0, properties.posts[1]: expected a pointer's model id, found none\n")
    }

    @Test("a file that is not there, or a directory, is status 1 with what was expected")
    func missingFile() throws {
        let directory = try temporaryDirectory()
        let run = try modelkit("info", directory.appendingPathComponent("nothing").path)
        #expect(run.status == 1)
        #expect(run.stderr.hasSuffix("expected a readable file, found no such file\n"))
        let folder = try modelkit("check", directory.path)
        #expect(folder.status == 1)
        #expect(folder.stderr.hasSuffix("found a directory\n"))
    }

    @Test("bad arguments are status 2 with the usage, and --help works on every subcommand")
    func usage() throws {
        let bad = try modelkit("info")
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("Missing expected argument '<path>'"))
        #expect(try modelkit("frobnicate").status == 2)
        #expect(
            try modelkit("convert", "a", "--to", "yaml", "b").stderr.contains("Please provide one of 'json', 'binary' or 'xml'"))
        for command in ["info", "check", "query", "convert", "pretty", "diff", "compact"] {
            let help = try modelkit(command, "--help")
            #expect(help.status == 0)
            #expect(help.stdout.contains("USAGE: modelkit \(command)"), "\(command)")
        }
    }
}
