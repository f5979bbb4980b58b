import Foundation
import ModelKitTestSupport
import Testing

@testable import ModelKit

/// In-memory outputs (`jsonData()`, `context.data(format:)`): past ``OutputMapping/threshold``
/// they live in a mapping of their own on Linux, which grows without copying (issue #30 item 13,
/// issue #37). These check the bytes at every boundary of that; `InMemoryPeakTests` checks the
/// memory.
@Suite("In-memory outputs")
struct InMemoryOutputTests {
    /// A generation of `count` items of about 4 KB of text each.
    static func generation(items count: Int, in context: ModelContext) -> Generation {
        let generation = Generation.instance(in: context)
        let text = String(repeating: "a line of an item's text, ", count: 4096 / 26)
        for index in 0..<count {
            let item = Item.instance(in: context)
            item.generation = index
            item.text = text
            item.owner = generation
            generation.items.append(item)
        }
        return generation
    }

    /// `count` bytes of a pattern that shows a lost or moved byte.
    static func pattern(_ count: Int, seed: Int = 0) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: ($0 &+ seed) &* 131 &+ ($0 >> 12)) }
    }

    @Test(
        "a context's in-memory output, empty, small or past the mapping threshold, is the file's bytes",
        arguments: [PersistenceFormat.json, .binaryPropertyList], [0, 3, 1_000])
    func sameBytesAsTheFile(format: PersistenceFormat, items: Int) throws {
        try ModelRegistry.register(Generation.self, Item.self)
        let context = ModelContext()
        if items > 0 { _ = Self.generation(items: items, in: context) }
        let data = try context.data(format: format)
        if items == 1_000 { #expect(data.count > 2 * OutputMapping.threshold) }
        let file = try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("graph")
            try context.write(to: url, format: format)
            return try Data(contentsOf: url)
        }
        #expect(data == file)
        // And it loads back.
        let copy = ModelContext()
        try copy.load(data)
        #expect(copy.count == context.count)
    }

    @Test("jsonData() of a graph past the mapping threshold is the walk's text, and loads back")
    func jsonDataPastTheThreshold() throws {
        try ModelRegistry.register(Generation.self, Item.self)
        let context = ModelContext()
        let generation = Self.generation(items: 1_000, in: context)
        let data = try generation.jsonData()
        #expect(data.count > 2 * OutputMapping.threshold)
        #expect(data == (try generation.serialize(as: .json)).jsonData())
        let archive = ModelContext()  // kept: it owns what is loaded
        let copy = try Generation.instance(fromJSON: data, in: archive)
        #expect(copy.items.count == 1_000)
        #expect(copy.items.last?.text == generation.items.last?.text)
    }

    @Test(
        "a buffer keeps every byte when it ends just under, at and just past a growth boundary",
        arguments: [
            0, 1, (1 << 16) - 1, 1 << 16, (1 << 16) + 1, OutputMapping.threshold / 2, OutputMapping.threshold - 1,
            OutputMapping.threshold, OutputMapping.threshold + 1, 2 * OutputMapping.threshold,
            2 * OutputMapping.threshold + OutputMapping.pageSize - 1, 5 * OutputMapping.threshold + 3,
        ])
    func growthBoundaries(count: Int) {
        let expected = Self.pattern(count)
        let buffer = OutputBuffer(descriptor: nil)
        // In pieces of varied sizes, as writers append.
        var offset = 0
        var piece = 1
        while offset < count {
            let end = min(count, offset + piece)
            expected[offset..<end].withUnsafeBytes { buffer.append($0) }
            offset = end
            piece = piece * 3 % 70_001 + 1
        }
        #expect(buffer.position == count)
        if OutputMapping.isAvailable { #expect(buffer.isMapped == (count > OutputMapping.threshold / 2)) }
        let data = buffer.takeData()
        #expect(data == Data(expected))
        // The buffer is empty and usable again, from a small allocation.
        #expect(!buffer.isMapped)
        buffer.append(Self.pattern(3, seed: 7))
        #expect(buffer.takeData() == Data(Self.pattern(3, seed: 7)))
    }

    @Test("a reservation past the mapping threshold in one step maps at once and keeps the earlier bytes")
    func oneLargeReservation() {
        let buffer = OutputBuffer(descriptor: nil)
        buffer.append(Self.pattern(1000))
        let large = Self.pattern(3 * OutputMapping.threshold + 17, seed: 5)
        buffer.append(large)
        if OutputMapping.isAvailable { #expect(buffer.isMapped) }
        #expect(buffer.takeData() == Data(Self.pattern(1000) + large))
    }

    @Test("a buffer dropped before its bytes are taken, mapped or not, frees them (AddressSanitizer and munmap check it)")
    func droppedBuffers() {
        for count in [10, 3 * OutputMapping.threshold] {
            let buffer = OutputBuffer(descriptor: nil)
            buffer.append(Self.pattern(count))
            buffer.truncate(to: count / 2)
            #expect(buffer.position == count / 2)
        }
    }

    @Test("a write that fails past the mapping threshold throws its typed error and leaves the context's models as they were")
    func failureMidWrite() throws {
        try ModelRegistry.register(Generation.self, Item.self)
        let context = ModelContext()
        let generation = Self.generation(items: 1_000, in: context)
        // A last item from a copy of the context, whose owner resolves there, to the copy's
        // instance of the generation's id: a second instance with one id, found when the
        // walk reaches it after every other item, with more than 4 MB in its buffer.
        let copy = ModelContext()
        try copy.load(context.data(format: .json))
        let bridge = Item.instance(in: copy)
        let twin = try #require(copy.model(Generation.self, modelId: generation.modelId))
        bridge.owner = twin
        generation.items.append(bridge)
        let error = #expect(throws: SerializationError.self) { try generation.jsonData() }
        #expect(error?.code == .duplicateModelId)
        #expect(context.count == 1_001)
        generation.items.removeAll { $0 === bridge }
        #expect(try generation.jsonData().count > 2 * OutputMapping.threshold)
    }
}
