import Foundation
import ModelKit
import ModelKitTestSupport
import Synchronization
import Testing

@testable import ModelKitServices

/// Batches of files (issue #35, the seed's MKitMutableFileArray): several transfers at once, each
/// file's progress and the batch's, as an AsyncSequence and as a Foundation Progress.
@Suite("Batches of files on a real Kinto server", .enabled(if: serviceTestsEnabled, serviceTestsSkipped), .hangBackstop)
struct FileBatchTests {
    /// Files of these sizes made on this device (pending), with their bytes.
    static func pendingFiles(_ sizes: [Int], service: KintoService, folder: URL) throws -> [(ServiceFile, Data)] {
        service.pendingFilesFolder = folder.appendingPathComponent("pending")
        return try sizes.enumerated().map { index, size in
            let data = FilesTests.bytes(size, seed: UInt64(100 + index))
            return (try service.makeFile(data, name: "file\(index).bin"), data)
        }
    }

    @Test("A batch uploads with updates per file that only grow and end once each, and a batch total that ends at the sum")
    func uploadUpdates() async throws {
        let service = try await FilesTests.service()
        let folder = try FilesTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let sizes = [0, 1, 70_000, 300_000, 1_500_000, 5, 65_536, 200_000, 12, 900_000]
        let made = try Self.pendingFiles(sizes, service: service, folder: folder)
        let files = made.map(\.0)

        var updates: [FileTransferUpdate] = []
        for try await update in service.uploading(files, maximumConcurrentTransfers: 3) { updates.append(update) }

        let total = Int64(sizes.reduce(0, +))
        for (index, file) in files.enumerated() {
            let own = updates.filter { $0.index == index }
            #expect(own.allSatisfy { $0.file == file })
            #expect(own.filter(\.isFinished).count == 1, "file \(index) finishes once")
            #expect(own.last?.isFinished == true && own.last?.completedBytes == file.size)
            #expect(zip(own, own.dropFirst()).allSatisfy { $0.completedBytes <= $1.completedBytes })
            // Told about a hundred times at most, however many pieces the body went in.
            #expect(own.count <= 102, "\(own.count) updates")
            #expect(!service.isPending(file))
        }
        #expect(updates.allSatisfy { $0.batchTotalBytes == total && $0.totalFiles == files.count })
        // In the order their counts were taken: the batch's counts only grow.
        #expect(zip(updates, updates.dropFirst()).allSatisfy { $0.finishedFiles <= $1.finishedFiles })
        #expect(zip(updates, updates.dropFirst()).allSatisfy { $0.batchCompletedBytes <= $1.batchCompletedBytes })
        let last = try #require(updates.last)
        #expect(last.batchCompletedBytes == total && last.finishedFiles == files.count && last.batchFractionCompleted == 1)

        // Back down with a Foundation Progress for the batch, through another service.
        let server = try await KintoServer.shared.value
        let reader = server.service(bucket: service.bucket)
        let progress = Progress(totalUnitCount: 0)
        let pairs = files.map { (file: $0, destination: folder.appendingPathComponent($0.name)) }
        try await reader.download(pairs, maximumConcurrentTransfers: 4, progress: progress)
        #expect(progress.totalUnitCount == total && progress.completedUnitCount == total)
        #expect(progress.userInfo[ProgressUserInfoKey.fileTotalCountKey] as? Int == files.count)
        #expect(progress.userInfo[ProgressUserInfoKey.fileCompletedCountKey] as? Int == files.count)
        for (file, data) in made {
            #expect(try Data(contentsOf: folder.appendingPathComponent(file.name)) == data, "\(file.name)")
        }
    }

    @Test("Downloads in a batch tell their progress as a sequence too, and an empty batch ends at once")
    func downloadUpdates() async throws {
        let service = try await FilesTests.service()
        let folder = try FilesTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let one = try await service.upload(FilesTests.bytes(2_000_000, seed: 7), name: "big.bin")
        let two = try await service.upload(Data("small".utf8), name: "small.txt")
        let pairs = [one, two].map { (file: $0, destination: folder.appendingPathComponent($0.name)) }
        var finished: [String] = []
        var fractions: [Double] = []
        for try await update in service.downloading(pairs) {
            if update.isFinished { finished.append(update.file.name) }
            if update.index == 0 { fractions.append(update.fractionCompleted) }
        }
        #expect(finished.sorted() == ["big.bin", "small.txt"])
        #expect(fractions.first == 0 && fractions.last == 1 && fractions.count > 2, "\(fractions)")
        #expect(try Data(contentsOf: pairs[0].destination) == FilesTests.bytes(2_000_000, seed: 7))

        var none = 0
        for try await _ in service.uploading([]) { none += 1 }
        #expect(none == 0)
    }

    @Test("The first failure of a batch is thrown, the file that failed stays pending, and the files done stay done")
    func failureEndsTheBatch() async throws {
        let service = try await FilesTests.service()
        let folder = try FilesTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let made = try Self.pendingFiles([1_000, 2_000, 3_000], service: service, folder: folder)
        let files = made.map(\.0)
        try Data("changed".utf8).write(to: service.pendingFiles.url(of: files[2].id))
        let error = await #expect(throws: ServiceError.self) {
            try await service.upload(files, maximumConcurrentTransfers: 1)
        }
        #expect(error?.code == .fileFailed, "\(String(describing: error))")
        // One at a time, in order: the first two went up before the third failed.
        #expect(!service.isPending(files[0]) && !service.isPending(files[1]) && service.isPending(files[2]))

        var thrown: (any Error)?
        do {
            for try await _ in service.uploading(files) {}
        } catch {
            thrown = error
        }
        #expect((thrown as? ServiceError)?.code == .fileFailed)
    }

    @Test("A cancelled batch stops its transfer in flight and starts no other; its files stay pending")
    func cancelledBatch() async throws {
        let (service, proxy) = try await FilesTests.throughProxy()
        defer { proxy.stop() }
        let folder = try FilesTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let files = try Self.pendingFiles([50_000, 50_000, 50_000], service: service, folder: folder).map(\.0)
        try await proxy.inject([["match": "POST /v1/buckets", "action": "hold", "name": "upload"]])
        let task = Task { try await service.upload(files, maximumConcurrentTransfers: 1) }
        try await waitUntil("the first upload at the proxy") { try await proxy.count("POST /v1/buckets") == 1 }
        task.cancel()
        let result = await task.result
        guard case .failure(let error) = result else {
            Issue.record("the cancelled batch ended without an error")
            return
        }
        #expect((error as? ServiceError)?.code == .cancelled, "\(error)")
        try await proxy.release("upload")
        #expect(try await proxy.count("POST /v1/buckets") == 1, "no other upload started")
        #expect(files.allSatisfy { service.isPending($0) })
    }

    @Test("A file listed twice is uploaded once, and a file already uploaded still starts and finishes in the updates")
    func duplicatesAndDoneFiles() async throws {
        let service = try await FilesTests.service()
        let folder = try FilesTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let files = try Self.pendingFiles([10_000], service: service, folder: folder).map(\.0)
        let done = try await service.upload(Data("done".utf8), name: "done.txt")
        var updates: [FileTransferUpdate] = []
        for try await update in service.uploading([files[0], done, files[0]]) { updates.append(update) }
        #expect(updates.last?.totalFiles == 2 && updates.last?.finishedFiles == 2)
        #expect(updates.filter { $0.file == done }.map(\.isFinished) == [false, true])
        #expect(!service.isPending(files[0]))
    }
}
