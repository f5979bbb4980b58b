import Foundation
import Synchronization

// Batches of files (the seed's MKitMutableFileArray): several transfers at once, each file's
// progress and the whole batch's told as updates, through an AsyncSequence or a Foundation
// Progress. One runner does both directions; the first failure cancels the transfers still
// running and is thrown.

/// Where one file of a batch of transfers is, and where the whole batch is.
///
/// ```swift
/// for try await update in service.uploading(files) {
///     print(update.file.name, update.fractionCompleted, update.batchFractionCompleted)
/// }
/// ```
public struct FileTransferUpdate: Sendable, Hashable {
    /// The file this update is about.
    public let file: ServiceFile
    /// Its position in the batch.
    public let index: Int
    /// Its bytes sent or received so far.
    public let completedBytes: Int64
    /// Whether its transfer has ended (uploaded, or downloaded, checked and in place).
    public let isFinished: Bool
    /// The bytes of the whole batch sent or received so far.
    public let batchCompletedBytes: Int64
    /// The bytes of the whole batch: the sum of its files' sizes.
    public let batchTotalBytes: Int64
    /// How many files of the batch have finished.
    public let finishedFiles: Int
    /// How many files the batch has.
    public let totalFiles: Int

    /// The file's part done, from 0 to 1 (1 for an empty file once finished).
    public var fractionCompleted: Double {
        file.size == 0 ? (isFinished ? 1 : 0) : Double(completedBytes) / Double(file.size)
    }

    /// The batch's part done, from 0 to 1, by bytes (by files when it has no bytes).
    public var batchFractionCompleted: Double {
        if batchTotalBytes == 0 { return totalFiles == 0 ? 1 : Double(finishedFiles) / Double(totalFiles) }
        return Double(batchCompletedBytes) / Double(batchTotalBytes)
    }
}

/// Runs a batch: its state, and the updates it tells.
final class FileBatch: Sendable {
    private struct State {
        var completed: [Int64]
        /// What each file last told (an update goes out when a file has moved enough since).
        var told: [Int64]
        var batchCompleted: Int64 = 0
        var finished = 0
    }

    let files: [ServiceFile]
    let batchTotal: Int64
    private let state: Mutex<State>
    private let onUpdate: @Sendable (FileTransferUpdate) -> Void

    init(files: [ServiceFile], onUpdate: @escaping @Sendable (FileTransferUpdate) -> Void) {
        self.files = files
        // Saturating: sizes come from records, which a server could make as large as it likes.
        batchTotal = files.reduce(0) { total, file in total > Int64.max - file.size ? Int64.max : total + file.size }
        state = Mutex(State(completed: Array(repeating: 0, count: files.count), told: Array(repeating: -1, count: files.count)))
        self.onUpdate = onUpdate
    }

    /// Notes that file `index` is at `completed` bytes (or finished), and tells an update when
    /// it moved by a hundredth of its size (at least 64 KiB) since the last, or finished: so a
    /// batch tells at most about a hundred updates per file, however small its pieces.
    ///
    /// Updates go out under the lock, so that they arrive in the order their counts were taken
    /// (a stream's `yield` does not wait). A file whose transfer starts again (a retry) keeps
    /// the count it had reached: counts only grow.
    func note(_ index: Int, completed: Int64, finished: Bool = false) {
        state.withLock { state in
            let size = files[index].size
            let completed = max(min(max(completed, 0), size), state.completed[index])
            state.batchCompleted += completed - state.completed[index]
            state.completed[index] = completed
            if finished { state.finished += 1 }
            let step = max(size / 100, 64 << 10)
            guard finished || state.told[index] < 0 || completed - state.told[index] >= step else { return }
            state.told[index] = completed
            onUpdate(
                FileTransferUpdate(
                    file: files[index], index: index, completedBytes: completed, isFinished: finished,
                    batchCompletedBytes: state.batchCompleted, batchTotalBytes: batchTotal,
                    finishedFiles: state.finished, totalFiles: files.count))
        }
    }

