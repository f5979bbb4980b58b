import Foundation

/// A context's durable home: a whole-graph file (the base) and, beside it, a journal of saves, so
/// that a save costs what changed rather than the whole graph.
///
/// The base at ``url`` is exactly the file ``ModelContext/write(to:format:)`` writes, and any
/// program can read it with ``ModelContext/load(from:options:isolation:)``. The journal at
/// ``journalURL`` (the base's path with `-journal` appended) holds one record per ``save()``: the
/// models inserted and changed since the save before, in the same ModelPointer encoding, and the
/// ids of the models removed, framed and checksummed. Opening the store loads the base and replays
/// the journal; ``compact()`` folds the journal into a new base.
///
/// ```swift
/// let store = try ModelStore(url: url)             // creates it, or opens it and replays its journal
/// let post = Post.instance(in: store.context)
/// post.title = "Hello"
/// try store.save()                                  // appends one record, then fsync
/// ```
///
/// One store at a time may have a store open for writing: a second one, in this process or
/// another, gets ``PersistenceError/Code/storeLocked``. The store and its context belong to the
/// isolation domain that opened it (the main actor, or a ``ModelActor``'s).
///
/// See Docs/Persistence.md, "The store", for what a returned save promises and what a crash can
/// lose (nothing that returned).
public final class ModelStore {
    /// How a store is opened, saved and compacted.
    public struct Options: Sendable {
        /// When a save is on disk.
        public enum Durability: Sendable, Hashable {
            /// Each save is flushed to disk (`fsync`) before it returns: it survives a crash of
            /// the process, of the system and a power loss.
            case full
            /// Saves are written but not flushed; the journal is flushed at ``ModelStore/close()``
            /// and compaction. A crash of the process loses nothing that returned; a crash of the
            /// system or a power loss may lose the last saves, never the store (as SQLite's
            /// `synchronous=NORMAL`).
            case relaxed
        }

        /// What opening does with a journal damaged before its last record.
        public enum Recovery: Sendable, Hashable {
            /// Fail with ``PersistenceError/Code/damagedJournal`` and change nothing.
            case strict
            /// Open with every save before the damage. The journal from the damage on is first
            /// copied to a file beside it (`<journal>.damaged-<date>`), then cut off.
            case savesBeforeDamage
        }

        /// The format of a new store's base and journal records; an existing store keeps the
        /// format its base has. `.json` by default; `.binaryPropertyList` is smaller and faster.
        public var format: PersistenceFormat = .json
        /// ``Durability/full`` by default.
        public var durability: Durability = .full
        /// After a save, the journal is compacted into the base when it is larger than this
        /// fraction of the base (and at least 1 MiB); `nil` compacts only on request. 0.5 by default.
        public var compactionThreshold: Double? = 0.5
        /// ``Recovery/strict`` by default.
        public var recovery: Recovery = .strict
        /// How the base and the journal's models are read (unknown keys, for example); pointers
        /// between records and the base always resolve in the store's context.
        public var deserialization = DeserializationOptions()

        /// The default options.
        public init() {}
    }

    /// What the store has done, for tests and monitoring.
    public struct Statistics: Sendable, Hashable {
        /// The size of the base file.
        public var baseBytes: Int
        /// The size of the journal, header included.
        public var journalBytes: Int
        /// Saves that appended a record since the store was opened.
        public var saves: Int
        /// `fsync` calls on the journal since the store was opened (one per save with
        /// ``Options/Durability/full``); a compaction adds the base's and its directory's.
        public var syncs: Int
        /// Compactions since the store was opened.
        public var compactions: Int
    }

    /// The base file.
    public let url: URL
    /// The journal beside it.
    public let journalURL: URL
    /// The context whose models the store keeps: make, change and remove models here, then
    /// ``save()``.
    public let context: ModelContext
    /// The options the store was opened with.
    public let options: Options

    /// Writes the journal, in the order saves are called.
    let writer: JournalWriter
    /// The format of the base and of new records.
    let format: PersistenceFormat
    var baseBytes: Int
    var compactions = 0
    var isClosed = false

