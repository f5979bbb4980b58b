import Foundation
import ModelKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A ``CredentialStore`` of files that only their owner can read: one file per key, mode `0600`,
/// in a directory of mode `0700`, whatever the process's umask.
///
/// A save writes a new file and renames it over the old one (after `fsync`), so a crash leaves
/// the old credentials or the new ones, never a mix. A load refuses, with
/// ``ServiceError/Code/insecureCredentialStore``, a file or directory that belongs to another
/// user, a file that group or others may read or write (someone changed its mode: its password
/// may have leaked), and a symbolic link in place of the file.
///
/// On Apple platforms prefer the Keychain (Docs/Services.md, "Users", shows a store for it).
///
/// ```swift
/// let store = FileCredentialStore(directory: URL(fileURLWithPath: "/home/bob/.local/share/MyApp/credentials"))
/// let service = try KintoService(url: url, credentialStore: store)
/// ```
public struct FileCredentialStore: CredentialStore {
    /// The directory the files are in.
    public let directory: URL

    /// The largest file a load reads: credentials are a few hundred bytes.
    private static let maximumFileSize = 64 * 1024

    /// A store in `directory`, which a save creates (with its parents) when it is missing.
    public init(directory: URL) {
        self.directory = directory
    }

    /// The store in the user's data folder: `$XDG_DATA_HOME/ModelKitServices/credentials`
    /// (by default `~/.local/share/…`) on Linux, Application Support on Apple platforms.
    public static var standard: FileCredentialStore {
        #if os(Linux) || os(Android) || os(FreeBSD) || os(OpenBSD)
            let environment = ProcessInfo.processInfo.environment
            let base: URL
            if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
                base = URL(fileURLWithPath: data, isDirectory: true)
            } else {
                base = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share", isDirectory: true)
            }
        #else
            let base =
                FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
                ?? FileManager.default.homeDirectoryForCurrentUser
        #endif
        return FileCredentialStore(directory: base.appendingPathComponent("ModelKitServices/credentials", isDirectory: true))
    }

    /// The file that holds `key`'s credentials: a readable part of the key and a hash of all of
    /// it (the key is a URL, which may hold `/` and be longer than a file name may be).
    public func fileURL(key: String) -> URL {
        var readable = ""
        for scalar in key.unicodeScalars where readable.count < 48 {
            if scalar.isASCII, CharacterSet.alphanumerics.contains(scalar) { readable.unicodeScalars.append(scalar) }
        }
        // FNV-1a, 64 bits: the key is also inside the file, so a collision reads as no credentials.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        let name = readable + "-" + String(repeating: "0", count: 16 - hex.count) + hex + ".json"
        return directory.appendingPathComponent(name, isDirectory: false)
    }

    // MARK: Loading

    /// - Complexity: O(size of the file), at most 64 KiB.
    public func load(key: String) throws(ServiceError) -> Credentials? {
        let path = fileURL(key: key).path
        guard try checkDirectoryForLoading() else { return nil }
        // The path first, so that a file open to others is called insecure even when its owner
        // cannot read it; then the file opened, in case it was swapped in between.
        var named = stat()
        if lstat(path, &named) != 0 {
            let code = errno
            if code == ENOENT { return nil }
            throw Self.failure("lstat \(path)", code)
        }
        try Self.checkOwnerOnly(named, isDirectory: false, path: path)
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 {
            let code = errno
            if code == ENOENT { return nil }
            if code == ELOOP {
                throw ServiceError(.insecureCredentialStore(expected: "a regular file", found: "a symbolic link at \(path)"))
            }
            throw Self.failure("open \(path)", code)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Self.failure("fstat \(path)", errno) }
        try Self.checkOwnerOnly(info, isDirectory: false, path: path)
        guard Int(info.st_size) <= Self.maximumFileSize else {
            throw ServiceError(
                .credentialStoreFailed(
                    expected: "a file of at most \(Self.maximumFileSize) bytes", found: "\(info.st_size) bytes in \(path)"))
        }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while data.count <= Self.maximumFileSize {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Self.failure("read \(path)", errno)
            }
            if count == 0 { break }
            data.append(contentsOf: buffer[..<count])
        }
        return try Self.decode(data, key: key, path: path)
    }

    private static func decode(_ data: Data, key: String, path: String) throws(ServiceError) -> Credentials? {
        let value: ModelValue
        do {
            value = try ModelValue(json: data)
        } catch {
            throw ServiceError(.credentialStoreFailed(expected: "JSON", found: "\(error) in \(path)"))
        }
        guard let storedKey = value["key"]?.stringValue, let username = value["username"]?.stringValue,
            let password = value["password"]?.stringValue
        else {
            throw ServiceError(
                .credentialStoreFailed(expected: "strings 'key', 'username' and 'password'", found: "other fields in \(path)"))
        }
        // Another key with the same file name (a hash collision) is not this key's credentials.
        guard storedKey == key else { return nil }
        return Credentials(username: username, password: password)
    }

    /// Whether the directory exists; it must be the user's own and closed to others.
    private func checkDirectoryForLoading() throws(ServiceError) -> Bool {
        var info = stat()
        guard stat(directory.path, &info) == 0 else {
            let code = errno
            if code == ENOENT { return false }
            throw Self.failure("stat \(directory.path)", code)
        }
        try Self.checkOwnerOnly(info, isDirectory: true, path: directory.path)
        return true
    }

    /// Refuses what another user owns, or what group or others may use.
    private static func checkOwnerOnly(_ info: stat, isDirectory: Bool, path: String) throws(ServiceError) {
        let kind = info.st_mode & S_IFMT
        if kind == S_IFLNK {
            throw ServiceError(.insecureCredentialStore(expected: "a regular file", found: "a symbolic link at \(path)"))
        }
        guard kind == (isDirectory ? S_IFDIR : S_IFREG) else {
            throw ServiceError(
                .insecureCredentialStore(
                    expected: isDirectory ? "a directory" : "a regular file", found: "something else at \(path)"))
        }
        guard info.st_uid == getuid() else {
            throw ServiceError(
                .insecureCredentialStore(expected: "owner uid \(getuid())", found: "owner uid \(info.st_uid) of \(path)"))
        }
        let mode = info.st_mode & 0o7777
        guard mode & 0o077 == 0 else {
            throw ServiceError(
                .insecureCredentialStore(
                    expected: "no permissions for group and others", found: "mode \(String(mode, radix: 8)) of \(path)"))
        }
    }

    // MARK: Saving

    /// - Complexity: O(1): one small file written, synced and renamed.
    public func save(_ credentials: Credentials, key: String) throws(ServiceError) {
        try prepareDirectory()
        let target = fileURL(key: key)
        let temporary = directory.appendingPathComponent(".\(target.lastPathComponent).\(UUID().uuidString).tmp")
        let object: ModelValue = [
            "key": .string(key), "username": .string(credentials.username), "password": .string(credentials.password),
        ]
        let bytes = [UInt8](object.jsonData())
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.failure("create \(temporary.path)", errno) }
        do throws(ServiceError) {
            // The umask may have taken bits away from 0600; fchmod sets exactly these.
            guard fchmod(fd, 0o600) == 0 else { throw Self.failure("fchmod \(temporary.path)", errno) }
            var written = 0
            while written < bytes.count {
                let count = bytes[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                if count < 0 {
                    if errno == EINTR { continue }
                    throw Self.failure("write \(temporary.path)", errno)
                }
                written += count
            }
            guard fsync(fd) == 0 else { throw Self.failure("fsync \(temporary.path)", errno) }
            guard close(fd) == 0 else {
                throw Self.failure("close \(temporary.path)", errno)
            }
        } catch {
            close(fd)
            unlink(temporary.path)
            throw error
        }
        guard rename(temporary.path, target.path) == 0 else {
            let code = errno
            unlink(temporary.path)
            throw Self.failure("rename to \(target.path)", code)
        }
        syncDirectory()
    }

    /// Creates the directory (mode 0700) when missing, and closes it to others when it is ours.
    private func prepareDirectory() throws(ServiceError) {
        let path = directory.path
        let parent = directory.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        } catch {
            throw ServiceError(.credentialStoreFailed(expected: "a folder for the credentials", found: "\(error)"))
        }
        if mkdir(path, 0o700) != 0, errno != EEXIST { throw Self.failure("mkdir \(path)", errno) }
        var info = stat()
        guard stat(path, &info) == 0 else { throw Self.failure("stat \(path)", errno) }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw ServiceError(.insecureCredentialStore(expected: "a directory", found: "something else at \(path)"))
        }
        guard info.st_uid == getuid() else {
            throw ServiceError(
                .insecureCredentialStore(expected: "owner uid \(getuid())", found: "owner uid \(info.st_uid) of \(path)"))
        }
        // mkdir's mode passes through the umask too; and a folder made by hand may be open.
        if info.st_mode & 0o7777 != 0o700, chmod(path, 0o700) != 0 { throw Self.failure("chmod \(path)", errno) }
    }

    /// Makes a rename or an unlink durable; a failure here loses nothing the call promised.
    private func syncDirectory() {
        let fd = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    // MARK: Removing

    /// - Complexity: O(1).
    public func remove(key: String) throws(ServiceError) {
        let path = fileURL(key: key).path
        if unlink(path) != 0 {
            let code = errno
            if code == ENOENT { return }
            throw Self.failure("unlink \(path)", code)
        }
        syncDirectory()
    }

    private static func failure(_ operation: String, _ code: Int32) -> ServiceError {
        ServiceError(.credentialStoreFailed(expected: "\(operation) to succeed", found: String(cString: strerror(code))))
    }
}
