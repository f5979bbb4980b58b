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
// A program is compiled as a reader would paste it: with the imports its own blocks make and no
// others (the first block of each program imports what the program uses). The checked print
// below lives in a file of its own, whose imports the page's code does not see (its members
// neither: the program is built with MemberImportVisibility).
//
// A print's comment states its output: `print(author.age)   // 40`. What follows a ": " or a
// " (" outside quotes is an explanation and is not compared (`// true: the cycle is rebuilt`), and
// double quotes may mark a string (`// "Jon"` for the output `Jon`).

/// One program made of a page's blocks.
public struct DocProgram: CustomTestStringConvertible, Sendable {
    /// The page's path from the package root.
    public let page: String
    /// The blocks: the page line of each block's first line of code, and its lines.
    public var blocks: [(line: Int, lines: [String])] = []

    /// Whether the program uses ModelKitServices (`import ModelKitServices` in a block): it is
    /// then built and run by the services tests, against their Kinto server.
    public var usesServices: Bool {
        blocks.contains { $0.lines.contains { $0.trimmingCharacters(in: .whitespaces) == "import ModelKitServices" } }
    }

    public var testDescription: String { "\(page):\(blocks.first?.line ?? 0)" }

    /// The program's source: the blocks, each under a `#sourceLocation` that names its page and
    /// line, so that the compiler's diagnostics point into the page. Nothing is added before
    /// them: no import the page does not make (the checked print is in ``companions``).
    public var source: String {
        var text = ""
        for block in blocks {
            text += "#sourceLocation(file: \"\(page)\", line: \(block.line))\n"
            for line in block.lines { text += Self.checkingPrint(line) + "\n" }
            text += "#sourceLocation()\n"
        }
        return text
    }

    /// The files compiled with ``source``, by name: the checked print, with the import it needs.
    public static let companions = ["DocsCheckPrint.swift": helper]

    /// Prints what `print` would and reports, on standard error, a difference from the page.
    private static let helper = #"""
        import Foundation

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
    public static func checkingPrint(_ line: String) -> String {
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
    public static func statedOutput(_ comment: String) -> String {
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

public enum DocPages {
    /// The package's folder.
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// README.md and every page under Docs/.
    public static var pages: [String] {
        let docs = (try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Docs").path)) ?? []
        return ["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "Docs/\($0)" }
    }

    /// The programs of every page.
    public static var programs: [DocProgram] {
        pages.flatMap { page in
            let text = (try? String(contentsOf: root.appendingPathComponent(page), encoding: .utf8)) ?? ""
            return programs(in: text, page: page)
        }
    }

    /// The programs of one page's text (see the top of this file for the markers).
    public static func programs(in text: String, page: String) -> [DocProgram] {
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

