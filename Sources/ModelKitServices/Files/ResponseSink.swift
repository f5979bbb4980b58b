import Foundation
import ModelKitShims
import Synchronization

/// Where an ``HTTPClient`` writes an answer's body instead of keeping it: a file beside the
/// download's destination, hashed (SHA-256) and counted as the pieces arrive, so that a file of
/// any size crosses with a bounded amount of memory. At most `limit` bytes are taken: a server
/// that sends more is cut off.
///
/// The delegate writes from its queue while the transfer runs; the owner reads the outcome once
/// the transfer has ended. Each attempt of a retried request starts the file again.
final class ResponseSink: Sendable {
    struct Written: Sendable {
        let bytes: Int64
        let sha256: String
    }

    private struct State {
        var handle: FileHandle?
        var hash = SHA256()
        /// Bytes taken so far (written, or waiting in `buffer`).
        var bytes: Int64 = 0
        /// Bytes in the file so far.
        var flushed: Int64 = 0
        /// Pieces not written yet: the transport hands them over 16 KiB at a time, and a write,
        /// a hash update and a write-back start per mebibyte cost a sixtieth as many calls.
        var buffer = Data()
        /// Why writing failed (a full disk, say): the transfer is stopped with it.
        var failure: String?

        /// Hashes and writes what waits in the buffer, and starts the disk's write-back of it,
        /// so that the `fsync` at the end finds little left to do.
        mutating func flush() throws {
            guard !buffer.isEmpty, let handle else { return }
            hash.update(buffer)
            try handle.write(contentsOf: buffer)
            _ = modelkit_start_writeback(handle.fileDescriptor, flushed, Int64(buffer.count))
            flushed += Int64(buffer.count)
            buffer.removeAll(keepingCapacity: true)
        }
    }

    /// How much waits in memory before it is written.
    static let bufferSize = 1 << 20

    /// The file the body goes to.
    let url: URL
    /// The most body bytes taken.
    let limit: Int64
    /// Told the bytes received so far after each piece.
    let onProgress: (@Sendable (Int64) -> Void)?
    private let state = Mutex(State())

    init(url: URL, limit: Int64, onProgress: (@Sendable (Int64) -> Void)? = nil) {
        self.url = url
        self.limit = limit
        self.onProgress = onProgress
    }

    /// Empties the file for a new attempt (making it if needed).
    func start() throws(ServiceError) {
        try state.withLock { state throws(ServiceError) in
            try? state.handle?.close()
            state = State()
            state.buffer.reserveCapacity(Self.bufferSize)
            guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
                throw ServiceError(.fileFailed(expected: "a file that can be written", found: "'\(url.path)'"))
            }
            do {
                state.handle = try FileHandle(forWritingTo: url)
            } catch {
                throw ServiceError(.fileFailed(expected: "a file that can be written", found: "'\(url.path)': \(error)"))
            }
        }
    }

    /// Takes one piece of the body; false when it cannot (over the limit, or the write failed).
    func write(_ data: Data) -> Bool {
        let received: Int64? = state.withLock { state -> Int64? in
            guard state.failure == nil, state.handle != nil, state.bytes + Int64(data.count) <= limit else { return nil }
            state.buffer.append(data)
            state.bytes += Int64(data.count)
            if state.buffer.count >= Self.bufferSize {
                do {
                    try state.flush()
                } catch {
                    state.failure = "\(error)"
                    return nil
                }
            }
            return state.bytes
        }
        guard let received else { return false }
        onProgress?(received)
        return true
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
    var failure: String? { state.withLock { $0.failure } }

    /// Closes the file and gives what was written.
    func finish() throws(ServiceError) -> Written {
        try state.withLock { state throws(ServiceError) in
            do {
                try state.flush()
                try state.handle?.synchronize()
                try state.handle?.close()
            } catch {
                throw ServiceError(.fileFailed(expected: "a file that can be written", found: "'\(url.path)': \(error)"))
            }
            state.handle = nil
            return Written(bytes: state.bytes, sha256: state.hash.hexDigest())
        }
    }

    /// Closes and removes the file (a failed or cancelled download leaves nothing).
    func discard() {
        state.withLock { state in
            try? state.handle?.close()
            state.handle = nil
        }
        try? FileManager.default.removeItem(at: url)
    }
}
