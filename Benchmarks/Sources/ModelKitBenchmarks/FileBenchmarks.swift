import Foundation
import ModelKit
import ModelKitServices

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// The file benchmarks (issue #35): 100 MB up and down in one file and in 1,000 files of 100 kB,
// through ModelKitServices and through Debian's curl (the tool a user reaches for, one process
// doing every transfer, with parallel transfers for the many files), against the Kinto server the
// suite starts (its attachment plugin writes to local disk; its launcher serves the files).
// ModelKit and curl send the same multipart form and fetch the same locations. `n` is bytes.
//
// They run only when a `--filter` part starts with "files". Each run has a bucket of its own; the
// sources, and the files to download, are made before the clock starts.

extension Benchmarks {
    /// The bytes each file benchmark moves.
    static let fileBytes = 100_000_000
    /// How many files the `-many` benchmarks move (of `fileBytes / manyFiles` bytes each).
    static let manyFiles = 1_000
    /// How many transfers run at once in the `-many` benchmarks, for ModelKit and curl alike.
    static let fileConcurrency = 4
    static let curl = "curl"
    static let urlSessionToFile = "URLSession data task to a file, unchecked"
    static let urlSessionToFiles = "URLSession data tasks to files, unchecked"

    static let filesUploadLarge = Benchmark(name: "files-upload-large", fixedN: fileBytes) { n, session in
        try await fileBenchmark(n: n, count: 1, upload: true, session: &session)
    }
    static let filesUploadMany = Benchmark(name: "files-upload-many", fixedN: fileBytes) { n, session in
        try await fileBenchmark(n: n, count: manyFiles, upload: true, session: &session)
    }
    static let filesDownloadLarge = Benchmark(name: "files-download-large", fixedN: fileBytes) { n, session in
        try await fileBenchmark(n: n, count: 1, upload: false, session: &session)
    }
    static let filesDownloadMany = Benchmark(name: "files-download-many", fixedN: fileBytes) { n, session in
        try await fileBenchmark(n: n, count: manyFiles, upload: false, session: &session)
    }

    /// Times ModelKit and curl moving `n` bytes in `count` files, one way.
    private static func fileBenchmark(n: Int, count: Int, upload: Bool, session: inout Session) async throws -> BenchmarkResult {
        guard let curlPath = FileBench.curlPath() else {
            return BenchmarkResult(rows: [], notes: ["curl is missing (Debian: apt-get install curl): nothing timed"])
        }
        let server = try await ServiceServer.shared()
        let folder = ScratchDirectory.shared.url.appendingPathComponent("files-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // The sources: `count` files of random bytes (so that no layer can compress them).
        let sources = try FileBench.makeSources(count: count, bytes: n / count, in: folder)
        let bench = FileBench(server: server, curl: curlPath, folder: folder, sources: sources)
        var peaks: [String: Int] = [:]
        let modelKit = ServiceSubject(Report.modelKit) {
            let (sample, peak) = upload ? try await bench.modelKitUpload() : try await bench.modelKitDownload()
            if let peak { peaks[Report.modelKit] = max(peaks[Report.modelKit] ?? 0, peak) }
            return sample
        }
        let peer = ServiceSubject(curl) {
            upload
                ? try await bench.curlUpload(concurrency: fileConcurrency)
                : try await bench.curlDownload(concurrency: fileConcurrency)
        }
        // For the downloads, the transport's own floor: Foundation's URLSession (libcurl
        // underneath, on Linux) writing each body to a file from its delegate, with no check, the
        // locations known (several at once, in one session, for the many files).
        var subjects = [modelKit, peer]
        if !upload, count == 1 {
            subjects.append(ServiceSubject(urlSessionToFile) { try await bench.urlSessionDownload() })
        } else if !upload {
            subjects.append(
                ServiceSubject(urlSessionToFiles) { try await bench.urlSessionDownloads(concurrency: fileConcurrency) })
        }
        var result = try await measureService(subjects, n: n, session: &session, targets: false)
        let modelKitSeconds = result.rows.first { $0.subject == Report.modelKit }?.seconds ?? 0
        let curlSeconds = result.rows.first { $0.subject == curl }?.seconds ?? 0
        for (subject, seconds) in result.rows {
            result.notes.append("\(subject): \(fixed(Double(n) / 1e6 / max(seconds, 1e-9), 1)) MB/s")
        }
        if curlSeconds > 0 {
            let ratio = modelKitSeconds / curlSeconds
            let against =
                count == 1 ? "curl" : "curl with \(fileConcurrency) parallel transfers (ModelKit: \(fileConcurrency) at once)"
            result.notes.append(
                "target time within 1.5x of \(against): \(fixed(ratio, 2))x " + (ratio <= 1.5 ? "(met)" : "(not met)"))
        }
        if let peak = peaks[Report.modelKit] {
            result.peakRSSBytes[Report.modelKit] = peak
            if count == 1 {
                result.notes.append(
                    "target peak memory under 64 MB for the large file: ModelKit's grew by \(fixed(Double(peak) / 1e6, 1)) MB "
                        + (peak < 64_000_000 ? "(met)" : "(not met)"))
            }
        }
        return result
    }
}

/// One file benchmark's sources, and its subjects' runs.
final class FileBench: @unchecked Sendable {
    // @unchecked: used by one benchmark at a time, from its own task.
    let server: ServiceServer
    let curl: URL
    let folder: URL
    let sources: [URL]
    var bytes: Int { sources.count * ((try? FileManager.default.attributesOfItem(atPath: sources[0].path)[.size] as? Int) ?? 0) }

