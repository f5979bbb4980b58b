import ModelKit

extension Benchmarks {
    /// Creating the whole blog: n / 10 authors and n posts, their properties, each post's author
    /// and each author's posts. ModelKit creates models in a fresh context per run; the peer
    /// creates plain class instances and registers them in a `[UUID: AnyObject]`.
    static let create = Benchmark(name: "create") { data, session in
        let models = data.n + data.authorCount

        let modelKit = Subject(
            Report.modelKit,
            setup: { ModelContext() },
            body: { context in buildModelKitGraph(data, in: context) },
            verify: { graph in
                _ = try expect(graph.posts[0].modelContext?.count ?? 0, models, "models in the context")
                return try expect(graph.authors.reduce(0) { $0 + $1.posts.count }, data.n, "posts held by authors")
            })

        let plain = Subject(
            "plain classes + Dictionary",
            body: { buildPlainObjectGraph(data) },
            verify: { graph in
                _ = try expect(graph.objects.count, models, "objects in the dictionary")
                return try expect(graph.authors.reduce(0) { $0 + $1.posts.count }, data.n, "posts held by authors")
            })

        // The peer again with ids from a counter: on Linux, UUID() is a system call or three.
        let counterIds = Subject(
            "plain classes + Dictionary, counter ids instead of UUID()",
            body: { buildPlainObjectGraph(data, counterIds: true) },
            verify: { graph in try expect(graph.objects.count, models, "objects in the dictionary") })

        return try BenchmarkResult(timing: [modelKit, plain], extras: [counterIds], session: &session)
    }
}
