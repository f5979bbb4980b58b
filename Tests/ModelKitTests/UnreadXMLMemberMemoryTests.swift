import Foundation
import ModelKitTestSupport
import Testing

@testable import ModelKit

/// The XML property-list counterpart of ``UnreadMemberMemoryTests``: a member nobody reads is
/// checked but never recorded, measured by the entries the source's tapes held at most (which
/// depends on the text only, not on the machine).
@Suite("Unread members of XML property lists take no memory")
struct UnreadXMLMemberMemoryTests {
    init() throws {
        try ModelRegistry.register(Note.self)
        try ModelRegistry.register(Author.self)
        try ModelRegistry.register(KeyLister.self)
    }

    /// A quarter of the JSON test's member: still enough to tell a few entries from one per
    /// value, and a quarter of the time (with 100,000 arrays each case took about 20 seconds of a
    /// debug build, most of CI's plain test run's longest suite).
    static let largeArray = "[" + Array(repeating: "[1,{\"a\":\"b\"}]", count: 25_000).joined(separator: ",") + "]"

    /// The JSON file of ``UnreadMemberMemoryTests/file(extra:at:)`` as an XML property list
    /// Foundation writes.
    static func file(extra: String, at place: UnreadMemberMemoryTests.Place) throws -> Data {
        let json = UnreadMemberMemoryTests.file(extra: extra, at: place)
        let object = try JSONSerialization.jsonObject(with: json)
        return try PropertyListSerialization.data(fromPropertyList: object, format: .xml, options: 0)
    }

    /// Loads `data` with the general loader; returns the context and the most entries the XML
    /// tapes held.
    static func load(_ data: Data) throws -> (context: ModelContext, tapeEntries: Int) {
        let context = ModelContext()
        var entries = 0
        try withModelSource(for: data) { source in
            let xml = try #require(source as? XMLPlistSource)
            try GraphLoader(context: context, options: DeserializationOptions(), source: source).loadAll()
            entries = xml.tapeHighWater
        }
        return (context, entries)
    }

    @Test(
        "A member nobody reads, holding 25,000 arrays, loads every model and keeps the tapes at a few entries",
        arguments: UnreadMemberMemoryTests.Place.allCases)
    func largeUnreadMember(at place: UnreadMemberMemoryTests.Place) throws {
        let data = try Self.file(extra: Self.largeArray, at: place)
        let (context, entries) = try Self.load(data)
        // Recorded, the member alone would take 100,001 entries.
        #expect(entries < 60, "the tapes held \(entries) entries")
        let note = try #require(context.models(of: Note.self).first)
        #expect(note.modelId == UnreadMemberMemoryTests.noteId && note.text == "kept" && note.count == 7)
        if place != .bareModel {
            let author = try #require(context.models(of: Author.self).first)
            #expect(author.name == "Ann" && author.age == 40)
            #expect(author.birthday == Date(timeIntervalSinceReferenceDate: 0))
        }
        // The public loader reads the same.
        let loaded = ModelContext()
        try loaded.load(data)
        let again = try #require(loaded.model(Note.self, modelId: UnreadMemberMemoryTests.noteId))
        #expect(again.text == "kept" && again.count == 7)
    }

    @Test("A type that lists its keys sees every member, the unread ones too, in the order of the text")
    func allKeysListsEveryMember() throws {
        let id = ModelID.generate()
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>format</key><string>ModelKit</string><key>version</key><integer>1</integer>
            <key>models</key><array><dict><key>model</key><string>KeyLister</string><key>modelId</key><string>\(id)</string>
            <key>properties</key><dict><key>z</key><array><integer>1</integer></array><key>label</key><string>x</string>
            <key>a</key><dict><key>b</key><true/></dict></dict></dict></array></dict></plist>
            """
        let (context, _) = try Self.load(Data(xml.utf8))
        let lister = try #require(context.model(KeyLister.self, modelId: id))
        #expect(lister.keys == ["z", "label", "a"])
        #expect(lister.label == "x")
    }

    @Test(
        "Nesting too deep inside a member nobody reads fails with its offset, and nothing loads",
        arguments: UnreadMemberMemoryTests.Place.allCases)
    func deepNestingInUnreadMember(at place: UnreadMemberMemoryTests.Place) throws {
        let depth = SerializationError.maximumDepth + 10
        let marker = "\"DEEP\""
        let text = String(decoding: try Self.file(extra: marker, at: place), as: UTF8.self)
        let deep = String(repeating: "<array>", count: depth) + String(repeating: "</array>", count: depth)
        let data = Data(text.replacingOccurrences(of: "<string>DEEP</string>", with: deep).utf8)
        let context = ModelContext()
        let error = #expect(throws: SerializationError.self) { try context.load(data) }
        #expect(error?.code == .nestingTooDeep)
        // At the start tag that goes one level past the limit.
        let bytes = Array(data)
        let first = bytes.indices.first { bytes[$0...].starts(with: Array("<array><array>".utf8)) }!
        #expect(error?.byteOffset.map { $0 > first && (Array(bytes[$0...]).starts(with: Array("<array>".utf8))) } == true)
        #expect(context.allModels.isEmpty)
    }

    @Test(
        "Bad text inside a member nobody reads fails at its byte, saying what was expected, and nothing loads",
        arguments: [
            ("<integer>12x</integer>", "an integer of at most 64 bits"),
            ("<real>1.5.5</real>", "a real number"),
            ("<date>2001-13-01T00:00:00Z</date>", "a date like 2001-01-01T00:00:00Z"),
            ("<data>AA$A</data>", "base64 data"),
            ("<string>a &nope; b</string>", "an entity (&amp; &lt; &gt; &quot; &apos;) or a character reference"),
            ("<array><string>x</array>", "</string>"),
            ("<map/>", "a property-list value"),
        ])
    func badTextInUnreadMember(member: String, expected: String) throws {
        let text = String(decoding: try Self.file(extra: "\"BAD\"", at: .envelope), as: UTF8.self)
        let data = Data(text.replacingOccurrences(of: "<string>BAD</string>", with: member).utf8)
        let start = Array(data).indices.first { Array(data)[$0...].starts(with: Array(member.utf8)) }!
        let context = ModelContext()
        let error = #expect(throws: SerializationError.self) { try context.load(data) }
        #expect(error?.code == .malformedInput)
        #expect(error?.expected == expected)
        #expect(error?.byteOffset.map { (start..<start + member.utf8.count).contains($0) } == true)
        #expect(context.allModels.isEmpty)
    }
}
