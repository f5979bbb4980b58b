import Foundation

extension ModelStore {
    /// Appends what changed since the last save (or the open) to the journal: the models inserted
    /// and changed, and the ids of the models removed, as one record.
    ///
    /// When it returns, the save is on disk (with ``Options/Durability/full``): a crash at any
    /// later moment keeps it. A crash during the save keeps the store as it was before it, since a
    /// record counts only when it is whole. A save with nothing to save does nothing. When the
    /// journal has outgrown ``Options/compactionThreshold``, the save compacts the store after
    /// appending; a compaction that fails then is not the save's error (the save is durable) and
    /// is tried again after the next save.
    ///
    /// ```swift
    /// post.title = "Edited"
    /// try store.save()
    /// ```
    ///
    /// - Throws: ``SerializationError`` when a model fails to encode; ``PersistenceError`` when the
    ///   journal cannot be written or flushed (``PersistenceError/Code/outOfSpace`` and others).
    ///   After an error the journal, the store and the context are as before: the changes are
    ///   still there to save.
    /// - Complexity: O(k) in the size of the changed models (plus O(n) in the context's models
    ///   when a model was inserted: see ``ModelContext/changes``), not in the size of the store.
    public func save() throws {
        try checkOpen("save")
        guard try appendChanges() else { return }
        if needsCompaction { try? rewriteBase() }
    }

    /// Rewrites the base with every model of the context and empties the journal, saving first
    /// what changed.
    ///
    /// The new base is written as ``ModelContext/write(to:format:)`` writes (to a temporary file,
    /// flushed, renamed over the old one), and only then is the journal emptied. A crash before
    /// the rename leaves the old base and the whole journal; a crash after it leaves the new base
    /// and the journal, whose records then apply again to the models they already describe, with
    /// the same result. Either way no save that returned is lost.
    ///
    /// ```swift
    /// try store.compact()
    /// ```
    ///
    /// - Throws: As ``save()``, and as ``ModelContext/write(to:format:)``; the store is then as
    ///   after the save (or as before it, when the save failed).
    /// - Complexity: O(n) in the size of the graph.
    public func compact() throws {
        try checkOpen("compact")
        try appendChanges()
        try rewriteBase()
    }

    /// Flushes the journal (with ``Options/Durability/relaxed``), releases the lock and closes the
    /// files. The context and its models stay usable, but the store no longer saves; unsaved
    /// changes are not saved. Releasing the store closes it too.
    ///
    /// - Complexity: O(1), plus a flush.
    public func close() {
        guard !isClosed else { return }
        writer.close()
        isClosed = true
    }

    /// The journal size under which a save does not compact, whatever the threshold: rewriting a
    /// small base after every save would cost more than the journal saves.
    static let minimumCompactedJournal = 1 << 20

    /// What a save of the changes so far writes: its record, and what to mark unsaved again
    /// when the write fails. `nil` when nothing changed.
    struct PendingSave {
        var record: Data
        var changed: [ModelID]
        var removed: [ModelID]
    }

    /// Encodes the changes so far as a save record.
    func pendingSave() throws -> PendingSave? {
        let changes = context.changes
        let tracked = context.trackingChanged
        guard !changes.isEmpty || !tracked.isEmpty || context.packageStateChanged else { return nil }
        let changed = changes.inserted.union(changes.updated).union(tracked).sorted()
        let removed = changes.removed.sorted()
        let payload = try SaveRecord.payload(
            models: changed.compactMap { context.model(withId: $0) }, removed: removed, context: context,
            format: format == .json ? .json : .binaryPropertyList)
        let record = JournalFormat.record(type: .save, version: JournalFormat.saveVersion, payload: payload)
        return PendingSave(record: record, changed: changed, removed: removed)
    }

    /// Appends the changes so far as a record and resets the context's record of them; returns
    /// whether there were any. After an error, nothing is appended and the changes are kept.
    @discardableResult
    func appendChanges() throws -> Bool {
        guard let pending = try pendingSave() else { return false }
        try writer.append(pending.record)
        context.resetChanges()
        return true
    }

    /// Whether the journal has outgrown ``Options/compactionThreshold``.
    var needsCompaction: Bool {
        guard let threshold = options.compactionThreshold else { return false }
        return writer.state.end > max(Int(threshold * Double(baseBytes)), Self.minimumCompactedJournal)
    }

    /// Writes the whole context as the new base (reporting to `progress`), then empties the
    /// journal.
    func rewriteBase(progress: WriteProgress? = nil) throws {
        try Persistence.write(.context(context), format: format, to: url, progress: progress)
        baseBytes = Self.size(of: url) ?? baseBytes
        compactions += 1
        try writer.empty()
    }

    func checkOpen(_ operation: String) throws {
        guard isClosed else { return }
        throw PersistenceError(
            .storeClosed, path: url.path, operation: operation, expected: "an open store", found: "a closed one")
    }

    static func size(of url: URL) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? nil
    }
}