    /// Runs `transfer` for each file, at most `width` at once, in order of index; the first
    /// failure cancels the others and is thrown (a cancellation of the caller's task, as
    /// ``ServiceError/Code/cancelled``).
    func run(
        width: Int, _ transfer: @escaping @Sendable (Int, @escaping KintoService.ByteReport) async throws(ServiceError) -> Void
    ) async throws(ServiceError) {
        let width = max(1, width)
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                var next = 0
                func start() {
                    let index = next
                    next += 1
                    group.addTask {
                        self.note(index, completed: 0)
                        try await transfer(index) { completed, _ in self.note(index, completed: completed) }
                        self.note(index, completed: self.files[index].size, finished: true)
                    }
                }
                while next < min(width, files.count) { start() }
                while try await group.next() != nil {
                    if next < files.count { start() }
                }
            }
        } catch let error as ServiceError {
            throw error
        } catch {
            throw ServiceError(.cancelled("a batch of \(files.count) files"))
        }
    }
}

extension KintoService {
    /// How many files a batch transfers at once by default.
    public static let defaultConcurrentTransfers = 4

    /// Uploads `files` that wait for their upload (see ``makeFile(contentsOf:name:contentType:)``;
    /// the others are done at once), several at a time, and tells each file's progress and the
    /// batch's as it goes. A file listed twice is uploaded once (and counted once).
    ///
    /// ```swift
    /// let files = try photos.map { try service.makeFile(contentsOf: $0, contentType: "image/jpeg") }
    /// for try await update in service.uploading(files) {
    ///     print("\(update.file.name): \(update.fractionCompleted), all: \(update.batchFractionCompleted)")
    /// }
    /// ```
    ///
    /// The transfers start at once. Ending the iteration early (a `break`, or a cancelled task)
    /// cancels those still running; files already uploaded stay so, the others stay pending.
    /// Each file tells an update when it starts, about every hundredth of its size (at least
    /// 64 KiB), and when it is done.
    ///
    /// - Parameter maximumConcurrentTransfers: How many uploads run at once.
    /// - Returns: The updates; the sequence ends after the last file, or throws the first
    ///   failure (a ``ServiceError``, as ``upload(_:progress:)`` throws), which cancels the rest.
    /// - Complexity: O(*n*) in the files' lengths, plus a request per pending file.
    public func uploading(_ files: [ServiceFile], maximumConcurrentTransfers: Int = defaultConcurrentTransfers)
        -> AsyncThrowingStream<FileTransferUpdate, any Error>
    {
        let files = Self.once(files)
        return stream(files, width: maximumConcurrentTransfers) { _ in
        } transfer: { service, index, report throws(ServiceError) in
            try await service.upload(files[index], report: report)
        }
    }

    /// Downloads each file of `files` to its destination, several at a time, and tells each
    /// file's progress and the batch's as it goes.
    ///
    /// ```swift
    /// let pairs = report.attachments.map { (file: $0, destination: folder.appendingPathComponent($0.name)) }
    /// for try await update in service.downloading(pairs) where update.isFinished {
    ///     print("\(update.file.name) is here")
    /// }
    /// ```
    ///
    /// Each download is ``download(_:to:progress:)``: checked, and put in place only whole. The
    /// transfers start at once; ending the iteration early cancels those still running (each
    /// leaves its destination as it was).
    ///
    /// - Parameter maximumConcurrentTransfers: How many downloads run at once.
    /// - Returns: The updates; the sequence ends after the last file, or throws the first
    ///   failure (a ``ServiceError``, as ``download(_:to:progress:)`` throws), which cancels
    ///   the rest.
    /// - Complexity: O(*n*) in the files' lengths, plus a request per file and one per 100 files
    ///   whose location the service does not know yet.
    public func downloading(
        _ files: [(file: ServiceFile, destination: URL)], maximumConcurrentTransfers: Int = defaultConcurrentTransfers
    ) -> AsyncThrowingStream<FileTransferUpdate, any Error> {
        stream(files.map(\.file), width: maximumConcurrentTransfers) { service throws(ServiceError) in
            // Best effort: a user who may read the files' records but not list them, say, still
            // downloads them, each asking alone.
            try? await service.learnLocations(of: files.map(\.file))
        } transfer: { service, index, report throws(ServiceError) in
            try await service.download(files[index].file, to: files[index].destination, report: report)
        }
    }

