import Foundation
import Testing

// Every ```swift block of README.md and Docs/ is compiled against this build of ModelKit, in the
// Swift 6 language mode, and run; a `print(…)` followed by a comment is checked against what it
// printed. How a page marks its blocks:
//
// - By default the blocks of a page are one program, in order: a later block may use what an
//   earlier one declared, as a reader would.
// - `<!-- new program -->` on the line before a block starts another program there.
// - `<!-- fragment -->` on the line before a block leaves it out: a signature, an excerpt that
//   cannot stand alone, or code for another platform.
//
// A print's comment states its output: `print(author.age)   // 40`. What follows a ": " or a
// " (" outside quotes is an explanation and is not compared (`// true: the cycle is rebuilt`), and
// double quotes may mark a string (`// "Jon"` for the output `Jon`).

/// One program made of a page's blocks.
struct DocProgram: CustomTestStringConvertible, Sendable {
    /// The page's path from the package root.
    let page: String
    /// The blocks: the page line of each block's first line of code, and its lines.
    var blocks: [(line: Int, lines: [String])] = []

    var testDescription: String { "\(page):\(blocks.first?.line ?? 0)" }

    /// The program's source: the blocks, each under a `#sourceLocation` that names its page and
    /// line, so that the compiler's diagnostics point into the page.
    var source: String {
        var text = "import Foundation\nimport ModelKit\n\n" + Self.helper
        for block in blocks {
            text += "#sourceLocation(file: \"\(page)\", line: \(block.line))\n"
            for line in block.lines { text += Self.checkingPrint(line) + "\n" }
            text += "#sourceLocation()\n"
        }
        return text
    }

    /// Prints what `print` would and reports, on standard error, a difference from the page.
    private static let helper = #"""
        func docsCheckPrint(_ items: Any..., page expected: String, file: String = #file, line: Int = #line) {
            let actual = items.map { "\($0)" }.joined(separator: " ")
            print(actual)
            let unquoted = { (text: String) in text.filter { $0 != "\"" } }
            if actual != expected && unquoted(actual) != unquoted(expected) {
                FileHandle.standardError.write(Data("DOCS-MISMATCH \(file):\(line): printed \(actual); the page says \(expected)\n".utf8))
            }
        }

