import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#elseif canImport(Android)
    import Android
#endif

/// The open journal of a store: its descriptor, the writer's lock on it, and the positioned reads,
/// appends, truncations and syncs the store makes.
///
/// Why `flock` on the journal itself: it is the one file a writer keeps open for the store's
/// lifetime (the base is replaced by renames, so a lock on it would be lost at the first
/// compaction). `flock` locks belong to the open file description, so a second store in the same
/// process conflicts as a second process does (POSIX `fcntl` locks would not), and the system drops
/// the lock when the process dies, however it dies.
final class JournalFile {
    let path: String
    private(set) var descriptor: Int32
    /// How many `fsync` calls the store made on this journal (for ``ModelStore/Statistics``).
    private(set) var syncs = 0

    /// Opens (creating it when missing) and locks the journal at `path`.
    ///
    /// - Throws: ``PersistenceError/Code/storeLocked`` when another store holds the lock; the
    ///   open's errors otherwise (``PersistenceError/Code/permissionDenied``,
    ///   ``PersistenceError/Code/readOnlyFileSystem``, ``PersistenceError/Code/notARegularFile``).
    init(path: String) throws {
        self.path = path
        let descriptor = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw PersistenceError(errorNumber: errno, operation: "open the journal", path: path)
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            Posix.closeDescriptor(descriptor)
            throw PersistenceError(
                .notARegularFile, path: path, operation: "open the journal", expected: "a regular file",
                found: "something else")
        }
        // A lock held by another store fails at once, but only after a short wait: a process
        // that this one is starting holds copies of its descriptors until it runs its program
        // (`posix_spawn` closes them then, O_CLOEXEC), so a store closed and opened again while
        // a child starts can find its own last lock still held for a few milliseconds.
        var waited = 0
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EINTR { continue }
            if code == EWOULDBLOCK, waited < Self.lockWait {
                let pause = min(max(waited, 1), Self.lockWait - waited)
                usleep(useconds_t(pause * 1_000))
                waited += pause
                continue
            }
            Posix.closeDescriptor(descriptor)
            if code == EWOULDBLOCK {
                throw PersistenceError(
                    .storeLocked, path: path, operation: "lock the journal",
                    expected: "no other store open on it for writing", found: "one (in this or another process)")
            }
            throw PersistenceError(errorNumber: code, operation: "lock the journal", path: path)
        }
        self.descriptor = descriptor
    }

    /// How long, in milliseconds, opening waits for a lock held by someone else before it
    /// reports ``PersistenceError/Code/storeLocked``.
    static let lockWait = 1_000

    deinit { close() }

    /// Releases the lock and the descriptor; later calls do nothing.
    func close() {
        guard descriptor >= 0 else { return }
        Posix.closeDescriptor(descriptor)
        descriptor = -1
    }

    /// The file's current size.
    func size() throws -> Int {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw error("fstat") }
        return Int(status.st_size)
    }

    /// Reads `count` bytes at `offset`; fewer only at the end of the file.
    func read(at offset: Int, count: Int) throws -> Data {
        guard count > 0 else { return Data() }
        var data = Data(count: count)
        let got = try data.withUnsafeMutableBytes { buffer -> Int in
            var done = 0
            while done < count {
                let read = pread(descriptor, buffer.baseAddress! + done, count - done, off_t(offset + done))
                if read < 0 {
                    if errno == EINTR { continue }
                    throw error("read")
                }
                if read == 0 { break }
                done += read
            }
            return done
        }
        if got < count { data.removeSubrange(got..<count) }
        return data
    }

    /// Writes `data` at `offset`, all of it.
    func write(_ data: Data, at offset: Int) throws {
        try data.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let written = pwrite(descriptor, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
                if written < 0 {
                    if errno == EINTR { continue }
                    throw error("write")
                }
                done += written
            }
        }
    }

    /// Cuts the file to `size` bytes.
    func truncate(to size: Int) throws {
        while ftruncate(descriptor, off_t(size)) != 0 {
            if errno != EINTR { throw error("truncate") }
        }
    }

    /// Flushes the file's data (and its size) to disk.
    ///
    /// Why `fdatasync` on Linux: it flushes the data and what is needed to read it back (the
    /// size of an appended file) but not the modification time, one metadata write fewer per
    /// save; SQLite flushes its WAL the same way.
    func sync() throws {
        syncs += 1
        #if os(Linux)
            while fdatasync(descriptor) != 0 {
                if errno != EINTR { throw PersistenceError(errorNumber: errno, operation: "fdatasync", path: path) }
            }
        #else
            try Posix.sync(descriptor, path: path)
        #endif
    }

    private func error(_ call: String) -> PersistenceError {
        PersistenceError(errorNumber: errno, operation: call, path: path)
    }
}

// Unchecked: `descriptor` and `syncs` are mutable, but a journal is used by one thread at a time.
// While a store opens, only the opening uses it (the asynchronous open makes it on a file thread
// and hands it over once that thread is done with it); afterwards every use goes through the
// store's `JournalWriter`, on its serial queue.
extension JournalFile: @unchecked Sendable {}
