import Foundation
import ModelKitShims

/// A growable byte buffer that writers append to, handed to a file descriptor in chunks.
///
/// Writing to a file keeps at most about two ``chunkSize`` chunks (plus one model's output) in
/// memory: the one being filled and, in a large file, the one being written on another thread
/// (``BackgroundFileWrites``). The writers call ``flushIfNeeded()`` between models, never inside
/// one, so everything written since the current model began is still in the buffer. Writing to
/// memory keeps everything and hands the bytes over as `Data` without a copy; on Linux, once it
/// passes ``OutputMapping/threshold``, it lives in a mapping of its own that grows without
/// copying (see ``OutputMapping``).
final class OutputBuffer {
    /// Output is handed to the file once this much has accumulated.
    static let chunkSize = 1 << 20
    /// How many chunks are written on the calling thread before the rest go to another thread.
    ///
    /// The second chunk buffer is new memory to fault in (and to hand back at the end) on each
    /// write: measured at 10k posts (a 5 MB file), that cost more than the overlap saved, while
    /// from 100k posts (48 MB) overlapping saved 8–12%.
    static let chunksOnCallingThread = 8

    // Appending is the writers' innermost loop: dynamic exclusivity checks on these fields would
    // cost more than the appends themselves, and the buffer is never shared between threads.
    @exclusivity(unchecked) private(set) var base: UnsafeMutablePointer<UInt8>
    @exclusivity(unchecked) private(set) var capacity: Int
    /// Bytes in the buffer not yet handed to the file.
    @exclusivity(unchecked) private(set) var count = 0
    /// Bytes already handed to the file.
    private(set) var flushed = 0
    private let descriptor: Int32?
    /// Full chunks on their way to the file, once ``chunksOnCallingThread`` chunks were written.
    private var writes: BackgroundFileWrites?
    private var chunksWritten = 0
    private let chunksHere: Int
    /// Whether `base` is a mapping of `capacity` bytes (``OutputMapping``) rather than `malloc`'s.
    private(set) var isMapped = false
    #if DEBUG
        /// Where the latest ``reserve(_:)`` promised room up to (an offset in the buffer). Debug
        /// builds check every unchecked write against it, so that a writer that reserves fewer
        /// bytes than it writes traps in the tests even where the buffer happened to have room.
        @exclusivity(unchecked) private var reservedEnd = 0
    #endif

    /// Creates a buffer that writes to `descriptor`, or keeps everything when it is `nil`.
    ///
    /// - Parameter chunksHere: How many chunks are written on the calling thread (tests lower it).
    init(descriptor: Int32?, chunksHere: Int = OutputBuffer.chunksOnCallingThread) {
        self.descriptor = descriptor
        self.chunksHere = chunksHere
        capacity = descriptor == nil ? 1 << 16 : 2 * Self.chunkSize
        base = Self.allocate(capacity)
    }

    deinit {
        if isMapped { OutputMapping.unmap(base, capacity) } else { Self.deallocate(base) }
    }

    /// `bytes` of memory from `malloc`: the buffer grows with `realloc`, which can move or extend
    /// a large block without copying it or touching its pages again (a buffer grown by allocating
    /// and copying touches about twice its final size). Like Swift's own allocation, it traps
    /// when the system has no memory left.
    static func allocate(_ bytes: Int) -> UnsafeMutablePointer<UInt8> {
        malloc(bytes)!.assumingMemoryBound(to: UInt8.self)
    }

    /// Frees memory from ``allocate(_:)``.
    static func deallocate(_ base: UnsafeMutablePointer<UInt8>) { free(base) }

    /// The offset in the whole output of the next byte to be appended.
    @inline(__always) var position: Int { flushed + count }

    /// Makes room for `extra` more bytes. Only the latest reservation counts for the unchecked
    /// writes that follow (``appendUnchecked(_:)``, ``advance(by:)``).
    @inline(__always) func reserve(_ extra: Int) {
        if count + extra > capacity { grow(to: count + extra) }
        #if DEBUG
            reservedEnd = count + extra
        #endif
    }

    private func grow(to minimum: Int) {
        let newCapacity = Swift.max(capacity * 2, minimum)
        if OutputMapping.isAvailable, descriptor == nil, newCapacity >= OutputMapping.threshold {
            return growMapping(to: OutputMapping.pages(newCapacity))
        }
        base = realloc(base, newCapacity)!.assumingMemoryBound(to: UInt8.self)
        capacity = newCapacity
    }

