import Foundation
import ModelKit
import Testing

/// Files of contexts that keep no package metadata (no backend's versions) are written as before
/// the `tracking` member existed: the golden files were written by the version before it.
@Suite("Files without tracking")
struct TrackingBytesTests {
    static let goldens: [(PersistenceFormat, String)] = [
        (.json, "json"), (.binaryPropertyList, "bplist"), (.xmlPropertyList, "plist"),
    ]

    @Test("A context without package metadata writes the same bytes as before, in every format")
    func sameBytes() throws {
        try ModelRegistry.register(Profile.self)
        let context = ModelContext()
        try context.load(from: fixture("added-property", "json"))
        for (format, kind) in Self.goldens {
            let data = try context.data(format: format)
            guard
                let url = Bundle.module.url(
                    forResource: "written-before-tracking", withExtension: kind, subdirectory: "Fixtures/Persistence")
            else {
                // To make the golden files: run this test on the version before the member.
                try data.write(
                    to: FileManager.default.temporaryDirectory.appendingPathComponent("written-before-tracking.\(kind)"))
                Issue.record("no golden file written-before-tracking.\(kind)")
                continue
            }
            #expect(data == (try Data(contentsOf: url)), "\(format)")
        }
    }

    @Test("A context with changes and new models but no package metadata writes no tracking member")
    func noTrackingMember() throws {
        let context = ModelContext()
        let author = Author.instance(in: context)
        author.name = "Ann"
        let loaded = ModelContext()
        try loaded.load(context.data())
        loaded.allModels.first?.resetChanges()
        let text = String(decoding: try context.data(), as: UTF8.self)
        #expect(!text.contains("\"tracking\""))
        let plist = try PropertyListSerialization.propertyList(from: context.data(format: .binaryPropertyList), format: nil)
        #expect((plist as? [String: Any])?["tracking"] == nil)
    }
}