    init(server: ServiceServer, curl: URL, folder: URL, sources: [URL]) {
        self.server = server
        self.curl = curl
        self.folder = folder
        self.sources = sources
    }

    static func curlPath() -> URL? {
        for path in ["/usr/bin/curl", "/usr/local/bin/curl", "/bin/curl"] where FileManager.default.isExecutableFile(atPath: path)
        {
            return URL(fileURLWithPath: path)
        }
        return nil
    }

    static func makeSources(count: Int, bytes: Int, in folder: URL) throws -> [URL] {
        // SplitMix64 from a random seed: the system's generator asks the kernel for every word.
        var seed = UInt64.random(in: .min ... .max)
        var sources: [URL] = []
        for index in 0..<count {
            let url = folder.appendingPathComponent("source-\(index).bin")
            var data = Data(count: bytes)
            data.withUnsafeMutableBytes { raw in
                let words = raw.bindMemory(to: UInt64.self)
                for i in words.indices {
                    seed &+= 0x9E37_79B9_7F4A_7C15
                    var z = seed
                    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                    words[i] = z ^ (z >> 31)
                }
            }
            try data.write(to: url)
            sources.append(url)
        }
        return sources
    }

    /// ModelKit's upload: one file with `upload(contentsOf:)`; many as an app offline-first
    /// writes it, `makeFile` for each (a copy into the pending folder) and one batch upload.
    /// Returns the sample and how much the peak resident memory grew.
    func modelKitUpload() async throws -> (ServiceSample, Int?) {
        let bucket = try await server.makeBucket(collections: [KintoService.filesCollection])
        let service = server.service(bucket: bucket)
        service.pendingFilesFolder = folder.appendingPathComponent("pending-\(bucket)")
        let start = Memory.resetPeak()
        var uploaded: [ServiceFile] = []
        let sample = try await timed(models: sources.count, metrics: { service.metrics }) {
            if sources.count == 1 {
                uploaded = [try await service.upload(contentsOf: sources[0])]
            } else {
                let files = try sources.map { try service.makeFile(contentsOf: $0) }
                try await service.upload(files, maximumConcurrentTransfers: Benchmarks.fileConcurrency)
                uploaded = files
            }
        }
        let peak = start.flatMap { start in Memory.peakBytes().map { $0 - start } }
        _ = try expect(uploaded.count { !service.isPending($0) }, sources.count, "files uploaded")
        try await server.deleteBucket(bucket)
        return (sample, peak)
    }

