import Foundation
import Testing

@testable import ModelKit

/// ModelKit's own reader of XML property lists, value by value, against what Foundation reads
/// from the same text.
@Suite("XML property-list reader")
struct XMLPlistReaderTests {
    /// The value of an XML property list read by the library's reader, written out as text
    /// (dictionaries in key order) so that it can be compared.
    static func read(_ xml: String) throws -> String {
        var bytes = Array(xml.utf8)
        return try bytes.withUnsafeMutableBufferPointer { buffer in
            let tape = XMLPlistTape(bytes: UnsafeBufferPointer(buffer))
            let document = XMLPlistDocument(tape: tape)
            return try describe(try tape.parseDocument(), in: document)
        }
    }

    static func describe(_ node: Int, in document: XMLPlistDocument) throws -> String {
        switch document.kind(of: node) {
        case .bool: return document.bool(node) ? "true" : "false"
        case .integer, .real:
            switch try document.number(node) {
            case .int(let value): return "int \(value)"
            case .uint(let value): return "int \(value)"
            case .double(let value): return "real \(value)"
            }
        case .string: return "string \(String(reflecting: try document.string(node)))"
        case .date: return "date \(try document.date(node))"
        case .data: return "data \(try document.data(node).base64EncodedString())"
        case .array:
            var items: [String] = []
            try document.forEach(in: node) { _, value in
                items.append(try describe(value, in: document))
                return true
            }
            return "[" + items.joined(separator: ", ") + "]"
        case .object:
            var items: [(String, String)] = []
            try document.forEach(in: node) { key, value in
                items.append((try document.string(key), try describe(value, in: document)))
                return true
            }
            return "{" + items.sorted { $0.0 < $1.0 }.map { "\($0.0): \($0.1)" }.joined(separator: ", ") + "}"
        default: return "?"
        }
    }

    /// The same for Foundation's reading of the text.
    static func foundation(_ xml: String) throws -> String {
        func describe(_ object: Any) -> String {
            switch object {
            case let text as String: return "string \(String(reflecting: text))"
            case let date as Date: return "date \(date.timeIntervalSinceReferenceDate)"
            case let data as Data: return "data \(data.base64EncodedString())"
            case let array as [Any]: return "[" + array.map(describe).joined(separator: ", ") + "]"
            case let dictionary as [String: Any]:
                return "{"
                    + dictionary.sorted { $0.key < $1.key }.map { "\($0.key): \(describe($0.value))" }
                    .joined(separator: ", ") + "}"
            case let number as NSNumber:
                let type = String(cString: number.objCType)
                if type == "c" || type == "B" { return number.boolValue ? "true" : "false" }
                if type == "d" || type == "f" { return "real \(number.doubleValue)" }
                if number.int64Value < 0, type != "Q" { return "int \(number.int64Value)" }
                return "int \(number.uint64Value)"
            default: return "?"
            }
        }
        return describe(try PropertyListSerialization.propertyList(from: Data(xml.utf8), options: [], format: nil))
    }

