import Foundation
import ModelKit

/// Builds a graph of the fuzz models from the fuzzer's bytes, then checks that every writer
/// (whole-graph files in each format, a model's JSON, snapshots) writes it so that it reads back
/// the same. Strings run from empty to past the writers' 64 KiB first buffer, so that the
/// writers' fixed-size writes (ids, numbers, dates) land at every offset of a buffer's end, where
/// a write that reserves fewer bytes than it writes runs out of its memory (AddressSanitizer
/// reports it).
public enum FuzzGraphRecipe {
    /// The bytes of a recipe, read one value at a time; zeros once they run out.
    struct Bytes {
        let data: Data
        var offset = 0
        var isEmpty: Bool { offset >= data.count }

        mutating func byte() -> UInt8 {
            guard offset < data.count else { return 0 }
            defer { offset += 1 }
            return data[data.startIndex + offset]
        }

        mutating func number() -> Int { Int(byte()) << 8 | Int(byte()) }

        /// A string of one repeated piece: ASCII, a character needing escapes, or non-ASCII (so
        /// the binary writer's UTF-16 form is reached too), up to about 70,000 bytes long.
        mutating func string() -> String {
            let pieces = ["a", "\"", "\\n", "é", "😀", "\u{1}", "x y"]
            let piece = pieces[Int(byte()) % pieces.count]
            let length = byte() & 0x80 != 0 ? number() + (Int(byte()) << 6) : Int(byte())
            return String(repeating: piece, count: length / piece.utf8.count)
        }
    }

    /// The graph the recipe in `data` describes, in a new context, and its first model: an author
    /// with an empty name, written before every other model (types are written by model name),
    /// whose name slides the rest of the output.
    static func graph(_ data: Data) -> (ModelContext, padding: FuzzAuthor) {
        _ = FuzzModels.registered
        var bytes = Bytes(data: data)
        let context = ModelContext()
        let padding = FuzzAuthor.instance(in: context)
        var authors: [FuzzAuthor] = [padding]
        var posts: [FuzzPost] = []
        while !bytes.isEmpty {
            switch bytes.byte() % 5 {
            case 0:
                let author = FuzzAuthor.instance(in: context)
                author.name = bytes.string()
                author.age = bytes.number() - 30_000
                author.born = bytes.byte() & 1 == 0 ? nil : Date(timeIntervalSinceReferenceDate: Double(bytes.number()) / 7)
                authors.append(author)
            case 1:
                let post = FuzzPost.instance(in: context)
                post.title = bytes.string()
                post.score = Double(bytes.number()) / 3
                post.tags = (0..<Int(bytes.byte() % 4)).map { _ in bytes.string() }
                posts.append(post)
            case 2 where !authors.isEmpty && !posts.isEmpty:
                let author = authors[Int(bytes.byte()) % authors.count]
                let post = posts[Int(bytes.byte()) % posts.count]
                post.author = author
                author.posts.append(post)
                if bytes.byte() & 1 == 1 { author.best = post }
            case 3:
                let everything = FuzzEverything.instance(in: context)
                everything.small = Int8(truncatingIfNeeded: bytes.byte())
                everything.large = UInt64(bytes.number()) << 48 | UInt64(bytes.number())
                everything.blob = Data((0..<bytes.number() % 2048).map { UInt8(truncatingIfNeeded: $0) })
                everything.numbers = (0..<Int(bytes.byte() % 5)).map { $0 == 2 ? nil : $0 * 1_000_003 }
                everything.byName = [bytes.string(): bytes.number()]
                everything.place.street = bytes.string()
            default:
                // A model id written right after a long string of any length.
                let post = FuzzPost.instance(in: context)
                post.title = bytes.string()
                posts.append(post)
            }
        }
        return (context, padding)
    }

    /// Writes the graph in `data` every way, reads each back, and traps unless it reads back the
    /// same (ids, types and every property).
    ///
    /// An output around the in-memory writers' first buffer ends (64 and 128 KiB) is written again
    /// with the padding's name 1 to 159 characters long (more than a small model takes), which
    /// moves every id, number and date written after it across that end, one byte at a time.
    public static func check(_ data: Data) {
        let (context, padding) = graph(data)
        let models = context.models(of: FuzzAuthor.self) as [any Model] + context.models(of: FuzzPost.self)
            + context.models(of: FuzzEverything.self)
        do {
            // Outputs around the first two buffer ends (64 and 128 KiB) only: sliding a larger
            // one costs seconds an input, and its ends are reached by other inputs' slides.
            if (60_000..<140_000).contains(try context.data(format: .binaryPropertyList).count) {
                // Written only: a write past its memory is AddressSanitizer's to report, and
                // reading each back would make every such input cost a second or more.
                for slide in 1..<160 {
                    padding.name = String(repeating: "p", count: slide)
                    for format in [PersistenceFormat.json, .binaryPropertyList] {
                        _ = try context.data(format: format)
                    }
                }
                padding.name = ""
            }
            for format in [PersistenceFormat.json, .binaryPropertyList, .xmlPropertyList] {
                let copy = ModelContext()
                try copy.load(try context.data(format: format))
                expectSame(models, in: copy, "\(format)")
            }
            let merged = ModelContext()
            try merged.merge(try context.snapshot(of: models))
            expectSame(models, in: merged, "a snapshot")
            if let author = models.first as? FuzzAuthor {
                let copy = ModelContext()
                _ = try FuzzAuthor.instance(fromJSON: try author.jsonData(), in: copy)
                guard copy.model(withId: author.modelId) != nil else { fatalError("jsonData() lost its own model") }
            }
        } catch {
            fatalError("a graph of valid values failed to write or read back: \(error)")
        }
    }

    private static func expectSame(_ models: [any Model], in copy: ModelContext, _ form: String) {
        guard copy.count == models.count else { fatalError("\(form): \(copy.count) models read back, \(models.count) written") }
        for model in models {
            let same: Bool
            switch (model, copy.model(withId: model.modelId)) {
            case (let a as FuzzAuthor, let b as FuzzAuthor): same = a.persistedProperties == b.persistedProperties
            case (let a as FuzzPost, let b as FuzzPost): same = a.persistedProperties == b.persistedProperties
            case (let a as FuzzEverything, let b as FuzzEverything): same = a.persistedProperties == b.persistedProperties
            default: same = false
            }
            guard same else { fatalError("\(form): model \(model.modelId) read back different") }
        }
    }
}
