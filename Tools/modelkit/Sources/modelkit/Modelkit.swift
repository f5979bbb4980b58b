import ArgumentParser
import Foundation
import ModelKitTool

/// The `modelkit` command: subcommands that read ModelKit files and stores without the app's
/// model types. Exit status: 0 success, 1 a file that fails (or, for `diff`, files that differ),
/// 2 bad arguments.
@main
struct Modelkit: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "modelkit",
        abstract: "Look into, check, query, convert and diff ModelKit files and stores.",
        discussion: """
            PATH is a file written by ModelKit (JSON, binary or XML property list, told apart by \
            its first bytes) or a store's base file (its journal, PATH-journal, is read with it). \
            Exit status: 0 success, 1 a file that fails or files that differ, 2 bad arguments.
            """,
        subcommands: [Info.self, Check.self, Query.self, Convert.self, Pretty.self, Diff.self, Compact.self])

    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let error as ToolError {
            FileHandle.standardError.write(Data("modelkit: \(error)\n".utf8))
            Foundation.exit(error.status)
        } catch {
            let code = exitCode(for: error)
            let message = fullMessage(for: error)
            if code == .success {
                if !message.isEmpty { print(message) }
                Foundation.exit(0)
            }
            if !message.isEmpty { FileHandle.standardError.write(Data((message + "\n").utf8)) }
            // ArgumentParser's usage errors are EX_USAGE (64); Unix tools say 2.
            Foundation.exit(code == .validationFailure ? 2 : code.rawValue)
        }
    }
}

extension Modelkit {
    struct Info: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a file's format and version, models per type and sizes; for a store, its journal.")

        @Argument(help: "A ModelKit file or a store's base file.") var path: String

        func run() throws { try InfoCommand.run(path: path, output: Output()) }
    }

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Read every model and report the first problem with where it is.",
            discussion: """
                Checks the envelope, each model's name, id and properties, ids once each, and that \
                every pointer's model is in the file; for a store, each journal record and damage. \
                Exit status 0 when all is well, 1 with the problem's location otherwise.
                """)

        @Argument(help: "A ModelKit file or a store's base file.") var path: String
        @Option(
            name: .customLong("recover"),
            help: ArgumentHelp(
                "Write the store's base and every save before any damage to OUT, a new file (never in place).",
                valueName: "OUT"))
        var recover: String?

        func run() throws {
            let output = Output()
            guard let recover else { return try CheckCommand.run(path: path, output: output) }
            let summary = try CompactCommand.recover(path: path, to: recover, output: output)
            output.flush()
            if let damage = summary.damage {
                FileHandle.standardError.write(
                    Data(
                        "modelkit: \(ToolError.from(damage, path: path + "-journal")); the saves from there on are not in \(recover)\n"
                            .utf8))
                throw ExitCode.failure
            }
        }
    }

    struct Query: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the models that match a query in ModelKit's query language.",
            discussion: """
                Example: modelkit query blog.json 'title BEGINSWITH[c] "swift"' --type Post --sort -createdAt --limit 20
                """)

        @Argument(help: "A ModelKit file.") var path: String
        @Argument(help: "A query, such as 'views > 10 AND title CONTAINS[c] \"swift\"'.") var filter = "TRUEPREDICATE"
        @Option(help: "Only models of this type (the model name in the file).") var type: String?
        @Option(
            parsing: .unconditional,
            help: ArgumentHelp(
                "Order by this property (or createdAt, updatedAt, modelId); -KEY for descending.", valueName: "[-]KEY"))
        var sort: String?
        @Option(help: "At most this many models.") var limit: Int?
        @Flag(help: "Output a JSON array of the models, as the file holds them.") var json = false
        @Flag(help: "Output one model per line as JSON.") var ndjson = false

        func validate() throws {
            if json && ndjson { throw ValidationError("Expected one of --json and --ndjson, found both.") }
            if let limit, limit < 0 { throw ValidationError("Expected a --limit of 0 or more, found \(limit).") }
        }

        func run() throws {
            var options = QueryCommand.Options()
            options.filter = filter
            options.type = type
            options.sort = sort
            options.limit = limit
            options.style = json ? .json : (ndjson ? .ndjson : .table)
            try QueryCommand.run(path: path, options: options, output: Output())
        }
    }

    struct Convert: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write the same models in another format to a new file.",
            discussion: "Example: modelkit convert blog.json --to binary blog.plist")

        @Argument(help: "A ModelKit file or a store's base file.") var path: String
        @Option(help: "The format to write: json, binary or xml.") var to: Format
        @Argument(help: "The file to write (atomically); not the input.") var output: String
        @Flag(help: "Pretty-print JSON (compact by default).") var pretty = false

        enum Format: String, ExpressibleByArgument, CaseIterable {
            case json, binary, xml
        }

        func run() throws {
            try ConvertCommand.run(path: path, to: FileFormat(rawValue: to.rawValue)!, output: output, pretty: pretty)
        }
    }

    struct Pretty: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a file as pretty-printed JSON (use convert --to json for compact JSON).")

        @Argument(help: "A ModelKit file or a store's base file.") var path: String

        func run() throws { try ConvertCommand.pretty(path: path, output: Output()) }
    }

    struct Diff: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List models added (+), removed (-) and changed (~), by id, field by field.",
            discussion: "Exit status 0 when the files hold the same models, 1 when they differ, 2 on trouble.")

        @Argument(help: "The old file.") var a: String
        @Argument(help: "The new file.") var b: String

        func run() throws {
            let output = Output()
            do {
                let differ = try DiffCommand.run(a, b, output: output)
                output.flush()
                if differ { throw ExitCode.failure }
            } catch var error as ToolError {
                // As diff(1): trouble is 2, differences 1.
                error.status = 2
                throw error
            }
        }
    }

    struct Compact: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Fold a store's journal into a new base, as ModelStore.compact() does.",
            discussion: "Fails on a store an app has open (it holds the store's lock), and on a damaged journal.")

        @Argument(help: "A store's base file (its journal is STORE-journal).") var store: String

        func run() throws { try CompactCommand.run(path: store, output: Output()) }
    }
}