    /// curl's upload: the same multipart form, `-F attachment=@file`, every transfer in one curl
    /// process (a config file of transfers), `--parallel` for several.
    func curlUpload(concurrency: Int) async throws -> ServiceSample {
        let bucket = try await server.makeBucket(collections: [KintoService.filesCollection])
        let base = server.url.absoluteString + "/buckets/\(bucket)/collections/\(KintoService.filesCollection)/records/"
        let config = sources.enumerated().map { index, source in
            "url = \"\(base)f\(index)/attachment\"\nform = \"attachment=@\(source.path)\"\n"
                + "user = \"\(server.user):\(server.password)\"\noutput = \"/dev/null\"\nfail\n"
        }
        let sample = try await runCurl(config: config, concurrency: concurrency, count: sources.count)
        try await server.deleteBucket(bucket)
        return sample
    }

    /// The files of a fresh bucket, uploaded before the clock starts.
    private func uploadedFiles() async throws -> (String, [ServiceFile], [URL]) {
        let bucket = try await server.makeBucket(collections: [KintoService.filesCollection])
        let service = server.service(bucket: bucket)
        var files: [ServiceFile] = []
        var locations: [URL] = []
        for source in sources {
            let file = try await service.upload(contentsOf: source)
            files.append(file)
            locations.append(try await service.location(of: file))
        }
        return (bucket, files, locations)
    }

    /// ModelKit's download, by a service that has not seen the files (as on another device: it
    /// asks the server where they are).
    func modelKitDownload() async throws -> (ServiceSample, Int?) {
        let (bucket, files, _) = try await uploadedFiles()
        let service = server.service(bucket: bucket)
        let destinations = files.indices.map { folder.appendingPathComponent("down-\($0).bin") }
        let start = Memory.resetPeak()
        let sample = try await timed(models: files.count, metrics: { service.metrics }) {
            if files.count == 1 {
                try await service.download(files[0], to: destinations[0])
            } else {
                let pairs = zip(files, destinations).map { (file: $0, destination: $1) }
                try await service.download(pairs, maximumConcurrentTransfers: Benchmarks.fileConcurrency)
            }
        }
        let peak = start.flatMap { start in Memory.peakBytes().map { $0 - start } }
        try checkDownloads(destinations)
        try await server.deleteBucket(bucket)
        return (sample, peak)
    }

    /// curl's download of the same locations (no credentials: they are static files).
    func curlDownload(concurrency: Int) async throws -> ServiceSample {
        let (bucket, _, locations) = try await uploadedFiles()
        let destinations = locations.indices.map { folder.appendingPathComponent("down-\($0).bin") }
        let config = zip(locations, destinations).map { location, destination in
            "url = \"\(location.absoluteString)\"\noutput = \"\(destination.path)\"\nfail\n"
        }
        let sample = try await runCurl(config: config, concurrency: concurrency, count: locations.count)
        try checkDownloads(destinations)
        try await server.deleteBucket(bucket)
        return sample
    }

    /// A URLSession data task whose delegate writes each piece to the file as it comes: no hash,
    /// no `fsync`, the location known.
    func urlSessionDownload() async throws -> ServiceSample {
        let (bucket, _, locations) = try await uploadedFiles()
        let destination = folder.appendingPathComponent("down-0.bin")
        let sample = try await timed(models: 1, metrics: { ServiceMetrics() }) {
            try await PlainDownload.run(locations[0], to: destination)
        }
        try checkDownloads([destination])
        try await server.deleteBucket(bucket)
        return sample
    }

    /// URLSession data tasks, `concurrency` at a time in one session, each writing its body to
    /// a file as it comes: no hash, no `fsync`, the locations known.
    func urlSessionDownloads(concurrency: Int) async throws -> ServiceSample {
        let (bucket, _, locations) = try await uploadedFiles()
        let destinations = locations.indices.map { folder.appendingPathComponent("down-\($0).bin") }
        let sample = try await timed(models: locations.count, metrics: { ServiceMetrics() }) {
            try await PlainDownloads.run(Array(zip(locations, destinations)), concurrency: concurrency)
        }
        try checkDownloads(destinations)
        try await server.deleteBucket(bucket)
        return sample
    }

