import Foundation
import ModelKitTestSupport
import Testing

@testable import ModelKit

/// A model whose properties are named like members of every model: they can't be reached.
final class Shadowed: ModelObject<Shadowed.Properties> {
    struct Properties: ModelProperties {
        var title = ""
        var changes = 0
        var modelId = ""
        var note = ""
    }
}

/// The same mistake behind a renamed coding key.
final class ShadowedByKey: ModelObject<ShadowedByKey.Properties> {
    struct Properties: ModelProperties {
        var stamp = Date(timeIntervalSince1970: 0)
        enum CodingKeys: String, CodingKey { case stamp = "createdAt" }
    }
}

@Suite("Model declarations")
struct ModelDeclarationTests {
    @Test("Registering a model whose properties a model's own members hide throws, naming them, and registers nothing")
    func registrationReportsHiddenProperties() throws {
        let error = try #require(throws: ModelDeclarationError.self) { try ModelRegistry.register(Author.self, Shadowed.self) }
        #expect(error.modelName == "Shadowed")
        #expect(error.hiddenProperties == ["changes", "modelId"])
        #expect(error.localizedDescription == error.description)
        #expect(error.description.contains(#""changes", "modelId""#))
        #expect(ModelRegistry.type(named: "Shadowed") == nil)
        // Properties are known by their coding keys.
        #expect(ModelRegistry.shadowedProperties(of: ShadowedByKey.self) == ["createdAt"])
        #expect(ModelRegistry.shadowedProperties(of: Author.self).isEmpty)
    }

    @Test("Every name the check knows is a member of every model")
    func memberNamesAreMembers() throws {
        let accesses = ModelRegistry.modelMemberNames.sorted().map { "    _ = probe.\($0)" }.joined(separator: "\n")
        let outcome = try SnippetCompiler().check(
            """
            import ModelKit
            final class Probe: ModelObject<Probe.Properties> {
                struct Properties: ModelProperties { var unrelated = 0 }
            }
            @MainActor func run(_ probe: Probe) {
            \(accesses)
            }
            """)
        // A name that is not a member falls through to the properties: "no dynamic member". A
        // method named alone may not compile for other reasons (an overload is ambiguous, a
        // generic result can't be inferred), which still shows it is there.
        let missing = outcome.diagnostics.split(separator: "\n").filter {
            $0.contains("error:") && ($0.contains("dynamic member") || $0.contains("has no member"))
        }
        #expect(missing.isEmpty, "\(missing)")
    }

    @Test("A model first met in use warns once on standard error")
    func firstUseWarns() throws {
        let outcome = try SnippetCompiler().build(
            andRun: """
                import ModelKit
                final class Memo: ModelObject<Memo.Properties> {
                    struct Properties: ModelProperties { var text = ""; var hasChanges = false }
                }
                let context = ModelContext()
                _ = Memo.instance(in: context)
                _ = Memo.instance(in: context)
                print("done")
                """)
        #expect(outcome.compiled, "\(outcome.diagnostics)")
        let warnings = outcome.output.split(separator: "\n").filter { $0.hasPrefix("ModelKit warning: Memo.Properties") }
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains(#""hasChanges""#) == true)
        #expect(outcome.output.contains("done"))
    }

    @Test("Models are Identifiable by their model id")
    func identifiable() {
        func ids<T: Identifiable>(_ items: [T]) -> [T.ID] { items.map(\.id) }
        let authors = [Author(), Author()]
        #expect(ids(authors) == authors.map(\.modelId))
    }
}
