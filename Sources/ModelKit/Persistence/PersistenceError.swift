#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#elseif canImport(Android)
    import Android
#endif

/// An error from reading or writing a file: says which file, what was being done, and what the
/// system reported.
///
/// ```swift
/// do {
///     try context.write(to: url)
/// } catch let error as PersistenceError where error.code == .outOfSpace {
///     print(error.errorNumber ?? 0)              // 28 (ENOSPC); the previous file at `url` is intact
/// } catch PersistenceError.Code.permissionDenied {
///     // `~=` matches an error against a code
/// }
/// ```
///
/// Its ``description`` reads like
/// `/Users/me/graph.json: write failed: expected room on the file system but found none (errno 28, No space left on device). [outOfSpace]`.
public struct PersistenceError: Error, CustomStringConvertible, Sendable {
    /// What went wrong.
    public let code: Code
    /// The path of the file (or the URL, for ``Code/notAFileURL``) the operation was on.
    public let path: String
    /// The operation that failed, such as `open`, `read`, `write`, `fsync` or `rename`.
    public let operation: String
    /// The `errno` the system call set, when one failed.
    public let errorNumber: Int32?
    /// What the operation needed.
    public let expected: String
    /// What it found instead.
    public let found: String
    /// The byte offset in the file where the damage is, for ``Code/damagedJournal``.
    public let offset: Int?

    init(
        _ code: Code, path: String, operation: String, errorNumber: Int32? = nil, expected: String, found: String,
        offset: Int? = nil
    ) {
        self.code = code
        self.path = path
        self.operation = operation
        self.errorNumber = errorNumber
        self.expected = expected
        self.found = found
        self.offset = offset
    }

    /// The error of a failed system call, from its `errno`.
    init(errorNumber: Int32, operation: String, path: String) {
        let reported = "errno \(errorNumber), \(String(cString: strerror(errorNumber)))"
        let (code, expected, found): (Code, String, String) =
            switch errorNumber {
            case ENOSPC, EDQUOT: (.outOfSpace, "room on the file system", "none (\(reported))")
            case EACCES, EPERM: (.permissionDenied, "permission", "none (\(reported))")
            case EROFS: (.readOnlyFileSystem, "a writable file system", "a read-only one (\(reported))")
            case ENOENT, ENOTDIR: (.fileNotFound, "an existing file or directory", "nothing (\(reported))")
            default: (.systemFailure, "success", reported)
            }
        self.init(code, path: path, operation: operation, errorNumber: errorNumber, expected: expected, found: found)
    }

    /// The error with `path` filled in, for errors from calls that know only a descriptor.
    func at(path: String) -> PersistenceError {
        guard self.path.isEmpty else { return self }
        return PersistenceError(
            code, path: path, operation: operation, errorNumber: errorNumber, expected: expected, found: found,
            offset: offset)
    }

    public var description: String {
        let place = path.isEmpty ? "" : offset.map { "\(path) at byte \($0): " } ?? "\(path): "
        return "\(place)\(operation) failed: expected \(expected) but found \(found). [\(code)]"
    }

    /// The kinds of file errors. Compare with `==`, or match an `Error` against one with `~=`
    /// (in `catch` clauses and `switch`).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The file system, or the user's quota on it, is full (`ENOSPC`, `EDQUOT`).
        public static let outOfSpace = Code("outOfSpace")
        /// The process may not read or write the file or its directory (`EACCES`, `EPERM`).
        public static let permissionDenied = Code("permissionDenied")
        /// The file system is mounted read-only (`EROFS`).
        public static let readOnlyFileSystem = Code("readOnlyFileSystem")
        /// The file, or a directory on its path, does not exist (`ENOENT`, `ENOTDIR`).
        public static let fileNotFound = Code("fileNotFound")
        /// The path names a directory, a device, a named pipe or a socket: ModelKit reads and
        /// replaces regular files only.
        public static let notARegularFile = Code("notARegularFile")
        /// The URL is not a `file:` URL (ModelKit reads and writes local files only).
        public static let notAFileURL = Code("notAFileURL")
        /// Another ``ModelStore`` (in this process or another) has the store open for writing:
        /// a store has one writer at a time. Readers of the base file alone are not affected.
        public static let storeLocked = Code("storeLocked")
        /// A store's journal has a damaged record before its last one, or is not a journal;
        /// ``PersistenceError/offset`` says where. Open with
        /// ``ModelStore/Options/Recovery/savesBeforeDamage`` to keep every save before it.
        public static let damagedJournal = Code("damagedJournal")
        /// The ``ModelStore`` was closed: it saves no more.
        public static let storeClosed = Code("storeClosed")
        /// Any other failure of a system call; ``PersistenceError/errorNumber`` says which.
        public static let systemFailure = Code("systemFailure")
    }
}

extension PersistenceError.Code {
    /// Whether `error` is a ``PersistenceError`` with this code.
    public static func ~= (code: PersistenceError.Code, error: any Error) -> Bool {
        (error as? PersistenceError)?.code == code
    }
}
