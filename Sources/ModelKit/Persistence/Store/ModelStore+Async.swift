import Dispatch
import Foundation

// The asynchronous forms of opening, saving and compacting. Each is called from the store's
// domain and reports to a Foundation `Progress` the caller may pass (and show: SwiftUI's
// `ProgressView(progress)`). What must touch the models runs in the domain; what only touches
// files (reading the base, writing and flushing a record) runs on other threads, so the domain
// goes on meanwhile. Cancelling the task stops the work at the next step and leaves the store, the
// context and the files as they were before the call.

extension ModelStore {
    /// Opens the store at `url` without blocking the caller's domain while the files are read,
    /// reporting the bytes read and applied to `progress`.
    ///
    /// ```swift
    /// let progress = Progress(totalUnitCount: 0)
    /// // ProgressView(progress) shows it in SwiftUI
    /// let store = try await ModelStore.open(url: url, progress: progress)
    /// ```
    ///
    /// The lock and the reading of the base happen on another thread; the base's models are made
    /// in the caller's domain, then the journal's records are applied one by one, with a
    /// suspension between records. Cancelling the task throws `CancellationError` at the next
    /// record (or after the read), with nothing changed on disk and the lock released.
    ///
    /// - Parameters:
    ///   - url: The base file, as for ``init(url:options:isolation:)``.
    ///   - options: See ``Options``.
    ///   - progress: Receives `totalUnitCount` (the bytes of the base and the journal) and
    ///     `completedUnitCount` as they are applied.
    ///   - isolation: The domain the store belongs to; leave it to the default.
    /// - Throws: As ``init(url:options:isolation:)``, and `CancellationError`.
    /// - Complexity: As ``init(url:options:isolation:)``.
    public static func open(
        url: URL, options: Options = Options(), progress: Progress? = nil,
        isolation: isolated (any Actor)? = #isolation
    ) async throws -> ModelStore {
        let (file, journalPath) = try files(at: url)
        let (opening, base) = try await onFileThread {
            var opening = try StoreOpening(journal: JournalFile(path: journalPath), base: file, options: options)
            let base = try opening.readBase()
            return (opening, base)
        }
        try checkCancellation(progress)
        progress?.totalUnitCount = Int64(opening.baseBytes + max(opening.size, JournalFormat.headerSize))
        var loading = opening
        let context = ModelContext(isolation: isolation)
        let format = try loading.loadBase(base, into: context, isolation: isolation)
        progress?.completedUnitCount = Int64(loading.baseBytes)
        var offset = try loading.start()
        while true {
            // Checked before a record is applied: the only write to the journal (cutting off a
            // torn save) comes after the last one.
            try checkCancellation(progress)
            guard let next = try loading.applyRecord(at: offset, to: context, isolation: isolation) else { break }
            offset = next
            progress?.completedUnitCount = Int64(loading.baseBytes + offset)
            await Task.yield()
        }
        context.resetChanges()
        progress?.completedUnitCount = progress?.totalUnitCount ?? 0
        return ModelStore(url: file, options: options, opening: loading, end: offset, context: context, format: format)
    }

    /// Saves what changed, as ``save()`` does, writing and flushing the record on another thread.
    ///
    /// The changes are encoded in the caller's domain; from then on, changes made while the record
    /// is written belong to the next save. Saves run in the order they were called, whichever
    /// form called them. When the write fails, or the task is cancelled before it starts, the
    /// changes are marked unsaved again, so nothing is lost and a later save writes them.
    ///
    /// ```swift
    /// try await store.save()
    /// ```
    ///
    /// - Parameters:
    ///   - progress: Gets one unit, completed when the save is on disk.
    ///   - isolation: The store's domain; leave it to the default.
    /// - Throws: As ``save()``, and `CancellationError` when the task was cancelled before the
    ///   record was written.
    /// - Complexity: As ``save()``.
    public func save(progress: Progress? = nil, isolation: isolated (any Actor)? = #isolation) async throws {
        try checkOpen("save")
        progress?.totalUnitCount = 1
        guard let pending = try pendingSave() else {
            progress?.completedUnitCount = 1
            return
        }
        context.resetChanges()
        let writer = writer
        do {
            try checkCancellation(progress)
            try await writer.append(pending.record)
        } catch {
            context.markUnsaved(changed: pending.changed, removed: pending.removed)
            throw error
        }
        progress?.completedUnitCount = 1
        if needsCompaction { try? compactBase(progress: nil) }
    }

    /// Compacts the store, as ``compact()`` does, reporting the models written to `progress` and
    /// stopping at the next model when the task is cancelled.
    ///
    /// The new base is encoded in the caller's domain (its file is written and flushed by a
    /// background thread as it is encoded); the journal is emptied after it is in place. A
    /// cancelled compaction removes its temporary file and leaves the base and the journal as
    /// they were; the save it started with stands.
    ///
    /// ```swift
    /// try await store.compact(progress: progress)
    /// ```
    ///
    /// - Throws: As ``compact()``, and `CancellationError`.
    /// - Complexity: O(n) in the size of the graph.
    public func compact(progress: Progress? = nil, isolation: isolated (any Actor)? = #isolation) async throws {
        try checkOpen("compact")
        try checkCancellation(progress)
        try await save(isolation: isolation)
        try compactBase(progress: progress)
    }

    /// Rewrites the base with a progress and cancellation check every few thousand models.
    func compactBase(progress: Progress?) throws {
        progress?.totalUnitCount = Int64(context.count)
        let report = WriteProgress(progress: progress)
        try rewriteBase(progress: report)
        report.finish()
    }
}

/// Runs `body` on a thread of its own and returns its result to the awaiting caller.
func onFileThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global(qos: .userInitiated).async { continuation.resume(with: Result { try body() }) }
    }
}

extension ModelContext {
    /// Marks models as changed and removed again, after a save of them failed.
    func markUnsaved(changed: [ModelID], removed: [ModelID]) {
        withRegistry { registry in
            for id in changed where registry.models[id] != nil { registry.log.updated.insert(id) }
            for id in removed where registry.models[id] == nil { registry.log.removed.insert(id) }
        }
    }
}
