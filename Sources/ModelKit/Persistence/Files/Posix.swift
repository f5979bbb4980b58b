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

// The few system calls reading and atomic writes need, in one place so the platform imports
// stay here. Every failure is a `PersistenceError` carrying the call's `errno`.
enum Posix {
    /// Writes all of `count` bytes at `base` to `descriptor`, retrying short writes and EINTR.
    ///
    /// - Throws: ``PersistenceError`` without a path (the caller knows it).
    static func writeAll(_ descriptor: Int32, _ base: UnsafeRawPointer, _ count: Int) throws {
        var done = 0
        while done < count {
            let written = write(descriptor, base + done, count - done)
            if written < 0 {
                if errno == EINTR { continue }
                throw error("write", "")
            }
            done += written
        }
    }

    static func openExclusive(_ path: String) throws -> Int32 {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw error("open", path) }
        return descriptor
    }

    /// What a write needs to know about the file it replaces.
    struct Target {
        /// The permission bits (with set-id and sticky bits) of a regular file, `nil` for a link.
        var mode: mode_t?
        var owner: uid_t
        var group: gid_t
    }

    /// What is at `path` without following a link: `nil` when nothing is, a ``Target`` for a
    /// regular file or a symbolic link.
    ///
    /// - Throws: ``PersistenceError/Code/notARegularFile`` for a directory, device, named pipe
    ///   or socket, whose replacement by a regular file would change what the path is (writing
    ///   to `/dev/null` as root would replace the device); other `lstat` failures.
    static func replaceableTarget(_ path: String) throws -> Target? {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            if errno == ENOENT { return nil }
            throw error("lstat", path)
        }
        switch status.st_mode & S_IFMT {
        case S_IFREG:
            return Target(mode: status.st_mode & 0o7777, owner: status.st_uid, group: status.st_gid)
        case S_IFLNK:
            return Target(mode: nil, owner: status.st_uid, group: status.st_gid)
        case let kind:
            throw PersistenceError(
                .notARegularFile, path: path, operation: "write", expected: "a regular file or nothing",
                found: describe(kind))
        }
    }

    /// Gives the file open at `descriptor` the owner (where permitted) and mode of `target`.
    ///
    /// Why this order: changing the owner clears the set-user-id and set-group-id bits, so the
    /// mode goes last. Only root may give a file away; anyone may give it a group they are in.
    static func adopt(_ target: Target, on descriptor: Int32, path: String) throws {
        guard let mode = target.mode else { return }
        if fchown(descriptor, target.owner, target.group) != 0 {
            _ = fchown(descriptor, uid_t.max, target.group)
        }
        guard fchmod(descriptor, mode) == 0 else { throw error("fchmod", path) }
    }

    private static func describe(_ kind: mode_t) -> String {
        switch kind {
        case S_IFDIR: return "a directory"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFIFO: return "a named pipe"
        case S_IFSOCK: return "a socket"
        default: return "a file of type 0o\(String(kind, radix: 8))"
        }
    }

    /// Opens the regular file at `path` for reading; `nil` when there is none (nothing there, a
    /// symbolic link, a directory, a pipe or a device) or it cannot be opened.
    ///
    /// Never blocks and has no side effects: a pipe would block an ordinary open until a writer
    /// came, and opening a device can act on it, so the open does not block, does not follow a
    /// link, and anything but a regular file is closed at once.
    static func openRegularFile(_ path: String) -> Int32? {
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    /// The bytes of the regular file at `path` (following links), read into memory.
    ///
    /// Why not map it: a mapped file that another program truncates while it is read raises
    /// SIGBUS on the next access past the new end, which kills the process. Bytes read with
    /// `read` are the process's own: a file that changes during the read gives a prefix or a
    /// mix of old and new bytes, which the parser rejects or loads like any other bytes.
    ///
    /// `check` sees the first bytes (up to 64 KiB) before the rest is read, so that a file that
    /// cannot be a document fails before gigabytes of it are read.
    ///
    /// - Throws: ``PersistenceError`` (``PersistenceError/Code/notARegularFile`` for a
    ///   directory, device, pipe or socket), or what `check` throws.
    static func readFile(_ path: String, check: (UnsafeBufferPointer<UInt8>) throws -> Void) throws -> Data {
        // Non-blocking: opening a named pipe must not wait for a writer.
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw error("open", path) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw error("fstat", path) }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw PersistenceError(
                .notARegularFile, path: path, operation: "read", expected: "a regular file",
                found: describe(status.st_mode & S_IFMT))
        }
        // One byte more than the size, to see the end without another call when the file has
        // not grown; the buffer grows if it has.
        var capacity = max(Int(status.st_size), 0) + 1
        var base = try FileBuffer.allocate(capacity, path: path)
        var count = 0
        var checked = false
        do {
            while true {
                if count == capacity {
                    let larger = try FileBuffer.allocate(capacity * 2, path: path)
                    larger.copyMemory(from: base, byteCount: count)
                    FileBuffer.deallocate(base, capacity)
                    base = larger
                    capacity *= 2
                }
                // The first 64 KiB alone, then the rest in calls of at most 1 GiB (Linux reads
                // at most about 2 GiB per call).
                let wanted = checked ? min(capacity - count, 1 << 30) : min(capacity - count, 1 << 16)
                let got = read(descriptor, base + count, wanted)
                if got < 0 {
                    if errno == EINTR { continue }
                    throw error("read", path)
                }
                count += got
                if !checked, got < wanted || count >= 1 << 16 {
                    checked = true
                    try check(UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: count))
                }
                if got == 0 { break }
            }
        } catch {
            FileBuffer.deallocate(base, capacity)
            throw error
        }
        let size = capacity
        return Data(bytesNoCopy: base, count: count, deallocator: .custom { pointer, _ in FileBuffer.deallocate(pointer, size) })
    }

    /// Memory for a file's bytes.
    ///
    /// Why not `malloc`: a large file read into fresh memory faults in every page of it; on
    /// Linux, memory mapped on its own with `MADV_HUGEPAGE` takes 2 MiB pages, one fault each
    /// instead of 512.
    private enum FileBuffer {
        static let hugePage = 2 << 20

        static func allocate(_ capacity: Int, path: String) throws -> UnsafeMutableRawPointer {
            #if os(Linux)
                if capacity >= 2 * hugePage {
                    let size = rounded(capacity)
                    guard let base = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
                        base != MAP_FAILED
                    else { throw error("mmap", path) }
                    _ = madvise(base, size, MADV_HUGEPAGE)  // best effort: plain pages otherwise
                    return base
                }
            #endif
            return UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        }

        static func deallocate(_ base: UnsafeMutableRawPointer, _ capacity: Int) {
            #if os(Linux)
                if capacity >= 2 * hugePage {
                    _ = munmap(base, rounded(capacity))
                    return
                }
            #endif
            base.deallocate()
        }

        private static func rounded(_ capacity: Int) -> Int { (capacity + hugePage - 1) / hugePage * hugePage }
    }

    static func sync(_ descriptor: Int32, path: String) throws {
        while fsync(descriptor) != 0 {
            if errno != EINTR { throw error("fsync", path) }
        }
    }

    static func closeDescriptor(_ descriptor: Int32) {
        _ = close(descriptor)
    }

    static func renameItem(_ from: String, _ to: String) throws {
        guard rename(from, to) == 0 else { throw error("rename", to) }
    }

    static func unlinkItem(_ path: String) {
        _ = unlink(path)
    }

    /// Flushes a directory entry change (the rename) to disk.
    ///
    /// A file system that cannot open or sync a directory (`EINVAL`, `ENOTSUP`, `EACCES` on
    /// open) offers no stronger guarantee to wait for, so that is not an error; a failure of
    /// the sync itself (`EIO`) is: the rename may not survive a power loss.
    static func syncDirectory(_ path: String) throws {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        while fsync(descriptor) != 0 {
            switch errno {
            case EINTR: continue
            case EINVAL, ENOTSUP, EBADF: return
            default: throw error("fsync", path)
            }
        }
    }

    /// Whether a process with `pid` exists (it may belong to another user).
    static func processExists(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    static var processIdentifier: Int32 { getpid() }

    fileprivate static func error(_ call: String, _ path: String) -> PersistenceError {
        PersistenceError(errorNumber: errno, operation: call, path: path)
    }
}
