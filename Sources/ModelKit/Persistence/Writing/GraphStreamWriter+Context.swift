// Writing every model of a context: the common case (saving the app's whole graph), and the one
// that must be fast at a million models.
//
// The walk for a subgraph queues each model it reaches, retaining it and remembering its
// identity. A context already holds its models in one typed list per model type, so here the
// writer takes those lists as they are and writes them in order, without retaining each model
// (the lists do) and without resolving references to them: a reference whose id is in the
// context points to the context's model with that id, which is where it resolves. Only models
// reached outside the context are queued, as for a subgraph.

extension GraphStreamWriter {
    /// Writes the envelope and every model of `context` (and any model they reach outside it):
    /// the models of each type in the context's order, types by model name.
    ///
    /// - Returns: The number of models written.
    @discardableResult
    func writeDocument(context: ModelContext) throws -> Int {
        let segments = context.withRegistry { registry in
            registry.byType.values.compactMap { ($0 as? any ContextTypeList)?.segment() }
        }
        .sorted { $0.name < $1.name }
        writtenContext = context
        ownerContext = context
        defer {
            writtenContext = nil
            ownerContext = nil
        }
        // First every id, so that pointers to models later in the file are known to be there.
        let total = segments.reduce(0) { $0 + $1.count }
        positions = ModelIDTable(minimumCapacity: total)
        sink.expect(models: total)
        var start = 0
        for segment in segments {
            segment.identify(into: self, from: start)
            start += segment.count
        }
        queueBase = start
        return try writeDocument {
            var start = 0
            for segment in segments {
                try segment.write(with: self, from: start)
                start += segment.count
            }
        } tracking: {
            // Only a context with package metadata has any: the others write what they always did.
            guard !context.metadataTables.isEmpty || context.keepsPackageState else { return nil }
            return TrackingMember.gather(segments.flatMap(\.anyModels), context: context)
        }
    }
}

/// The models of one type in a context, in the context's order.
protocol ContextSegment {
    var name: String { get }
    var count: Int { get }
    /// The models, in order.
    var anyModels: [any Model] { get }
    /// Gives each model its position, from `start` on.
    func identify(into writer: GraphStreamWriter, from start: Int)
    func write(with writer: GraphStreamWriter, from start: Int) throws
}

/// A context's list of the models of one type, whatever the type.
protocol ContextTypeList: AnyObject {
    func segment() -> any ContextSegment
}

extension ModelContext.TypeList: ContextTypeList {
    func segment() -> any ContextSegment {
        // A copy of the array shares its storage: the list may change while the file is written,
        // and the copy keeps the models it had alive.
        TypedSegment(name: ModelRegistry.name(of: M.self), models: models)
    }
}

struct TypedSegment<M: Model>: ContextSegment {
    let name: String
    let models: [M]

    var count: Int { models.count }
    var anyModels: [any Model] { models }

    func identify(into writer: GraphStreamWriter, from start: Int) {
        models.withUnsafeBufferPointer { models in
            for offset in models.indices {
                Unmanaged.passUnretained(models[offset])._withUnsafeGuaranteedRef { model in
                    let metadata = model.storage.metadata
                    writer.positions.insert(metadata.modelId, index: start + offset)
                    if let objectId = metadata.objectId { writer.objectIds[start + offset] = objectId }
                }
            }
        }
    }

    func write(with writer: GraphStreamWriter, from start: Int) throws {
        try models.withUnsafeBufferPointer { models in
            for offset in models.indices {
                try Unmanaged.passUnretained(models[offset])._withUnsafeGuaranteedRef { model in
                    try writer.writeModel(model, index: start + offset)
                }
                try writer.sink.buffer.flushIfNeeded()
            }
        }
    }
}
