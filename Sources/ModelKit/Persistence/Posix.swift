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

// The few system calls atomic writes need, in one place so the platform imports stay here.
enum Posix {
    /// Writes all of `count` bytes at `base` to `descriptor`, retrying short writes and EINTR.
    static func writeAll(_ descriptor: Int32, _ base: UnsafeRawPointer, _ count: Int) throws {
        var done = 0
        while done < count {
            let written = write(descriptor, base + done, count - done)
            if written < 0 {
                if errno == EINTR { continue }
                throw error("write")
            }
            done += written
        }
    }

    static func openExclusive(_ path: String) throws -> Int32 {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw error("open") }
        return descriptor
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

    static func sync(_ descriptor: Int32) throws {
        while fsync(descriptor) != 0 {
            if errno != EINTR { throw error("fsync") }
        }
    }

    static func closeDescriptor(_ descriptor: Int32) {
        _ = close(descriptor)
    }

    static func renameItem(_ from: String, _ to: String) throws {
        guard rename(from, to) == 0 else { throw error("rename") }
    }

    static func unlinkItem(_ path: String) {
        _ = unlink(path)
    }

    /// Flushes a directory entry change (the rename) to disk. Best effort: not every file system
    /// lets a directory be opened or synced, and the data itself is already durable by then.
    static func syncDirectory(_ path: String) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        _ = close(descriptor)
    }

    /// Whether a process with `pid` exists (it may belong to another user).
    static func processExists(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    static var processIdentifier: Int32 { getpid() }

    private static func error(_ call: String) -> CocoaError {
        let code = errno
        let message = String(cString: strerror(code))
        return CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "\(call) failed: \(message) (errno \(code))"])
    }
}
