import Foundation
import Testing
import ModelKitTestSupport

@testable import ModelKit

@Suite("ISO 8601 dates")
struct ISODateTests {
    @Test(
        "Dates are written in UTC with only the fractional digits they need",
        arguments: [
            (0.0, "2001-01-01T00:00:00Z"),
            (0.5, "2001-01-01T00:00:00.5Z"),
            (-0.25, "2000-12-31T23:59:59.75Z"),
            (-978_307_200.0, "1970-01-01T00:00:00Z"),
            (351_493_041.0, "2012-02-21T04:57:21Z"),
            (-63_113_904_000.0, "0001-01-01T00:00:00Z"),
            (63_113_904_000.0, "4001-01-01T00:00:00Z"),
            (-63_113_990_400.0, "0000-12-31T00:00:00Z"),
            (-63_177_062_400.0, "-0001-01-01T00:00:00Z"),
            (252_455_616_000.0, "+10001-01-01T00:00:00Z"),  // 8000 years = 20 cycles of 146,097 days
            (1e-6, "2001-01-01T00:00:00.000001Z"),
        ])
    func writing(seconds: Double, text: String) {
        #expect(ISODate.string(from: Date(timeIntervalSinceReferenceDate: seconds)) == text)
        #expect(ISODate.date(from: text) == Date(timeIntervalSinceReferenceDate: seconds))
    }

    @Test(
        "Offsets, spaces and the seed's formats are read",
        arguments: [
            ("2012-10-29T13:50:03+0700", 1_351_493_403.0),
            ("2012-10-29T13:50:03+07:00", 1_351_493_403.0),
            ("2012-10-29 06:44:01 +0000", 1_351_493_041.0),
            ("2012-10-29T06:44:01Z", 1_351_493_041.0),
            ("2012-10-29T01:44:01.250-05:00", 1_351_493_041.25),
            ("2000-02-29T00:00:00Z", 951_782_400.0),
        ])
    func reading(text: String, since1970: Double) {
        #expect(ISODate.date(from: text) == Date(timeIntervalSince1970: since1970))
    }

    @Test(
        "Invalid text is rejected",
        arguments: [
            "", "2012-10-29", "2012-13-01T00:00:00Z", "2012-02-30T00:00:00Z", "2001-02-29T00:00:00Z",
            "2012-10-29T24:00:00Z", "2012-10-29T00:60:00Z", "2012-10-29T00:00:00", "2012-10-29T00:00:00.Z",
            "2012-10-29T00:00:00Zjunk", "12-10-29T00:00:00Z", "2012-10-29T00:00:00+25:00",
        ])
    func invalid(text: String) {
        #expect(ISODate.date(from: text) == nil)
    }

    @Test("Every date in a wide random sample reads back exactly")
    func exactness() {
        var generator = SplitMix64(seed: 7)
        for _ in 0..<20_000 {
            let seconds: Double
            switch generator.next() % 3 {
            case 0: seconds = Double.random(in: -1e9...2e9, using: &generator)
            case 1: seconds = Double.random(in: -1...1, using: &generator)
            default: seconds = Double.random(in: -6e13...6e13, using: &generator)
            }
            let date = Date(timeIntervalSinceReferenceDate: seconds)
            guard let text = ISODate.string(from: date) else {
                Issue.record("no text for \(seconds)")
                continue
            }
            #expect(ISODate.date(from: text) == date, "\(seconds) -> \(text)")
        }
    }

    @Test("Civil conversion agrees with day counts across eras")
    func civil() {
        for days in stride(from: Int64(-800_000), through: 800_000, by: 997) {
            let (year, month, day) = ISODate.civil(fromDays: days)
            #expect(ISODate.days(fromCivil: year, month, day) == days)
        }
    }

    @Test("Dates too far out for ISO text keep their exact seconds")
    func farDates() throws {
        let model = Everything()
        model.dates = [Date(timeIntervalSinceReferenceDate: 1e300), Date(timeIntervalSinceReferenceDate: -1e20)]
        let value = try model.serialize(as: .json)
        #expect(value["properties"]?["dates"]?[0]?["referenceSeconds"] == .double(1e300))
        let copy = try Everything.instance(fromJSON: value.jsonData(), in: ModelContext())
        #expect(copy.dates == model.dates)
    }

    @Test("the date cache gives what parsing gives, for repeated, changed, long and invalid texts in the same second")
    func dateCache() {
        var cache = ISODateCache()
        let texts = [
            "2026-11-22T11:34:08.123Z", "2026-11-22T11:34:08.123Z", "2026-11-22T11:34:08.124Z", "2001-01-01T00:00:00Z",
            "2026-11-22T11:34:08.1234567Z", "not a date", "2026-11-22T11:34:08.124Z", "2026-11-22T11:34:08.124Z",
            "2026-11-22T11:34:08.124Z" + String(repeating: " ", count: 20),
            "2026-11-22T11:34:08.12xZ", "2026-11-22T11:34:08Q", "2026-11-22T11:34:08Z", "2026-11-22T11:34:08.5Z",
        ]
        for text in texts {
            let bytes = Array(text.utf8)
            let cached = bytes.withUnsafeBufferPointer { cache.parse($0) }
            let parsed = bytes.withUnsafeBufferPointer { FastISODate.parse($0) }
            #expect(cached == parsed, "\(text)")
        }
        let first = Array("2026-11-22T11:34:08.123Z".utf8).withUnsafeBufferPointer { cache.parse($0) }
        #expect(first == ISODate.date(from: "2026-11-22T11:34:08.123Z"))
    }
}

