import Foundation
import ModelKit

// Relationships (issue #15): appending posts to their authors with the inverse kept (each append
// also sets the post's author), against the same append without inverses declared; and removing
// a tree with a cascade delete rule.

/// An author whose posts name it as their author: the inverse is kept.
final class InverseAuthor: ModelObject<InverseAuthor.Properties> {
    struct Properties: ModelProperties {
        var name = ""
        var posts: ModelArray<InversePost> = .init(inverse: \InversePost.Properties.author)
    }
}

final class InversePost: ModelObject<InversePost.Properties> {
    struct Properties: ModelProperties {
        var title = ""
        var author: ModelRef<InverseAuthor> = .init(inverse: \InverseAuthor.Properties.posts)
    }
}

/// The same shape without relationships declared.
final class UnlinkedAuthor: ModelObject<UnlinkedAuthor.Properties> {
    struct Properties: ModelProperties {
        var name = ""
        var posts = ModelArray<UnlinkedPost>()
    }
}

final class UnlinkedPost: ModelObject<UnlinkedPost.Properties> {
    struct Properties: ModelProperties {
        var title = ""
        var author = ModelRef<UnlinkedAuthor>()
    }
}

/// A tree node whose children are removed with it.
final class TreeNode: ModelObject<TreeNode.Properties> {
    struct Properties: ModelProperties {
        var children: ModelArray<TreeNode> = .init(inverse: \TreeNode.Properties.parent, deleteRule: .cascade)
        var parent: ModelRef<TreeNode> = .init(inverse: \TreeNode.Properties.children)
    }
}

extension Benchmarks {
    /// `n` posts appended to `n / 10` authors (post `i` to author `i % authors`), in a context
    /// where all the models already are.
    static let relationshipsAppend = Benchmark(name: "relationships-append") { data, session in
        let n = data.n
        let authorCount = data.authorCount

        let inverses = Subject(
            Report.modelKit,
            setup: { () -> (ModelContext, [InverseAuthor], [InversePost]) in
                let context = ModelContext()
                return (
                    context, (0..<authorCount).map { _ in InverseAuthor.instance(in: context) },
                    (0..<n).map { _ in InversePost.instance(in: context) }
                )
            },
            body: { input -> [InversePost] in
                let (_, authors, posts) = input
                for i in 0..<n { authors[i % authorCount].posts.append(posts[i]) }
                return posts
            },
            verify: { posts in try expect(posts.reduce(0) { $0 + ($1.author == nil ? 0 : 1) }, n, "posts with an author") })

        let plain = Subject(
            "ModelKit (no inverses)",
            setup: { () -> (ModelContext, [UnlinkedAuthor], [UnlinkedPost]) in
                let context = ModelContext()
                return (
                    context, (0..<authorCount).map { _ in UnlinkedAuthor.instance(in: context) },
                    (0..<n).map { _ in UnlinkedPost.instance(in: context) }
                )
            },
            body: { input -> [UnlinkedAuthor] in
                let (_, authors, posts) = input
                for i in 0..<n { authors[i % authorCount].posts.append(posts[i]) }
                return authors
            },
            verify: { authors in try expect(authors.reduce(0) { $0 + $1.posts.ids.count }, n, "posts appended") })

        return try BenchmarkResult(
            timing: [inverses, plain],
            notes: ["\(authorCount) authors; with inverses each append also sets the post's author"], session: &session)
    }

    /// Removes the root of a tree of `n` models (each with up to 10 children) whose children
    /// cascade.
    static let relationshipsCascade = Benchmark(name: "relationships-cascade") { data, session in
        let n = data.n
        let cascade = Subject(
            Report.modelKit,
            setup: { () -> (ModelContext, TreeNode) in
                let context = ModelContext()
                let nodes = (0..<n).map { _ in TreeNode.instance(in: context) }
                for index in 1..<n { nodes[(index - 1) / 10].children.append(nodes[index]) }
                return (context, nodes[0])
            },
            body: { input -> ModelContext in
                try input.0.delete(input.1)
                return input.0
            },
            verify: { context in try expect(context.count, 0, "models left") })
        return try BenchmarkResult(timing: [cascade], notes: ["a tree of \(n) models, 10 children each"], session: &session)
    }
}