        """#

    /// `line` with a commented print turned into a checked one.
    static func checkingPrint(_ line: String) -> String {
        guard let printStart = line.range(of: "print("), line[..<printStart.lowerBound].allSatisfy(\.isWhitespace),
            let commentStart = line.range(of: "//", options: .backwards),
            let close = line[..<commentStart.lowerBound].lastIndex(of: ")"),
            line[line.index(after: close)..<commentStart.lowerBound].allSatisfy(\.isWhitespace)
        else { return line }
        let arguments = line[printStart.upperBound..<close]
        let expected = statedOutput(String(line[commentStart.upperBound...]))
        let literal = expected.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return "\(line[..<printStart.lowerBound])docsCheckPrint(\(arguments), page: \"\(literal)\")"
    }

    /// The output a print's comment states: up to the first ": " or " (" outside quotes.
    static func statedOutput(_ comment: String) -> String {
        let text = Array(comment.trimmingCharacters(in: .whitespaces))
        var quoted = false
        var end = text.count
        for index in text.indices {
            if text[index] == "\"" { quoted.toggle() }
            guard !quoted, index + 1 < text.count else { continue }
            if (text[index] == ":" || text[index] == " ") && text[index + 1] == (text[index] == ":" ? " " : "(") {
                end = index
                break
            }
        }
        return String(text[..<end]).trimmingCharacters(in: .whitespaces)
    }
}

enum DocPages {
    /// The package's folder.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// README.md and every page under Docs/.
    static var pages: [String] {
        let docs = (try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Docs").path)) ?? []
        return ["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "Docs/\($0)" }
    }

    /// The programs of every page.
    static var programs: [DocProgram] {
        pages.flatMap { page in
            let text = (try? String(contentsOf: root.appendingPathComponent(page), encoding: .utf8)) ?? ""
            return programs(in: text, page: page)
        }
    }

    /// The programs of one page's text (see the top of this file for the markers).
    static func programs(in text: String, page: String) -> [DocProgram] {
        let lines = text.components(separatedBy: "\n")
        var programs: [DocProgram] = []
        var current = DocProgram(page: page)
        var index = 0
        while index < lines.count {
            let trimmed = lines[index].trimmingCharacters(in: .whitespaces)
            guard trimmed == "```swift" else {
                index += 1
                continue
            }
            let indent = lines[index].prefix { $0 == " " }.count
            let marker = lines[..<index].last { !$0.trimmingCharacters(in: .whitespaces).isEmpty }?
                .trimmingCharacters(in: .whitespaces)
            var body: [String] = []
            index += 1
            while index < lines.count, lines[index].trimmingCharacters(in: .whitespaces) != "```" {
                body.append(String(lines[index].dropFirst(min(indent, lines[index].prefix { $0 == " " }.count))))
                index += 1
            }
            let firstLine = index - body.count + 1  // 1-based line of the block's first line of code
            index += 1
            switch marker {
            case "<!-- fragment -->":
                continue
            case "<!-- new program -->":
                if !current.blocks.isEmpty { programs.append(current) }
                current = DocProgram(page: page)
            default:
                break
            }
            current.blocks.append((firstLine, body))
        }
        if !current.blocks.isEmpty { programs.append(current) }
        return programs
    }
}

@Suite("The docs' code")
struct DocsCompileTests {
    @Test("Every Swift block of the README and Docs compiles and runs, and prints what the page says", arguments: DocPages.programs)
    func blockCompilesAndRuns(_ program: DocProgram) throws {
        let outcome = try SnippetCompiler().build(andRun: program.source)
        // Only the compiler's errors and the program's mismatches in a failure, not the outcome.
        let compiled = outcome.compiled
        let errors = outcome.diagnostics.split(separator: "\n").filter { $0.contains("error:") }
        #expect(compiled, "\(program.page) does not compile:\n\(errors.joined(separator: "\n"))")
        guard compiled else { return }
        let status = outcome.status
        #expect(status == 0, "\(program.page) exited with \(status):\n\(outcome.output.suffix(2_000))")
        let mismatches = outcome.output.split(separator: "\n").filter { $0.hasPrefix("DOCS-MISMATCH ") }
        #expect(mismatches.isEmpty, "\(mismatches.map { $0.dropFirst(14) }.joined(separator: "\n"))")
    }

    @Test("The check finds blocks, honours the markers and reads a print's stated output")
    func markersAndStatedOutput() {
        let page = """
            Text.

            ```swift
            let a = 1
            ```

            <!-- fragment -->
            ```swift
            func signature() -> Int
            ```

            1. A list item:
               ```swift
               print(a)   // 1: one
               ```

            <!-- new program -->
            ```swift
            let a = 2
            ```
            """
        let programs = DocPages.programs(in: page, page: "Page.md")
        #expect(programs.count == 2)
        #expect(programs.first?.blocks.map(\.line) == [4, 14])
        #expect(programs.first?.blocks.last?.lines == ["print(a)   // 1: one"])
        #expect(programs.last?.blocks.map(\.lines) == [["let a = 2"]])
        #expect(DocProgram.statedOutput(" 1 true (two models inserted)") == "1 true")
        #expect(DocProgram.statedOutput(#" 5 "two bounds: BETWEEN {lower, upper}""#) == #"5 "two bounds: BETWEEN {lower, upper}""#)
        #expect(DocProgram.statedOutput(" Optional(.string(\"Jon\"))") == "Optional(.string(\"Jon\"))")
        #expect(DocProgram.checkingPrint("    print(x, y)  // 3 4") == "    docsCheckPrint(x, y, page: \"3 4\")")
        #expect(DocProgram.checkingPrint("let x = 1 // print(x)") == "let x = 1 // print(x)")
    }
}
