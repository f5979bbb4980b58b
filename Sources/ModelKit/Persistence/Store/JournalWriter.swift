import Dispatch
import Foundation

/// The store's writes to its journal, one after another on a serial queue of their own.
///
/// Why a queue: an asynchronous save writes and flushes its record off the caller's domain, so
/// the app goes on while the disk works, and a synchronous save or a compaction may be called
/// meanwhile. Each write takes its offset (the end of the last whole record) when it runs, in the
/// order the saves were called, so a failed write is cut off and the next one takes its place:
/// the journal never has a hole, which opening would take for damage.
final class JournalWriter: @unchecked Sendable {
    // Safe to share: after `init`, `file`, `end` and `appended` are used only on `queue`.
    private let queue = DispatchQueue(label: "ModelKit.ModelStore.journal")
    private let file: JournalFile
    private let flushes: Bool
    private var end: Int
    private var appended = 0

    init(file: JournalFile, end: Int, durability: ModelStore.Options.Durability) {
        self.file = file
        self.end = end
        flushes = durability == .full
    }

    var path: String { file.path }

    /// The end of the journal, the records appended and the `fsync` calls made so far.
    var state: (end: Int, appended: Int, syncs: Int) {
        queue.sync { (end, appended, file.syncs) }
    }

    /// Appends `record` (and flushes it, with full durability), after every write queued before.
    ///
    /// - Throws: ``PersistenceError``; the journal is then as before.
    func append(_ record: Data) throws {
        try queue.sync { try appendNow(record) }
    }

    /// ``append(_:)`` on the journal's queue, without blocking the caller's thread.
    func append(_ record: Data) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            queue.async {
                continuation.resume(with: Result { try self.appendNow(record) })
            }
        }
    }

    private func appendNow(_ record: Data) throws {
        let at = end
        do {
            try file.write(record, at: at)
            if flushes { try file.sync() }
        } catch {
            // Nothing of a failed save may stay: the next record must follow the last whole one.
            try? file.truncate(to: at)
            throw error
        }
        end = at + record.count
        appended += 1
    }

    /// Empties the journal (after a compaction), once the writes queued before are done.
    func empty() throws {
        try queue.sync {
            try file.truncate(to: JournalFormat.headerSize)
            try file.sync()
            end = JournalFormat.headerSize
        }
    }

    /// Flushes the journal when saves do not, then closes it, after the writes queued before.
    func close() {
        queue.sync {
            if !flushes { try? file.sync() }
            file.close()
        }
    }
}
