import Foundation
import ModelKit
import Testing

/// A model whose decoding derives a value from another: its properties must go through its own
/// `init(from:)`, never be filled in place.
final class Shouted: ModelObject<Shouted.Properties> {
    struct Properties: ModelProperties, Equatable {
        var word = ""
        var length = 0

        init() {}

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            word = try container.decode(String.self, forKey: .word)
            length = word.count
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(word, forKey: .word)
        }

        private enum CodingKeys: String, CodingKey { case word }
    }
}

/// A model whose initializer decodes required values into optional properties that are nil by
/// default: the direct plan only fills properties whose defaults encode as the decoded type, so
/// these go through the initializer.
final class Nicknamed: ModelObject<Nicknamed.Properties> {
    struct Properties: ModelProperties, Equatable {
        var nickname: String?
        var rank: Int?

        init() {}

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            nickname = try container.decode(String.self, forKey: .nickname)
            rank = try container.decode(Int.self, forKey: .rank)
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(nickname, forKey: .nickname)
            try container.encodeIfPresent(rank, forKey: .rank)
        }

        private enum CodingKeys: String, CodingKey { case nickname, rank }
    }
}

/// A model whose decoding clamps a number and trims a name: plain keys and types, so only the
/// probes with awkward values can tell that its initializer changes what it reads.
final class Clamped: ModelObject<Clamped.Properties> {
    struct Properties: ModelProperties, Equatable {
        var name = ""
        var stock = 0

        init() {}

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = String(try container.decode(String.self, forKey: .name).prefix(100))
            stock = max(0, try container.decode(Int.self, forKey: .stock))
        }
    }
}

/// A model whose decoding rejects an empty title.
final class Titled: ModelObject<Titled.Properties> {
    struct Properties: ModelProperties, Equatable {
        var title = "untitled"

        init() {}

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            title = try container.decode(String.self, forKey: .title)
            if title.isEmpty {
                throw DecodingError.dataCorruptedError(forKey: .title, in: container, debugDescription: "empty title")
            }
        }
    }
}

/// Plain properties of every kind the direct fill reads from JSON text.
final class Reading: ModelObject<Reading.Properties> {
    struct Properties: ModelProperties, Equatable {
        var label = ""
        var count = 0
        var value = 0.0
        var at = Date(timeIntervalSinceReferenceDate: 0)
        var words: [String] = []
        var next = ModelRef<Reading>()
    }
}

@Suite("Loading")
struct LoadingTests {
    init() {
        try? ModelRegistry.register(
            Author.self, Post.self, Note.self, Shouted.self, Nicknamed.self, Clamped.self, Titled.self, Reading.self)
    }

    static let id1 = "00000000-0000-0000-0000-0000000000A1"
    static let id2 = "00000000-0000-0000-0000-0000000000A2"

