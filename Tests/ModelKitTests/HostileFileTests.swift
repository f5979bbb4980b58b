import Foundation
import Testing

@testable import ModelKit

/// Files made to hurt the app: each must fail with a typed error that says where and what was
/// expected, quickly, and leave the context exactly as it was.
@Suite("Hostile files")
struct HostileFileTests {
    init() throws {
        try ModelRegistry.register(Author.self, Post.self, Everything.self, Note.self, Profile.self)
    }

    static let id1 = "00000000-0000-0000-0000-000000000001"
    static let id2 = "00000000-0000-0000-0000-000000000002"

    /// Loads `data` into a context holding one note, and returns the SerializationError the load
    /// must throw, having checked that the context is exactly as before.
    func loadError(_ data: Data) throws -> SerializationError? {
        let context = ModelContext()
        let note = Note.instance(in: context)
        note.text = "before"
        let before = try snapshot(context)
        var caught: SerializationError?
        do {
            try context.load(data)
            Issue.record("expected an error")
        } catch let error as SerializationError {
            caught = error
        }
        #expect(try snapshot(context) == before)
        #expect(note.text == "before")
        // An empty context takes the one-pass loader first: it must fail the same way.
        let empty = ModelContext()
        #expect(throws: SerializationError.self) { try empty.load(data) }
        #expect(empty.isEmpty)
        return caught
    }

    @Test("a UTF-16 string whose count overflows is a typed error, not a stack overflow")
    func hugeUTF16Count() throws {
        // The top object alone: a UTF-16 string declaring 2^62 + 1 characters.
        var plist = PlistBuilder()
        let string = plist.raw(PlistBuilder.header(0x6, count: 1 << 62 + 1) + [0, 0x41])
        let error = try #require(try loadError(plist.data(top: string)))
        #expect(error.code == .typeMismatch)
        #expect(error.byteOffset == 8)
        #expect(error.found == "a string")

        // The same string as a property value and as a model id: read where strings are read.
        var inProperty = PlistBuilder()
        let bad = inProperty.raw(PlistBuilder.header(0x6, count: UInt64(Int.max / 2 + 7)) + [0, 0x41])
        let properties = inProperty.dictionary(["text": bad])
        let model = inProperty.model("Note", id: Self.id1, properties: properties)
        let valueError = try #require(try loadError(inProperty.data(top: model)))
        #expect(valueError.code == .malformedInput)
        #expect(valueError.byteOffset == 8 + 10)
        #expect(valueError.expected.contains("inside the object area"))

        var inId = PlistBuilder()
        let badId = inId.raw(PlistBuilder.header(0x6, count: UInt64(Int.max / 2 + 7)) + [0, 0x41])
        let name = inId.string("Note")
        let empty = inId.dictionary([])
        let idModel = inId.dictionary(["model": name, "modelId": badId, "properties": empty])
        #expect(try loadError(inId.data(top: idModel))?.code == .malformedInput)
    }

    @Test("a dictionary declaring 2^62 members fails at once instead of looping over them", .timeLimit(.minutes(1)))
    func hugeDictionaryCount() throws {
        var plist = PlistBuilder()
        let key = plist.string("a")
        let value = plist.integer(1)
        let byName = plist.dictionary([(key, value)], count: 1 << 62)
        let properties = plist.dictionary(["byName": byName])
        let model = plist.model("Everything", id: Self.id1, properties: properties)
        let data = plist.data(top: model)
        #expect(data.count < 300)
        let error = try #require(try loadError(data))
        #expect(error.code == .malformedInput)
        #expect(error.modelIndex == 0)
        #expect(error.expected.contains("4611686018427387904 elements"))
        #expect(error.found == "the end of the object area")
    }

    @Test("every count read from a binary property list is checked against the bytes that could hold it")
    func countsAreChecked() throws {
        // An array, strings and data, each declaring 2^40 elements in a file of a few bytes.
        let cases: [(kind: UInt8, payload: [UInt8], property: String)] = [
            (0xA, [], "strings"), (0x5, [0x41], "string"), (0x6, [0, 0x41], "string"), (0x4, [0x01], "data"),
        ]
        for (kind, payload, property) in cases {
            var plist = PlistBuilder()
            let bad = plist.raw(PlistBuilder.header(kind, count: 1 << 40) + payload)
            let properties = plist.dictionary([(plist.string(property), bad)])
            let model = plist.model("Everything", id: Self.id1, properties: properties)
            let error = try #require(try loadError(plist.data(top: model)))
            #expect(error.code == .malformedInput)
            #expect(error.byteOffset == 18)
            #expect(error.modelIndex == 0)
            #expect(error.found == "the end of the object area")
        }
    }

    @Test("a dictionary key that is not a string is a typed error, not a silently dropped entry")
    func nonStringKey() throws {
        var plist = PlistBuilder()
        let goodKey = plist.string("a")
        let numberKey = plist.integer(7)
        let one = plist.integer(1)
        let byName = plist.dictionary([(goodKey, one), (numberKey, one)])
        let properties = plist.dictionary(["byName": byName])
        let model = plist.model("Everything", id: Self.id1, properties: properties)
        let error = try #require(try loadError(plist.data(top: model)))
        #expect(error.code == .typeMismatch)
        #expect(error.path == "properties.byName")
        #expect(error.expected == "a string key")
        #expect(error.found == "number 7")
    }
}
