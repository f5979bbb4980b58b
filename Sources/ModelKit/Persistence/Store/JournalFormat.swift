import Foundation

// The journal's bytes. A journal is a 16-byte header followed by records, each a 24-byte frame
// header and a payload:
//
//     header   "MKJOURNL"  version u8 (1)  3 bytes zero  CRC-32C of the 12 bytes before, u32
//     record   "MKRC"  type u8  version u8  flags u16 (0)  payload length u64
//              CRC-32C of the payload u32  CRC-32C of the 20 bytes before, u32
//              payload
//
// Integers are little-endian. The frame's own checksum lets a reader tell a frame header from
// damage without trusting its length; the payload's checksum catches a torn or rotted payload.
// A record is valid only whole: a save is one record, so a save is on disk entirely or not at all.

/// What a record holds. Readers stop with a typed error at a type (or a version of one) they do
/// not know, rather than skipping what a newer ModelKit meant them to apply.
enum JournalRecordType: UInt8 {
    /// A save: the models inserted and changed (in the ModelPointer encoding of files, with their
    /// `tracking` member), and the ids of the models removed.
    case save = 1
    // Kept for offline sync (see Docs/Persistence.md, "Room for sync"): 2, the values last synced
    // with a server (the base of a three-way merge); 3, changes queued for the server and their
    // acknowledgements.
}

enum JournalFormat {
    static let magic = Array("MKJOURNL".utf8)
    static let version: UInt8 = 1
    static let headerSize = 16
    static let recordMagic = Array("MKRC".utf8)
    static let frameSize = 24
    /// The version of the `save` record's payload.
    static let saveVersion: UInt8 = 1

    /// The journal header.
    static func header() -> Data {
        var bytes = magic + [version, 0, 0, 0]
        let crc = bytes.withUnsafeBytes { CRC32C.checksum($0) }
        append(crc, to: &bytes)
        return Data(bytes)
    }

    /// Whether `bytes` (at least ``headerSize`` of them) are a journal header this version reads;
    /// otherwise what was found.
    static func checkHeader(_ bytes: Data) -> String? {
        guard bytes.count >= headerSize, bytes.prefix(8).elementsEqual(magic) else {
            return "bytes that do not start a ModelKit journal"
        }
        let crc = bytes.prefix(12).withUnsafeBytes { CRC32C.checksum($0) }
        guard crc == load(UInt32.self, bytes, at: 12) else { return "a journal header whose checksum does not match" }
        guard bytes[bytes.startIndex + 8] == version else {
            return "journal version \(bytes[bytes.startIndex + 8]) (this ModelKit reads version \(version))"
        }
        return nil
    }

    /// A whole record: its frame and `payload`.
    static func record(type: JournalRecordType, version: UInt8, payload: Data) -> Data {
        var frame = recordMagic + [type.rawValue, version, 0, 0]
        append(UInt64(payload.count), to: &frame)
        append(payload.withUnsafeBytes { CRC32C.checksum($0) }, to: &frame)
        append(frame.withUnsafeBytes { CRC32C.checksum($0) }, to: &frame)
        var record = Data(capacity: frame.count + payload.count)
        record.append(contentsOf: frame)
        record.append(payload)
        return record
    }

    /// A record's frame header, read back.
    struct Frame {
        var type: UInt8
        var version: UInt8
        var length: Int
        var payloadChecksum: UInt32
    }

    /// The frame in the first ``frameSize`` bytes of `bytes`, or `nil` when they are not a valid
    /// frame header (wrong magic, flags or checksum).
    static func frame(_ bytes: Data) -> Frame? {
        guard bytes.count >= frameSize, bytes.prefix(4).elementsEqual(recordMagic) else { return nil }
        let crc = bytes.prefix(20).withUnsafeBytes { CRC32C.checksum($0) }
        guard crc == load(UInt32.self, bytes, at: 20), load(UInt16.self, bytes, at: 6) == 0 else { return nil }
        let length = load(UInt64.self, bytes, at: 8)
        guard length <= UInt64(Int.max) else { return nil }
        return Frame(
            type: bytes[bytes.startIndex + 4], version: bytes[bytes.startIndex + 5], length: Int(length),
            payloadChecksum: load(UInt32.self, bytes, at: 16))
    }

    static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    static func load<T: FixedWidthInteger>(_ type: T.Type, _ bytes: Data, at offset: Int) -> T {
        bytes.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self)) }
    }
}
