import BlogFixture
import Foundation
import ModelKit

// live-batch's ModelKit side alone (see LiveBenchmarks.swift in the suite): the blog's authors
// (BlogFixture), each with one post that references it as the query benchmarks' authors have, and
// with their ages and names; a live query of 1% and of 15% of them sorted by name; batches of
// 1,000 renames of matching authors, each one `context.batchChanges { … }` with one change set.
// Prints the median batch's time, and that of the same renames in a context no live query listens
// to, alone and in a batch.

/// A name with one of 100 two-letter prefixes, so that a renamed author moves in the order.
private func profileName(_ k: Int, _ suffix: String) -> String {
    let letters = Array("abcdefghijklmnopqrstuvwxyz")
    let prefix = k % 100
    return String(letters[prefix / 15]) + String(letters[prefix % 15]) + suffix
}

func profileLiveBatch(authors n: Int, repeats: Int, selectivity: String?) throws {
    func makeContext() -> (ModelContext, [BenchAuthor]) {
        let context = ModelContext()
        let authors = (0..<n).map { i in
            let author = BenchAuthor.instance(in: context)
            author.age = i &* 7919 % 10_000
            author.name = profileName(i, "-\(i)")
            let post = BenchPost.instance(in: context)
            post.author = author
            author.posts.append(post)
            return author
        }
        return (context, authors)
    }
    let (context, authors) = makeContext()
    let (quiet, quietAuthors) = makeContext()
    var counter = 0
    let ranges = [(100, 199), (100, 1_599)].filter { selectivity == nil || "\(($0.1 - $0.0 + 1) / 100)" == selectivity }
    for (low, high) in ranges {
        let matching = authors.filter { $0.age >= low && $0.age <= high }
        let quietMatching = quietAuthors.filter { $0.age >= low && $0.age <= high }
        let live = try BenchAuthor.query(in: context).where(\.age, .between(low, high)).sorted(by: \.name).live()
        var changeSets = 0
        let token = live.observe { _, _ in changeSets += 1 }
        let size = min(1_000, matching.count)
        var batches: [Double] = []
        var renames: [Double] = []
        var quietBatches: [Double] = []
        for _ in 0..<repeats {
            let names = (0..<size).map { k -> String in
                counter += 1
                return profileName(counter &* 37, "-e\(counter)")
            }
            var start = DispatchTime.now().uptimeNanoseconds
            context.batchChanges {
                for k in 0..<size { matching[k].name = names[k] }
            }
            batches.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
            start = DispatchTime.now().uptimeNanoseconds
            for k in 0..<size { quietMatching[k].name = names[k] }
            renames.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
            start = DispatchTime.now().uptimeNanoseconds
            quiet.batchChanges {
                for k in 0..<size { quietMatching[k].name = names[size - 1 - k] }
            }
            quietBatches.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        token.cancel()
        guard changeSets == repeats else { throw CocoaError(.featureUnsupported) }
        // The least time too: on a shared machine, what others run only ever adds to it.
        func times(_ values: [Double]) -> String {
            let sorted = values.sorted()
            return String(format: "%.3f ms (least %.3f)", sorted[sorted.count / 2] * 1000, sorted[0] * 1000)
        }
        print(
            "\(matching.count) of \(n) match: a batch of \(size) renames \(times(batches)),"
                + " the renames alone \(times(renames)), in a batch with no live query \(times(quietBatches))"
                + " (medians of \(repeats))")
        _ = quiet
    }
}
