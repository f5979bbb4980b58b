import Foundation

/// Opening a store: the base, then the journal's records over it.
///
/// How damage is told from a torn save: a save is appended at the journal's end, so a crash can
/// only leave its record incomplete at the end. A record that fails its checksums is therefore a
/// torn save when nothing valid follows it (it is cut off, and the store opens with every save
/// before), and damage when a valid record follows (the journal was changed behind the store's
/// back, or the disk failed): that is an error, since applying what follows would skip a save.
struct StoreOpening {
    let journal: JournalFile
    let base: URL
    let options: ModelStore.Options
    private(set) var baseBytes = 0
    private let journalSize: Int

    init(journal: JournalFile, base: URL, options: ModelStore.Options) throws {
        self.journal = journal
        self.base = base
        self.options = options
        journalSize = try journal.size()
    }

    /// The base's bytes, or `nil` for a new store (no base and no saves in the journal).
    ///
    /// - Throws: ``PersistenceError/Code/fileNotFound`` when the journal has saves but the base
    ///   is missing; the read's errors.
    mutating func readBase() throws -> Data? {
        do {
            let data = try Persistence.contents(of: base)
            baseBytes = data.count
            return data
        } catch let error as PersistenceError where error.code == .fileNotFound {
            guard journalSize <= JournalFormat.headerSize else {
                throw PersistenceError(
                    .fileNotFound, path: base.path, operation: "open a store",
                    expected: "the base file beside the journal", found: "a journal with saves but no base")
            }
            return nil
        }
    }

    /// Loads the base into `context`, or writes an empty one for a new store; returns the
    /// store's format.
    mutating func loadBase(_ data: Data?, into context: ModelContext, isolation: (any Actor)?) throws
        -> PersistenceFormat
    {
        guard let data else {
            // A new store: an empty base, so that readers of the base file find one.
            try Persistence.write(.context(context), format: options.format, to: base)
            baseBytes = ModelStore.size(of: base) ?? 0
            return options.format
        }
        try context.load(data, options: options.deserialization, isolation: isolation)
        return PersistenceFormat.detected(in: data)
    }

    /// The journal's size when the store was opened.
    var size: Int { journalSize }

    /// Checks the journal's header, writing one when the journal is new (or its creation was cut
    /// short); returns the offset of the first record.
    func start() throws -> Int {
        guard journalSize >= JournalFormat.headerSize else {
            try journal.truncate(to: 0)
            try journal.write(JournalFormat.header(), at: 0)
            try journal.sync()
            return JournalFormat.headerSize
        }
        if let found = JournalFormat.checkHeader(try journal.read(at: 0, count: JournalFormat.headerSize)) {
            throw damage(at: 0, expected: "a ModelKit journal header", found: found)
        }
        return JournalFormat.headerSize
    }

    /// Applies every valid record to `context`; returns where the next record goes.
    func replay(into context: ModelContext, isolation: (any Actor)?) throws -> Int {
        var offset = try start()
        while let next = try applyRecord(at: offset, to: context, isolation: isolation) { offset = next }
        return offset
    }

    /// Applies the record at `offset` to `context` and returns the next record's offset, or
    /// returns `nil` when the journal ends at `offset` (after cutting off a torn save there).
    func applyRecord(at offset: Int, to context: ModelContext, isolation: (any Actor)?) throws -> Int? {
        guard offset < journalSize else { return nil }
        switch try readRecord(at: offset) {
        case .valid(let frame, let payload):
            var options = options.deserialization
            options.danglingPointers = .placeholder
            do {
                try apply(frame, payload, at: offset, to: context, options: options, isolation: isolation)
            } catch is SerializationError where self.options.recovery == .savesBeforeDamage {
                // A whole record that does not load (a model type no longer registered, say):
                // recovery keeps it aside with the rest, as for damage. The load changed nothing.
                try keepDamagedPart(from: offset)
                try journal.truncate(to: offset)
                try journal.sync()
                return nil
            }
            return offset + JournalFormat.frameSize + frame.length
        case .invalid(let found):
            if let next = try nextValidFrame(after: offset) {
                guard self.options.recovery == .savesBeforeDamage else {
                    throw damage(
                        at: offset, expected: "a whole record (a valid one follows at byte \(next))", found: found)
                }
                try keepDamagedPart(from: offset)
            }
            // A torn save (or damage recovered from): cut it off, so that the next save follows
            // the last valid record.
            try journal.truncate(to: offset)
            try journal.sync()
            return nil
        }
    }

