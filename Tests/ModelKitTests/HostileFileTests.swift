import Foundation
import ModelKitTestSupport
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

    @Test("a dictionary declaring 2^62 members fails at once instead of looping over them", .hangBackstop)
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

/// A context holds one model per type and object id: a file must not make it drop one silently.
@Suite("Object id clashes")
struct ObjectIdClashTests {
    init() throws {
        try ModelRegistry.register(Note.self, Author.self)
    }

    static let id1 = "00000000-0000-0000-0000-000000000001"
    static let id2 = "00000000-0000-0000-0000-000000000002"
    static let id3 = "00000000-0000-0000-0000-000000000003"

    func note(_ id: String, objectId: String?, text: String, name: String = "Note") -> String {
        let object = objectId.map { #","objectId":"\#($0)""# } ?? ""
        return #"{"model":"\#(name)","modelId":"\#(id)"\#(object),"properties":{"text":"\#(text)"}}"#
    }

    func file(_ models: String...) -> Data {
        Data(#"{"format":"ModelKit","version":1,"models":[\#(models.joined(separator: ","))]}"#.utf8)
    }

    @Test(
        "two models of one type with one object id in a file are a typed error, in every format",
        arguments: PersistenceFormat.allCases)
    func duplicateInFile(format: PersistenceFormat) throws {
        let json = file(note(Self.id1, objectId: "x", text: "a"), note(Self.id2, objectId: "x", text: "b"))
        let data = try converting(json, to: format)
        for context in [ModelContext(), ModelContext()] {
            let before = try snapshot(context)
            let error = #expect(throws: SerializationError.self) { try context.load(data) }
            #expect(error?.code == .duplicateObjectId)
            #expect(error?.modelIndex == 1)
            #expect(error?.path == "objectId")
            #expect(error?.found == #""x", already the object id of model index 0"#)
            #expect(try snapshot(context) == before)
            _ = Author.instance(in: context)  // the second round loads into a context that is not empty
        }
    }

    @Test("the same object id on models of two types is no clash")
    func sameObjectIdOtherType() throws {
        let context = ModelContext()
        let author = #"{"model":"Author","modelId":"\#(Self.id2)","objectId":"x","properties":{}}"#
        try context.load(file(note(Self.id1, objectId: "x", text: "a"), author))
        #expect(context.model(Note.self, objectId: "x")?.text == "a")
        #expect(context.model(Author.self, objectId: "x") != nil)
    }

    @Test("a model whose object id belongs to another model in the context is a typed error, and nothing loads")
    func clashWithContext() throws {
        let context = ModelContext()
        try context.load(file(note(Self.id1, objectId: "x", text: "held")))
        let before = try snapshot(context)
        let data = file(note(Self.id3, objectId: nil, text: "other"), note(Self.id2, objectId: "x", text: "new"))
        let error = #expect(throws: SerializationError.self) { try context.load(data) }
        #expect(error?.code == .duplicateObjectId)
        #expect(error?.modelIndex == 1)
        #expect(error?.found == #""x", the object id of model \#(Self.id1) in the context"#)
        #expect(try snapshot(context) == before)
    }

    @Test("a file may move an object id from one model to another in the context in one load")
    func objectIdMoves() throws {
        let context = ModelContext()
        try context.load(file(note(Self.id1, objectId: "x", text: "first")))
        try context.load(file(note(Self.id1, objectId: "y", text: "first"), note(Self.id2, objectId: "x", text: "second")))
        #expect(context.model(Note.self, objectId: "x")?.text == "second")
        #expect(context.model(Note.self, objectId: "y")?.text == "first")
        // Loading a model again, with its own object id, is no clash either.
        try context.load(file(note(Self.id2, objectId: "x", text: "again")))
        #expect(context.model(Note.self, objectId: "x")?.text == "again")
    }
}

extension ObjectIdClashTests {
    @Test("the model-level decoder applies the same object id rules")
    func modelLevelDecoder() throws {
        let context = ModelContext()
        let array = "[" + note(Self.id1, objectId: "x", text: "a") + "," + note(Self.id2, objectId: "x", text: "b") + "]"
        let error = #expect(throws: SerializationError.self) { _ = try Note.instance(fromJSON: Data(array.utf8), in: context) }
        #expect(error?.code == .duplicateObjectId)
        #expect(error?.modelIndex == 1)
        #expect(context.isEmpty)
        let held = try Note.instance(fromJSON: Data(note(Self.id1, objectId: "x", text: "held").utf8), in: context)
        let clash = #expect(throws: SerializationError.self) {
            _ = try Note.instance(fromJSON: Data(self.note(Self.id2, objectId: "x", text: "b").utf8), in: context)
        }
        #expect(clash?.code == .duplicateObjectId)
        #expect(context.model(Note.self, objectId: "x") === held)
        #expect(context.count == 1)
    }
}

/// A binary property list may use one object many times; what it decodes to is bounded by its
/// size (``DecodedSizeLimit``).
@Suite("Decoded size")
struct DecodedSizeTests {
    init() throws {
        try ModelRegistry.register(Everything.self, Note.self)
    }

