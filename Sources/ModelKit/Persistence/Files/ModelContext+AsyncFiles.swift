import Foundation

// Asynchronous, cancellable forms of the whole-graph file's load and write, with progress. They
// take a `progress:` argument (`nil` for none) so that they never shadow the synchronous forms in
// asynchronous code.

extension ModelContext {
    /// Loads a file as ``load(from:options:isolation:)`` does, reading it on another thread so
    /// that the caller's domain goes on meanwhile, and reporting to `progress`.
    ///
    /// ```swift
    /// let progress = Progress(totalUnitCount: 0)
    /// try await context.load(from: url, progress: progress)
    /// ```
    ///
    /// The file is read on another thread; its models are then made in the caller's domain, in
    /// one step. Cancelling the task before that step throws `CancellationError` with the context
    /// unchanged; once the models are being made, the load completes (or fails) as a whole.
    ///
    /// - Parameters:
    ///   - url: The file to read.
    ///   - options: As for ``load(from:options:isolation:)``.
    ///   - progress: Receives the file's size as `totalUnitCount`, completed when loaded; `nil`
    ///     for none.
    ///   - isolation: The caller's domain; leave it to the default.
    /// - Throws: As ``load(from:options:isolation:)``, and `CancellationError`; the context is
    ///   then unchanged.
    /// - Complexity: O(n) in the size of the file.
    public func load(
        from url: URL, options: DeserializationOptions = DeserializationOptions(), progress: Progress?,
        isolation: isolated (any Actor)? = #isolation
    ) async throws {
        let data = try await onFileThread { try Persistence.contents(of: url) }
        progress?.totalUnitCount = Int64(data.count)
        try checkCancellation(progress)
        try load(data, options: options, isolation: isolation)
        progress?.completedUnitCount = Int64(data.count)
    }

    /// Writes every model to a file as ``write(to:format:)`` does, reporting the models written to
    /// `progress` and stopping when the task is cancelled.
    ///
    /// ```swift
    /// let progress = Progress(totalUnitCount: 0)
    /// try await context.write(to: url, format: .binaryPropertyList, progress: progress)
    /// ```
    ///
    /// The models are encoded in the caller's domain (the file is written and flushed by another
    /// thread as they are); the task's cancellation is checked every 4,096 models. A cancelled or
    /// failed write removes its temporary file and leaves the previous file as it was.
    ///
    /// - Parameters:
    ///   - url: The file to write.
    ///   - format: As for ``write(to:format:)``.
    ///   - progress: Receives the number of models as `totalUnitCount` and the models written;
    ///     `nil` for none.
    ///   - isolation: The caller's domain; leave it to the default.
    /// - Throws: As ``write(to:format:)``, and `CancellationError`; the file is then unchanged.
    /// - Complexity: O(n) in the size of the graph.
    public func write(
        to url: URL, format: PersistenceFormat = .json, progress: Progress?,
        isolation: isolated (any Actor)? = #isolation
    ) async throws {
        progress?.totalUnitCount = Int64(count)
        let report = WriteProgress(progress: progress)
        try Persistence.write(.context(self), format: format, to: url, progress: report)
        report.finish()
    }
}
