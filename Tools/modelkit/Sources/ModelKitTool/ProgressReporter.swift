import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Progress of a long read on standard error, only when standard error is a terminal: a line
/// rewritten in place (`\r`) at each whole percent, erased when the work ends. Pipes and files
/// never see it, so scripts that capture standard error read only messages.
public final class ProgressReporter {
    private let label: String
    private let total: Int
    private var shown = -1

    /// A reporter for `total` bytes, or `nil` when standard error is not a terminal (or `total`
    /// is 0).
    public static func forStandardError(label: String, total: Int) -> ProgressReporter? {
        guard isatty(STDERR_FILENO) == 1, total > 0 else { return nil }
        return ProgressReporter(label: label, total: total)
    }

    init(label: String, total: Int) {
        self.label = label
        self.total = total
        update(bytes: 0)
    }

    /// Shows `bytes` of the total, when the whole percent changed.
    public func update(bytes: Int) {
        let percent = min(100, bytes * 100 / total)
        guard percent != shown else { return }
        shown = percent
        let megabytes = Double(min(bytes, total)) / 1_048_576
        write(String(format: "\r%@ %3d%% (%.1f of %.1f MB)", label, percent, megabytes, Double(total) / 1_048_576))
    }

    /// Erases the line.
    public func finish() {
        write("\r\u{1B}[K")
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}
