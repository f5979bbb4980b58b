import Foundation

extension Model {
    /// Serializes the model and every model it references, as ModelKit for Objective-C did.
    ///
    /// A model whose properties contain no references returns one dictionary:
    ///
    /// ```swift
    /// let value = try author.serialize()
    /// // ["model": "Author", "modelId": "…", "objectId": "001", "createdAt": …, "updatedAt": …,
    /// //  "properties": ["name": "Jon Gilkison", "age": 39, …]]
    /// ```
    ///
    /// A model with reference properties returns an array of such dictionaries: this model first,
    /// then every model reachable from it exactly once, each reference written as
    /// `{"__type": "ModelPointer", "model": …, "modelId": …, "objectId": …}`. Cycles, self-references
    /// and shared targets are fine.
    ///
    /// - Parameter format: ``SerializationFormat/propertyList`` (native dates and data) or
    ///   ``SerializationFormat/json`` (`__type` objects for dates and data).
    /// - Throws: ``SerializationError`` when a property fails to encode (its own `encode(to:)` threw,
    ///   or values nest deeper than ``SerializationError/maximumDepth``), or when two different
    ///   instances with the same model id are reachable.
    /// - Complexity: O(n) in the size of the reachable graph.
    public func serialize(as format: SerializationFormat = .propertyList) throws -> ModelValue {
        // The streaming writer that files use, into a tree instead of bytes.
        let sink = ModelValueSink(usesJSONForms: format == .json)
        let writer = GraphStreamWriter(sink: sink)
        try writer.writeModels(root: self)
        guard case .array(let models) = sink.roots.first else { return .array([]) }
        return writer.sawReference ? .array(models) : models[0]
    }

    /// The model and everything it references as UTF-8 JSON text (``serialize(as:)`` in the JSON
    /// form).
    ///
    /// The text is written straight from the models by the streaming writer that files use, with
    /// no ``ModelValue`` tree in between.
    ///
    /// ```swift
    /// let data = try post.jsonData(options: .prettyPrinted)
    /// let archive = ModelContext()                  // keep the context: it owns what is loaded
    /// let copy = try Post.instance(fromJSON: data, in: archive)
    /// ```
    ///
    /// - Throws: ``SerializationError``, as ``serialize(as:)``.
    /// - Complexity: O(n) in the size of the output.
    public func jsonData(options: ModelValue.JSONWritingOptions = []) throws -> Data {
        // Straight to text with the streaming writer that files use: no value tree in between.
        let buffer = OutputBuffer(descriptor: nil)
        let writer = GraphStreamWriter(sink: JSONSink(buffer: buffer))
        try writer.writeModels(root: self)
        var data = buffer.takeData()
        if !writer.sawReference {
            // One model and no reference property: its dictionary alone, without the brackets.
            data = data.subdata(in: data.startIndex + 1..<data.endIndex - 1)
        }
        return options.contains(.prettyPrinted) ? JSONSink.prettyPrinted(data) : data
    }

    /// Rebuilds a serialized graph and returns its first model (the seed's
    /// `instanceWithDictionary:`).
    ///
    /// Reads either form and anything ``serialize(as:)`` produces. A model whose id is already in
    /// the context is updated in place and returned (no duplicates: references the app holds stay
    /// valid); other models are created and added to the context.
    ///
    /// ```swift
    /// let value = try author.serialize()
    /// let same = try Author.instance(from: value)      // `same === author`, updated in place
    /// ```
    ///
    /// - Parameters:
    ///   - value: One model dictionary, or an array of them with the root first.
    ///   - context: Where to look models up and register them.
    ///   - options: See ``DeserializationOptions``.
    ///   - isolation: The caller's domain; leave it to the default. A context made outside any
    ///     actor becomes its own (see ``ModelContext/init(isolation:)``).
    /// - Returns: The first model in the data.
    /// - Throws: ``SerializationError`` naming the model index, the property path and what was
    ///   expected: wrong types, missing `model` names, unknown model names, invalid or duplicate
    ///   ids, pointers to models not in the data, a first model that is not a `Self`, or nesting
    ///   deeper than ``SerializationError/maximumDepth``. After an error, the context and the models
    ///   in it are exactly as before.
    /// - Complexity: O(n) in the size of the data.
    public static func instance(
        from value: ModelValue, in context: ModelContext, options: DeserializationOptions = DeserializationOptions(),
        isolation: (any Actor)? = #isolation
    ) throws -> Self {
        context.claim(for: isolation)
        // Read as files are read (the same loader and decoder), over the flattened tree, which
        // has no byte offsets to report.
        do {
            let source = try ModelValueSource(value)
            return try GraphLoader(context: context, options: options, source: source).load(root: Self.self)
        } catch let error as SerializationError {
            throw error.withoutByteOffset()
        }
    }

    /// ``instance(from:in:options:isolation:)`` in the main actor's ``ModelContext/current`` context.
    ///
    /// - Throws: ``SerializationError``; the context is unchanged after an error.
    /// - Complexity: O(n) in the size of the data.
    @MainActor public static func instance(
        from value: ModelValue, options: DeserializationOptions = DeserializationOptions()
    ) throws -> Self {
        try instance(from: value, in: .current, options: options)
    }

    /// Rebuilds a graph from UTF-8 JSON text. See ``instance(from:in:options:isolation:)``.
    ///
    /// The text is read where it lies, by the loader that reads files (no ``ModelValue`` is built
    /// first), so a file's envelope is accepted too.
    ///
    /// ```swift
    /// let copy = try Post.instance(fromJSON: try post.jsonData(), in: archive)
    /// ```
    ///
    /// - Parameters:
    ///   - data: UTF-8 JSON text.
    ///   - context: Where to look models up and register them.
    ///   - options: See ``DeserializationOptions``.
    ///   - isolation: The caller's domain; leave it to the default. A context made outside any
    ///     actor becomes its own (see ``ModelContext/init(isolation:)``).
    /// - Throws: ``SerializationError`` with the byte offset of the problem as well as the model
    ///   index and property path; malformed JSON gives ``SerializationError/Code/malformedInput``.
    ///   The context is unchanged after an error.
    /// - Complexity: O(n) in the size of the data.
    public static func instance(
        fromJSON data: Data, in context: ModelContext, options: DeserializationOptions = DeserializationOptions(),
        isolation: (any Actor)? = #isolation
    ) throws -> Self {
        context.claim(for: isolation)
        // Read as files are read (the same tape and loader), without a value tree in between.
        return try data.withUnsafeBytes { raw in
            let source = JSONSource(bytes: raw.bindMemory(to: UInt8.self))
            return try GraphLoader(context: context, options: options, source: source).load(root: Self.self)
        }
    }

    /// ``instance(fromJSON:in:options:isolation:)`` in the main actor's ``ModelContext/current`` context.
    ///
    /// - Throws: ``SerializationError``; the context is unchanged after an error.
    /// - Complexity: O(n) in the size of the data.
    @MainActor public static func instance(
        fromJSON data: Data, options: DeserializationOptions = DeserializationOptions()
    ) throws -> Self {
        try instance(fromJSON: data, in: .current, options: options)
    }
}
