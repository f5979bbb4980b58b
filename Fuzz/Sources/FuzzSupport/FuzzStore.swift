import Foundation
import ModelKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Opens a store whose journal is the fuzzer's input, over the base a new store writes (an empty
/// context's JSON file), so that every record of a seed journal made by the library applies.
///
/// Each input is opened twice: as it is, which reaches the framing and the checksums (nearly
/// every mutation fails one), and resealed, its header's and records' checksums made right
/// again, which carries the mutated payloads past them to the record reader and the loader.
///
/// An open must succeed or throw a `PersistenceError` or `SerializationError`; a failed open must
/// leave the journal as it was; an opened store must open again, closed, with the same models
/// (cutting off a torn last record changes nothing that the first open applied); a damaged
/// journal (`damagedJournal`, with its offset) must open, or fail typed, with the recovery of the
/// saves before the damage. Memory: the journal reader reads one record at a time, and a record's
/// length is checked against the file's size before it is read, so an input's memory is in
/// proportion to its size (`Fuzz/run` sets libFuzzer's `-malloc_limit_mb` for this target).
public enum FuzzStore {
    /// This process's folder for the store (one per process, since libFuzzer's workers are
    /// processes); removed at exit. In memory (`/dev/shm`) where there is one: opening a store
    /// syncs the journal when it writes its header or cuts off a torn record, and a disk's syncs
    /// held a minute's run to a quarter of a core.
    static let folder: String = {
        let memory = "/dev/shm/"
        let parent = access(memory, W_OK) == 0 ? memory : NSTemporaryDirectory()
        let path = parent + "modelkit-fuzz-store-\(getpid())"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: FuzzStore.folder) }
        return path
    }()

    /// The base every input opens over. Bytes, not `Data`: LeakSanitizer reported the storage of
    /// a `Data` kept here as leaked at exit (it did not find the pointer where `Data` keeps it).
    static let base: [UInt8] = {
        do {
            return Array(try ModelContext().data(format: .json))
        } catch {
            fatalError("an empty context failed to write: \(error)")
        }
    }()

    /// Opens the store on `input` as its journal, then on `input` resealed; traps on anything
    /// but what the type's documentation allows.
    public static func check(_ input: Data) {
        _ = crcAgrees
        open(input)
        let resealed = reseal(input)
        if resealed != input { open(resealed) }
    }

    /// One input's open, reopen and recovery, over fresh files.
    static func open(_ journal: Data) {
        _ = FuzzModels.registered
        let url = URL(fileURLWithPath: folder).appendingPathComponent("fuzz.store")
        let journalURL = URL(fileURLWithPath: url.path + "-journal")
        do {
            for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
                try FileManager.default.removeItem(atPath: folder + "/" + name)
            }
            try Data(base).write(to: url)
            try journal.write(to: journalURL)
        } catch {
            fatalError("the fuzz store's files could not be written: \(error)")
        }
        var options = ModelStore.Options()
        // Ignored, not warned about: a warning on standard error for nearly every mutated key.
        options.deserialization.unknownKeys = .ignore
        do {
            let store = try ModelStore(url: url, options: options)
            store.close()
            let again = try ModelStore(url: url, options: options)
            again.close()
            expectSame(store.context, again.context)
        } catch let error as PersistenceError {
            expectUnchanged(journalURL, journal)
            guard error.code == .damagedJournal else { return }
            guard error.offset != nil else { fatalError("damagedJournal without an offset: \(error)") }
            options.recovery = .savesBeforeDamage
            do {
                _ = try ModelStore(url: url, options: options)
            } catch is PersistenceError {
            } catch is SerializationError {
            } catch {
                fatalError("a recovering open threw an untyped error: \(error)")
            }
        } catch is SerializationError {
            expectUnchanged(journalURL, journal)
        } catch {
            fatalError("an open threw an untyped error: \(error)")
        }
    }

    /// `journal` with the checksum of its header and those of each record frame and payload in
    /// turn recomputed, as far as the frames' magic and lengths lead (see JournalFormat.swift).
    static func reseal(_ journal: Data) -> Data {
        var bytes = [UInt8](journal)
        guard bytes.count >= 16 else { return journal }
        store(crc32c(bytes[0..<12]), in: &bytes, at: 12)
        var offset = 16
        while offset + 24 <= bytes.count, bytes[offset..<offset + 4].elementsEqual("MKRC".utf8) {
            var length: UInt64 = 0
            for index in 0..<8 { length |= UInt64(bytes[offset + 8 + index]) << (8 * index) }
            guard length <= UInt64(bytes.count - offset - 24) else { break }
            let end = offset + 24 + Int(length)
            store(crc32c(bytes[(offset + 24)..<end]), in: &bytes, at: offset + 16)
            store(crc32c(bytes[offset..<offset + 20]), in: &bytes, at: offset + 20)
            offset = end
        }
        return Data(bytes)
    }

    private static func store(_ value: UInt32, in bytes: inout [UInt8], at offset: Int) {
        for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
    }

    /// Traps unless ``crc32c(_:)`` gives CRC-32C's check value: resealing with another checksum
    /// would stop every resealed input at its first record.
    static let crcAgrees: Void = {
        guard crc32c(ArraySlice("123456789".utf8)) == 0xE306_9283 else { fatalError("crc32c is not CRC-32C") }
    }()

    /// CRC-32C, bit by bit (the library's is internal, and fast; this one only needs to agree).
    static func crc32c(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
        }
        return ~crc
    }

    private static func expectUnchanged(_ url: URL, _ journal: Data) {
        guard (try? Data(contentsOf: url)) == journal else { fatalError("a failed open changed the journal") }
    }

    /// Whether `a` and `b` hold the same values: equal, or written alike by `dump`. A NaN is
    /// never equal to itself, and a mutated journal holds NaNs (a fuzz run found a post whose
    /// score, a NaN with a payload, reopened with the same bits but failed `==`); `dump` writes
    /// a NaN's sign and payload, so two dumps agree only for the same bits.
    private static func same<Properties: Equatable>(_ a: Properties, _ b: Properties) -> Bool {
        if a == b { return true }
        var left = ""
        var right = ""
        dump(a, to: &left)
        dump(b, to: &right)
        return left == right
    }

    /// Traps unless `copy` has the models of `context`, with the same types and properties.
    private static func expectSame(_ context: ModelContext, _ copy: ModelContext) {
        guard copy.count == context.count else {
            fatalError("a store reopened with \(copy.count) models, opened with \(context.count)")
        }
        for model in context.allModels {
            let same: Bool
            switch (model, copy.model(withId: model.modelId)) {
            case (let a as FuzzAuthor, let b as FuzzAuthor): same = Self.same(a.persistedProperties, b.persistedProperties)
            case (let a as FuzzPost, let b as FuzzPost): same = Self.same(a.persistedProperties, b.persistedProperties)
            case (let a as FuzzEverything, let b as FuzzEverything):
                same = Self.same(a.persistedProperties, b.persistedProperties)
            default: same = false
            }
            guard same else { fatalError("model \(model.modelId) reopened different") }
        }
    }
}