    static let id = "00000000-0000-0000-0000-000000000001"

    /// A file of one `Everything` whose `property` is the object `value` makes.
    func file(_ property: String, _ value: (inout PlistBuilder) -> Int) -> Data {
        var plist = PlistBuilder()
        let node = value(&plist)
        let properties = plist.dictionary([(plist.string(property), node)])
        let model = plist.model("Everything", id: Self.id, properties: properties)
        return plist.data(top: model)
    }

    func expectLimit(_ data: Data) throws {
        let context = ModelContext()
        Note.instance(in: context).text = "before"
        let before = try snapshot(context)
        let error = #expect(throws: SerializationError.self) { try context.load(data) }
        #expect(error?.code == .limitExceeded)
        #expect(error?.modelIndex == 0)
        #expect(error?.expected.contains("bytes of decoded values for a file of \(data.count) bytes") == true)
        #expect(try snapshot(context) == before)
        let empty = ModelContext()
        #expect(throws: SerializationError.self) { try empty.load(data) }
        #expect(empty.isEmpty)
    }

    @Test("20,000 uses of one 1 MiB string share one decoded string instead of taking 20 GB", .hangBackstop)
    func sharedLargeString() throws {
        let data = file("strings") { plist in
            let big = plist.string(String(repeating: "x", count: 1 << 20))
            return plist.array(Array(repeating: big, count: 20_000))
        }
        #expect(data.count < 1_100_000)
        let context = ModelContext()
        try context.load(data)
        let strings = try #require(context.models(of: Everything.self).first).strings
        #expect(strings.count == 20_000)
        // One storage for all: the same bytes at the same address.
        var first = strings[0]
        var last = strings[19_999]
        let firstBase = first.withUTF8 { $0.baseAddress }
        let lastBase = last.withUTF8 { $0.baseAddress }
        #expect(firstBase == lastBase)
        #expect(last.utf8.count == 1 << 20)
    }

    @Test("a 140 KB file of uses of a hundred distinct 1 KiB strings stops at the limit")
    func manyUsesOfDistinctStrings() throws {
        // Each string is decoded once (100 KiB in all), but every use is an element: 20,000
        // uses of the array of 100 would take 32 MB, past 32 times the file's size.
        let data = file("nested") { plist in
            let texts = (0..<100).map { plist.string(String(repeating: "x", count: 1000) + "\($0)") }
            let inner = plist.array(texts)
            return plist.array(Array(repeating: inner, count: 20_000))
        }
        #expect(data.count < 150_000)
        try expectLimit(data)
    }

    @Test("a 12 KB array of shared arrays stops at the limit instead of making 9 million strings", .hangBackstop)
    func sharedNestedArrays() throws {
        let data = file("nested") { plist in
            let leaf = plist.string("s")
            let inner = plist.array(Array(repeating: leaf, count: 3000))
            return plist.array(Array(repeating: inner, count: 3000))
        }
        #expect(data.count < 13_000)
        try expectLimit(data)
    }

    @Test("shared dictionaries count too")
    func sharedDictionaries() throws {
        // 3,000 uses of one address with 3,000 extra members: each use is 3,004 elements.
        var plist = PlistBuilder()
        let key = plist.string("k")
        let one = plist.integer(1)
        let street = plist.string("street")
        let city = plist.string("city")
        let coordinates = plist.string("coordinates")
        let zero = plist.real(0)
        let point = plist.dictionary([(plist.string("latitude"), zero), (plist.string("longitude"), zero)])
        let members = [(key: street, value: street), (key: city, value: city), (key: coordinates, value: point)]
        let address = plist.dictionary(members + Array(repeating: (key: key, value: one), count: 3000))
        let addresses = plist.array(Array(repeating: address, count: 3000))
        let properties = plist.dictionary([(plist.string("addresses"), addresses)])
        let model = plist.model("Everything", id: Self.id, properties: properties)
        try expectLimit(plist.data(top: model))
    }