    /// ``uploading(_:maximumConcurrentTransfers:)`` with a Foundation `Progress` for the
    /// batch: its unit count is bytes, and its user info's `fileTotalCountKey` and
    /// `fileCompletedCountKey` count files.
    ///
    /// ```swift
    /// let progress = Progress(totalUnitCount: 0)
    /// try await service.upload(files, progress: progress)
    /// ```
    ///
    /// - Throws: The first failure, as ``uploading(_:maximumConcurrentTransfers:)`` throws it.
    /// - Complexity: As ``uploading(_:maximumConcurrentTransfers:)``.
    public func upload(
        _ files: [ServiceFile], maximumConcurrentTransfers: Int = defaultConcurrentTransfers, progress: Progress? = nil
    ) async throws(ServiceError) {
        let files = Self.once(files)
        let batch = FileBatch(files: files, onUpdate: Self.updating(progress))
        Self.start(progress, batch)
        try await batch.run(width: maximumConcurrentTransfers) { index, report throws(ServiceError) in
            try await self.upload(files[index], report: report)
        }
    }

    /// ``downloading(_:maximumConcurrentTransfers:)`` with a Foundation `Progress` for the
    /// batch: its unit count is bytes, and its user info's `fileTotalCountKey` and
    /// `fileCompletedCountKey` count files.
    ///
    /// ```swift
    /// try await service.download([(file: pdf, destination: pdfURL), (file: photo, destination: photoURL)])
    /// ```
    ///
    /// - Throws: The first failure, as ``downloading(_:maximumConcurrentTransfers:)`` throws it.
    /// - Complexity: As ``downloading(_:maximumConcurrentTransfers:)``.
    public func download(
        _ files: [(file: ServiceFile, destination: URL)], maximumConcurrentTransfers: Int = defaultConcurrentTransfers,
        progress: Progress? = nil
    ) async throws(ServiceError) {
        let batch = FileBatch(files: files.map(\.file), onUpdate: Self.updating(progress))
        Self.start(progress, batch)
        try? await learnLocations(of: batch.files)
        try await batch.run(width: maximumConcurrentTransfers) { index, report throws(ServiceError) in
            try await self.download(files[index].file, to: files[index].destination, report: report)
        }
    }

    /// `files` with each id once, in order: two uploads of one pending file at once would each
    /// remove the copy the other reads.
    private static func once(_ files: [ServiceFile]) -> [ServiceFile] {
        var seen = Set<String>()
        return files.filter { seen.insert($0.id).inserted }
    }

    private static func start(_ progress: Progress?, _ batch: FileBatch) {
        guard let progress else { return }
        progress.totalUnitCount = batch.batchTotal
        progress.completedUnitCount = 0
        // Foundation's file counts (`fileTotalCount` on Apple platforms), in its user info keys.
        progress.setUserInfoObject(batch.files.count, forKey: .fileTotalCountKey)
        progress.setUserInfoObject(0, forKey: .fileCompletedCountKey)
    }

    private static func updating(_ progress: Progress?) -> @Sendable (FileTransferUpdate) -> Void {
        guard let progress else { return { _ in } }
        return { update in
            progress.completedUnitCount = update.batchCompletedBytes
            progress.setUserInfoObject(update.finishedFiles, forKey: .fileCompletedCountKey)
        }
    }

    /// The updates of a batch that runs `prepare` (once) and then `transfer` for each file.
    private func stream(
        _ files: [ServiceFile], width: Int,
        prepare: @escaping @Sendable (KintoService) async throws(ServiceError) -> Void,
        transfer: @escaping @Sendable (KintoService, Int, @escaping ByteReport) async throws(ServiceError) -> Void
    ) -> AsyncThrowingStream<FileTransferUpdate, any Error> {
        let (stream, continuation) = AsyncThrowingStream<FileTransferUpdate, any Error>.makeStream()
        let batch = FileBatch(files: files) { continuation.yield($0) }
        let task = Task {
            do throws(ServiceError) {
                try await prepare(self)
                try await batch.run(width: width) { index, report throws(ServiceError) in
                    try await transfer(self, index, report)
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