    private enum Read {
        case valid(JournalFormat.Frame, Data)
        case invalid(String)
    }

    /// The record at `offset`, reading its frame and then its payload (memory: one record).
    private func readRecord(at offset: Int) throws -> Read {
        let head = try journal.read(at: offset, count: JournalFormat.frameSize)
        guard head.count == JournalFormat.frameSize else { return .invalid("\(head.count) bytes of a record's frame") }
        guard let frame = JournalFormat.frame(head) else { return .invalid("a record frame that fails its checksum") }
        guard frame.length <= journalSize - offset - JournalFormat.frameSize else {
            return .invalid("a record of \(frame.length) bytes with \(journalSize - offset - JournalFormat.frameSize) left")
        }
        let payload = try journal.read(at: offset + JournalFormat.frameSize, count: frame.length)
        guard payload.count == frame.length else { return .invalid("a record cut short by the file's end") }
        guard payload.withUnsafeBytes({ CRC32C.checksum($0) }) == frame.payloadChecksum else {
            return .invalid("a record whose payload fails its checksum")
        }
        return .valid(frame, payload)
    }

    private func apply(
        _ frame: JournalFormat.Frame, _ payload: Data, at offset: Int, to context: ModelContext,
        options: DeserializationOptions, isolation: (any Actor)?
    ) throws {
        guard frame.type == JournalRecordType.save.rawValue, frame.version == JournalFormat.saveVersion else {
            throw damage(
                at: offset, expected: "a save record of version \(JournalFormat.saveVersion)",
                found: "a record of type \(frame.type), version \(frame.version), from a newer ModelKit")
        }
        let record: SaveRecord
        do {
            record = try SaveRecord.read(payload)
        } catch {
            throw damage(at: offset, expected: "a save record", found: error.found)
        }
        // The models the record removes give their object ids up first: the record's models,
        // loaded before the removals, may reuse them (a record deleted, a new model for its id).
        try context.withObjectIdsReleased(of: record.removed) {
            if !record.document.isEmpty {
                do {
                    try context.load(record.document, options: options, isolation: isolation)
                } catch let error as SerializationError {
                    // Said in the journal's terms: where the record is, and offsets in the journal.
                    let document = offset + JournalFormat.frameSize + payload.count - record.document.count
                    throw error.inJournalRecord(at: offset, documentAt: document)
                }
            }
            // The record's `tracking` says what the tables keep of the models it removes.
            context.replaysJournal = true
            defer { context.replaysJournal = false }
            for id in record.removed {
                context.model(withId: id)?.removeFromContext()
            }
        }
    }

    /// The offset of the first valid record frame after `offset` whose payload fits in the file,
    /// or `nil`: whether anything was written after a damaged record. Reads the rest of the
    /// journal in chunks of 1 MiB.
    private func nextValidFrame(after offset: Int) throws -> Int? {
        let chunk = 1 << 20
        var start = offset + 1
        while start + JournalFormat.frameSize <= journalSize {
            let bytes = try journal.read(at: start, count: min(chunk + JournalFormat.frameSize, journalSize - start))
            let last = bytes.count - JournalFormat.frameSize
            var index = 0
            while index <= min(last, chunk - 1) {
                if bytes[index] == JournalFormat.recordMagic[0],
                    let frame = JournalFormat.frame(bytes.subdata(in: index..<index + JournalFormat.frameSize)),
                    frame.length <= journalSize - (start + index) - JournalFormat.frameSize
                {
                    return start + index
                }
                index += 1
            }
            start += chunk
        }
        return nil
    }

    /// Copies the journal from `offset` on to a file beside it, before recovery cuts it off.
    private func keepDamagedPart(from offset: Int) throws {
        let stamp = Int(Date().timeIntervalSince1970)
        let copy = URL(fileURLWithPath: journal.path + ".damaged-\(stamp)")
        try AtomicFile.write(to: copy) { buffer in
            var start = offset
            while start < journalSize {
                let part = try journal.read(at: start, count: min(1 << 20, journalSize - start))
                if part.isEmpty { break }
                part.withUnsafeBytes { buffer.append($0) }
                try buffer.flushIfNeeded()
                start += part.count
            }
        }
    }

    private func damage(at offset: Int, expected: String, found: String) -> PersistenceError {
        PersistenceError(
            .damagedJournal, path: journal.path, operation: "open a store", expected: expected, found: found,
            offset: offset)
    }
}
