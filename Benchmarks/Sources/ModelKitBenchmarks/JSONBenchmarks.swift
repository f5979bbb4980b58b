import Foundation
import ModelKit

extension Benchmarks {
    /// The whole blog to JSON text: ModelKit's `blog.jsonData()` (walking the graph, writing
    /// pointers, dates and text) against `JSONEncoder` encoding the same data as plain structs.
    static let serializeJSON = Benchmark(name: "serialize-json") { data, session in
        let context = ModelContext()
        let blog = buildModelKitBlog(data, in: context)
        let models = data.n + data.authorCount + 1

        let modelKit = try measure(
            Report.modelKit, session: &session,
            body: { try blog.jsonData() },
            verify: \.count)

        // The two phases of jsonData(), for the notes: the graph walk into a value tree, and the
        // tree to text.
        let walk = try measure(
            "serialize(as: .json)", session: &session,
            body: { try blog.serialize(as: .json) },
            verify: { value in try expect(value[models - 1] == nil ? 0 : models, models, "serialized models") })
        let value = try blog.serialize(as: .json)
        let text = measure("ModelValue.jsonData()", session: &session, body: { value.jsonData() }, verify: \.count)
        let modelKitBytes = value.jsonData().count

        let plainBlog = buildPlainBlog(data)
        let encoder = JSONEncoder()
        let jsonEncoder = try measure(
            "JSONEncoder", session: &session,
            body: { try encoder.encode(plainBlog) },
            verify: \.count)
        let plainBytes = try encoder.encode(plainBlog).count
        blackHole(context)

        return BenchmarkResult(
            rows: [
                (Report.modelKit, modelKit),
                ("JSONEncoder", jsonEncoder),
            ],
            notes: [
                "ModelKit phases: serialize(as: .json) \(fixed(walk, 6)) s, ModelValue.jsonData() \(fixed(text, 6)) s",
                "output: ModelKit \(megabytes(modelKitBytes)), JSONEncoder \(megabytes(plainBytes))",
            ])
    }

    /// The whole blog from JSON text: ModelKit's `BenchBlog.instance(fromJSON:in:)` into a fresh
    /// context per run against `JSONDecoder` decoding the plain structs from their own JSON.
    static let deserializeJSON = Benchmark(name: "deserialize-json") { data, session in
        let models = data.n + data.authorCount + 1
        let json: Data = try {
            let context = ModelContext()
            return try buildModelKitBlog(data, in: context).jsonData()
        }()

        let modelKit = try measure(
            Report.modelKit, session: &session,
            setup: { ModelContext() },
            body: { context in try BenchBlog.instance(fromJSON: json, in: context) },
            verify: { blog in
                _ = try expect(blog.modelContext?.count ?? 0, models, "models in the context")
                return try expect(blog.authors.count, data.authorCount, "authors of the blog")
            })

        // The two phases of instance(fromJSON:), for the notes: parsing the text into a value
        // tree, and reading the graph from the tree.
        let parse = try measure(
            "ModelValue(json:)", session: &session,
            body: { try ModelValue(json: json) },
            verify: { value in try expect(value[models - 1] == nil ? 0 : models, models, "parsed models") })
        let value = try ModelValue(json: json)
        let read = try measure(
            "instance(from:in:)", session: &session,
            setup: { ModelContext() },
            body: { context in try BenchBlog.instance(from: value, in: context) },
            verify: { blog in try expect(blog.modelContext?.count ?? 0, models, "models in the context") })

        let plainJSON = try JSONEncoder().encode(buildPlainBlog(data))
        let decoder = JSONDecoder()
        let jsonDecoder = try measure(
            "JSONDecoder", session: &session,
            body: { try decoder.decode(PlainBlog.self, from: plainJSON) },
            verify: { blog in try expect(blog.posts.count, data.n, "posts decoded") })

        return BenchmarkResult(
            rows: [
                (Report.modelKit, modelKit),
                ("JSONDecoder", jsonDecoder),
            ],
            notes: [
                "ModelKit phases: ModelValue(json:) \(fixed(parse, 6)) s, instance(from:in:) \(fixed(read, 6)) s",
                "input: ModelKit \(megabytes(json.count)), JSONDecoder \(megabytes(plainJSON.count))",
            ])
    }
}

/// A byte count in megabytes, for notes.
func megabytes(_ bytes: Int) -> String {
    fixed(Double(bytes) / 1_048_576, 1) + " MB"
}
