import Foundation

/// Models from a value tree (``Model/instance(from:in:options:isolation:)``): the tree is flattened into a
/// ``ModelValueDocument`` and read by the same loader and decoder as files, so a tree and a file
/// holding the same models load the same way and fail with the same errors.
final class ModelValueSource: ModelSource {
    let document: ModelValueDocument
    @exclusivity(unchecked) private var infos = ModelTypeInfoCache()

    /// - Throws: ``SerializationError/Code/nestingTooDeep`` for a tree nested beyond what a
    ///   model holds (see ``ModelValueDocument/maximumTreeDepth``).
    init(_ value: ModelValue) throws {
        document = try ModelValueDocument(value)
    }

    private init(document: ModelValueDocument) {
        self.document = document
    }

    /// Workers only read the document; each gets its own caches.
    func copyForWorker() -> any ModelSource { ModelValueSource(document: document) }

    func readHeaders(into loader: GraphLoader) throws {
        try loader.readTreeHeaders(in: document, top: 0, modelLimit: document.nodes.count)
    }

    func decodeProperties<M: Model>(of type: M.Type, handle: Int, loader: GraphLoader) throws -> M.Properties {
        try TreeDecoder.decodeProperties(M.self, at: handle, in: document, info: infos.info(M.self), loader: loader)
    }

    func fillProperties(_ plan: DirectPlan, at base: UnsafeMutableRawPointer, handle: Int, loader: GraphLoader) throws
        -> Bool
    {
        try plan.fill(base, from: handle, in: document, loader: loader)
    }
}

extension TreeDecoder where D == ModelValueDocument {
    /// A decoder over a value that is not part of the data being loaded: a property's default
    /// value where the data lacks the key, or a layout probe's template. Such values hold no
    /// references to resolve, so `loader` (which a decoder needs) may be one made for the purpose.
    static func over(
        _ value: ModelValue, defaults: ModelValue? = nil, loader: GraphLoader, codingPath: [any CodingKey], depth: Int
    ) throws -> TreeDecoder<ModelValueDocument> {
        TreeDecoder(
            document: try ModelValueDocument(value), node: 0, defaults: defaults ?? value, loader: loader,
            codingPath: codingPath, depth: depth)
    }
}

extension GraphLoader {
    /// A loader with nothing to load, for decoders over values outside any data (see
    /// ``TreeDecoder/over(_:defaults:loader:codingPath:depth:)``).
    static func detached() -> GraphLoader {
        GraphLoader(context: ModelContext(), options: DeserializationOptions(), source: EmptySource())
    }
}

/// The source of a ``GraphLoader/detached()`` loader: no models.
private final class EmptySource: ModelSource {
    func readHeaders(into loader: GraphLoader) throws {}
    func decodeProperties<M: Model>(of type: M.Type, handle: Int, loader: GraphLoader) throws -> M.Properties {
        M.Properties()
    }
    func fillProperties(_ plan: DirectPlan, at base: UnsafeMutableRawPointer, handle: Int, loader: GraphLoader) throws
        -> Bool
    { false }
    func copyForWorker() -> any ModelSource { self }
}
