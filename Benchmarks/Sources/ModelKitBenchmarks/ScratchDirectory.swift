import Foundation

/// The temporary directory of the files that the write and load benchmarks write and read,
/// removed when the suite ends.
///
/// A load benchmark reads the file that the write benchmark of the same size and subject left
/// behind, when there is one, so each graph is written to disk once per size. Only the current
/// size's files are kept.
final class ScratchDirectory: Sendable {
    static let shared = ScratchDirectory()

    let url: URL

    private init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ModelKitBenchmarks-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)", isDirectory: true)
    }

    /// The file `name` at size `n`, after deleting the files of other sizes.
    func file(_ name: String, n: Int) throws -> URL {
        let manager = FileManager.default
        try manager.createDirectory(at: url, withIntermediateDirectories: true)
        let prefix = "\(n)-"
        for other in try manager.contentsOfDirectory(atPath: url.path) where !other.hasPrefix(prefix) {
            try manager.removeItem(at: url.appendingPathComponent(other))
        }
        return url.appendingPathComponent(prefix + name)
    }

    /// Deletes the directory and every file in it.
    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}

/// The size of the file at `url` in bytes (0 when it does not exist).
func fileSize(_ url: URL) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.intValue ?? 0
}
