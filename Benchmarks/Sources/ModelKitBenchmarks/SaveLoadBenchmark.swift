import BlogFixture
import Foundation
import ModelKit

extension Benchmarks {
    /// The blog saved to a file and read back into a new graph (issue #37's "save + load"):
    /// ModelKit's `write(to:format: .json)` of the whole context, then `load(from:)` into a new
    /// context. The peer is what a GRDB app does with the same data: the whole blog inserted into
    /// a new SQLite database in one transaction (the tables of the store benchmarks, WAL,
    /// `synchronous = FULL`, then a checkpoint), then every row read back into plain classes with
    /// the blog's graph shape (StorePeer.swift). Both sides make the save durable before reading.
    static let saveLoad = Benchmark(name: "save-load") { data, session in
        let scratch = ScratchDirectory.shared
        let fileURL = try scratch.file("save-load.json", n: data.n)
        let databaseURL = try scratch.file("save-load.sqlite", n: data.n)
        let models = data.n + data.authorCount + 1

        let modelKit = Subject(
            Report.modelKit,
            setup: { () -> ModelContext in
                let context = ModelContext()
                _ = buildModelKitBlog(data, in: context)
                return context
            },
            body: { context in
                try modelKitWrite(context, to: fileURL, format: .json)
                return try modelKitLoad(from: fileURL, format: .json)
            },
            verify: { loaded in try expect(loaded.count, models, "models loaded") })

        let grdb = Subject(
            grdbWAL,
            body: { () -> PlainObjectGraph<Int> in
                let created = try GRDBBlog.create(data, at: databaseURL)
                let (opened, graph) = try GRDBBlog.open(databaseURL)
                withExtendedLifetime((created, opened)) {}
                return graph
            },
            verify: { graph in try verifyLoadedBlog(graph, data) })

        return try BenchmarkResult(timing: [modelKit, grdb], session: &session)
    }
}
