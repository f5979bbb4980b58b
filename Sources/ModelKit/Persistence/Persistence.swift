import Foundation

/// Writing and reading persisted files and data: the shared implementation of the public API.
enum Persistence {
    /// What to write: every model of a context, or the models reachable from some roots.
    enum Roots {
        case context(ModelContext)
        /// Models and what they reach; with `tracking`, the `tracking` member too (snapshots).
        case models([any Model], tracking: Bool = false)
        /// The models of `context` that changed, with their `tracking` member: a store's save
        /// record. References to the context's other models are written as pointers and not
        /// followed (see ``GraphStreamWriter/boundary``).
        case changes([any Model], in: ModelContext)

        init(_ models: [any Model], tracking: Bool = false) {
            self = .models(models, tracking: tracking)
        }

        init(context: ModelContext) {
            self = .context(context)
        }

        @discardableResult
        func write(with writer: GraphStreamWriter) throws -> Int {
            switch self {
            case .context(let context): return try writer.writeDocument(context: context)
            case .models(let models, let tracking): return try writer.writeDocument(roots: models, tracking: tracking)
            case .changes(let models, let context):
                writer.boundary = context
                return try writer.writeDocument(roots: models, store: context)
            }
        }
    }

    /// Writes the envelope and every model reachable from the roots to `buffer`.
    static func encode(
        _ roots: Roots, format: PersistenceFormat, into buffer: OutputBuffer, progress: WriteProgress? = nil
    ) throws {
        switch format {
        case .json:
            let writer = GraphStreamWriter(sink: JSONSink(buffer: buffer))
            writer.progress = progress
            try roots.write(with: writer)
        case .binaryPropertyList:
            let writer = GraphStreamWriter(sink: BinaryPlistSink(buffer: buffer))
            writer.progress = progress
            try roots.write(with: writer)
        case .xmlPropertyList:
            let xml = try data(roots, format: .xmlPropertyList)
            xml.withUnsafeBytes { buffer.append($0) }
        }
    }

    /// A binary property list with exact dates, for conversion to XML.
    private static func binaryForXML(_ roots: Roots) throws -> Data {
        let buffer = OutputBuffer(descriptor: nil)
        try roots.write(with: GraphStreamWriter(sink: BinaryPlistSink(buffer: buffer, exactDates: true)))
        return buffer.takeData()
    }

    static func data(_ roots: Roots, format: PersistenceFormat) throws -> Data {
        let buffer = OutputBuffer(descriptor: nil)
        if format == .xmlPropertyList {
            return try XMLPropertyList.xml(fromBinary: binaryForXML(roots))
        }
        try encode(roots, format: format, into: buffer)
        return buffer.takeData()
    }

    static func write(_ roots: Roots, format: PersistenceFormat, to url: URL, progress: WriteProgress? = nil) throws {
        try AtomicFile.write(to: url) { buffer in try encode(roots, format: format, into: buffer, progress: progress) }
    }

    /// The contents of the file at `url`, read into memory (see `Posix.readFile` for why it is
    /// not mapped). A file whose first bytes cannot start a document fails before the rest is
    /// read.
    static func contents(of url: URL) throws -> Data {
        let path = try AtomicFile.fileURL(url, operation: "read").path
        return try Posix.readFile(path) { try checkDocumentStart($0) }
    }
}

extension ModelContext {
    /// Writes every model in the context to a file, atomically.
    ///
    /// ```swift
    /// try context.write(to: url)                                   // JSON
    /// try context.write(to: url, format: .binaryPropertyList)      // smaller, faster
    /// ```
    ///
    /// The file holds a small envelope (`format`, `version`, `writtenBy`) around the models in the
    /// ModelPointer format of ``Model/serialize(as:)``. The previous file at `url`, if any, stays
    /// intact and loadable until the new one is complete and on disk: the data goes to a temporary
    /// file in the same directory, is flushed with `fsync`, and replaces the target with an atomic
    /// rename. Output is streamed to the file in chunks, so memory does not grow with the output.
    ///
    /// - Throws: ``SerializationError`` when a model fails to encode (see ``Model/serialize(as:)``),
    ///   or ``PersistenceError`` when the file cannot be written (``PersistenceError/Code/outOfSpace``,
    ///   ``PersistenceError/Code/permissionDenied``, ``PersistenceError/Code/readOnlyFileSystem``
    ///   and others, with the `errno`); the target file is then unchanged. A target that is not a
    ///   regular file or a symbolic link (a directory, device, pipe or socket) is refused with
    ///   ``PersistenceError/Code/notARegularFile``, a URL that is not a file URL with
    ///   ``PersistenceError/Code/notAFileURL``. The replacement keeps the replaced file's mode, and
    ///   its owner where the process may set it; a symbolic link is replaced by the file, not
    ///   followed (see Docs/Persistence.md on links).
    /// - Complexity: O(n) in the size of the graph.
    public func write(to url: URL, format: PersistenceFormat = .json) throws {
        try Persistence.write(Persistence.Roots(context: self), format: format, to: url)
    }

