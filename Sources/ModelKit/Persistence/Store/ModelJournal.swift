import Foundation

/// A store's journal read without opening the store and without the app's model types: what the
/// `modelkit` command-line tool uses to look into stores (see <doc:Persistence>).
///
/// It takes no lock and changes nothing: a torn save at the end is reported, not cut off, and
/// damage is reported where opening the store would fail. Memory: one record at a time.
///
/// ```swift
/// let summary = try ModelJournal.read(at: URL(fileURLWithPath: "notes.store-journal")) { save in
///     print(save.offset, save.removedIds.count, save.document.count)
/// }
/// print(summary.saves, summary.damage?.offset ?? -1)
/// ```
public enum ModelJournal {
    /// One save record, as the store applies it over the base and the saves before it.
    public struct Save: Sendable {
        /// Where the record starts in the journal, in bytes.
        public let offset: Int
        /// The record's size in bytes, its frame included.
        public let size: Int
        /// The models the save removed.
        public let removedIds: [ModelID]
        /// The models it inserted and changed: a document in the store's format, as a file holds
        /// them (load it with `PersistenceFormat.detected(in:)` in mind); empty when the save
        /// only removed models.
        public let document: Data
    }

    /// What the journal holds.
    public struct Summary: Sendable {
        /// The journal's size in bytes.
        public let bytes: Int
        /// The valid save records, in order.
        public let saves: Int
        /// The end of the last valid record: where the store's next save goes.
        public let validBytes: Int
        /// The bytes after the valid records that are not a record: a save torn by a crash, which
        /// opening cuts off. Zero when the journal ends with a valid record.
        public let tornBytes: Int
        /// Set when a record fails its checksums (or is of a type this ModelKit does not read)
        /// and a valid record follows: opening the store fails with this error, and
        /// `recovery: .savesBeforeDamage` keeps the saves before `offset`.
        public let damage: PersistenceError?
    }

    /// Calls `body` with each valid save of the journal at `url`, in order, and sums it up.
    ///
    /// - Throws: ``PersistenceError`` for a file that cannot be read (`fileNotFound`, …), and
    ///   `damagedJournal` for one that does not start with a journal header; `body`'s errors.
    /// - Complexity: O(n) in the journal's size; memory O(m) in its largest record.
    public static func read(at url: URL, _ body: (Save) throws -> Void) throws -> Summary {
        let handle: FileHandle
        do {
            handle = try FileHandle(forReadingFrom: url)
        } catch {
            let exists = FileManager.default.fileExists(atPath: url.path)
            throw PersistenceError(
                exists ? .systemFailure : .fileNotFound, path: url.path, operation: "read a journal",
                expected: "a readable journal", found: exists ? "\(error)" : "no file")
        }
        defer { try? handle.close() }
        let size = Int(try handle.seekToEnd())
        func read(_ offset: Int, _ count: Int) throws -> Data {
            try handle.seek(toOffset: UInt64(offset))
            return try handle.read(upToCount: count) ?? Data()
        }
        func damage(_ offset: Int, _ expected: String, _ found: String) -> PersistenceError {
            PersistenceError(
                .damagedJournal, path: url.path, operation: "read a journal", expected: expected, found: found,
                offset: offset)
        }
        if let found = JournalFormat.checkHeader(try read(0, JournalFormat.headerSize)) {
            throw damage(0, "a ModelKit journal header", found)
        }
        var offset = JournalFormat.headerSize
        var saves = 0
        var problem: (String, String)?
        while offset < size {
            let head = try read(offset, JournalFormat.frameSize)
            guard let frame = JournalFormat.frame(head), frame.length <= size - offset - JournalFormat.frameSize else {
                problem = ("a whole record", "a record frame that fails its checksum or its length")
                break
            }
            let payload = try read(offset + JournalFormat.frameSize, frame.length)
            guard payload.count == frame.length,
                payload.withUnsafeBytes({ CRC32C.checksum($0) }) == frame.payloadChecksum
            else {
                problem = ("a whole record", "a record whose payload fails its checksum")
                break
            }
            guard frame.type == JournalRecordType.save.rawValue, frame.version == JournalFormat.saveVersion else {
                problem = (
                    "a save record of version \(JournalFormat.saveVersion)",
                    "a record of type \(frame.type), version \(frame.version), from a newer ModelKit"
                )
                break
            }
            let record: SaveRecord
            do {
                record = try SaveRecord.read(payload)
            } catch {
                problem = ("a save record", error.found)
                break
            }
            let length = JournalFormat.frameSize + frame.length
            try body(Save(offset: offset, size: length, removedIds: record.removed, document: record.document))
            saves += 1
            offset += length
        }
        var damaged: PersistenceError?
        if let (expected, found) = problem, try followedByRecord(offset, size: size, read: read) {
            damaged = damage(offset, expected, found)
        }
        return Summary(
            bytes: size, saves: saves, validBytes: offset, tornBytes: damaged == nil ? size - offset : 0, damage: damaged)
    }

    /// Whether a valid record frame starts after `offset`: what tells damage from a torn save.
    private static func followedByRecord(_ offset: Int, size: Int, read: (Int, Int) throws -> Data) throws -> Bool {
        let chunk = 1 << 20
        var start = offset + 1
        while start + JournalFormat.frameSize <= size {
            let bytes = try read(start, min(chunk + JournalFormat.frameSize, size - start))
            var index = 0
            while index + JournalFormat.frameSize <= bytes.count && index < chunk {
                if bytes[index] == JournalFormat.recordMagic[0],
                    let frame = JournalFormat.frame(bytes.subdata(in: index..<index + JournalFormat.frameSize)),
                    frame.length <= size - (start + index) - JournalFormat.frameSize
                {
                    return true
                }
                index += 1
            }
            start += chunk
        }
        return false
    }
}
