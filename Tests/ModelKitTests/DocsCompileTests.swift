import Foundation
import ModelKitTestSupport
import Testing

@Suite("The docs' code")
struct DocsCompileTests {
    // Programs that use ModelKitServices need a server: the services tests run them.
    @Test(
        "Every Swift block of the README and Docs compiles and runs, and prints what the page says",
        arguments: DocPages.programs.filter { !$0.usesServices })
    func blockCompilesAndRuns(_ program: DocProgram) throws {
        let outcome = try SnippetCompiler().build(andRun: program.source, companions: DocProgram.companions)
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

    @Test(
        "A page's program compiles as pasted, with its own imports only: Foundation's types and members need its import there",
        arguments: [
            ("let url = URL(fileURLWithPath: \"/tmp\")", "print(url.path)   // /tmp"),
            ("let parts = \"a b\".components(separatedBy: \" \")", "print(parts.count)   // 2"),
        ])
    func onlyThePagesImports(code: String, check: String) throws {
        let compiler = try SnippetCompiler()
        for imports in [["import ModelKit"], ["import Foundation", "import ModelKit"]] {
            let page = (["```swift"] + imports + [code, check, "```"]).joined(separator: "\n")
            let program = try #require(DocPages.programs(in: page, page: "Page.md").first)
            let outcome = try compiler.build(andRun: program.source, companions: DocProgram.companions)
            let errors = outcome.diagnostics.split(separator: "\n").filter { $0.contains("error:") }
            if imports.contains("import Foundation") {
                #expect(outcome.compiled && outcome.status == 0, "\(errors)")
                #expect(!outcome.output.contains("DOCS-MISMATCH"), "\(outcome.output)")
            } else {
                #expect(!outcome.compiled, "compiled without import Foundation: \(code)")
                // Said at the page's line of the code (the block's first line is the page's second).
                #expect(errors.contains { $0.contains("Page.md:\(imports.count + 2):") }, "\(errors)")
            }
        }
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
