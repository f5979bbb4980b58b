import Dispatch
import Foundation
import Synchronization

// Parallel loading: new models made and filled on several threads.
//
// Once every header has been read, making a model's instance needs only its type and id, and
// filling its properties with its type's direct plan only reads the input (from the position its
// header gave), the id table and the instances, and writes that model's own storage. (Pointing a
// weak reference at a target forms the target's side table, which the runtime does atomically.)
// So when the context was empty, the loader hands the models out in chunks to one worker per
// processor twice: to make the instances, which this thread then keeps in the data's order, and
// to fill them, each worker with a copy of the loader and a source of its own.
//
// Making an instance runs the model type's `init()`; filling runs no code of the app's. A model a
// worker cannot fill (data in another form, an error, a dangling pointer) is left to the
// loader's own serial pass, which decodes it through `Codable` or reports its error exactly as it
// would have without workers: what a load does and throws does not depend on how many threads
// it used.

extension GraphLoader {
    /// Fills the new models' properties on workers, when there are enough of them and more than
    /// one processor, and marks those filled as decoded; ``decodeAll()`` does the rest.
    func decodeInParallel() {
        guard !isStreaming, !isWorker, contextWasEmpty else { return }
        let count = headers.count
        let workerCount = options.parallelism.workers(for: count)
        guard workerCount > 1, makeAllInstances(workers: workerCount) else { return }
        var loaders = [self]
        for _ in 1..<workerCount { loaders.append(GraphLoader(workerOf: self, source: source.copyForWorker())) }
        let filled = UnsafeMutableBufferPointer<Bool>.allocate(capacity: count)
        filled.initialize(repeating: false)
        defer { filled.deallocate() }
        // The loader is the first worker, held to the same rules as the others, so that what
        // workers leave to the serial pass does not depend on which of them took a model.
        isWorker = true
        defer { isWorker = false }
        // Each worker uses its own loader, and writes the flags of the models it took only.
        let shared = Unchecked((loaders, filled))
        inChunks(of: count, workers: workerCount) { number, range in
            let (loaders, filled) = shared.value
            for index in range { filled[index] = loaders[number].fillOnWorker(at: index) }
        }
        for index in 0..<count where filled[index] {
            decoded[index] = true
            filledInParallel += 1
        }
    }

    /// Calls `body` once for each chunk of `0..<count`, on `workers` threads (this one among
    /// them), with the number of the worker that took the chunk; returns when all are done.
    private func inChunks(of count: Int, workers: Int, _ body: @Sendable (Int, Range<Int>) -> Void) {
        let chunk = max(options.parallelism.chunk, 1)
        let next = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: workers) { number in
            while true {
                let start = next.wrappingAdd(chunk, ordering: .relaxed).oldValue
                guard start < count else { return }
                body(number, start..<min(start + chunk, count))
            }
        }
    }

    /// Makes the instance of every model; `false`, having made none, when a model's type is not
    /// registered (only a typed pointer can make its instance, which workers may not).
    ///
    /// Workers make the instances (which runs the model types' `init()`); this thread then keeps
    /// them in the order of the data, as the serial pass would have made them.
    private func makeAllInstances(workers: Int) -> Bool {
        let count = headers.count
        var types = [(any Model.Type)?](repeating: nil, count: count)
        for index in 0..<count where instances[index] == nil {
            guard let type = type(named: headers[index].name) else { return false }
            types[index] = type
        }
        let made = UnsafeMutableBufferPointer<Unmanaged<AnyObject>?>.allocate(capacity: count)
        made.initialize(repeating: nil)
        defer { made.deallocate() }
        // Only read while workers run; each worker writes the instances of the models it took.
        let shared = Unchecked((types, headers, made))
        inChunks(of: count, workers: workers) { _, range in
            let (types, headers, made) = shared.value
            for index in range {
                if let type = types[index] { made[index] = Self.make(type, id: headers[index].id) }
            }
        }
        // Models of one type mostly come together: each run of them is kept by one call for
        // their type, which looks up the generic types it uses once, not once per model.
        var start = 0
        while start < count {
            guard let type = types[start] else {
                start += 1
                continue
            }
            var end = start + 1
            while end < count, let next = types[end], ObjectIdentifier(next) == ObjectIdentifier(type) { end += 1 }
            keep(type, UnsafeBufferPointer(made), start..<end)
            start = end
        }
        return true
    }

    /// A new `M` with `id`, retained once: ``keep(_:_:at:)`` hands that retain to its batch.
    private static func make<M: Model>(_ type: M.Type, id: ModelID) -> Unmanaged<AnyObject> {
        let model = M()
        model.storage.metadata.modelId = id
        return Unmanaged.passRetained(model)
    }

    /// Keeps the models workers made for `range`, all of type `M`, in their batch made large
    /// enough for them at once (growing it copied it into newly faulted pages).
    private func keep<M: Model>(_ type: M.Type, _ made: UnsafeBufferPointer<Unmanaged<AnyObject>?>, _ range: Range<Int>) {
        if !isContextFree(M.self) { batch(for: M.self).reserveCapacity(adding: range.count) }
        for index in range {
            // Keeping writes the id's slot: a few ids ahead, those reads overlap.
            let ahead = index + ModelIDHashing.prefetchDistance
            if ahead < headers.count { positions.prefetch(headers[ahead].id) }
            guard let model = made[index] else { continue }
            keep(Unmanaged<M>.fromOpaque(model.toOpaque()).takeRetainedValue(), at: index)
        }
    }

    /// Fills the model at `index` on a worker; `false` leaves it to the serial pass.
    private func fillOnWorker(at index: Int) -> Bool {
        guard let type = instanceTypes[index] else { return false }
        return fillOnWorker(type, at: index)
    }

    private func fillOnWorker<M: Model>(_ type: M.Type, at index: Int) -> Bool {
        // `keep(_:at:)` made it a `M`: `instanceTypes` holds its exact type.
        guard let instance = instances[index] else { return false }
        return fillDirectly(Unmanaged<M>.fromOpaque(instance.toOpaque()), at: index)
    }
}

/// Values handed to workers that the compiler cannot prove safe to share: each use says why it is.
private struct Unchecked<Value>: @unchecked Sendable {
    let value: Value

    init(_ value: Value) {
        self.value = value
    }
}
