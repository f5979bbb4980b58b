import Foundation
import ModelKitTestSupport
import Testing

@testable import ModelKit

/// Whatever a JSON file holds that nobody reads (an envelope key, a model dictionary's key, a
/// property the type doesn't have) is checked but not recorded: the reader's memory follows the
/// nesting of what it skips, not its size. Measured by the entries the source's tape held at most,
/// which depends on the text only, not on the machine.
@Suite("Unread members take no memory")
struct UnreadMemberMemoryTests {
    init() throws {
        try ModelRegistry.register(Note.self)
        try ModelRegistry.register(Author.self)
        try ModelRegistry.register(Post.self)
        try ModelRegistry.register(KeyLister.self)
    }

    /// Where a file can hold a member nobody reads.
    enum Place: String, CaseIterable, CustomTestStringConvertible {
        /// A key of the envelope beside `format`, `version` and `models`.
        case envelope
        /// A key of a model dictionary beside its header keys.
        case modelDictionary
        /// A property of a type read by its direct plan (`Note`).
        case plannedProperties
        /// A property of a type read through `Codable` (`Author`, whose optionals have no plan).
        case codableProperties
        /// A key of a bare model dictionary (no envelope).
        case bareModel

        var testDescription: String { rawValue }
    }

    static let noteId = ModelID.generate()
    static let authorId = ModelID.generate()

