import Dispatch
import ModelKitShims

/// Hands an ``OutputBuffer``'s full chunks to the file on another thread, so that encoding the
/// next chunk overlaps copying this one into the kernel.
///
/// Why: `write` copies every byte into the page cache, and for a file of hundreds of megabytes
/// those pages are cold. Writing a million models spent about 7% of its time in that copy, and the
/// share grows with the file, while the writing thread could have been encoding.
///
/// At most one chunk is in flight: handing over the next waits for it, and gets its memory back
/// as the buffer to fill, so a write keeps two chunks in memory at most. A failed write is
/// reported at the next hand-over or at ``finish()``.
final class BackgroundFileWrites: @unchecked Sendable {
    // Safe to share: `descriptor` is constant; `returned` and `failure` are written by the
    // queue's block before it signals `done`, and read by the writing thread only after waiting
    // on `done` (the semaphore orders the two); `inFlight` is the writing thread's alone.
    private let descriptor: Int32
    private let queue = DispatchQueue(label: "ModelKit.BackgroundFileWrites")
    private let done = DispatchSemaphore(value: 0)
    private var inFlight = false
    private var returned: Chunk?
    private var failure: (any Error)?

    struct Chunk {
        var base: UnsafeMutablePointer<UInt8>
        var capacity: Int
    }

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        // Blocks retain `self`, so none is running: only the memory handed back is left.
        if let returned { OutputBuffer.deallocate(returned.base) }
    }

    /// Starts writing `count` bytes of `chunk` (at file offset `offset`) on the queue and returns
    /// memory to fill next: the previous chunk's, once it is written, or a new chunk the first
    /// time. The queue owns `chunk` from now on.
    ///
    /// - Throws: The error of an earlier chunk's write.
    func submit(_ chunk: Chunk, count: Int, offset: Int) throws -> Chunk {
        try waitForChunkInFlight()
        let next = returned.take() ?? Chunk(base: OutputBuffer.allocate(chunk.capacity), capacity: chunk.capacity)
        inFlight = true
        queue.async { [self] in
            do {
                try Posix.writeAll(descriptor, chunk.base, count)
                // Best effort: the closing fsync writes whatever this did not start.
                _ = modelkit_start_writeback(descriptor, Int64(offset), Int64(count))
            } catch {
                failure = error
            }
            returned = chunk
            done.signal()
        }
        return next
    }

    /// Waits until no chunk is in flight.
    ///
    /// - Throws: The error of any chunk's write.
    func finish() throws {
        try waitForChunkInFlight()
    }

    /// Waits until no chunk is in flight, ignoring errors: before the descriptor is closed after a
    /// failure, so no write lands on a closed (or reused) descriptor.
    func abandon() {
        try? waitForChunkInFlight()
    }

    private func waitForChunkInFlight() throws {
        if inFlight {
            done.wait()
            inFlight = false
        }
        if let failure { throw failure }
    }
}

extension BackgroundFileWrites.Chunk: @unchecked Sendable {}  // its memory is used by one thread at a time
