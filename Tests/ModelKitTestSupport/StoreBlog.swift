import ModelKit

// The blog of the store's kill test, shared by the test and the child process it kills
// (Tests/StoreKillChild): the child changes it at random and saves, the test reopens the store
// and compares digests of the state.

/// A writer of the kill test's blog.
public final class BlogWriter: ModelObject<BlogWriter.Properties> {
    public struct Properties: ModelProperties {
        public var name = ""
        public var entries = ModelArray<BlogEntry>()
        public init() {}
    }
}

/// A post of the kill test's blog, pointing back at its writer.
public final class BlogEntry: ModelObject<BlogEntry.Properties> {
    public struct Properties: ModelProperties {
        public var title = ""
        public var body = ""
        public var likes = 0
        public var tags: [String] = []
        public var writer = ModelRef<BlogWriter>()
        public init() {}
    }
}

/// The number of the save that wrote the state (one model per store).
public final class SaveMarker: ModelObject<SaveMarker.Properties> {
    public struct Properties: ModelProperties {
        public var sequence = 0
        public init() {}
    }
}

public enum StoreBlog {
    /// Registers the blog's models once per process.
    public static func register() throws {
        try ModelRegistry.register(BlogWriter.self, BlogEntry.self, SaveMarker.self)
    }

    /// The state's save number: its marker's (0 when it has none yet).
    public static func sequence(_ context: ModelContext) -> Int {
        context.models(of: SaveMarker.self).first?.sequence ?? 0
    }

    /// A text of everything a reader of the context sees: each model's type, id and values, with
    /// references as they resolve (a reference to a removed model reads as none), in id order.
    public static func canonicalText(_ context: ModelContext) -> String {
        context.allModels.sorted { $0.modelId < $1.modelId }.map { model -> String in
            switch model {
            case let writer as BlogWriter:
                return "W \(writer.modelId) \(writer.name.debugDescription) \(writer.entries.map { "\($0.modelId)" })"
            case let entry as BlogEntry:
                return
                    "E \(entry.modelId) \(entry.title.debugDescription) \(entry.body.count):\(fnv1a(entry.body)) "
                    + "\(entry.likes) \(entry.tags) \(entry.writer.map { "\($0.modelId)" } ?? "-")"
            case let marker as SaveMarker:
                return "M \(marker.modelId) \(marker.sequence)"
            default:
                return "? \(model.modelId) \(type(of: model)) \(model.modelState)"
            }
        }.joined(separator: "\n")
    }

    /// A digest of ``canonicalText(_:)``, the same in every process (unlike `Hasher`'s).
    public static func digest(_ context: ModelContext) -> String {
        String(fnv1a(canonicalText(context)), radix: 16)
    }

    /// FNV-1a, 64 bits.
    static func fnv1a(_ text: String) -> UInt64 {
        text.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }

    /// Makes one to eight random changes to the blog in `context`: writers and entries inserted,
    /// edited, moved between writers and removed (an entry sometimes unlinked from its writer
    /// first, sometimes not), keeping about 60 entries.
    public static func change(_ context: ModelContext, using generator: inout SplitMix64) {
        for _ in 0..<(1 + Int(generator.next() % 8)) {
            let writers = context.models(of: BlogWriter.self)
            let entries = context.models(of: BlogEntry.self)
            let crowded = entries.count > 60
            let choice = writers.isEmpty ? 0 : entries.isEmpty ? 1 : generator.next() % 10
            switch choice {
            case 0 where writers.count < 8:
                BlogWriter.instance(in: context).name = "Writer \(generator.next() % 1_000)"
            case 0...3 where choice == 0 || !crowded:
                let writer = generator.pick(writers)
                let entry = BlogEntry.instance(in: context)
                entry.title = "Entry \(generator.next() % 10_000)"
                entry.body = String(repeating: "words and more words ", count: Int(generator.next() % 60))
                entry.writer = writer
                writer.entries.append(entry)
            case 4:
                let entry = generator.pick(entries)
                entry.title += "!"
                entry.body = String(repeating: "edited ", count: Int(generator.next() % 80))
            case 5:
                generator.pick(entries).likes += 1
            case 6:
                generator.pick(entries).tags.append("tag\(generator.next() % 5)")
            case 7:
                let entry = generator.pick(entries)
                let target = generator.pick(writers)
                entry.writer?.entries.removeAll { $0 === entry }
                entry.writer = target
                target.entries.append(entry)
            case 8:
                let entry = generator.pick(entries)
                if generator.chance(0.5) { entry.writer?.entries.removeAll { $0 === entry } }
                entry.removeFromContext()
            default:
                if writers.count > 2 {
                    let writer = generator.pick(writers)
                    for entry in writer.entries where generator.chance(0.5) { entry.removeFromContext() }
                    writer.removeFromContext()
                } else {
                    generator.pick(writers).name += "."
                }
            }
        }
    }
}