    static func plist(_ body: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        \(body)
        </plist>

        """
    }

    @Test(
        "every kind of value reads as Foundation reads it",
        arguments: [
            "<string>plain</string>", "<string/>", "<string></string>",
            "<string>a &amp; b &lt;c&gt; &quot;d&quot; &apos;e&apos;</string>",
            "<string>&#65;&#x42;&#x1F600; and é and \u{FEFF}</string>",
            "<string>line\r\nbreaks\tand tabs</string>",
            "<integer>0</integer>", "<integer>-42</integer>", "<integer>9223372036854775807</integer>",
            "<integer>-9223372036854775808</integer>", "<integer>18446744073709551615</integer>",
            "<real>0.1</real>", "<real>-1.5e300</real>", "<real>nan</real>", "<real>+infinity</real>",
            "<real>-infinity</real>", "<real>3</real>",
            "<true/>", "<false/>",
            "<date>2001-01-01T00:00:00Z</date>", "<date>1970-01-01T00:00:00Z</date>", "<date>2024-02-29T23:59:59Z</date>",
            "<data>AAECAw==</data>", "<data>\n\tAAEC\n\tAw==\n\t</data>", "<data></data>",
            "<dict/>", "<array/>", "<dict></dict>",
            "<dict><key>a</key><integer>1</integer><key>b</key><array><string>x</string><dict/></array></dict>",
            "<array><!-- a comment --><true/><?pi here?><false/></array>",
        ])
    func valuesReadAsFoundationReadsThem(body: String) throws {
        let xml = Self.plist(body)
        #expect(try Self.read(xml) == Self.foundation(xml))
    }

    @Test("a string that begins with U+FEFF keeps it, which Foundation's reader drops")
    func leadingByteOrderMark() throws {
        #expect(try Self.read(Self.plist("<string>&#xFEFF;a</string>")) == "string " + String(reflecting: "\u{FEFF}a"))
        #expect(
            try Self.read(Self.plist("<dict><key>\u{FEFF}k</key><string>\u{FEFF}v</string></dict>"))
                == "{\u{FEFF}k: string " + String(reflecting: "\u{FEFF}v") + "}")
    }

    @Test("a CDATA section reads as its characters")
    func cdata() throws {
        #expect(try Self.read(Self.plist("<string>a<![CDATA[<b> & c]]>d</string>")) == #"string "a<b> & cd""#)
    }

    @Test("a document without the plist element, or with a byte order mark, reads its value")
    func bareValue() throws {
        #expect(try Self.read("<array><integer>1</integer></array>") == "[int 1]")
        #expect(try Self.read("\u{FEFF}<?xml version=\"1.0\"?>\n<plist><true/></plist>\n<!-- end -->\n") == "true")
    }

    @Test(
        "bad input is a typed error at the byte where it goes wrong, saying what was expected",
        arguments: [
            ("<plist><dict><integer>1</integer></dict></plist>", 13, "a <key> or </dict>"),
            ("<plist><array><true/></dict></plist>", 21, "</array>"),
            (
                "<plist><string>a &bogus; b</string></plist>", 17,
                "an entity (&amp; &lt; &gt; &quot; &apos;) or a character reference"
            ),
            (
                "<plist><string>&#xD800;</string></plist>", 15,
                "an entity (&amp; &lt; &gt; &quot; &apos;) or a character reference"
            ),
            ("<plist><integer>99999999999999999999</integer></plist>", 16, "an integer of at most 64 bits"),
            ("<plist><real>1e</real></plist>", 13, "a real number"),
            ("<plist><date>2001-01-01 00:00:00</date></plist>", 13, "a date like 2001-01-01T00:00:00Z"),
            ("<plist><data>AA!A</data></plist>", 13, "base64 data"),
            ("<plist><foo/></plist>", 7, "a property-list value"),
            ("<plist><true/><true/></plist>", 14, "</plist>"),
            ("<plist><true/></plist>junk", 22, "the end of the property list"),
            ("<plist><array><!-- never closed </array></plist>", 14, "'-->' at the end of the comment"),
            ("<plist><string><![CDATA[never closed</string></plist>", 15, "']]>' at the end of the CDATA section"),
            ("<plist><string>no end", 21, "</string>"),
            ("<plist><string>\u{80}</string></plist>", 15, "valid UTF-8"),
            ("<plist version=1.0><true/></plist>", 15, "a quoted attribute value"),
            ("", 0, "a property-list value"),
        ])
    func badInput(xml: String, offset: Int, expected: String) throws {
        // A lone continuation byte cannot be spelled in a Swift string: U+0080 stands for it.
        var bytes = Array(xml.utf8)
        if let at = bytes.firstIndex(of: 0xC2) { bytes.remove(at: at) }
        let error = try #require(throws: SerializationError.self) {
            try bytes.withUnsafeBufferPointer { _ = try XMLPlistTape(bytes: $0).parseDocument() }
        }
        #expect(error.code == .malformedInput)
        #expect(error.byteOffset == offset, "\(error)")
        #expect(error.expected == expected, "\(error)")
    }

    @Test("nesting past the limit is a typed error at the start tag that goes too deep")
    func nesting() throws {
        let limit = XMLPlistScanner.maximumNesting
        let deep = String(repeating: "<array>", count: limit + 1) + String(repeating: "</array>", count: limit + 1)
        let error = try #require(throws: SerializationError.self) { try Self.read(deep) }
        #expect(error.code == .nestingTooDeep)
        #expect(error.byteOffset == limit * 7)
        let deepest = String(repeating: "<array>", count: limit) + String(repeating: "</array>", count: limit)
        #expect(try Self.read(deepest).hasPrefix("[[["))
    }

    @Test("a member is recorded only when it is read")
    func membersAreRecordedWhenRead() throws {
        var bytes = Array(Self.plist("<dict><key>big</key><array><true/><true/><true/></array><key>a</key><true/></dict>").utf8)
        try bytes.withUnsafeMutableBufferPointer { buffer in
            let tape = XMLPlistTape(bytes: UnsafeBufferPointer(buffer))
            let document = XMLPlistDocument(tape: tape)
            let top = try tape.parseDocument()
            #expect(tape.entries.count == 1)
            #expect(try document.count(of: top) == 2)
            let a = try #require(try document.member(of: top, named: "a"))
            #expect(document.bool(a))
            // The top dictionary's two keys and two values; the array's elements are not recorded.
            #expect(tape.entries.count == 5)
            let big = try #require(try document.member(of: top, named: "big"))
            #expect(try document.count(of: big) == 3 && tape.entries.count == 5)
            #expect(try document.elements(of: big).count == 3 && tape.entries.count == 8)
        }
    }
}
