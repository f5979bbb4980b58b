import Dispatch
import Foundation
import Synchronization

// Parallel filling: the properties of new models filled on several threads.
//
// Once every header has been read and every model's instance made, filling one model's
// properties with its type's direct plan only reads the input, the id table and the instances,
// and writes that model's own storage. (Pointing a weak reference at a target forms the target's
// side table, which the runtime does atomically.) So when the context was empty and the source
// can be read from anywhere, the loader hands the models out in chunks to one worker per
// processor, each a copy of the loader with caches and a source of its own.
//
// Workers only take the direct plan's path, which runs no code of the app's. A model a worker
// cannot fill (data in another form, an error, a dangling pointer) is left to the loader's own
// serial pass, which decodes it through `Codable` or reports its error exactly as it would have
// without workers: what a load does and throws does not depend on how many threads it used.

extension GraphLoader {
    /// Fills the new models' properties on workers, when there are enough of them and more than
    /// one processor, and marks those filled as decoded; ``decodeAll()`` does the rest.
    func decodeInParallel() throws {
        guard !isStreaming, !isWorker, contextWasEmpty else { return }
        let count = headers.count
        let workerCount = options.parallelism.workers(for: count)
        guard workerCount > 1, try makeAllInstances() else { return }
        let work = Work(loader: self, workers: workerCount)
        defer { work.filled.deallocate() }
        let chunk = max(options.parallelism.chunk, 1)
        let next = Atomic<Int>(0)
        // The loader is the first worker, held to the same rules as the others, so that what
        // workers leave to the serial pass does not depend on which of them took a model.
        isWorker = true
        defer { isWorker = false }
        DispatchQueue.concurrentPerform(iterations: workerCount) { number in
            let worker = work.workers[number]
            while true {
                let start = next.wrappingAdd(chunk, ordering: .relaxed).oldValue
                guard start < count else { return }
                for index in start..<min(start + chunk, count) { work.filled[index] = worker.fillOnWorker(at: index) }
            }
        }
        for index in 0..<count where work.filled[index] {
            decoded[index] = true
            filledInParallel += 1
        }
    }

    /// What the workers share.
    ///
    /// Unchecked: each worker uses its own loader, and writes the flags of the chunks it took
    /// only (each index is taken once, through an atomic counter). The loaders' shared arrays
    /// are only read while workers run, and `concurrentPerform` returns after they all finished.
    private struct Work: @unchecked Sendable {
        /// The loader itself first, then one copy per further worker.
        let workers: [GraphLoader]
        /// Whether each model was filled.
        let filled: UnsafeMutableBufferPointer<Bool>

        init(loader: GraphLoader, workers count: Int) {
            var workers = [loader]
            for _ in 1..<count { workers.append(GraphLoader(workerOf: loader, source: loader.source.copyForWorker())) }
            self.workers = workers
            filled = UnsafeMutableBufferPointer.allocate(capacity: loader.headers.count)
            filled.initialize(repeating: false)
        }
    }

    /// Makes the instance of every model, as the serial pass would; `false` (with some made)
    /// when a model's type is not registered, whose instance only a typed pointer can make.
    private func makeAllInstances() throws -> Bool {
        for index in headers.indices where instances[index] == nil {
            guard let type = type(named: headers[index].name) else { return false }
            try makeInstance(type, at: index)
        }
        return true
    }

    private func makeInstance<M: Model>(_ type: M.Type, at index: Int) throws {
        _ = try instance(M.self, at: index)
    }

    /// Fills the model at `index` on a worker; `false` leaves it to the serial pass.
    private func fillOnWorker(at index: Int) -> Bool {
        guard let type = instanceTypes[index] else { return false }
        return fillOnWorker(type, at: index)
    }

    private func fillOnWorker<M: Model>(_ type: M.Type, at index: Int) -> Bool {
        // `instance(_:at:)` made it a `M`: `instanceTypes` holds its exact type.
        guard let instance = instances[index] else { return false }
        return fillDirectly(Unmanaged<M>.fromOpaque(instance.toOpaque()), at: index)
    }
}