    /// Grows an in-memory buffer in its mapping, moving it there first (the one copy, of less
    /// than ``OutputMapping/threshold`` bytes).
    private func growMapping(to newCapacity: Int) {
        if isMapped {
            base = OutputMapping.remap(base, from: capacity, to: newCapacity)
        } else {
            let mapping = OutputMapping.map(newCapacity)
            mapping.update(from: base, count: count)
            Self.deallocate(base)
            base = mapping
            isMapped = true
        }
        capacity = newCapacity
    }

    @inline(__always) func append(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count += 1
    }

    /// Appends without checking capacity: the caller reserved room first.
    @inline(__always) func appendUnchecked(_ byte: UInt8) {
        assertReserved(1)
        base[count] = byte
        count += 1
    }

    @inline(__always) func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        reserve(bytes.count)
        (UnsafeMutableRawPointer(base) + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    @inline(__always) func append(_ text: StaticString) {
        append(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Counts `bytes` written directly at `base + count` (after reserving room) as appended.
    @inline(__always) func advance(by bytes: Int) {
        assertReserved(bytes)
        count += bytes
    }

    /// Debug builds: a reservation does not outlive a flush, a truncation or a hand-over.
    @inline(__always) private func forgetReservation() {
        #if DEBUG
            reservedEnd = 0
        #endif
    }

    /// Debug builds: traps unless `bytes` more bytes at `count` lie within the latest reservation.
    @inline(__always) private func assertReserved(_ bytes: Int) {
        #if DEBUG
            precondition(
                bytes >= 0 && count + bytes <= reservedEnd && reservedEnd <= capacity,
                "OutputBuffer: a write of \(bytes) bytes at \(count) passes the reservation ending at \(reservedEnd)")
        #endif
    }

    /// Drops everything appended after `position`, which must still be in the buffer.
    func truncate(to position: Int) {
        precondition(position >= flushed && position <= self.position, "truncating flushed output")
        count = position - flushed
        forgetReservation()
    }

    /// Hands the buffered bytes to the file when enough have accumulated. Call it only between
    /// models (see the type's discussion).
    ///
    /// - Throws: The error of an earlier chunk's write.
    @inline(__always) func flushIfNeeded() throws {
        if descriptor != nil, count >= Self.chunkSize { try flush() }
    }

    /// Hands all buffered bytes to the file: written here for the first chunks of a file, on
    /// another thread after that.
    ///
    /// - Throws: The error of this chunk's write, or of an earlier chunk's.
    func flush() throws {
        guard let descriptor, count > 0 else { return }
        chunksWritten += 1
        guard chunksWritten > chunksHere else { return try writeHere(descriptor) }
        let writes = self.writes ?? BackgroundFileWrites(descriptor: descriptor)
        self.writes = writes
        let next = try writes.submit(.init(base: base, capacity: capacity), count: count, offset: flushed)
        base = next.base
        capacity = next.capacity
        flushed += count
        count = 0
        forgetReservation()
    }

    /// Writes every byte to the file and returns when all are written (not yet synced to disk).
    ///
    /// - Throws: The error of any write.
    func finishWriting() throws {
        try writes?.finish()
        // The last chunk is written here: nothing is left to overlap it with.
        if let descriptor, count > 0 { try writeHere(descriptor) }
    }

    private func writeHere(_ descriptor: Int32) throws {
        try Posix.writeAll(descriptor, base, count)
        // Best effort: the closing fsync writes whatever this did not start. Starting it even
        // for the last chunk measured faster than leaving all of that chunk to fsync.
        _ = modelkit_start_writeback(descriptor, Int64(flushed), Int64(count))
        flushed += count
        count = 0
        forgetReservation()
    }

    /// Waits for any write in flight, ignoring its error: before the file is closed after a
    /// failure.
    func abandonWriting() {
        writes?.abandon()
    }

    /// The bytes written, for a buffer without a file. The buffer is empty afterwards.
    func takeData() -> Data {
        // The allocation becomes the Data's storage: no second copy of the output.
        let data =
            isMapped
            ? OutputMapping.data(base, count: count, mapped: capacity)
            : Data(bytesNoCopy: base, count: count, deallocator: .free)
        isMapped = false
        capacity = 16
        base = Self.allocate(capacity)
        count = 0
        forgetReservation()
        return data
    }
}
