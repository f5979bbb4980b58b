import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("Atomic writes")
struct AtomicWriteTests {
    /// The writer child, built next to the test bundle because the test target depends on it.
    static var childExecutable: URL? { builtExecutable(named: "PersistenceWriterChild") }

    /// An executable of this package, built next to the test bundle because the test target
    /// depends on it (looked for next to this target's resources first).
    static func builtExecutable(named name: String) -> URL? {
        ChildProcess.builtExecutable(named: name, lookingIn: [Bundle.module.bundleURL.deletingLastPathComponent()])
    }

    /// Checks that the file holds one complete generation: the marker model and all its items.
    static func checkComplete(_ url: URL) throws -> Int {
        let context = ModelContext()
        try context.load(from: url)
        let generations = context.models(of: Generation.self)
        #expect(generations.count == 1)
        let generation = try #require(generations.first)
        let items = context.models(of: Item.self)
        #expect(items.count == 2_000)
        #expect(generation.items.count == 2_000)
        #expect(items.allSatisfy { $0.generation == generation.number })
        return generation.number
    }

    /// The generation number in the file, without checking it further.
    static func generation(in url: URL) throws -> Int {
        let context = ModelContext()
        try context.load(from: url)
        return context.models(of: Generation.self).first?.number ?? -1
    }

    @Test("a writer killed at random moments always leaves a complete, loadable file", arguments: ["json", "bplist"])
    func killedWriter(format: String) throws {
        try ModelRegistry.register(Generation.self, Item.self)
        let child = try #require(Self.childExecutable, "the PersistenceWriterChild executable was not built")
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("graph.\(format)")
            var generator = SplitMix64(seed: format == "json" ? 17 : 23)
            // Generation 0, written here, so that there always is a previous file.
            let initial = ModelContext()
            let generation = Generation.instance(in: initial)
            for index in 0..<2_000 {
                let item = Item.instance(in: initial)
                item.text = "item \(index) of generation 0"
                item.owner = generation
                generation.items.append(item)
            }
            try initial.write(to: url, format: format == "json" ? .json : .binaryPropertyList)
            var seen: Set<Int> = [0]
            var killedMidWrite = 0
            var nextGeneration = 1
            for round in 0..<20 {
                let writer = try ChildProcess(child, [url.path, format, String(nextGeneration)], output: .none)
                if round == 0 {
                    // Once, let a write complete, so that the file is known to change under the kills.
                    let deadline = Date().addingTimeInterval(60)
                    while Date() < deadline, (try? Self.generation(in: url)) == 0 { usleep(20_000) }
                } else {
                    usleep(UInt32(20_000 + Int(generator.next() % 300_000)))
                }
                writer.send(SIGKILL)
                #expect(writer.waitUntilExit().reason == .uncaughtSignal)
                let entries = try FileManager.default.contentsOfDirectory(atPath: directory.path)
                if entries.count > 1 { killedMidWrite += 1 }
                let number = try Self.checkComplete(url)
                seen.insert(number)
                nextGeneration = max(nextGeneration, number) + 1_000
            }
            // Most kills land in the middle of a write (a temporary file was left behind), and
            // some writes completed between kills.
            #expect(killedMidWrite > 0)
            #expect(seen.count > 1)
            // Killed writers leave their temporary files; the next write removes them.
            let context = ModelContext()
            try context.load(from: url)
            try context.write(to: url, format: format == "json" ? .json : .binaryPropertyList)
            let entries = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(entries == [url.lastPathComponent])
        }
    }

    @Test("a failed write leaves the previous file and no temporary file")
    func failedWrite() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("graph.json")
            let context = ModelContext()
            let note = Note.instance(in: context)
            note.text = "first"
            try context.write(to: url)
            let loop = HasLoop.instance(in: context)
            let box = LoopingBox()
            box.next = box
            loop.box = box
            #expect(throws: SerializationError.self) { try context.write(to: url) }
            box.next = nil
            let entries = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(entries == ["graph.json"])
            let reloaded = ModelContext()
            try reloaded.load(from: url)
            #expect(reloaded.model(Note.self, modelId: note.modelId)?.text == "first")
        }
    }

    /// A context whose file is over ten megabytes in every format: the writer hands its first
    /// chunks to the file on the calling thread and the rest on another thread.
    static func largeContext(notes: Int) -> ModelContext {
        let context = ModelContext()
        let text = String(repeating: "Ünïcode and ascii, ", count: 90)
        for number in 0..<notes {
            let note = Note.instance(in: context)
            note.text = "\(number) \(text)"
            note.count = number
        }
        return context
    }

    @Test("a file of many chunks is written whole, byte for byte as in memory", arguments: PersistenceFormat.allCases)
    func manyChunks(format: PersistenceFormat) throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("graph")
            let context = Self.largeContext(notes: 6_000)
            try context.write(to: url, format: format)
            let written = try Data(contentsOf: url)
            #expect(written.count > 10 << 20)
            #expect(written == (try context.data(format: format)))
            let reloaded = ModelContext()
            try reloaded.load(from: url)
            let notes = reloaded.models(of: Note.self)
            #expect(notes.count == 6_000)
            #expect(notes.map(\.count) == Array(0..<6_000))
        }
    }

    @Test("a write that fails after chunks reached the file leaves the previous file and no temporary file")
    func failedWriteAfterChunks() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("graph.bplist")
            let previous = ModelContext()
            Note.instance(in: previous).text = "previous"
            try previous.write(to: url, format: .binaryPropertyList)
            let before = try Data(contentsOf: url)
            // Notes are written before tripwires (types go by name), so megabytes are on their
            // way to the file when the tripwire fails.
            let context = Self.largeContext(notes: 6_000)
            let tripwire = WriteTripwire.instance(in: context)
            tripwire.armed = true
            #expect(throws: SerializationError.self) { try context.write(to: url, format: .binaryPropertyList) }
            #expect(try Data(contentsOf: url) == before)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["graph.bplist"])
            tripwire.armed = false
            try context.write(to: url, format: .binaryPropertyList)
            let reloaded = ModelContext()
            try reloaded.load(from: url)
            #expect(reloaded.models(of: Note.self).count == 6_000)
            #expect(reloaded.models(of: WriteTripwire.self).count == 1)
        }
    }
}

/// A model whose properties fail to encode while `armed`.
final class WriteTripwire: ModelObject<WriteTripwire.Properties> {
    struct Properties: ModelProperties {
        var armed = false

        func encode(to encoder: any Encoder) throws {
            if armed {
                throw EncodingError.invalidValue(armed, .init(codingPath: encoder.codingPath, debugDescription: "armed"))
            }
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(armed, forKey: .armed)
        }
    }
}