    /// Opens the store at `url`, or creates it when there is neither a base nor a journal there.
    ///
    /// Opening locks the journal, loads the base and applies every save record, in order, to a new
    /// context. A record cut short at the end of the journal (a save that a crash interrupted,
    /// which therefore never returned) is ignored and cut off.
    ///
    /// ```swift
    /// var options = ModelStore.Options()
    /// options.format = .binaryPropertyList
    /// let store = try ModelStore(url: url, options: options)
    /// ```
    ///
    /// - Parameters:
    ///   - url: The base file, a `file:` URL. The journal is `url`'s path + `-journal`.
    ///   - options: See ``Options``.
    ///   - isolation: The domain the store and its context belong to; leave it to the default.
    /// - Throws: ``PersistenceError``: ``PersistenceError/Code/storeLocked`` when another store has
    ///   it open (after waiting up to a second for it to close); ``PersistenceError/Code/damagedJournal`` (with the offset) for damage before the
    ///   journal's last record; ``PersistenceError/Code/fileNotFound`` when the journal has saves
    ///   but the base is missing; the file system's errors. ``SerializationError`` when the base or
    ///   a record does not load. Nothing is changed on disk by a failed open, but for cutting off
    ///   a torn last record.
    /// - Complexity: O(b + j) in the sizes of the base and the journal; memory for the journal is
    ///   that of its largest record.
    public convenience init(url: URL, options: Options = Options(), isolation: isolated (any Actor)? = #isolation)
        throws
    {
        let (base, journal) = try Self.files(at: url)
        let context = ModelContext(isolation: isolation)
        var opening = try StoreOpening(journal: JournalFile(path: journal), base: base, options: options)
        let format = try opening.loadBase(opening.readBase(), into: context, isolation: isolation)
        let end = try opening.replay(into: context, isolation: isolation)
        context.resetChanges()
        self.init(url: base, options: options, opening: opening, end: end, context: context, format: format)
    }

    /// The base file at `url` and the journal's path beside it.
    ///
    /// - Throws: ``PersistenceError/Code/notAFileURL`` for a URL that is not a file URL.
    static func files(at url: URL) throws -> (base: URL, journal: String) {
        let base = try AtomicFile.fileURL(url, operation: "open a store").standardizedFileURL
        return (base, base.path + "-journal")
    }

    /// A store over files that `opening` has read: its base loaded into `context` and its
    /// journal applied up to `end`.
    init(
        url: URL, options: Options, opening: StoreOpening, end: Int, context: ModelContext, format: PersistenceFormat
    ) {
        self.url = url
        self.options = options
        journalURL = URL(fileURLWithPath: opening.journal.path)
        writer = JournalWriter(file: opening.journal, end: end, durability: options.durability)
        self.context = context
        self.format = format
        baseBytes = opening.baseBytes
    }

    /// Whether the context has changes that ``save()`` would write: false right after opening
    /// and after each save, true after any insertion, change or removal.
    ///
    /// Unlike ``ModelContext/hasChanges`` after ``ModelContext/load(from:options:isolation:)``
    /// (where the loaded models count as inserted), opening a store leaves nothing to save. It
    /// is also true when only what a backend keeps about a model changed (its server version,
    /// or its state after a push), which ``ModelContext/hasChanges`` does not count.
    ///
    /// Observable: read inside `withObservationTracking` or a SwiftUI view's body, it notifies
    /// when it turns true (a change) or false (a save), not on the changes in between.
    ///
    /// ```swift
    /// Button("Save") { try? store.save() }.disabled(!store.needsSaving)
    /// ```
    ///
    /// - Complexity: O(1).
    public var needsSaving: Bool { context.needsSaving }

    /// Sizes and counts; see ``Statistics``.
    ///
    /// ```swift
    /// print(store.statistics.journalBytes)   // 16 right after a compaction
    /// ```
    ///
    /// - Complexity: O(1); waits for a save being written on the journal's queue.
    public var statistics: Statistics {
        let journal = writer.state
        return Statistics(
            baseBytes: baseBytes, journalBytes: journal.end, saves: journal.appended, syncs: journal.syncs,
            compactions: compactions)
    }
}
