import BlogFixture
import Foundation
import ModelKit

extension Benchmarks {
    /// The whole blog to JSON text: ModelKit's `blog.jsonData()` (walking the graph, writing
    /// pointers, dates and text) against `JSONEncoder` encoding the same data as plain structs,
    /// first in the compact shape an app without ModelKit would write (integer ids, the strongest
    /// peer), then with `UUID` ids (the heavier peer). The context writer,
    /// `context.data(format: .json)`, writes the same models without the walk from the root, so
    /// its row shows what the walk and its reference look-ups cost.
    static let serializeJSON = Benchmark(name: "serialize-json") { data, session in
        let models = data.n + data.authorCount + 1
        let context = ModelContext()
        let blog = buildModelKitBlog(data, in: context)
        let value = try blog.serialize(as: .json)
        let plainBlog = buildPlainBlog(data)
        let compactFile = buildCompactFile(data)
        // The coders' defaults are their fastest configuration: no formatting, no key sorting,
        // dates as numbers.
        let encoder = JSONEncoder()

        // The in-memory outputs' peak memory above what was resident when the run began: the
        // output itself, plus whatever growing it and the walk's tables cost.
        let peaks = (jsonData: PeakRecorder(), context: PeakRecorder(), compact: PeakRecorder())
        let modelKit = Subject(
            Report.modelKit, recordingPeaksIn: peaks.jsonData, setup: {}, body: { _ in try blog.jsonData() }, verify: \.count)
        let compact = Subject(
            "JSONEncoder (compact)", recordingPeaksIn: peaks.compact, setup: {}, body: { _ in try encoder.encode(compactFile) },
            verify: \.count)
        let jsonEncoder = Subject("JSONEncoder", body: { try encoder.encode(plainBlog) }, verify: \.count)
        let contextName = "\(Report.modelKit) (context.data(format: .json))"
        let contextWriter = Subject(
            contextName, recordingPeaksIn: peaks.context, setup: {}, body: { _ in try context.data(format: .json) },
            verify: \.count)
        // The same text by way of a value tree: the graph into a tree, and the tree to text
        // (jsonData() itself streams, without the tree).
        let walk = Subject(
            "tree: serialize(as: .json)",
            body: { try blog.serialize(as: .json) },
            verify: { value in try expect(value[models - 1] == nil ? 0 : models, models, "serialized models") })
        let text = Subject("tree: ModelValue.jsonData()", body: { value.jsonData() }, verify: \.count)

        let sizes =
            "output: ModelKit \(megabytes(value.jsonData().count)), context writer \(megabytes(try context.data(format: .json).count)), "
            + "JSONEncoder (compact) \(megabytes(try encoder.encode(compactFile).count)), JSONEncoder \(megabytes(try encoder.encode(plainBlog).count))"
        var result = try BenchmarkResult(
            timing: [modelKit, compact, jsonEncoder, contextWriter], extras: [walk, text], notes: [sizes], session: &session)
        for (name, recorder, output) in [
            (Report.modelKit, peaks.jsonData, try blog.jsonData().count),
            (contextName, peaks.context, try context.data(format: .json).count),
            ("JSONEncoder (compact)", peaks.compact, try encoder.encode(compactFile).count),
        ] {
            guard let run = recorder.highest else { continue }
            result.peakRSSBytes[name] = run.peak
            let extra = run.peak - run.start
            result.notes.append(
                "\(name): peak memory above the start of the run \(megabytes(extra)), "
                    + "\(fixed(Double(extra) / Double(max(output, 1)), 2)) x its output of \(megabytes(output))")
        }
        blackHole(context)
        return result
    }

    /// The whole blog from JSON text: ModelKit's `BenchBlog.instance(fromJSON:in:)` into a fresh
    /// context per run against `JSONDecoder` decoding plain structs from their own JSON: the
    /// compact shape first (integer ids, the strongest peer), then `UUID` ids (the heavier peer).
    static let deserializeJSON = Benchmark(name: "deserialize-json") { data, session in
        let models = data.n + data.authorCount + 1
        let json: Data = try {
            let context = ModelContext()
            return try buildModelKitBlog(data, in: context).jsonData()
        }()
        let value = try ModelValue(json: json)
        let plainJSON = try JSONEncoder().encode(buildPlainBlog(data))
        let compactJSON = try JSONEncoder().encode(buildCompactFile(data))
        let decoder = JSONDecoder()

        let modelKit = Subject(
            Report.modelKit,
            setup: { ModelContext() },
            body: { context in try BenchBlog.instance(fromJSON: json, in: context) },
            verify: { blog in
                _ = try expect(blog.modelContext?.count ?? 0, models, "models in the context")
                return try expect(blog.authors.count, data.authorCount, "authors of the blog")
            })
        let compact = Subject(
            "JSONDecoder (compact)",
            body: { try decoder.decode(CompactFile.self, from: compactJSON) },
            verify: { file in try verifyLoadedBlog(file, data) })
        let jsonDecoder = Subject(
            "JSONDecoder",
            body: { try decoder.decode(PlainBlog.self, from: plainJSON) },
            verify: { blog in try expect(blog.posts.count, data.n, "posts decoded") })
        // The same graph by way of a value tree: the text into a tree, and the graph from the
        // tree (instance(fromJSON:) itself reads the text in place, without the tree).
        let parse = Subject(
            "tree: ModelValue(json:)",
            body: { try ModelValue(json: json) },
            verify: { value in try expect(value[models - 1] == nil ? 0 : models, models, "parsed models") })
        let read = Subject(
            "tree: instance(from:in:)",
            setup: { ModelContext() },
            body: { context in try BenchBlog.instance(from: value, in: context) },
            verify: { blog in try expect(blog.modelContext?.count ?? 0, models, "models in the context") })

        let sizes =
            "input: ModelKit \(megabytes(json.count)), JSONDecoder (compact) \(megabytes(compactJSON.count)), "
            + "JSONDecoder \(megabytes(plainJSON.count))"
        return try BenchmarkResult(
            timing: [modelKit, compact, jsonDecoder], extras: [parse, read], notes: [sizes], session: &session)
    }
}

/// A byte count in megabytes, for notes.
func megabytes(_ bytes: Int) -> String {
    fixed(Double(bytes) / 1_048_576, 1) + " MB"
}
