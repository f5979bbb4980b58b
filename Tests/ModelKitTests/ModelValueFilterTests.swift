import Foundation
import Testing

@testable import ModelKit

/// The query language over models read without their types (what the `modelkit` tool queries
/// with): the same grammar and comparisons as typed queries, over either form of a file.
@Suite("Untyped filters: the query language over values")
struct ModelValueFilterTests {
    let properties: ModelValue = [
        "title": "Swift on Linux", "views": 12, "ratio": 0.5, "tags": ["swift", "linux"],
        "published": ["__type": "Date", "iso": "2026-01-02T03:04:05.5Z"],
        "address": ["city": "Paris"], "author": ["__type": "ModelPointer", "model": "Author", "modelId": "x"],
        "nothing": nil,
    ]

    @Test(
        "each kind of condition matches as it does in a typed query",
        arguments: [
            ("title BEGINSWITH[c] 'swift'", true), ("title ENDSWITH 'linux'", false), ("title LIKE 'Swift*'", true),
            ("views > 10 AND views < 13", true), ("views BETWEEN {13, 20}", false), ("ratio = 0.5", true),
            ("tags CONTAINS 'linux'", true), ("tags CONTAINSALL {'swift', 'go'}", false), ("views IN {1, 12}", true),
            ("address.city = 'Paris'", true), ("nothing EXISTS", false), ("NOT nothing EXISTS", true),
            ("published > DATE('2026-01-02T03:04:05Z')", true), ("published < DATE('2026-01-02T03:04:05Z')", false),
            ("missing = 'x'", false), ("author.name = 'Ann'", false), ("TRUEPREDICATE", true),
            ("views = 1 OR (title CONTAINS[c] 'LINUX' AND NOT ratio > 1)", true),
        ])
    func conditions(text: String, expected: Bool) throws {
        #expect(try ModelValueFilter(text).matches(properties) == expected)
    }

    @Test("a property list's native dates compare as a JSON file's tagged ones do")
    func nativeDates() throws {
        let date = ISODate.date(from: "2026-01-02T03:04:05.5Z")!
        let filter = try ModelValueFilter("published >= DATE('2026-01-02T03:04:05.5Z')")
        #expect(try filter.matches(["published": .date(date)]))
        #expect(try filter.matches(["published": ["__type": "Date", "iso": "2026-01-02T03:04:05.5Z"]]))
        #expect(try !filter.matches(["published": ["__type": "Null"]]))
    }

    @Test("text that does not parse throws a syntax error with its column")
    func syntax() {
        #expect {
            try ModelValueFilter("title BEGINSWITH")
        } throws: { error in
            (error as? QueryError)?.code == .syntax && (error as? QueryError)?.column == 17
        }
        #expect(throws: QueryError.self) { try ModelValueFilter("place WITHIN -1 KM OF {0, 0}") }
    }

    @Test("a value of a kind the condition cannot compare throws incompatibleTypes naming the model")
    func incompatible() throws {
        let filter = try ModelValueFilter("title > 3")
        #expect {
            try filter.matches(properties, modelName: "Post")
        } throws: { error in
            (error as? QueryError)?.code == .incompatibleTypes && (error as? QueryError)?.modelName == "Post"
        }
    }

    @Test("compare orders numbers across forms, strings, dates, and nil first")
    func ordering() {
        #expect(ModelValueFilter.compare(1, 1.5) == .orderedAscending)
        #expect(ModelValueFilter.compare(2, 2.0) == .orderedSame)
        #expect(ModelValueFilter.compare("b", "a") == .orderedDescending)
        #expect(ModelValueFilter.compare(nil, 0) == .orderedAscending)
        #expect(ModelValueFilter.compare("a", 5) == .orderedDescending, "numbers before strings")
        let early: ModelValue = ["__type": "Date", "iso": "2026-01-01T00:00:00Z"]
        let late: ModelValue = ["__type": "Date", "iso": "2026-01-01T00:00:00.5Z"]
        #expect(ModelValueFilter.compare(early, late) == .orderedAscending)
        #expect(ModelValueFilter.compare(.date(ISODate.date(from: "2026-01-01T00:00:00.5Z")!), late) == .orderedSame)
    }
}
