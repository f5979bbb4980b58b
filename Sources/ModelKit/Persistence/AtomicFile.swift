import Foundation

/// Atomic, durable replacement of a file.
///
/// The new contents go to a temporary file in the target's directory (same file system, so the
/// rename cannot turn into a copy), which is flushed to disk with `fsync` and then renamed over
/// the target; the directory is synced so the rename itself survives a power loss. `rename` is
/// atomic: a reader, or a process killed at any moment, sees either the old file or the new one,
/// never a mix.
///
/// Temporary files are named `.<target>.modelkit-<pid>-<random>.tmp`. A writer that is killed
/// leaves its temporary file behind; the next write to the same target deletes those whose
/// process no longer exists.
enum AtomicFile {
    static func write(to url: URL, _ body: (OutputBuffer) throws -> Void) throws {
        let target = url.standardizedFileURL
        let directory = target.deletingLastPathComponent().path
        let name = target.lastPathComponent
        removeStaleTemporaries(in: directory, for: name)
        let temporary =
            directory + "/." + name + ".modelkit-\(Posix.processIdentifier)-\(UInt32.random(in: 0...UInt32.max)).tmp"
        let descriptor = try Posix.openExclusive(temporary)
        var open = true
        let buffer = OutputBuffer(descriptor: descriptor)
        do {
            try body(buffer)
            try buffer.finishWriting()
            try Posix.sync(descriptor)
            Posix.closeDescriptor(descriptor)
            open = false
            try Posix.renameItem(temporary, target.path)
        } catch {
            // A chunk may still be on its way to the descriptor: never close it under the write.
            buffer.abandonWriting()
            if open { Posix.closeDescriptor(descriptor) }
            Posix.unlinkItem(temporary)
            throw error
        }
        Posix.syncDirectory(directory)
    }

    /// The prefix of temporary files for `name`.
    static func temporaryPrefix(for name: String) -> String { "." + name + ".modelkit-" }

    /// Deletes temporary files for `name` left by writers that no longer run.
    static func removeStaleTemporaries(in directory: String, for name: String) {
        let prefix = temporaryPrefix(for: name)
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for entry in entries where entry.hasPrefix(prefix) && entry.hasSuffix(".tmp") {
            let rest = entry.dropFirst(prefix.count)
            guard let dash = rest.firstIndex(of: "-"), let pid = Int32(rest[..<dash]) else { continue }
            if pid != Posix.processIdentifier, !Posix.processExists(pid) {
                Posix.unlinkItem(directory + "/" + entry)
            }
        }
    }
}