@Suite("JSON text")
struct JSONTextTests {
    @Test("Strings are escaped and read back, including surrogate pairs")
    func strings() throws {
        let text = "quote \" backslash \\ slash / newline \n tab \t nul \u{0} bell \u{7} é 𝄞 👩‍👩‍👧"
        let value = ModelValue.string(text)
        let data = value.jsonData()
        #expect(!String(decoding: data, as: UTF8.self).contains("\n"))
        #expect(try ModelValue(json: data) == value)
        #expect(try json(#""\ud834\udd1e \u00e9 \/""#) == "𝄞 é /")
    }

    @Test("Numbers keep their kind and value")
    func numbers() throws {
        #expect(
            try json("[0, -0, 1, -1, 9223372036854775807, -9223372036854775808, 18446744073709551615]") == [
                0, 0, 1, -1, .int(.max), .int(.min), .uint(.max),
            ])
        #expect(
            try json("[1.5, -0.0, 1e3, 2E-2, 18446744073709551616]") == [1.5, -0.0, 1000.0, 0.02, 18_446_744_073_709_551_616.0])
        let doubles: [Double] = [0.1, 1e-7, 1e21, .leastNonzeroMagnitude, -1.7976931348623157e308]
        #expect(
            try ModelValue(json: ModelValue.array(doubles.map(ModelValue.double)).jsonData())
                == .array(doubles.map(ModelValue.double)))
    }

    @Test("Pretty printing reads back the same value")
    func pretty() throws {
        let value: ModelValue = ["a": [1, 2, ["b": nil]], "c": [:], "d": []]
        let text = value.jsonString(options: .prettyPrinted)
        #expect(text.contains("\n  \"a\": [\n"))
        #expect(try json(text) == value)
        #expect(value.jsonString() == #"{"a":[1,2,{"b":null}],"c":{},"d":[]}"#)
    }

    @Test("A byte order mark is skipped; whitespace around values is fine")
    func bom() throws {
        #expect(try ModelValue(json: Data([0xEF, 0xBB, 0xBF] + Array(" \n{\"a\" : true }\t".utf8))) == ["a": true])
    }

    @Test("Objects look keys up the same way small and large, and compare regardless of order")
    func objects() {
        var object = ModelValue.Object()
        for index in 0..<100 { object["k\(index)"] = .int(Int64(index)) }
        #expect(object["k57"] == 57)
        object["k57"] = nil
        #expect(object["k57"] == nil)
        #expect(object["k58"] == 58)
        #expect(object.count == 99)
        let forward: ModelValue = ["a": 1, "b": 2]
        let backward: ModelValue = ["b": 2, "a": 1]
        #expect(forward == backward)
        #expect(forward != ["a": 1])
    }

    @Test("Property-list objects convert to values and back")
    func propertyListObjects() throws {
        let value: ModelValue = [
            "bool": true, "int": 3, "double": 2.5, "string": "s", "date": .date(Date(timeIntervalSinceReferenceDate: 9)),
            "data": .data(Data([1])), "null": nil, "array": [1, "two"],
        ]
        #expect(try ModelValue(propertyList: value.propertyListObject) == value)
        #expect(throws: SerializationError.self) { try ModelValue(propertyList: ["x": NSObject()]) }
    }
}

@Suite("Byte comparisons")
struct BytesEqualTests {
    @Test("comparing runs of every length up to 40 agrees with memcmp, whichever byte differs")
    func agreesWithMemcmp() {
        var random = SystemRandomNumberGenerator()
        // Offsets into larger buffers, so that the loads are unaligned too.
        let a = (0..<64).map { _ in UInt8.random(in: 0...255, using: &random) }
        for count in 0...40 {
            for offset in [0, 1, 3, 7] {
                var b = a
                a.withUnsafeBytes { x in
                    b.withUnsafeBytes { y in
                        #expect(bytesEqual(x.baseAddress! + offset, y.baseAddress! + offset, count: count))
                    }
                }
                for position in 0..<count {
                    b = a
                    b[offset + position] ^= UInt8(1 << (position % 8))
                    a.withUnsafeBytes { x in
                        b.withUnsafeBytes { y in
                            let expected = memcmp(x.baseAddress! + offset, y.baseAddress! + offset, count) == 0
                            #expect(bytesEqual(x.baseAddress! + offset, y.baseAddress! + offset, count: count) == expected)
                            #expect(!expected)
                        }
                    }
                }
            }
        }
    }
}