    /// A file of a note and an author, with `extra` (JSON text) as the value of an unknown key
    /// at `place`.
    static func file(extra: String, at place: Place) -> Data {
        let member = #""unknown":\#(extra),"#
        func model(_ name: String, _ id: ModelID, _ properties: String, extraHere: Bool) -> String {
            let head = #"{"model":"\#(name)","modelId":"\#(id)","#
            let body = #""properties":{\#(extraHere && place != .modelDictionary ? member : "")\#(properties)}}"#
            return head + (extraHere && place == .modelDictionary ? member : "") + body
        }
        let note = model(
            "Note", noteId, #""text":"kept","count":7"#,
            extraHere: [.plannedProperties, .modelDictionary, .bareModel].contains(place))
        if place == .bareModel { return Data(note.utf8) }
        let author = model(
            "Author", authorId, #""name":"Ann","birthday":"2001-01-01T00:00:00Z","age":40"#,
            extraHere: place == .codableProperties)
        let envelope = place == .envelope ? member : ""
        return Data(#"{"format":"ModelKit",\#(envelope)"version":1,"models":[\#(note),\#(author)]}"#.utf8)
    }

    /// Loads `data` with the general loader; returns the context and the most entries the JSON
    /// tape held.
    static func load(_ data: Data) throws -> (context: ModelContext, tapeEntries: Int) {
        let context = ModelContext()
        var entries = 0
        try withModelSource(for: data) { source in
            let json = try #require(source as? JSONSource)
            try GraphLoader(context: context, options: DeserializationOptions(), source: source).loadAll()
            entries = json.tapeHighWater
        }
        return (context, entries)
    }

    static let largeArray = "[" + Array(repeating: "[1,{\"a\":\"b\"}]", count: 100_000).joined(separator: ",") + "]"

    @Test(
        "A member nobody reads, holding 100,000 arrays, loads every model and keeps the tape at a few entries",
        arguments: Place.allCases)
    func largeUnreadMember(at place: Place) throws {
        let (context, entries) = try Self.load(Self.file(extra: Self.largeArray, at: place))
        // Recorded, the member alone would take 600,001 entries.
        #expect(entries < 50, "the tape held \(entries) entries")
        let note = try #require(context.models(of: Note.self).first)
        #expect(note.modelId == Self.noteId && note.text == "kept" && note.count == 7)
        if place != .bareModel {
            let author = try #require(context.models(of: Author.self).first)
            #expect(author.name == "Ann" && author.age == 40)
            #expect(author.birthday == Date(timeIntervalSinceReferenceDate: 0))
        }
        // The public loader reads the same.
        let loaded = ModelContext()
        try loaded.load(Self.file(extra: Self.largeArray, at: place))
        let again = try #require(loaded.model(Note.self, modelId: Self.noteId))
        #expect(again.text == "kept" && again.count == 7)
    }

    @Test("A property the defaults leave out is found beside an unread member, and kept from the next model on")
    func optionalPropertyAfterUnreadMember() throws {
        // `birthday` is nil by default, so it is not among the keys kept at first: the first
        // author reads it from the text again, the second one from the tape.
        func author(_ id: ModelID, _ name: String, _ seconds: Int) -> String {
            let date = ISODate.string(from: Date(timeIntervalSinceReferenceDate: Double(seconds)))!
            let properties = #"{"name":"\#(name)","unknown":\#(Self.largeArray),"birthday":"\#(date)"}"#
            return #"{"model":"Author","modelId":"\#(id)","properties":\#(properties)}"#
        }
        let ids = [ModelID.generate(), ModelID.generate(), ModelID.generate()]
        let models = [author(ids[0], "a", 10), author(ids[1], "b", 20), author(ids[2], "c", 30)]
        let data = Data(#"{"format":"ModelKit","version":1,"models":[\#(models.joined(separator: ","))]}"#.utf8)
        let (context, entries) = try Self.load(data)
        #expect(entries < 50, "the tape held \(entries) entries")
        for (index, id) in ids.enumerated() {
            let loaded = try #require(context.model(Author.self, modelId: id))
            #expect(loaded.birthday == Date(timeIntervalSinceReferenceDate: Double(10 * (index + 1))))
        }
    }

    @Test("A type that lists its keys sees every member, the unread ones too, in the order of the text")
    func allKeysListsEveryMember() throws {
        let id = ModelID.generate()
        let model = #"{"model":"KeyLister","modelId":"\#(id)","properties":{"z":[1,[2]],"label":"x","a":{"b":1}}}"#
        let (context, _) = try Self.load(Data(#"{"format":"ModelKit","version":1,"models":[\#(model)]}"#.utf8))
        let lister = try #require(context.model(KeyLister.self, modelId: id))
        #expect(lister.keys == ["z", "label", "a"])
        #expect(lister.label == "x")
    }

    @Test(
        "Nesting too deep inside a member nobody reads fails with its offset, and nothing loads",
        arguments: Place.allCases)
    func deepNestingInUnreadMember(at place: Place) throws {
        let depth = SerializationError.maximumDepth + 10
        let extra = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        let data = Self.file(extra: extra, at: place)
        let context = ModelContext()
        let error = #expect(throws: SerializationError.self) { try context.load(data) }
        #expect(error?.code == .nestingTooDeep)
        // At a bracket of the member, where the brackets around it reach the limit.
        let bytes = Array(data)
        let member = bytes.indices.first { bytes[$0...].starts(with: Array("\"unknown\":".utf8)) }! + 10
        let limit = member + SerializationError.maximumDepth
        #expect(error?.byteOffset.map { (limit - 2)...limit ~= $0 } == true, "at \(String(describing: error?.byteOffset))")
        #expect(context.allModels.isEmpty)
    }

    @Test(
        "Bad syntax inside a member nobody reads fails at its byte, saying what was expected, and nothing loads",
        arguments: Place.allCases, ["[1,tru]", #"{"a" 1}"#, "[1,]", #"["\u12"]"#])
    func badSyntaxInUnreadMember(at place: Place, extra: String) throws {
        let data = Self.file(extra: extra, at: place)
        let context = ModelContext()
        let error = #expect(throws: SerializationError.self) { try context.load(data) }
        #expect(error?.code == .malformedInput)
        // The same error as parsing the member on its own, moved to where the member starts.
        let bytes = Array(data)
        let start = bytes.indices.first { bytes[$0...].starts(with: Array("\"unknown\":".utf8)) }! + 10
        let alone = Array(extra.utf8).withUnsafeBufferPointer { buffer in
            #expect(throws: SerializationError.self) { _ = try JSONTape(bytes: buffer).parse(at: 0) }
        }
        #expect(error?.byteOffset == alone.flatMap(\.byteOffset).map { $0 + start })
        #expect(error?.expected == alone?.expected)
        #expect(context.allModels.isEmpty)
    }
}

/// A model whose properties list the keys they were decoded from, as a custom `init(from:)` may.
final class KeyLister: ModelObject<KeyLister.Properties> {
    struct Properties: ModelProperties {
        var label = ""
        var keys: [String] = []

        init() {}

        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            keys = container.allKeys.map(\.stringValue)
            label = try container.decodeIfPresent(String.self, forKey: Key(stringValue: "label")) ?? ""
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(label, forKey: Key(stringValue: "label"))
        }
    }
}