    /// Every model in the context as the bytes of a file in `format`. See ``write(to:format:)``.
    ///
    /// - Throws: ``SerializationError`` when a model fails to encode.
    /// - Complexity: O(n) in the size of the graph.
    public func data(format: PersistenceFormat = .json) throws -> Data {
        try Persistence.data(Persistence.Roots(context: self), format: format)
    }

    /// Loads the models in a file into the context, merging by identity.
    ///
    /// The format (JSON, binary or XML property list) is read from the file's first bytes; files
    /// without the envelope (a bare ``Model/serialize(as:)`` array or dictionary, as ModelKit for
    /// Objective-C wrote them) load too. A model whose id is already in the context is updated in
    /// place, so instances and references the app holds stay valid; the others are added. The
    /// file is read into memory (not mapped, so another program that truncates it during the load cannot
    /// kill the process). A large file loaded into an empty
    /// context makes its models and fills in their properties on one thread per processor, so
    /// model types' `init()` may run on other threads than the caller's.
    ///
    /// ```swift
    /// let context = ModelContext()
    /// try context.load(from: url)
    /// let authors = context.models(of: Author.self)
    /// ```
    ///
    /// - Parameters:
    ///   - url: The file to read.
    ///   - options: What to do with pointers to models the file doesn't contain.
    ///   - isolation: The caller's domain; leave it to the default. A context made outside any
    ///     actor becomes its own (see ``ModelContext/init(isolation:)``).
    /// - Throws: ``SerializationError`` saying where (byte offset, or model index and property
    ///   path) and what was expected: malformed or truncated input, a newer format version
    ///   (``SerializationError/Code/unsupportedVersion``), unknown model names, duplicate ids,
    ///   pointers to models not in the file, numbers that do not fit, nesting deeper than
    ///   ``SerializationError/maximumDepth``. Or ``PersistenceError`` when the file cannot be read
    ///   (``PersistenceError/Code/fileNotFound``, ``PersistenceError/Code/permissionDenied``,
    ///   ``PersistenceError/Code/notARegularFile`` for a directory, device, pipe or socket,
    ///   ``PersistenceError/Code/notAFileURL``).
    ///   After an error the context and its models are exactly as before.
    /// - Complexity: O(n) in the size of the file.
    public func load(
        from url: URL, options: DeserializationOptions = DeserializationOptions(), isolation: (any Actor)? = #isolation
    ) throws {
        try load(Persistence.contents(of: url), options: options, isolation: isolation)
    }

    /// Loads models from the bytes of a file in any of the ``PersistenceFormat``s. See
    /// ``load(from:options:isolation:)``.
    ///
    /// - Parameters:
    ///   - data: The bytes of a file.
    ///   - options: What to do with pointers to models the data doesn't contain.
    ///   - isolation: The caller's domain; leave it to the default. A context made outside any
    ///     actor becomes its own (see ``ModelContext/init(isolation:)``).
    /// - Throws: ``SerializationError``; the context is unchanged after an error.
    /// - Complexity: O(n) in the size of `data`.
    public func load(
        _ data: Data, options: DeserializationOptions = DeserializationOptions(), isolation: (any Actor)? = #isolation
    ) throws {
        claim(for: isolation)
        if isEmpty {
            // Loading at launch: one pass over the input when it loads cleanly. On anything else
            // that pass throws, having changed nothing, and the general loader below runs. A large
            // input makes the loader a general one that fills models on workers: its errors are
            // final, and loading again would only repeat them.
            var first: GraphLoader?
            do {
                return try withModelSource(for: data) { source in
                    let loader = GraphLoader(context: self, options: options, source: source, streaming: true)
                    first = loader
                    try loader.loadAll()
                }
            } catch  where first?.isStreaming == false {
                throw error
            } catch {}
        }
        try withModelSource(for: data) { source in
            try GraphLoader(context: self, options: options, source: source).loadAll()
        }
    }
}

