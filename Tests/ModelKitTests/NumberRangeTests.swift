import Foundation
import Testing

@testable import ModelKit

/// Out of range is out of range, whichever reader sees the number: files loaded in one pass or
/// in two, binary property lists, and the model-level decoders over `ModelValue`.
@Suite("Number ranges")
struct NumberRangeTests {
    init() throws {
        try ModelRegistry.register(Everything.self, Note.self)
    }

    static let id = "00000000-0000-0000-0000-000000000001"

    /// A file of one `Everything` model whose properties are `properties` (JSON members).
    func file(_ properties: String) -> Data {
        Data(
            #"{"format":"ModelKit","version":1,"models":[{"model":"Everything","modelId":"\#(Self.id)","properties":{\#(properties)}}]}"#
                .utf8)
    }

    /// The error loading `data` must give, into an empty context and into one that holds a
    /// note, both left as they were.
    func loadError(_ data: Data) throws -> SerializationError? {
        let empty = ModelContext()
        let first = #expect(throws: SerializationError.self) { try empty.load(data) }
        #expect(empty.isEmpty)
        let context = ModelContext()
        Note.instance(in: context).text = "before"
        let before = try snapshot(context)
        let second = #expect(throws: SerializationError.self) { try context.load(data) }
        #expect(try snapshot(context) == before)
        #expect(first?.description == second?.description)
        return second
    }

    @Test(
        "integers beyond 64 bits are out of range, not rounded to Int.min or UInt64.max",
        arguments: [
            ("int", "-9223372036854775809"), ("int", "-9223372036854776832"), ("int64", "-9223372036854775809"),
            ("int", "9223372036854775808"), ("uint64", "18446744073709551616"), ("uint64", "18446744073709553664"),
            ("int", "-99999999999999999999999"), ("int", "-9.3e18"), ("int", "1e19"),
        ])
    func hugeIntegers(property: String, text: String) throws {
        let error = try #require(try loadError(file(#""\#(property)":\#(text)"#)))
        #expect(error.code == .numberOutOfRange)
        #expect(error.path == "properties.\(property)")
        #expect(error.modelIndex == 0)
        #expect(error.expected.hasPrefix(property == "int" ? "Int (" : property == "int64" ? "Int64 (" : "UInt64 ("))
    }

    @Test("the extremes that fit still load exactly")
    func extremesLoad() throws {
        let context = ModelContext()
        try context.load(file(#""int":-9223372036854775808,"int64":9223372036854775807,"uint64":18446744073709551615"#))
        let model = try #require(context.models(of: Everything.self).first)
        #expect(model.int == .min)
        #expect(model.int64 == .max)
        #expect(model.uint64 == .max)
    }

    @Test(
        "numbers beyond Double's range are out of range for Double and Float, not infinity",
        arguments: [("double", "1e400"), ("double", "-1e400"), ("float", "1e400"), ("float", "1e39"), ("double", "2e308")])
    func hugeReals(property: String, text: String) throws {
        let data = file(#""\#(property)":\#(text)"#)
        let error = try #require(try loadError(data))
        #expect(error.code == .numberOutOfRange)
        #expect(error.path == "properties.\(property)")
        if text != "1e39" {
            // Reported where the number starts.
            let offset = try #require(String(decoding: data, as: UTF8.self).range(of: text)).lowerBound.utf16Offset(
                in: String(decoding: data, as: UTF8.self))
            #expect(error.byteOffset == offset)
            #expect(error.found == "number \(text)")
        }
    }

    @Test("infinity written as ModelKit writes it still loads")
    func writtenInfinityLoads() throws {
        let context = ModelContext()
        try context.load(file(#""double":{"__type":"Double","value":"-inf"},"float":{"__type":"Double","value":"inf"}"#))
        let model = try #require(context.models(of: Everything.self).first)
        #expect(model.double == -.infinity)
        #expect(model.float == .infinity)
    }

    @Test("the model-level decoders apply the same ranges")
    func modelLevelDecoders() throws {
        let tooLow = #"{"model":"Everything","modelId":"\#(Self.id)","properties":{"int":-9223372036854775809}}"#
        let error = #expect(throws: SerializationError.self) {
            _ = try Everything.instance(fromJSON: Data(tooLow.utf8), in: ModelContext())
        }
        #expect(error?.code == .numberOutOfRange)
        #expect(error?.path == "properties.int")
        // A tree built in code: a Double that stands for many integers.
        let tree: ModelValue = [
            "model": "Everything", "modelId": .string(Self.id), "properties": ["int64": .double(-9_223_372_036_854_775_808)],
        ]
        let treeError = #expect(throws: SerializationError.self) { _ = try Everything.instance(from: tree, in: ModelContext()) }
        #expect(treeError?.code == .numberOutOfRange)
        #expect(treeError?.found.contains("exact as an integer only below 2^53") == true)
        let huge = #"{"model":"Everything","modelId":"\#(Self.id)","properties":{"double":1e400}}"#
        let parseError = #expect(throws: SerializationError.self) { _ = try ModelValue(json: Data(huge.utf8)) }
        #expect(parseError?.code == .numberOutOfRange)
        #expect(parseError?.byteOffset == huge.utf8.count - 7)
    }

    @Test("binary property lists apply the same ranges to integers in floating-point form")
    func plistRanges() throws {
        var plist = PlistBuilder()
        let value = plist.real(-9_223_372_036_854_775_808)
        let properties = plist.dictionary(["int": value])
        let model = plist.model("Everything", id: Self.id, properties: properties)
        let error = try #require(try loadError(plist.data(top: model)))
        #expect(error.code == .numberOutOfRange)
        #expect(error.path == "properties.int")
    }

    @Test(
        "NaN and infinite dates are invalid values, in properties and headers, in every reader",
        arguments: ["nan", "inf", "-inf"])
    func nonFiniteDates(value: String) throws {
        let seconds = #"{"__type":"Date","referenceSeconds":{"__type":"Double","value":"\#(value)"}}"#
        let error = try #require(try loadError(file(#""date":\#(seconds)"#)))
        #expect(error.code == .invalidValue)
        #expect(error.path == "properties.date")
        #expect(error.expected == "a date (a finite number of seconds)")
        let model = #"{"model":"Everything","modelId":"\#(Self.id)","properties":{"optionalDate":\#(seconds)}}"#
        let treeError = #expect(throws: SerializationError.self) {
            _ = try Everything.instance(fromJSON: Data(model.utf8), in: ModelContext())
        }
        #expect(treeError?.code == .invalidValue)
        #expect(treeError?.path == "properties.optionalDate")

        let number: Double = value == "nan" ? .nan : value == "inf" ? .infinity : -.infinity
        var plist = PlistBuilder()
        let date = plist.date(number)
        let properties = plist.dictionary(["date": date])
        let plistModel = plist.model("Everything", id: Self.id, properties: properties)
        let plistError = try #require(try loadError(plist.data(top: plistModel)))
        #expect(plistError.code == .invalidValue)
        #expect(plistError.path == "properties.date")
        #expect(plistError.byteOffset == 8)

        var header = PlistBuilder()
        let createdAt = header.date(number)
        let empty = header.dictionary([])
        let name = header.string("Everything")
        let id = header.string(Self.id)
        let headerModel = header.dictionary(["model": name, "modelId": id, "createdAt": createdAt, "properties": empty])
        let headerError = try #require(try loadError(header.data(top: headerModel)))
        #expect(headerError.code == .invalidValue)
        #expect(headerError.path == "createdAt")
    }
}
