import BlogFixture
import Foundation
import ModelKit

// Setting a tracked property, against setting a stored property of a plain class.
//
// Both loops write `n` values (n is the size; no blog is built) round-robin into the `age` of
// 1,024 objects reached through an array, so the optimizer must do every store: it cannot prove
// that a store is overwritten before the results (all summed in `verify`) are read. The models are
// created before the clock starts and have never been changed, so ModelKit's time includes
// starting to track each of them (the first change of a model saves its values).

/// The number of objects the loops cycle through.
private let setTargets = 1024

/// The sum of the ages the loops leave behind: target `t` holds the last `i < n` with
/// `i % setTargets == t`.
private func expectedAgeSum(_ n: Int) -> Int {
    (0..<min(n, setTargets)).reduce(0) { sum, t in sum + ((n - 1 - t) / setTargets) * setTargets + t }
}

/// A plain class with a stored property: the peer of a model.
final class PlainCounter {
    var age = 0
}

/// A model used only by these benchmarks, with the property the loops write.
final class Counter: ModelObject<Counter.Properties> {
    struct Properties: ModelProperties {
        var age = 0
        var name = ""
    }
}

extension Benchmarks {
    /// `n` writes of a persisted property of models nobody observes.
    static let setProperty = Benchmark(name: "set-property") { data, session in
        let n = data.n
        let expected = expectedAgeSum(n)

        let modelKit = Subject(
            Report.modelKit,
            setup: { () -> (ModelContext, [Counter]) in
                let context = ModelContext()
                return (context, (0..<setTargets).map { _ in Counter.instance(in: context) })
            },
            body: { input -> [Counter] in
                let models = input.1
                for i in 0..<n { models[i & (setTargets - 1)].age = i }
                return models
            },
            verify: { models in try expect(models.reduce(0) { $0 + $1.age }, expected, "sum of the ages") })

        let author = Subject(
            "ModelKit, BenchAuthor (a model with more properties)",
            setup: { () -> (ModelContext, [BenchAuthor]) in
                let context = ModelContext()
                return (context, (0..<setTargets).map { _ in BenchAuthor.instance(in: context) })
            },
            body: { input -> [BenchAuthor] in
                let models = input.1
                for i in 0..<n { models[i & (setTargets - 1)].age = i }
                return models
            },
            verify: { models in try expect(models.reduce(0) { $0 + $1.age }, expected, "sum of the ages") })

        let plain = Subject(
            "plain class",
            setup: { (0..<setTargets).map { _ in PlainCounter() } },
            body: { objects -> [PlainCounter] in
                for i in 0..<n { objects[i & (setTargets - 1)].age = i }
                return objects
            },
            verify: { objects in try expect(objects.reduce(0) { $0 + $1.age }, expected, "sum of the ages") })

        return try BenchmarkResult(
            timing: [modelKit, plain], extras: [author],
            notes: ["\(setTargets) objects, written round-robin; the models start unchanged"], session: &session)
    }

    /// `n` writes to one model inside one beginChanges()/endChanges(), with a NotificationCenter
    /// observer of the model: one notification at the end.
    static let setPropertyBatched = Benchmark(name: "set-property-batched") { data, session in
        let n = data.n
        let expected = n - 1

        // The loops reach the one object through an array of references to it, so that the
        // optimizer cannot collapse the plain loop into a single store.
        let modelKit = Subject(
            Report.modelKit,
            setup: { () -> BatchFixture in BatchFixture() },
            body: { fixture -> BatchFixture in
                let models = fixture.references
                let model = models[0]
                model.beginChanges()
                for i in 0..<n { models[i & (setTargets - 1)].age = i }
                try model.endChanges()
                return fixture
            },
            verify: { fixture in
                _ = try expect(fixture.notifications, 1, "notifications")
                return try expect(fixture.references[0].age, expected, "the final age")
            })

        let unbatched = Subject(
            "ModelKit, no begin/end, not observed",
            setup: { () -> (ModelContext, [Counter]) in
                let context = ModelContext()
                let model = Counter.instance(in: context)
                return (context, Array(repeating: model, count: setTargets))
            },
            body: { input -> [Counter] in
                let models = input.1
                for i in 0..<n { models[i & (setTargets - 1)].age = i }
                return models
            },
            verify: { models in try expect(models[0].age, expected, "the final age") })

        let plain = Subject(
            "plain class",
            setup: { Array(repeating: PlainCounter(), count: setTargets) },
            body: { objects -> [PlainCounter] in
                for i in 0..<n { objects[i & (setTargets - 1)].age = i }
                return objects
            },
            verify: { objects in try expect(objects[0].age, expected, "the final age") })

        return try BenchmarkResult(
            timing: [modelKit, plain], extras: [unbatched],
            notes: ["one object, reached through an array of \(setTargets) references to it"], session: &session)
    }
}

/// One model with notifications on and an observer counting them, in a context of its own.
final class BatchFixture {
    let context = ModelContext()
    let center = NotificationCenter()
    let references: [Counter]
    private let count = NotificationCount()
    private var observer: NSObjectProtocol?

    var notifications: Int { count.value }

    init() {
        let model = Counter.instance(in: context)
        model.postsNotifications = true
        references = Array(repeating: model, count: setTargets)
        ModelNotifications.center = center
        let count = self.count
        observer = center.addObserver(forName: .modelDidChange, object: model, queue: nil) { _ in count.value += 1 }
    }

    deinit {
        if let observer { center.removeObserver(observer) }
    }
}

/// Counts notifications; they are posted on the thread that ends the batch, which reads the count.
final class NotificationCount: @unchecked Sendable {
    var value = 0
}