extension Model {
    /// This model and every model it reaches, as the bytes of a file in `format`, this model
    /// first.
    ///
    /// ```swift
    /// let data = try author.persistedData()
    /// let copy = try Author.load(data, in: ModelContext())
    /// ```
    ///
    /// - Throws: ``SerializationError`` when a model fails to encode.
    /// - Complexity: O(n) in the size of the reachable graph.
    public func persistedData(format: PersistenceFormat = .json) throws -> Data {
        try Persistence.data(Persistence.Roots([self]), format: format)
    }

    /// Writes this model and every model it reaches to a file, atomically. See
    /// ``ModelContext/write(to:format:)``.
    ///
    /// - Throws: ``SerializationError``, or ``PersistenceError``; the target file is then unchanged.
    /// - Complexity: O(n) in the size of the reachable graph.
    public func write(to url: URL, format: PersistenceFormat = .json) throws {
        try Persistence.write(Persistence.Roots([self]), format: format, to: url)
    }

    /// Loads a file written by ``write(to:format:)`` (or any file ``ModelContext/load(from:options:isolation:)``
    /// reads) and returns its first model.
    ///
    /// ```swift
    /// let author = try Author.load(from: url, in: context)
    /// ```
    ///
    /// - Parameters:
    ///   - url: The file to read.
    ///   - context: Where models are merged by identity.
    ///   - options: What to do with pointers to models the file doesn't contain.
    ///   - isolation: The caller's domain; leave it to the default. A context made outside any
    ///     actor becomes its own (see ``ModelContext/init(isolation:)``).
    /// - Throws: ``SerializationError`` (see ``ModelContext/load(from:options:isolation:)``), including
    ///   ``SerializationError/Code/modelTypeConflict`` when the first model is not a `Self`.
    /// - Complexity: O(n) in the size of the file.
    public static func load(
        from url: URL, in context: ModelContext, options: DeserializationOptions = DeserializationOptions(),
        isolation: (any Actor)? = #isolation
    ) throws -> Self {
        try load(Persistence.contents(of: url), in: context, options: options, isolation: isolation)
    }

    /// ``load(from:in:options:isolation:)`` into the main actor's ``ModelContext/current`` context.
    ///
    /// - Throws: ``SerializationError``; the context is unchanged after an error.
    /// - Complexity: O(n) in the size of the file.
    @MainActor public static func load(
        from url: URL, options: DeserializationOptions = DeserializationOptions()
    ) throws -> Self {
        try load(from: url, in: .current, options: options)
    }

    /// Loads the bytes of a file and returns its first model. See ``load(from:in:options:isolation:)``.
    ///
    /// - Parameters:
    ///   - data: The bytes of a file.
    ///   - context: Where models are merged by identity.
    ///   - options: What to do with pointers to models the data doesn't contain.
    ///   - isolation: The caller's domain; leave it to the default. A context made outside any
    ///     actor becomes its own (see ``ModelContext/init(isolation:)``).
    /// - Throws: ``SerializationError``; the context is unchanged after an error.
    /// - Complexity: O(n) in the size of `data`.
    public static func load(
        _ data: Data, in context: ModelContext, options: DeserializationOptions = DeserializationOptions(),
        isolation: (any Actor)? = #isolation
    ) throws -> Self {
        context.claim(for: isolation)
        return try withModelSource(for: data) { source in
            try GraphLoader(context: context, options: options, source: source).load(root: Self.self)
        }
    }

    /// ``load(_:in:options:isolation:)`` into the main actor's ``ModelContext/current`` context.
    ///
    /// - Throws: ``SerializationError``; the context is unchanged after an error.
    /// - Complexity: O(n) in the size of `data`.
    @MainActor public static func load(
        _ data: Data, options: DeserializationOptions = DeserializationOptions()
    ) throws -> Self {
        try load(data, in: .current, options: options)
    }
}
