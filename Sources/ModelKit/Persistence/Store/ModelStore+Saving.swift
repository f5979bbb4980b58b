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
        if let threshold = options.compactionThreshold,
            journalEnd > max(Int(threshold * Double(baseBytes)), Self.minimumCompactedJournal)
        {
            try? rewriteBase()
        }
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
        if options.durability == .relaxed { try? journal.sync() }
        journal.close()
        isClosed = true
    }

    /// The journal size under which a save does not compact, whatever the threshold: rewriting a
    /// small base after every save would cost more than the journal saves.
    static let minimumCompactedJournal = 1 << 20

    /// Appends the changes as a record; returns whether there were any.
    @discardableResult
    func appendChanges() throws -> Bool {
        let changes = context.changes
        guard !changes.isEmpty else { return false }
        let models = (changes.inserted.union(changes.updated)).sorted().compactMap { context.model(withId: $0) }
        let payload = try SaveRecord.payload(
            models: models, removed: changes.removed.sorted(), context: context,
            format: format == .json ? .json : .binaryPropertyList)
        let record = JournalFormat.record(type: .save, version: JournalFormat.saveVersion, payload: payload)
        let end = journalEnd
        do {
            try journal.write(record, at: end)
            if options.durability == .full { try journal.sync() }
        } catch {
            // Nothing of a failed save may stay: a later save must follow the last whole record.
            try? journal.truncate(to: end)
            throw error
        }
        journalEnd = end + record.count
        saves += 1
        context.resetChanges()
        return true
    }

    /// Writes the whole context as the new base, then empties the journal.
    func rewriteBase() throws {
        try Persistence.write(.context(context), format: format, to: url)
        baseBytes = Self.size(of: url) ?? baseBytes
        compactions += 1
        try journal.truncate(to: JournalFormat.headerSize)
        try journal.sync()
        journalEnd = JournalFormat.headerSize
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
