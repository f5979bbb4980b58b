import Foundation

/// Options for deserializing models.
public struct DeserializationOptions: Sendable {
    /// What to do with a `ModelPointer` whose target is not in the data.
    public enum DanglingPointerPolicy: Sendable, Hashable {
        /// Stop with ``SerializationError/Code/danglingPointer`` (the default).
        case fail
        /// Resolve to the model with that id already in the context or, if there is none, to a new
        /// placeholder with that id in state ``ModelState/needsData``: for partial graphs, such as
        /// a page of results from a backend.
        case placeholder
    }

    /// What to do with a stored property that the model's `Properties` does not decode: a
    /// property renamed without ``PropertyRenaming``, or removed.
    ///
    /// Such a value is not loaded (the property keeps its default) and the next save of the model
    /// drops it, so by default the load says so.
    ///
    /// ```swift
    /// try context.load(from: file, options: DeserializationOptions(unknownKeys: .fail))
    /// ```
    public enum UnknownKeyPolicy: Sendable, Hashable {
        /// Load, and write one warning per model type and key to standard error (the default):
        /// `ModelKit warning: Profile (model …) has a stored property "name" that
        /// Profile.Properties does not decode; …`.
        case warn
        /// Stop with ``SerializationError/Code/unknownKey``, naming the model (index, name and
        /// id) and the key; the context is then unchanged.
        case fail
        /// Load silently, ignoring such keys as loads did before the check: for files whose
        /// extra keys are expected (properties removed on purpose).
        case ignore
    }

    /// What to do with pointers to models that are not in the data.
    public var danglingPointers: DanglingPointerPolicy

    /// What to do with stored keys the model's `Properties` does not decode (see
    /// ``UnknownKeyPolicy``); ``UnknownKeyPolicy/warn`` by default.
    public var unknownKeys: UnknownKeyPolicy

    /// How loading spreads its work over threads (see `GraphLoader+Parallel.swift`); tests
    /// change it to run workers on small inputs.
    var parallelism = Parallelism()

    /// Whether a model of the data that the context holds under another model id, but with the
    /// same type and object id, updates that model (a merge; see `GraphLoader+ObjectIds.swift`).
    var matchesObjectIds = false

    /// Options with the given policies; the defaults are those of every load that takes none.
    ///
    /// ```swift
    /// let strict = DeserializationOptions(unknownKeys: .fail)
    /// let page = DeserializationOptions(danglingPointers: .placeholder)
    /// ```
    public init(danglingPointers: DanglingPointerPolicy = .fail, unknownKeys: UnknownKeyPolicy = .warn) {
        self.danglingPointers = danglingPointers
        self.unknownKeys = unknownKeys
    }
}

extension DeserializationOptions {
    struct Parallelism: Sendable {
        /// The fewest models worth filling on workers: below it, waking threads costs more than
        /// they save.
        var minimumModels = 2048
        /// The models a worker takes at a time: small enough for workers to finish together,
        /// large enough that taking the next chunk (one atomic add) costs nothing.
        var chunk = 256
        /// The number of workers, counting the loading thread; one per active processor (at
        /// most eight) when `nil`.
        var workers: Int?

        /// The number of workers for `models` models; 1 means no parallelism.
        func workers(for models: Int) -> Int {
            guard models >= minimumModels else { return 1 }
            return max(1, min(workers ?? Self.processors, models / max(chunk, 1)))
        }

        private static let processors = min(ProcessInfo.processInfo.activeProcessorCount, 8)
    }
}
