import Foundation

/// Counts the models a long write has written, reports them to a `Progress` and stops the write
/// with `CancellationError` when its task, or the `Progress`, is cancelled: checked every 4,096
/// models, so that the check costs nothing next to the writing.
final class WriteProgress {
    let progress: Progress?
    private var count: Int64 = 0

    init(progress: Progress?) {
        self.progress = progress
    }

    func modelWritten() throws {
        count += 1
        guard count & 4095 == 0 else { return }
        progress?.completedUnitCount = count
        try checkCancellation(progress)
    }

    /// Reports the write complete.
    func finish() {
        progress?.completedUnitCount = progress?.totalUnitCount ?? count
    }
}

/// Throws `CancellationError` when the task or `progress` (a `Progress` a view may cancel) is
/// cancelled, and marks `progress` cancelled when the task is.
func checkCancellation(_ progress: Progress?) throws {
    if Task.isCancelled {
        if let progress, !progress.isCancelled { progress.cancel() }
        throw CancellationError()
    }
    if progress?.isCancelled == true { throw CancellationError() }
}
