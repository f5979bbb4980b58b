import Foundation
import ModelKitTestSupport
import Testing

/// The docs' programs that use ModelKitServices (see DocPages.swift for how a page marks its
/// blocks), built against this build of both libraries and run against the test server: the
/// environment gives them its URL and account, as `KINTO_URL`, `KINTO_USER` and `KINTO_PASSWORD`.
@Suite("The services docs' code", .hangBackstop)
struct ServicesDocsTests {
    @Test(
        "Every Swift block of the docs that imports ModelKitServices compiles, runs against a real server, and prints what the page says",
        .enabled(if: serviceTestsEnabled, serviceTestsSkipped), arguments: DocPages.programs.filter(\.usesServices))
    func programRuns(_ program: DocProgram) async throws {
        let server = try await KintoServer.forDocs.value
        let environment = ["KINTO_URL": server.url.absoluteString, "KINTO_USER": server.user, "KINTO_PASSWORD": server.password]
        // Off the cooperative threads (two on a two-core machine): compiling and running block.
        let outcome = try await ChildProcess.offCooperativeThreads {
            try SnippetCompiler(modules: ["ModelKit", "ModelKitServices", "ModelKitServiceTesting"])
                .build(andRun: program.source, companions: DocProgram.companions, environment: environment)
        }
        let errors = outcome.diagnostics.split(separator: "\n").filter { $0.contains("error:") }
        #expect(outcome.compiled, "\(program.page) does not compile:\n\(errors.joined(separator: "\n"))")
        guard outcome.compiled else { return }
        // A crash's report is long: its first lines (the reason and the crashing thread) go first.
        #expect(
            outcome.status == 0,
            "\(program.page) exited with \(outcome.status):\n\(outcome.output.prefix(3_000))\n…\n\(outcome.output.suffix(1_000))")
        let mismatches = outcome.output.split(separator: "\n").filter { $0.hasPrefix("DOCS-MISMATCH ") }
        #expect(mismatches.isEmpty, "\(mismatches.map { $0.dropFirst(14) }.joined(separator: "\n"))")
    }

    @Test("The services page has programs to run")
    func pageHasPrograms() {
        #expect(DocPages.programs.filter(\.usesServices).contains { $0.page == "Docs/Services.md" })
    }
}
