import Foundation
import Testing
import ModelKitTestSupport

@testable import ModelKit

/// Members of a model's properties that its type doesn't read (a newer version's property, or a
/// hostile file's padding) are checked like any JSON but not kept in memory.
@Suite("Unread members of properties")
struct UnreadMemberTests {
    init() throws {
        try ModelRegistry.register(Note.self)
    }

    /// A file with one note whose properties also hold `extra` (JSON text) before its own keys.
    func file(extra: String) -> Data {
        let id = ModelID.generate()
        let model = #"{"model":"Note","modelId":"\#(id)","properties":{"extra":\#(extra),"text":"kept","count":7}}"#
        return Data(#"{"format":"ModelKit","version":1,"models":[\#(model)]}"#.utf8)
    }

    @Test("A member nobody reads, holding two million numbers, loads with the values that are read")
    func largeUnreadMemberLoads() throws {
        let extra = "[" + Array(repeating: "1", count: 2_000_000).joined(separator: ",") + "]"
        let context = ModelContext()
        try context.load(file(extra: extra))
        let note = try #require(context.models(of: Note.self).first)
        #expect(note.text == "kept")
        #expect(note.count == 7)
    }

    @Test("The tape records only the members that are read")
    func tapeKeepsOnlyReadMembers() throws {
        let text = #"{"a":[1,2,{"b":[3,4,5]}],"text":"x","z":{"c":"d"},"count":2}"#
        let bytes = Array(text.utf8)
        try bytes.withUnsafeBufferPointer { buffer in
            let tape = JSONTape(bytes: buffer)
            let end = try tape.parse(at: 0, keptKeys: [Array("text".utf8), Array("count".utf8)])
            #expect(end == bytes.count)
            // The object, two keys and their two values.
            #expect(tape.entries.count == 5)
            #expect(tape.entries[0].count == 2)
            #expect(tape.entries[0].end == 5)
            let all = try tape.parse(at: 0)
            #expect(all == end)
            #expect(tape.entries.count > 5)
        }
    }

    @Test("Keys kept at a depth filter only the objects that deep, and the rest reads the same")
    func keptKeysAtDepth() throws {
        let text = #"{"list":[{"body":{"data":{"id":"a","big":[1,{"x":2}],"last_modified":5}},"id":"top"}],"id":"root"}"#
        let record = try JSONRecordText(Data(text.utf8), keptKeys: (depth: 4, keys: ["id", "last_modified"]))
        // The root is at depth 0, the list at 1, its item at 2, "body" at 3 and "data" at 4.
        let item = try #require(record.member(record.root, "list").flatMap(record.elements)?.first)
        let data = try #require(record.member(item, "body").flatMap { record.member($0, "data") })
        #expect(record.member(data, "id").flatMap(record.string) == "a")
        #expect(try record.member(data, "last_modified").map(record.value) == 5)
        #expect(record.member(data, "big") == nil)
        // Objects at other depths keep all their members.
        #expect(record.member(item, "id").flatMap(record.string) == "top")
        #expect(record.member(record.root, "id").flatMap(record.string) == "root")
        #expect(try ModelValue(json: Data(text.utf8))["list"]?[0]?["body"]?["data"]?["big"] == [1, ["x": 2]])
        // A member that is not kept is still checked.
        let broken = text.replacingOccurrences(of: #""x":2"#, with: #""x":tru"#)
        #expect(throws: SerializationError.self) {
            _ = try JSONRecordText(Data(broken.utf8), keptKeys: (depth: 4, keys: ["id", "last_modified"]))
        }
    }

    @Test(
        "An error inside a member nobody reads is still an error, at the same byte offset and with the same message, and nothing loads",
        arguments: ["[1,tru]", #"{"a" 1}"#, #"["\u12"]"#, "[1,]", "-", #""\#u{1}""#, "[1 2]", "{\"a\":[{\"b\":nul}]}"])
    func errorsInUnreadMembers(extra: String) throws {
        let data = file(extra: extra)
        let context = ModelContext()
        let kept = Note.instance(in: context)
        let error = #expect(throws: SerializationError.self) { try context.load(data) }
        #expect(error?.code == .malformedInput)
        #expect(context.allModels.count == 1 && context.allModels.first === kept)
        // The same error as a parse that keeps everything.
        let bytes = Array(data)
        let start = bytes.indices.first { bytes[$0...].starts(with: Array("{\"extra\"".utf8)) }!
        let full = bytes.withUnsafeBufferPointer { buffer in
            #expect(throws: SerializationError.self) { _ = try JSONTape(bytes: buffer).parse(at: start) }
        }
        #expect(error?.byteOffset == full?.byteOffset)
        #expect(error?.expected == full?.expected)
    }

    /// A random JSON value, `depth` levels deep at most.
    static func randomValue(_ random: inout SplitMix64, depth: Int) -> String {
        let pick = random.next() % (depth > 0 ? 9 : 6)
        switch pick {
        case 0: return "null"
        case 1: return random.next() % 2 == 0 ? "true" : "false"
        case 2: return String(Int64(bitPattern: random.next()) >> Int64(random.next() % 64))
        case 3: return ["0.5", "-1e-3", "2E+10", "-0", "3.25e2"][Int(random.next() % 5)]
        case 4: return [#""""#, #""a b""#, #""é\n\"\\""#, #""\u00e9\ud83d\ude00""#][Int(random.next() % 4)]
        case 5: return " \(randomValue(&random, depth: 0))\n"
        case 6, 7:
            let count = Int(random.next() % 4)
            return "[" + (0..<count).map { _ in randomValue(&random, depth: depth - 1) }.joined(separator: ",") + "]"
        default:
            let count = Int(random.next() % 4)
            let members = (0..<count).map { index in #""k\#(index)" : \#(randomValue(&random, depth: depth - 1))"# }
            return "{" + members.joined(separator: ",") + "}"
        }
    }

    @Test("Checking a value without recording it agrees with parsing it, on random valid and damaged JSON", arguments: [1, 2, 3])
    func checkingAgreesWithParsing(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var failures = 0
        for _ in 0..<2_000 {
            var bytes = Array(Self.randomValue(&random, depth: 4).utf8)
            // Half of them damaged: a byte removed, replaced or added.
            if random.next() % 2 == 0, !bytes.isEmpty {
                let at = Int(random.next() % UInt64(bytes.count))
                let damage = Array(#"{}[],:"\ -1et"#.utf8)
                let byte = damage[Int(random.next() % UInt64(damage.count))]
                switch random.next() % 3 {
                case 0: bytes.remove(at: at)
                case 1: bytes[at] = byte
                default: bytes.insert(byte, at: at)
                }
            }
            bytes.withUnsafeBufferPointer { buffer in
                var parser = JSONScanner(bytes: buffer, position: 0)
                var tape: [JSONTape.Entry] = []
                var checker = JSONScanner(bytes: buffer, position: 0)
                let parsed = Result { try parser.value(into: &tape, depth: 0) }
                let checked = Result { try checker.checkValue(depth: 0) }
                switch (parsed, checked) {
                case (.success, .success):
                    #expect(parser.position == checker.position, "\(String(decoding: bytes, as: UTF8.self))")
                case (.failure(let a as SerializationError), .failure(let b as SerializationError)):
                    failures += 1
                    #expect(a.byteOffset == b.byteOffset, "\(String(decoding: bytes, as: UTF8.self))")
                    #expect(a.expected == b.expected, "\(String(decoding: bytes, as: UTF8.self))")
                default:
                    Issue.record("parsing and checking disagree on \(String(decoding: bytes, as: UTF8.self))")
                }
            }
        }
        #expect(failures > 200)
    }
}

@Suite("Failing fast")
struct FailFastTests {
    init() throws {
        try ModelRegistry.register(Note.self)
    }

    @Test("A file that turns to zero bytes after a valid start fails at the first zero byte", arguments: ["\"x", "[1, 2", "{\"a\": [", "tr"])
    func zerosAfterAValidStart(tail: String) throws {
        let id = ModelID.generate()
        let prefix = #"{"format":"ModelKit","version":1,"models":[{"model":"Note","modelId":"\#(id)","properties":{"text":\#(tail)"#
        var data = Data(prefix.utf8)
        data.append(Data(count: 8 << 20))
        let context = ModelContext()
        let error = #expect(throws: SerializationError.self) { try context.load(data) }
        #expect(error?.byteOffset == prefix.utf8.count)
        #expect(context.allModels.isEmpty)
    }
}
