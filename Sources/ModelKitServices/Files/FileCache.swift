import Foundation

/// Downloaded files kept on this device, up to a total size: the local copies an app shows again
/// and again without downloading them each time.
///
/// ```swift
/// let cache = try FileCache(directory: cachesURL.appendingPathComponent("files"), maximumBytes: 200 << 20)
/// let local = try await cache.url(for: photo, using: service)   // downloads it the first time
/// ```
///
/// A file is kept under its SHA-256 (two files with the same bytes share a copy) and the extension
/// of its name. **Eviction:** after each download, the least recently used files (by the
/// modification date the cache sets on each use) are removed until the total is at most
/// `maximumBytes`; the file just downloaded is never removed by its own download, so a file larger
/// than the limit is kept until the next download. Copies are checked (length and SHA-256) when
/// downloaded, not when used again.
public actor FileCache {
    /// The folder the copies are in (made if missing); nothing else should be put there.
    public nonisolated let directory: URL
    /// The most bytes the copies may take after a download.
    public nonisolated let maximumBytes: Int64

    /// - Throws: ``ServiceError`` ``ServiceError/Code/fileFailed`` when the folder cannot be made.
    public init(directory: URL, maximumBytes: Int64) throws(ServiceError) {
        self.directory = directory
        self.maximumBytes = max(0, maximumBytes)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw ServiceError(.fileFailed(expected: "a cache folder that can be made", found: "'\(directory.path)': \(error)"))
        }
    }

    /// The local copy of `file`: the cached one, or else downloaded through `service` (then
    /// the least recently used copies are evicted).
    ///
    /// - Throws: What ``KintoService/download(_:to:progress:)`` throws; nothing is cached then.
    /// - Complexity: O(1) file operations for a copy in the cache; otherwise the download, plus
    ///   O(*c* log *c*) in the copies for the eviction.
    public func url(for file: ServiceFile, using service: KintoService, progress: Progress? = nil) async throws(ServiceError)
        -> URL
    {
        let local = path(of: file)
        if let size = Self.size(of: local), size == file.size {
            touch(local)
            return local
        }
        try await service.download(file, to: local, progress: progress)
        touch(local)
        evict(keeping: local)
        return local
    }

    /// Whether a copy of `file` is in the cache.
    public func contains(_ file: ServiceFile) -> Bool {
        Self.size(of: path(of: file)) == file.size
    }

    /// The bytes the copies take.
    ///
    /// - Complexity: O(*c*) in the copies.
    public var totalBytes: Int64 { copies().reduce(0) { $0 + $1.size } }

    /// Removes the copy of `file`, if there is one.
    public func remove(_ file: ServiceFile) {
        try? FileManager.default.removeItem(at: path(of: file))
    }

    /// Removes every copy.
    public func removeAll() {
        for copy in copies() { try? FileManager.default.removeItem(at: copy.url) }
    }

    // MARK: Helpers

    /// Where the copy of `file` is kept: its SHA-256 and its name's extension (letters and
    /// digits only, so that a name never makes a path).
    nonisolated func path(of file: ServiceFile) -> URL {
        let hash = String(file.sha256.lowercased().filter { $0.isHexDigit }.prefix(64))
        let suffix = (file.name as NSString).pathExtension
        let safe = suffix.count <= 16 && !suffix.isEmpty && suffix.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
        return directory.appendingPathComponent(safe ? "\(hash).\(suffix)" : hash)
    }

    private static func size(of url: URL) -> Int64? {
        (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value
    }

    /// Marks `url` as just used.
    private func touch(_ url: URL) {
        try? FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: url.path)
    }

    /// The copies (files whose names do not begin with a dot: those are downloads under way),
    /// with their sizes and last uses.
    private func copies() -> [(url: URL, size: Int64, used: Date)] {
        let keys: [URLResourceKey] = [.fileSizeKey, .contentModificationDateKey, .isRegularFileKey]
        let urls =
            (try? FileManager.default.contentsOfDirectory(
                at: directory, includingPropertiesForKeys: keys, options: [.skipsHiddenFiles])) ?? []
        return urls.compactMap { url in
            guard let values = try? url.resourceValues(forKeys: Set(keys)), values.isRegularFile == true else { return nil }
            return (url, Int64(values.fileSize ?? 0), values.contentModificationDate ?? .distantPast)
        }
    }

    /// Removes the least recently used copies, other than `kept`, until the total fits.
    private func evict(keeping kept: URL) {
        var all = copies()
        var total = all.reduce(0) { $0 + $1.size }
        guard total > maximumBytes else { return }
        all.sort { $0.used != $1.used ? $0.used < $1.used : $0.url.path < $1.url.path }
        for copy in all where total > maximumBytes && copy.url.standardizedFileURL != kept.standardizedFileURL {
            guard (try? FileManager.default.removeItem(at: copy.url)) != nil else { continue }
            total -= copy.size
        }
    }
}
