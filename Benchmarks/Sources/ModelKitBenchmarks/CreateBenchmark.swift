import BlogFixture
import Foundation
import ModelKit

extension Benchmarks {
    /// Creating the whole blog: n / 10 authors and n posts, their properties, each post's author
    /// and each author's posts. ModelKit creates models in a fresh context per run. The peers are
    /// plain final classes holding the same data with the references wired both ways, kept in
    /// arrays, each object given a new id: from a counter (`Int`) or with `UUID()`, which on Linux
    /// reads /dev/urandom and costs more than the object. Also timed: both kept in a `Dictionary`
    /// by id.
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

        func plain<ID: PlainID>(_ name: String, ids: ID.Type, registered: Bool = false) -> Subject {
            Subject(
                name, body: { buildPlainObjectGraph(data, ids: ids, registered: registered) },
                verify: { graph in
                    _ = try expect(graph.authors.count + graph.posts.count, models, "objects made")
                    if registered { _ = try expect(graph.objects.count, models, "objects in the dictionary") }
                    return try expect(graph.authors.reduce(0) { $0 + $1.posts.count }, data.n, "posts held by authors")
                })
        }

        return try BenchmarkResult(
            timing: [
                modelKit, plain("plain classes (Int ids)", ids: Int.self), plain("plain classes (UUID ids)", ids: UUID.self),
            ],
            // Also an identity map, as a context keeps: with UUID ids (the peer of the suite before
            // issue #13), and with Int ids (issue #37's "faster than plain classes kept in a
            // Dictionary by id").
            extras: [
                plain("plain classes + Dictionary (UUID ids)", ids: UUID.self, registered: true),
                plain("plain classes + Dictionary (Int ids)", ids: Int.self, registered: true),
            ],
            session: &session)
    }
}
