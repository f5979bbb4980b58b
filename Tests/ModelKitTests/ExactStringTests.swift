import Foundation
import ModelKit
import Testing
import ModelKitTestSupport

// Every string comes back exactly, scalar for scalar, in every format (issue 18: XML property
// lists dropped a U+FEFF that began a string).

/// Strings in every position a model can hold one: a property, an optional, an array element, a
/// dictionary key and value, a nested struct's field.
final class Phrase: ModelObject<Phrase.Properties> {
    struct Properties: ModelProperties, Equatable {
        var text = ""
        var maybe: String?
        var list: [String] = []
        var byKey: [String: String] = [:]
        var inner = PhraseInner()
    }
}

struct PhraseInner: Codable, Equatable {
    var text = ""
}

/// Every way a phrase can be written and read back.
enum StringRoute: String, CaseIterable {
    case json, binaryPropertyList, xmlPropertyList, serializedValue, serializedJSONValue, jsonText
}

private func roundTrip(_ phrase: Phrase, _ route: StringRoute) throws -> Phrase {
    let context = ModelContext()
    switch route {
    case .json, .binaryPropertyList, .xmlPropertyList:
        let format: PersistenceFormat =
            switch route {
            case .json: .json
            case .binaryPropertyList: .binaryPropertyList
            default: .xmlPropertyList
            }
        try context.load(phrase.persistedData(format: format))
        return try #require(context.model(Phrase.self, modelId: phrase.modelId))
    case .serializedValue:
        return try Phrase.instance(from: phrase.serialize(), in: context)
    case .serializedJSONValue:
        return try Phrase.instance(from: phrase.serialize(as: .json), in: context)
    case .jsonText:
        return try Phrase.instance(fromJSON: phrase.jsonData(), in: context)
    }
}

/// The scalars of each string of a phrase, for an exact comparison (`==` on strings would equate
/// canonically equivalent ones).
private func scalars(_ phrase: Phrase) -> [[UInt32]] {
    let strings =
        [phrase.text, phrase.maybe ?? "<nil>", phrase.inner.text] + phrase.list
        + phrase.byKey.sorted { Array($0.key.unicodeScalars.map(\.value)).lexicographicallyPrecedes($1.key.unicodeScalars.map(\.value)) }
        .flatMap { [$0.key, $0.value] }
    return strings.map { $0.unicodeScalars.map(\.value) }
}

@Suite("Exact strings")
struct ExactStringTests {
    static let tricky = [
        "\u{FEFF}", "\u{FEFF}a", "a\u{FEFF}", "a\u{FEFF}b", "\u{FEFF}\u{FEFF}x", "\u{FEFF}\u{301}e", "&#xFEFF;x",
        "&#65279;", "\u{E000}modelkit-bom-1\u{E000}", "e\u{301}", "\u{E9}", " lead", "trail ", "\t\n", "<string>\u{FEFF}", "\r", "a\r\nb", "\u{0}", "\u{1F}", "\u{FFFE}", "\u{D7FF}",
    ]

    @Test("Strings beginning with U+FEFF, and other tricky ones, come back scalar for scalar", arguments: StringRoute.allCases)
    func trickyStrings(route: StringRoute) throws {
        let context = ModelContext()
        for text in Self.tricky {
            let phrase = Phrase.instance(in: context)
            phrase.text = text
            phrase.maybe = text
            phrase.list = [text, "plain", text]
            phrase.byKey = [text: text, "k": text]
            phrase.inner = PhraseInner(text: text)
            let copy = try roundTrip(phrase, route)
            #expect(scalars(copy) == scalars(phrase), "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
        }
    }

    @Test("Random strings over an alphabet of markup and invisible scalars come back exactly", arguments: StringRoute.allCases)
    func randomStrings(route: StringRoute) throws {
        let alphabet: [Unicode.Scalar] = [
            "\u{FEFF}", "\u{E000}", "a", "&", "<", ">", "#", "x", ";", "\u{301}", "\u{E9}", " ", "\n", "\t", "'", "\"",
            "\u{200B}", "\u{1F469}",
        ]
        var random = SplitMix64(seed: 0xFEFF)
        let context = ModelContext()
        for _ in 0..<40 {
            func string() -> String {
                var view = String.UnicodeScalarView()
                for _ in 0..<Int.random(in: 0...6, using: &random) { view.append(alphabet.randomElement(using: &random)!) }
                return String(view)
            }
            let phrase = Phrase.instance(in: context)
            phrase.text = string()
            phrase.maybe = string()
            phrase.list = (0..<3).map { _ in string() }
            phrase.byKey = Dictionary((0..<3).map { _ in (string(), string()) }, uniquingKeysWith: { a, _ in a })
            phrase.inner = PhraseInner(text: string())
            let copy = try roundTrip(phrase, route)
            #expect(scalars(copy) == scalars(phrase), "\(phrase.text.unicodeScalars.map { String($0.value, radix: 16) })")
        }
    }
}
