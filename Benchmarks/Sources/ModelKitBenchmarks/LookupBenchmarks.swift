import BlogFixture
import Foundation
import ModelKit

extension Benchmarks {
    /// n lookups of posts by model id in a context of the whole blog, in a fixed shuffled order,
    /// against the same lookups by `UUID` in a dictionary of plain objects, each with an `as?` cast.
    static let lookupModelId = Benchmark(name: "lookup-modelId") { data, session in
        let order = shuffledIndices(data.n)

        let context = ModelContext()
        let posts = buildModelKitGraph(data, in: context).posts
        let modelIds = order.map { posts[$0].modelId }
        let modelKit = Subject(
            Report.modelKit,
            body: { () -> Int in
                var hits = 0
                for id in modelIds where context.model(BenchPost.self, modelId: id) != nil {
                    hits += 1
                }
                return hits
            },
            verify: { try expect($0, data.n, "posts found") })

        let plain = buildPlainObjectGraph(data, ids: UUID.self, registered: true)
        let objects = plain.objects
        let uuids = order.map { plain.posts[$0].id }
        let dictionary = Subject(
            "Dictionary<UUID, AnyObject>",
            body: { () -> Int in
                var hits = 0
                for id in uuids where objects[id] as? PlainPostObject<UUID> != nil {
                    hits += 1
                }
                return hits
            },
            verify: { try expect($0, data.n, "posts found") })

        let result = try BenchmarkResult(timing: [modelKit, dictionary], session: &session)
        blackHole(plain)
        return result
    }

    /// n lookups of posts by object id (`p<i>`) with `BenchPost.instance(objectId:in:)`, against
    /// the same lookups in a `[String: AnyObject]` of plain objects, each with an `as?` cast.
    static let lookupObjectId = Benchmark(name: "lookup-objectId") { data, session in
        let keys = shuffledIndices(data.n).map(BlogData.objectId(ofPost:))
        let models = data.n + data.authorCount

        let context = ModelContext()
        _ = buildModelKitGraph(data, in: context, objectIds: true)
        let modelKit = Subject(
            Report.modelKit,
            body: { () -> Int in
                var hits = 0
                for key in keys where BenchPost.instance(objectId: key, in: context).modelState == .new {
                    hits += 1
                }
                return hits
            },
            verify: { hits in
                // `instance(objectId:)` creates a placeholder when it finds nothing: none may appear.
                _ = try expect(context.count, models, "models in the context")
                return try expect(hits, data.n, "posts found")
            })

        let plain = buildPlainObjectGraph(data, ids: UUID.self)
        var objects: [String: AnyObject] = [:]
        for (i, post) in plain.posts.enumerated() { objects[BlogData.objectId(ofPost: i)] = post }
        let dictionary = Subject(
            "Dictionary<String, AnyObject>",
            body: { [objects] () -> Int in
                var hits = 0
                for key in keys where objects[key] as? PlainPostObject<UUID> != nil {
                    hits += 1
                }
                return hits
            },
            verify: { try expect($0, data.n, "posts found") })

        let result = try BenchmarkResult(timing: [modelKit, dictionary], session: &session)
        blackHole(plain)
        return result
    }
}