    private func checkDownloads(_ destinations: [URL]) throws {
        for (source, destination) in zip(sources, destinations) {
            let size = { (url: URL) in (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? -1 }
            _ = try expect(size(destination), size(source), "bytes of \(destination.lastPathComponent)")
            try? FileManager.default.removeItem(at: destination)
        }
    }

    /// Runs curl on `config` (written before the clock starts), `--parallel` when there are
    /// several transfers; the sample counts one request per transfer.
    private func runCurl(config transfers: [String], concurrency: Int, count: Int) async throws -> ServiceSample {
        let configURL = folder.appendingPathComponent("curl-\(UUID().uuidString).conf")
        try Data(transfers.joined(separator: "next\n").utf8).write(to: configURL)
        defer { try? FileManager.default.removeItem(at: configURL) }
        // One transfer after another in the file, `next` between them (not after the last,
        // which would start a transfer without a URL).
        var arguments = ["--silent", "--show-error", "--config", configURL.path]
        if count > 1 { arguments = ["--parallel", "--parallel-max", "\(concurrency)"] + arguments }
        var status: Int32 = 0
        var errors = ""
        let bytes = self.bytes
        var sample = try await timed(models: count, metrics: { ServiceMetrics() }) {
            (status, _, errors) = try ServiceServer.run(curl, arguments)
        }
        guard status == 0 else { throw ServiceBenchmarkError(description: "curl failed (\(status)): \(errors.prefix(500))") }
        sample.metrics = ServiceMetrics(requests: count, bytesSent: 0, bytesReceived: bytes)
        return sample
    }
}

/// What an app writes for a large download without ModelKit: a data task whose delegate appends
/// each piece to a file.
final class PlainDownload: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: the delegate's calls for the one task come one at a time.
    private let handle: FileHandle
    private var continuation: CheckedContinuation<Void, any Error>?

    private init(handle: FileHandle) {
        self.handle = handle
    }

    static func run(_ url: URL, to destination: URL) async throws {
        _ = FileManager.default.createFile(atPath: destination.path, contents: nil)
        let download = PlainDownload(handle: try FileHandle(forWritingTo: destination))
        defer { try? download.handle.close() }
        let session = URLSession(configuration: .ephemeral, delegate: download, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        try await withCheckedThrowingContinuation { continuation in
            download.continuation = continuation
            session.dataTask(with: url).resume()
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        try? handle.write(contentsOf: data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if let error { continuation?.resume(throwing: error) } else { continuation?.resume() }
        continuation = nil
    }
}

/// What an app writes for many downloads without ModelKit: one session, a few data tasks at a
/// time, a delegate that appends each task's pieces to its file.
final class PlainDownloads: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: `transfers` is read and written under `lock` only.
    private let lock = NSLock()
    private var transfers: [Int: (handle: FileHandle, continuation: CheckedContinuation<Void, any Error>)] = [:]

    static func run(_ pairs: [(URL, URL)], concurrency: Int) async throws {
        let downloads = PlainDownloads()
        let session = URLSession(configuration: .ephemeral, delegate: downloads, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = 0
            func start() {
                let (url, destination) = pairs[next]
                next += 1
                group.addTask { try await downloads.download(url, to: destination, in: session) }
            }
            while next < min(concurrency, pairs.count) { start() }
            while try await group.next() != nil {
                if next < pairs.count { start() }
            }
        }
    }

    private func download(_ url: URL, to destination: URL, in session: URLSession) async throws {
        _ = FileManager.default.createFile(atPath: destination.path, contents: nil)
        let handle = try FileHandle(forWritingTo: destination)
        defer { try? handle.close() }
        try await withCheckedThrowingContinuation { continuation in
            let task = session.dataTask(with: url)
            lock.withLock { transfers[task.taskIdentifier] = (handle, continuation) }
            task.resume()
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let handle = lock.withLock { transfers[dataTask.taskIdentifier]?.handle }
        try? handle?.write(contentsOf: data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let transfer = lock.withLock({ transfers.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let error { transfer.continuation.resume(throwing: error) } else { transfer.continuation.resume() }
    }
}
