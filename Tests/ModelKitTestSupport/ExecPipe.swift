import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

#if os(Linux)
    /// glibc's `pipe2`, which the Glibc module leaves out (it is declared for `_GNU_SOURCE` only).
    @_silgen_name("pipe2")
    private func systemPipe2(_ descriptors: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32
#endif

/// A pipe for a child's output whose two ends are closed on exec from the moment they exist.
///
/// Foundation's `Pipe` makes descriptors that every process started meanwhile inherits: a fault
/// proxy started by one test while another read a compiler's output held that pipe's writing end
/// open, so the read never saw its end, and with it blocking one of the two cooperative threads
/// the whole test run stopped. `pipe2(O_CLOEXEC)` makes both ends at once, closed on exec; the
/// child still gets the writing end as its output (the `dup2` of `Process` clears the flag on
/// the copy).
///
/// ```swift
/// let pipe = try ExecPipe()
/// process.standardOutput = pipe.writing
/// try process.run()
/// pipe.closeWriting()              // the end of the child's output is then seen
/// let data = pipe.reading.readDataToEndOfFile()
/// ```
public final class ExecPipe: Sendable {
    /// The end this process reads.
    public let reading: FileHandle
    /// The end the child writes; close it here once the child has started (``closeWriting()``).
    public let writing: FileHandle

    /// - Throws: `POSIXError` when the system has no descriptors left.
    public init() throws {
        var descriptors: [Int32] = [-1, -1]
        #if os(Linux)
            guard systemPipe2(&descriptors, O_CLOEXEC) == 0 else {
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
        #else
            // No pipe2: the flags are set just after, a window the Linux build does not have.
            guard pipe(&descriptors) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            for descriptor in descriptors { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        #endif
        reading = FileHandle(fileDescriptor: descriptors[0], closeOnDealloc: true)
        writing = FileHandle(fileDescriptor: descriptors[1], closeOnDealloc: true)
    }

    /// Closes this process's copy of the writing end, so that a read sees the end of the output
    /// when the child (the only writer left) exits.
    public func closeWriting() {
        try? writing.close()
    }
}