    @Test("sharing within the limit loads, and the values are all there")
    func sharingWithinLimit() throws {
        let data = file("strings") { plist in
            let text = plist.string(String(repeating: "y", count: 10_000))
            return plist.array(Array(repeating: text, count: 500))
        }
        let context = ModelContext()
        try context.load(data)
        let model = try #require(context.models(of: Everything.self).first)
        #expect(model.strings.count == 500)
        #expect(model.strings.allSatisfy { $0.count == 10_000 })
    }
}

/// Duplicate keys mean one thing wherever they are: an error in a model's header and in the
/// envelope, the first one in properties (as Codable reads them), in every format.
@Suite("Duplicate keys")
struct DuplicateKeyTests {
    init() throws {
        try ModelRegistry.register(Note.self)
    }

    static let id1 = "00000000-0000-0000-0000-000000000001"
    static let id2 = "00000000-0000-0000-0000-000000000002"

    func envelope(_ models: String, extra: String = "") -> Data {
        Data(#"{"format":"ModelKit","version":1,\#(extra)"models":[\#(models)]}"#.utf8)
    }

    @Test(
        "a repeated header key is an error, in JSON and binary property lists",
        arguments: [PersistenceFormat.json, .binaryPropertyList])
    func repeatedHeaderKey(format: PersistenceFormat) throws {
        // Property lists cannot repeat a key through Foundation: build the binary one by hand.
        let data: Data
        if format == .json {
            data = envelope(#"{"model":"Note","modelId":"\#(Self.id1)","modelId":"\#(Self.id2)","properties":{}}"#)
        } else {
            var plist = PlistBuilder()
            let name = plist.string("Note")
            let id1 = plist.string(Self.id1)
            let id2 = plist.string(Self.id2)
            let empty = plist.dictionary([])
            let keys = ["model", "modelId", "modelId", "properties"].map { plist.string($0) }
            let model = plist.dictionary(zip(keys, [name, id1, id2, empty]).map { (key: $0, value: $1) })
            data = plist.data(top: model)
        }
        let context = ModelContext()
        let error = #expect(throws: SerializationError.self) { try context.load(data) }
        #expect(error?.code == .malformedInput)
        #expect(error?.path == "modelId")
        #expect(error?.expected == #""modelId" once in a model dictionary"#)
        #expect(context.isEmpty)
    }

    @Test("a repeated envelope key is an error, in JSON and binary property lists")
    func repeatedEnvelopeKey() throws {
        let note = #"{"model":"Note","modelId":"\#(Self.id1)","properties":{}}"#
        for extra in [#""models":[],"#, #""version":1,"#, #""format":"ModelKit","#] {
            let error = #expect(throws: SerializationError.self) { try ModelContext().load(envelope(note, extra: extra)) }
            #expect(error?.code == .malformedInput)
            #expect(error?.expected.hasSuffix("once in the envelope") == true)
        }
        var plist = PlistBuilder()
        let models = plist.array([])
        let format = plist.string("ModelKit")
        let version = plist.integer(1)
        let keys = ["format", "version", "models", "models"].map { plist.string($0) }
        let top = plist.dictionary(zip(keys, [format, version, models, models]).map { (key: $0, value: $1) })
        let error = #expect(throws: SerializationError.self) { try ModelContext().load(plist.data(top: top)) }
        #expect(error?.code == .malformedInput)
        #expect(error?.path == "models")
    }

    @Test("in properties the first of repeated keys counts, in JSON and binary property lists, in one pass or two")
    func repeatedPropertyKey() throws {
        let json = envelope(#"{"model":"Note","modelId":"\#(Self.id1)","properties":{"text":"first","count":1,"text":"second"}}"#)
        var plist = PlistBuilder()
        let name = plist.string("Note")
        let id = plist.string(Self.id1)
        let keys = ["text", "count", "text"].map { plist.string($0) }
        let values = [plist.string("first"), plist.integer(1), plist.string("second")]
        let properties = plist.dictionary(zip(keys, values).map { (key: $0, value: $1) })
        let model = plist.dictionary(["model": name, "modelId": id, "properties": properties])
        for data in [json, plist.data(top: model)] {
            let empty = ModelContext()
            try empty.load(data)
            #expect(empty.models(of: Note.self).map(\.text) == ["first"])
            let general = ModelContext()
            _ = Author.instance(in: general)
            try general.load(data)
            #expect(general.models(of: Note.self).map(\.text) == ["first"])
        }
    }
}