    func envelope(_ models: String) -> Data {
        Data(#"{"format":"ModelKit","version":1,"models":[\#(models)]}"#.utf8)
    }

    /// `value` with `"objectId": null` (`{"__type": "Null"}` in a property list) added to every
    /// model and pointer without an object id, as earlier versions wrote them.
    func withNullObjectIds(_ value: Any) -> Any {
        if let dictionary = value as? [String: Any] {
            var result = dictionary.mapValues(withNullObjectIds)
            if result["modelId"] != nil, result["objectId"] == nil { result["objectId"] = ["__type": "Null"] }
            return result
        }
        if let array = value as? [Any] { return array.map(withNullObjectIds) }
        return value
    }

    @Test("files with null object ids in headers and pointers, as earlier versions wrote, load the same")
    func nullObjectIds() throws {
        let source = ModelContext()
        makeBlog(authors: 2, postsPerAuthor: 3, in: source)
        source.models(of: Post.self)[0].objectId = "kept"
        let json = String(decoding: try source.data(format: .json), as: UTF8.self)
        #expect(!json.contains(#""objectId":null"#) && json.contains(#""objectId":"kept""#))
        // Every model id not followed by an object id gets a null one.
        let legacy = try NSRegularExpression(pattern: #"("modelId":"[0-9A-F-]{36}")(?!,"objectId")"#)
            .stringByReplacingMatches(
                in: json, range: NSRange(json.startIndex..., in: json), withTemplate: #"$1,"objectId":null"#)
        #expect(legacy.contains(#""objectId":null"#))

        let plist = try PropertyListSerialization.propertyList(from: source.data(format: .binaryPropertyList), format: nil)
        let legacyPlist = try PropertyListSerialization.data(
            fromPropertyList: withNullObjectIds(plist), format: .binary, options: 0)

        for data in [Data(legacy.utf8), legacyPlist] {
            let target = ModelContext()
            try target.load(data)
            #expect(try snapshot(target) == snapshot(source))
            #expect(target.model(Post.self, objectId: "kept") != nil)
            for post in target.models(of: Post.self) {
                let author = try #require(post.persistedProperties.author.resolve(in: target))
                #expect(author.posts.contains { $0 === post })
            }
        }
    }

    @Test("a pointer without an object id makes a placeholder without one")
    func pointerWithoutObjectId() throws {
        let pointer = #"{"__type":"ModelPointer","model":"Author","modelId":"\#(Self.id2)"}"#
        let post = #"{"model":"Post","modelId":"\#(Self.id1)","properties":{"author":\#(pointer)}}"#
        let context = ModelContext()
        try context.load(envelope(post), options: DeserializationOptions(danglingPointers: .placeholder))
        let author = try #require(context.model(Author.self, modelId: ModelID(Self.id2)!))
        #expect(author.modelState == .needsData)
        #expect(author.objectId == nil)
        #expect(context.model(Post.self, modelId: ModelID(Self.id1)!)?.author === author)
    }

    @Test("properties in another order, with unknown, repeated and missing keys, read as Codable reads them")
    func propertiesOutOfOrder() throws {
        let shuffled = #"{"tags":["a","b"],"extra":{"x":[1,2]},"title":"first","body":"B","title":"second"}"#
        let missing = #"{"title":"only"}"#
        let context = ModelContext()
        try context.load(
            envelope(
                #"{"model":"Post","modelId":"\#(Self.id1)","properties":\#(shuffled)},"#
                    + #"{"model":"Post","modelId":"\#(Self.id2)","properties":\#(missing)}"#))
        let one = try #require(context.model(Post.self, modelId: ModelID(Self.id1)!))
        #expect(one.title == "first")
        #expect(one.body == "B")
        #expect(one.tags == ["a", "b"])
        #expect(one.author == nil)
        let two = try #require(context.model(Post.self, modelId: ModelID(Self.id2)!))
        #expect(two.title == "only")
        #expect(two.body == "" && two.tags.isEmpty && two.author == nil)
    }

    @Test("a value of the wrong type in a model filled in place is still a typed error, and nothing loads")
    func mismatchAfterOtherModels() throws {
        let context = ModelContext()
        let good = #"{"model":"Note","modelId":"\#(Self.id1)","properties":{"text":"ok","count":1}}"#
        let bad = #"{"model":"Note","modelId":"\#(Self.id2)","properties":{"text":"ok","count":1.5}}"#
        do {
            try context.load(envelope(good + "," + bad))
            Issue.record("loaded a Note whose count is 1.5")
        } catch let error as SerializationError {
            #expect(error.modelIndex == 1)
            #expect(error.path == "properties.count")
        }
        #expect(context.isEmpty)
    }

    @Test("properties with a custom init(from:) that derives values go through it", arguments: PersistenceFormat.allCases)
    func derivedValues(format: PersistenceFormat) throws {
        let source = ModelContext()
        for word in ["a", "hello", "ünïcödé"] {
            Shouted.instance(in: source).word = word
        }
        let target = ModelContext()
        try target.load(source.data(format: format))
        let loaded = target.models(of: Shouted.self)
        #expect(loaded.count == 3)
        for model in loaded { #expect(model.length == model.word.count && model.length > 0) }
    }

    @Test("required values decoded into optional properties that are nil by default")
    func optionalFromRequired() throws {
        let context = ModelContext()
        let models = (1...3).map {
            #"{"model":"Nicknamed","modelId":"\#(Self.id1.dropLast())\#($0)","properties":{"nickname":"n\#($0)","rank":\#($0)}}"#
        }
        try context.load(envelope(models.joined(separator: ",")))
        #expect(Set(context.models(of: Nicknamed.self).compactMap { $0.nickname }) == ["n1", "n2", "n3"])
        #expect(Set(context.models(of: Nicknamed.self).compactMap { $0.rank }) == [1, 2, 3])
    }

    @Test("an init(from:) that clamps or trims what it reads still does so on load", arguments: PersistenceFormat.allCases)
    func clampingInitializer(format: PersistenceFormat) throws {
        let source = ModelContext()
        let model = Clamped.instance(in: source)
        // Written as they are (encoding is synthesized); reading must clamp and trim them.
        model.stock = -5
        model.name = String(repeating: "x", count: 300)
        let other = Clamped.instance(in: source)
        other.stock = 7
        other.name = "ok"
        let target = ModelContext()
        try target.load(source.data(format: format))
        let loaded = try #require(target.model(Clamped.self, modelId: model.modelId))
        #expect(loaded.stock == 0)
        #expect(loaded.name.count == 100)
        #expect(target.model(Clamped.self, modelId: other.modelId)?.stock == 7)
    }

    @Test(
        "an init(from:) that rejects a value still rejects it on load, and nothing loads", arguments: PersistenceFormat.allCases)
    func rejectingInitializer(format: PersistenceFormat) throws {
        let source = ModelContext()
        Titled.instance(in: source).title = "fine"
        Titled.instance(in: source).title = ""
        let target = ModelContext()
        #expect(throws: SerializationError.self) { try target.load(source.data(format: format)) }
        #expect(target.isEmpty)
    }

    @Test("pretty-printed files, whose pointers are read member by member, load the same as compact ones")
    func prettyPrinted() throws {
        let source = ModelContext()
        makeBlog(authors: 3, postsPerAuthor: 2, in: source)
        let compact = try source.data(format: .json)
        let pretty = try JSONSerialization.data(
            withJSONObject: try JSONSerialization.jsonObject(with: compact), options: [.prettyPrinted, .sortedKeys])
        for data in [compact, pretty] {
            let target = ModelContext()
            try target.load(data)
            #expect(try snapshot(target) == snapshot(source))
        }
    }

    @Test("a compact pointer naming another model type is still a type conflict at its byte offset")
    func compactPointerOfWrongType() throws {
        let post =
            #"{"model":"Post","modelId":"\#(Self.id1)","properties":{"title":"t","body":"","author":"#
            + #"{"__type":"ModelPointer","model":"Post","modelId":"\#(Self.id1)"},"tags":[]}}"#
        let context = ModelContext()
        do {
            try context.load(envelope(post))
            Issue.record("expected an error")
        } catch let error as SerializationError {
            #expect(error.code == .modelTypeConflict)
            #expect(error.byteOffset != nil)
        }
        #expect(context.isEmpty)
    }

    /// The outcome of loading one `Reading` whose properties are `properties` (JSON text).
    private func loadReading(_ properties: String) -> Result<Reading.Properties, any Error> {
        let text = #"{"model":"Reading","modelId":"\#(Self.id1)","properties":\#(properties)}"#
        let context = ModelContext()
        do {
            try context.load(envelope(text))
            guard let id = ModelID(Self.id1), let model = context.model(Reading.self, modelId: id) else {
                return .failure(CancellationError())
            }
            return .success(model.persistedProperties)
        } catch {
            #expect(context.isEmpty)
            return .failure(error)
        }
    }

    /// A `Reading`'s properties as the writer orders them, with `member` (`"key":value`) in place
    /// of the default member with its key.
    private func readingProperties(with member: String, separator: String) -> String {
        let defaults = [
            ("label", #""x""#), ("count", "1"), ("value", "2.5"),
            ("at", #"{"__type":"Date","iso":"2001-01-01T00:00:00Z"}"#), ("words", #"["w"]"#), ("next", "null"),
        ]
        let key = String(member.dropFirst().prefix { $0 != "\"" })
        let value = String(member.drop { $0 != ":" }.dropFirst())
        return "{" + defaults.map { #""\#($0.0)":\#(separator)\#($0.0 == key ? value : $0.1)"# }.joined(separator: ",") + "}"
    }

    @Test(
        "JSON read straight from the text gives what the general reader gives, also for awkward strings and numbers",
        arguments: [
            #""label":"plain""#, #""label":"quote \" and \\ and \n \t \u00e9 \ud83d\ude00""#, #""label":"héllo 🙂 ünï""#,
            #""label":"""#, #""count":-7"#, #""count":9223372036854775807"#, #""count":-9223372036854775808"#,
            #""count":9223372036854775808"#, #""count":1.0"#, #""count":01"#, #""count":-0"#, #""value":1.5"#,
            #""value":-0.0"#, #""value":1e300"#, #""value":1E-5"#, #""value":12345678901234567890"#, #""value":1."#,
            #""value":+1"#, #""value":.5"#, #""value":-"#, #""at":{"__type":"Date","iso":"2026-11-22T10:00:00.25Z"}"#,
            #""at":{"__type":"Date","iso":"not a date"}"#, #""words":[]"#, #""words":["a","b\"c","ü"]"#,
            #""words":["a",1]"#, #""next":null"#,
            #""next":{"__type":"ModelPointer","model":"Reading","modelId":"00000000-0000-0000-0000-0000000000A1"}"#,
            #""next":{"__type":"ModelPointer","model":"Reading","modelId":"00000000-0000-0000-0000-0000000000A1","objectId":null}"#,
            #""next":{"__type":"ModelPointer","model":"Post","modelId":"00000000-0000-0000-0000-0000000000A1"}"#,
            #""next":{"__type":"ModelPointer","model":"Reading","modelId":"00000000-0000-0000-0000-0000000000A2"}"#,
        ])
    func compactMatchesGeneral(member: String) throws {
        // A space after each key's colon is still valid JSON, but not the writer's compact form.
        let fast = loadReading(readingProperties(with: member, separator: ""))
        let general = loadReading(readingProperties(with: member, separator: " "))
        switch (fast, general) {
        case (.success(let a), .success(let b)):
            #expect(a.label == b.label && a.count == b.count && a.at == b.at && a.words == b.words)
            #expect(a.value.bitPattern == b.value.bitPattern)
            #expect(a.next.id == b.next.id)
        case (.failure(let a), .failure(let b)):
            #expect((a as? SerializationError)?.code == (b as? SerializationError)?.code)
            #expect(a is SerializationError)
        default:
            Issue.record("compact \(fast) but general \(general) for \(member)")
        }
    }

    @Test("invalid UTF-8 and control characters in a compactly written string are errors, and nothing loads")
    func invalidBytes() throws {
        for bad: [UInt8] in [[0xFF], [0xC3], [0x01], [0xED, 0xA0, 0x80]] {
            var text = Array(#"{"format":"ModelKit","version":1,"models":[{"model":"Reading","modelId":"\#(Self.id1)","#.utf8)
            text += Array(#""properties":{"label":"a"#.utf8) + bad + Array(#"b","count":1,"value":1,"#.utf8)
            text += Array(#""at":{"__type":"Date","iso":"2001-01-01T00:00:00Z"},"words":[],"next":null}}]}"#.utf8)
            let context = ModelContext()
            #expect(throws: SerializationError.self) { try context.load(Data(text)) }
            #expect(context.isEmpty)
        }
    }
}
