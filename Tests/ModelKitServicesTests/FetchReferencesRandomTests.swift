import Foundation
import ModelKit
import Testing
import ModelKitTestSupport

@testable import ModelKitServices

/// Random graphs of writers and articles, saved, some records deleted behind the context's back,
/// then fetched from a random model to a random depth into a fresh context: what is loaded, what
/// stays a placeholder, what the references read and how many requests were sent must be what a
/// breadth-first walk over the saved graph says.
@Suite(
    "Random fetches with references agree with a walk over the saved graph",
    .enabled(if: serviceTestsEnabled, serviceTestsSkipped),
    .hangBackstop)
struct FetchReferencesRandomTests {
    /// The saved graph, by "Type/objectId": each record's pointers in order, and which records
    /// the server still has.
    struct Graph {
        var targets: [String: [String]] = [:]
        var existing: Set<String> = []
    }

    /// What the walk says a fetch from `root` to `depth` gives.
    struct Expected {
        var loaded: Set<String> = []
        var placeholders: Set<String> = []
        /// Records looked for and not found: references to them read as none.
        var missing: Set<String> = []
        var requests = 1
    }

    static func walk(_ graph: Graph, from root: String, depth: Int) -> Expected {
        var expected = Expected()
        expected.loaded = [root]
        var looked: Set<String> = [root]
        var frontier = [root]
        var hops = 0
        while !frontier.isEmpty, hops < depth {
            hops += 1
            var wanted: [String] = []
            for key in frontier {
                for target in graph.targets[key] ?? [] where looked.insert(target).inserted { wanted.append(target) }
            }
            expected.requests += Set(wanted.map { $0.prefix { $0 != "/" } }).count
            frontier = wanted.filter { graph.existing.contains($0) }
            expected.loaded.formUnion(frontier)
            expected.missing.formUnion(wanted.filter { !graph.existing.contains($0) })
        }
        for key in frontier {
            for target in graph.targets[key] ?? [] where !expected.loaded.contains(target) && !expected.missing.contains(target) {
                expected.placeholders.insert(target)
            }
        }
        return expected
    }

    static func key(_ model: any Model) -> String { "\(type(of: model).modelName)/\(model.objectId ?? "?")" }

    @Test("Loaded models, placeholders, references and request counts match a breadth-first walk")
    func randomGraphs() async throws {
        let seed = ProcessInfo.processInfo.environment["MODELKIT_FETCH_SEED"].flatMap { UInt64($0) } ?? 0xF37C_2026
        var random = SplitMix64(seed: seed)
        let service = try await KintoServer.freshService()
        let server = try await KintoServer.shared.value
        var fetches = 0
        for round in 0..<12 {
            let source = ModelContext()
            let writers = (0..<Int.random(in: 1...6, using: &random)).map { index in
                let writer = Writer.instance(in: source)
                writer.name = "r\(round) w\(index)"
                return writer
            }
            let articles = (0..<Int.random(in: 0...10, using: &random)).map { index in
                let article = Article.instance(in: source)
                article.title = "r\(round) a\(index)"
                if !random.chance(0.2) { article.author = random.pick(writers) }
                return article
            }
            for writer in writers {
                writer.articles = ModelArray(
                    Array(articles.shuffled(using: &random).prefix(Int.random(in: 0...4, using: &random))))
            }
            let models: [any RemoteModel] = writers + articles
            for model in models { try await Self.save(model, service) }
            var graph = Graph()
            for writer in writers { graph.targets[Self.key(writer)] = Array(writer.articles).map(Self.key) }
            for article in articles { graph.targets[Self.key(article)] = article.author.map { [Self.key($0)] } ?? [] }
            graph.existing = Set(models.map(Self.key))
            // Another client deletes up to two records.
            for _ in 0..<Int.random(in: 0...2, using: &random) where graph.existing.count > 1 {
                let gone = random.pick(graph.existing.sorted())
                let path = "/buckets/\(service.bucket)/collections/\(gone.replacingOccurrences(of: "/", with: "/records/"))"
                #expect(try await server.request("DELETE", path).status == 200)
                graph.existing.remove(gone)
            }
            for _ in 0..<4 {
                let root = random.pick(graph.existing.sorted())
                let depth = random.pick([0, 1, 2, 3, 4, Int.max])
                let expected = Self.walk(graph, from: root, depth: depth)
                let context = ModelContext()
                let objectId = String(root.drop { $0 != "/" }.dropFirst())
                let model: any RemoteModel =
                    root.hasPrefix("Writer/")
                    ? Writer.instance(objectId: objectId, in: context) : Article.instance(objectId: objectId, in: context)
                let before = service.metrics.requests
                try await Self.fetch(model, depth, service)
                let label = "seed \(seed) round \(round) root \(root) depth \(depth)"
                #expect(service.metrics.requests - before == expected.requests, "\(label)")
                let loaded = Set(context.allModels.filter { $0.modelState == .loaded }.map(Self.key))
                let placeholders = Set(context.allModels.filter { $0.modelState == .needsData }.map(Self.key))
                #expect(loaded == expected.loaded, "\(label)")
                #expect(placeholders == expected.placeholders, "\(label)")
                #expect(context.count == expected.loaded.count + expected.placeholders.count, "\(label)")
                // A loaded model holds the saved values; references to missing records read nil.
                for case let writer as Writer in context.allModels where writer.modelState == .loaded {
                    let saved = try #require(writers.first { Self.key($0) == Self.key(writer) })
                    #expect(writer.name == saved.name, "\(label)")
                    let kept = Array(saved.articles).map(Self.key).filter { !expected.missing.contains($0) }
                    #expect(Array(writer.articles).map(Self.key) == kept, "\(label)")
                    #expect(Array(writer.articles).allSatisfy { $0.modelContext === context }, "\(label)")
                }
                for case let article as Article in context.allModels where article.modelState == .loaded {
                    let saved = try #require(articles.first { Self.key($0) == Self.key(article) })
                    #expect(article.title == saved.title, "\(label)")
                    let author = saved.author.map(Self.key).flatMap { expected.missing.contains($0) ? nil : $0 }
                    #expect(article.author.map(Self.key) == author, "\(label)")
                }
                fetches += 1
            }
        }
        #expect(fetches == 48)
    }

    private static func save<M: RemoteModel>(_ model: M, _ service: KintoService) async throws {
        try await service.save(model)
    }

    private static func fetch<M: RemoteModel>(_ model: M, _ depth: Int, _ service: KintoService) async throws {
        try await service.fetch(model, referenceDepth: depth)
    }
}
