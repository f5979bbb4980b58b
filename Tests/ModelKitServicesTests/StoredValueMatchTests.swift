import Foundation
import ModelKit
import Testing

@testable import ModelKitServices

@Suite("A record read back from the server is recognised as the one sent")
struct StoredValueMatchTests {
    /// The pair seen from Kinto on PostgreSQL: python-rapidjson's native number mode parsed the
    /// sent text to the double next to it.
    let sent = 45.496_620_033_519_676
    let read = 45.496_620_033_519_68

    @Test("Doubles a unit in the last place apart match, in objects and arrays, keys in any order")
    func doublesOneUnitApartMatch() {
        #expect(sent != read)
        let mine = ModelValue.object(.init([("name", "s88"), ("place", .object(.init([("latitude", .double(sent)), ("longitude", 1.5)])))]))
        let theirs = ModelValue.object(.init([("place", .object(.init([("longitude", 1.5), ("latitude", .double(read))]))), ("name", "s88")]))
        #expect(mine.matchesStored(theirs))
        #expect(ModelValue.array([.double(sent), 2]).matchesStored(.array([.double(read), 2])))
        #expect(ModelValue.double(0).matchesStored(.double(-0.0)))
        #expect(ModelValue.double(1).matchesStored(.double(1.0.nextUp.nextUp.nextUp.nextUp)))
    }

    @Test("Values that really differ do not match")
    func differentValuesDoNotMatch() {
        #expect(!ModelValue.double(1).matchesStored(.double(1.0.nextUp.nextUp.nextUp.nextUp.nextUp)))
        #expect(!ModelValue.double(sent).matchesStored(.double(-sent)))
        #expect(!ModelValue.double(.nan).matchesStored(.double(.nan)))
        #expect(!ModelValue.double(.infinity).matchesStored(.double(.greatestFiniteMagnitude)))
        #expect(!ModelValue.double(1).matchesStored(.int(1)))
        #expect(!ModelValue.string("a").matchesStored(.string("b")))
        #expect(!ModelValue.array([1, 2]).matchesStored(.array([1])))
        let one = ModelValue.object(.init([("a", 1)]))
        #expect(!one.matchesStored(.object(.init([("a", 1), ("b", 2)]))))
        #expect(!one.matchesStored(.object(.init([("b", 1)]))))
        #expect(!ModelValue.object(.init([("a", 1), ("b", 2)])).matchesStored(one))
    }
}
