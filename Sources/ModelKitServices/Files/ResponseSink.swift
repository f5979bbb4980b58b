import Foundation
import ModelKitShims
import Synchronization

/// Where an ``HTTPClient`` writes an answer's body instead of keeping it: a file beside the
/// download's destination, hashed (SHA-256) and counted as the pieces arrive, so that a file of
/// any size crosses with a bounded amount of memory. At most `limit` bytes are taken: a server
/// that sends more is cut off.
///
/// The delegate hands pieces over from its queue while the transfer runs; they are gathered a
/// mebibyte at a time, and each full mebibyte is hashed and written on a queue of the sink's own,
/// so that the transport goes on receiving meanwhile (hashing and writing inline held the
/// delegate's queue for a third of a large download's time). At most ``buffersInFlight``
/// mebibytes wait for that queue: a disk slower than the network stops the delegate there, which
/// bounds the memory. The owner reads the outcome once the transfer has ended. Each attempt of a
/// retried request starts the file again.
final class ResponseSink: Sendable {
    struct Written: Sendable {
        let bytes: Int64
        let sha256: String
    }

    /// The receiving side: what the delegate hands over, gathered.
    private struct Gathered {
        /// Bytes taken so far (written, being written, or waiting in `buffer`).
        var bytes: Int64 = 0
        /// Pieces not handed to the writing queue yet: the transport hands them over 16 KiB at a
        /// time, and a write, a hash update and a write-back start per mebibyte cost a sixtieth
        /// as many calls.
        var buffer = Data()
        /// Whether a file is open to take pieces (from `start()` to `finish()` or `discard()`).
        var isOpen = false
        /// Buffers written and emptied, their capacity kept: the same few go round, where a new
        /// mebibyte for each grew the process's peak by a third of the large file test's bound
        /// (the threads that fill and empty them take memory from different malloc arenas).
        var spare: [Data] = []
    }

    /// The writing side, used on `queue` only (and by the owner once the queue is drained).
    private struct Output {
        var handle: FileHandle?
        var hash = SHA256()
        /// Bytes in the file so far.
        var flushed: Int64 = 0

        /// Hashes and writes `piece`, and starts the disk's write-back of it, so that the `fsync`
        /// at the end finds little left to do.
        mutating func write(_ piece: Data) throws {
            guard let handle, !piece.isEmpty else { return }
            hash.update(piece)
            try handle.write(contentsOf: piece)
            _ = modelkit_start_writeback(handle.fileDescriptor, flushed, Int64(piece.count))
            flushed += Int64(piece.count)
        }
    }

    /// How much is gathered before it is handed to the writing queue.
    static let bufferSize = 1 << 20
    /// How many gathered buffers may wait for, or be in, the writing queue at once: one, so one
    /// is written while the next fills. Two gained no time and grew the large file test's peak
    /// by 8 MB more (pieces pile up in the transport while the delegate waits).
    static let buffersInFlight = 1

    /// The file the body goes to.
    let url: URL
    /// The most body bytes taken.
    let limit: Int64
    /// Told the bytes received so far after each piece.
    let onProgress: (@Sendable (Int64) -> Void)?
    private let gathered = Mutex(Gathered())
    private let output = Mutex(Output())
    /// The full buffers handed to `queue`, in order, each taken out by the block that writes it
    /// (so that it holds the only reference, and can empty it keeping its capacity).
    private let waiting = Mutex<[Data]>([])
    /// Why writing failed (a full disk, say): the transfer is stopped with it. Apart from
    /// `output`, which the writing queue holds for a mebibyte's hash and write, so that the
    /// delegate's check of each piece doesn't wait for that.
    private let writeFailure = Mutex<String?>(nil)
    /// Hashes and writes the gathered buffers, in order.
    private let queue = DispatchQueue(label: "ModelKitServices.ResponseSink")
    /// Room for buffers in flight: taken before a buffer is handed to `queue`, given back when it
    /// is written.
    private let room = DispatchSemaphore(value: ResponseSink.buffersInFlight)

    init(url: URL, limit: Int64, onProgress: (@Sendable (Int64) -> Void)? = nil) {
        self.url = url
        self.limit = limit
        self.onProgress = onProgress
    }

