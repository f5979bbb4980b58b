import Foundation
import Testing

@testable import ModelKit

/// The offset table of a binary property list is checked whole before anything is read: the
/// usual widths in one pass, any other entry by entry.
@Suite("Binary property list offset tables")
struct OffsetTableTests {
    /// Two empty arrays (at bytes 8 and 9), the first the top object, with the second's offset
    /// replaced by `second`; entries `width` bytes wide.
    static func plist(width: Int, second: UInt64) -> Data {
        func bigEndian(_ value: UInt64, size: Int) -> [UInt8] {
            (0..<size).map { UInt8(truncatingIfNeeded: value >> UInt64(8 * (size - 1 - $0))) }
        }
        var bytes = Array("bplist00".utf8) + [0xA0, 0xA0]
        let table = bytes.count
        bytes += bigEndian(8, size: width) + bigEndian(second, size: width)
        // Trailer: unused bytes and sort version, offset width, reference width, object count,
        // top object, table offset.
        bytes += [0, 0, 0, 0, 0, 0, UInt8(width), 1] + bigEndian(2, size: 8) + bigEndian(0, size: 8)
        bytes += bigEndian(UInt64(table), size: 8)
        return Data(bytes)
    }

    @Test("offsets inside the object area load, for every offset width")
    func offsetsInsideLoad() throws {
        for width in 1...8 {
            let context = ModelContext()
            try context.load(Self.plist(width: width, second: 9))
            #expect(context.isEmpty)
        }
    }

    @Test("an offset before the object area or past it is a typed error at its entry, for every offset width")
    func offsetsOutsideFail() throws {
        for width in 1...8 {
            // The table starts at byte 10; the second entry is after the first.
            for bad: UInt64 in [0, 7, 10, 200] {
                var caught: SerializationError?
                do {
                    try ModelContext().load(Self.plist(width: width, second: bad))
                } catch let error as SerializationError {
                    caught = error
                }
                let error = try #require(caught, "width \(width), offset \(bad)")
                #expect(error.code == .malformedInput)
                #expect(error.byteOffset == 10 + width)
                #expect(error.found == "offset \(bad)")
            }
        }
    }
}