    /// Empties the file for a new attempt (making it if needed).
    func start() throws(ServiceError) {
        queue.sync {}  // what an earlier attempt handed over is written (to the file emptied next)
        writeFailure.withLock { $0 = nil }
        try output.withLock { output throws(ServiceError) in
            try? output.handle?.close()
            output = Output()
            guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
                throw ServiceError(.fileFailed(expected: "a file that can be written", found: "'\(url.path)'"))
            }
            do {
                output.handle = try FileHandle(forWritingTo: url)
            } catch {
                throw ServiceError(.fileFailed(expected: "a file that can be written", found: "'\(url.path)': \(error)"))
            }
        }
        gathered.withLock { gathered in
            gathered = Gathered()
            gathered.buffer.reserveCapacity(Int(min(limit, Int64(Self.bufferSize))))
            gathered.isOpen = true
        }
    }

    /// Takes one piece of the body; false when it cannot (over the limit, or a write failed).
    func write(_ data: Data) -> Bool {
        guard failure == nil else { return false }
        let taken: (bytes: Int64, full: Bool)? = gathered.withLock { gathered in
            guard gathered.isOpen, gathered.bytes + Int64(data.count) <= limit else { return nil }
            gathered.buffer.append(data)
            gathered.bytes += Int64(data.count)
            guard gathered.buffer.count >= Self.bufferSize else { return (gathered.bytes, false) }
            var full = gathered.spare.popLast() ?? Data(capacity: Self.bufferSize)
            swap(&full, &gathered.buffer)
            waiting.withLock { $0.append(full) }
            return (gathered.bytes, true)
        }
        guard let taken else { return false }
        if taken.full { writeNextWaiting() }
        onProgress?(taken.bytes)
        return true
    }

    /// Has the writing queue write the next buffer of `waiting`, once there is room for it (the
    /// caller waits meanwhile: the transport's backpressure).
    private func writeNextWaiting() {
        room.wait()
        queue.async { [self] in
            defer { room.signal() }
            var buffer = waiting.withLock { $0.removeFirst() }
            if failure == nil {
                do {
                    try output.withLock { output in try output.write(buffer) }
                } catch {
                    writeFailure.withLock { $0 = "\(error)" }
                }
            }
            buffer.removeAll(keepingCapacity: true)
            gathered.withLock { $0.spare.append(buffer) }
        }
    }

    /// Takes the bytes of the local file `source`, a piece at a time, as a download takes a
    /// body.
    func copy(from source: URL) throws(ServiceError) {
        try start()
        try KintoService.UploadSource.file(source).forEachPiece { piece throws(ServiceError) in
            guard write(piece) else {
                if let failure { throw ServiceError(.fileFailed(expected: "a file that can be written", found: failure)) }
                throw ServiceError(.fileFailed(expected: "at most \(limit) bytes", found: "more in '\(source.path)'"))
            }
        }
    }

    /// The failure of a write, if one failed.
    var failure: String? { writeFailure.withLock { $0 } }

    /// Writes what is left, closes the file and gives what was written.
    ///
    /// - Throws: ``ServiceError/Code/fileFailed`` when a write, the `fsync` or the close failed.
    func finish() throws(ServiceError) -> Written {
        let (bytes, rest) = gathered.withLock { gathered in
            gathered.isOpen = false
            defer { gathered = Gathered() }
            return (gathered.bytes, gathered.buffer)
        }
        queue.sync {}
        if let failure { throw ServiceError(.fileFailed(expected: "a file that can be written", found: failure)) }
        // The rest here, the queue drained: a small file, all of it in `rest`, costs no hop.
        return try output.withLock { output throws(ServiceError) in
            do {
                try output.write(rest)
                try output.handle?.synchronize()
                try output.handle?.close()
            } catch {
                throw ServiceError(.fileFailed(expected: "a file that can be written", found: "'\(url.path)': \(error)"))
            }
            output.handle = nil
            assert(output.flushed == bytes, "every gathered byte was written")
            return Written(bytes: bytes, sha256: output.hash.hexDigest())
        }
    }

    /// Closes and removes the file (a failed or cancelled download leaves nothing).
    func discard() {
        gathered.withLock { $0.isOpen = false }
        queue.sync {}
        gathered.withLock { $0 = Gathered() }
        output.withLock { output in
            try? output.handle?.close()
            output.handle = nil
        }
        try? FileManager.default.removeItem(at: url)
    }
}
