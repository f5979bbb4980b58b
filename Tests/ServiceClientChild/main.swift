import Foundation
import ModelKitServices

// Reads one record through a service with a response size limit, then reads another, and
// reports how each ended and the process's peak memory before and after: the service tests run
// it against a proxy that answers the first read with an endless or compressed body, so that the
// memory a cut-off answer costs is measured in a process of its own.
//
//     ServiceClientChild URL BUCKET USER PASSWORD LIMIT
//
// Prints lines "BASELINE_KB n", "FIRST code seconds", "NEXT code seconds", "PEAK_KB n"; in its
// "files" mode, "UPLOADED bytes", "UPLOAD_SECONDS s", "DOWNLOADED bytes", "DOWNLOAD_SECONDS s"
// or "FAILED error" between the two memory lines; in its "write-limit" mode, "SERVER code error",
// "PENDING code error" (or "downloaded") and "LEFT count names".

/// Writes a line of `items` to standard output at once, unbuffered, so that a child killed by the
/// test's backstop still says how far it got (`print` to a pipe is flushed only at exit).
func say(_ items: Any...) {
    FileHandle.standardOutput.write(Data((items.map { "\($0)" }.joined(separator: " ") + "\n").utf8))
}

/// The process's peak resident memory so far (VmHWM), in kilobytes.
func peakKilobytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? -1
    }
    return -1
}

/// Reads a record that does not exist and reports how the read ended and how long it took.
func read(_ service: KintoService, _ label: String) async {
    let clock = ContinuousClock()
    let start = clock.now
    var outcome = "ok"
    do {
        _ = try await service.read(RecordID(collection: "Writer", id: "no-such-record"))
    } catch {
        outcome = "\(error.code)"
        FileHandle.standardError.write(Data("\(label): \(error)\n".utf8))
    }
    let elapsed = clock.now - start
    say(
        label, outcome, String(format: "%.2f", Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    )
}

/// `count` varied bytes, the same for the same seed (a linear congruential generator's high
/// bits): file contents that neither compress nor repeat within a block.
func pseudoRandomBytes(count: Int, seed: UInt64) -> [UInt8] {
    var state = seed
    return (0..<count).map { _ in
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return UInt8(truncatingIfNeeded: state >> 33)
    }
}

/// Uploads a file of `megabytes` MiB made in `folder`, downloads it back, and reports the peak
/// memory before and after (issue #35: a file of any size crosses in bounded memory).
func transferFile(_ arguments: [String]) async {
    guard arguments.count == 8, let url = URL(string: arguments[2]), let megabytes = Int(arguments[6]) else {
        FileHandle.standardError.write(Data("usage: ServiceClientChild files URL BUCKET USER PASSWORD MEGABYTES FOLDER\n".utf8))
        exit(2)
    }
    let folder = URL(fileURLWithPath: arguments[7])
    let source = folder.appendingPathComponent("large.bin")
    // A mebibyte of varied bytes, written again and again.
    let block = pseudoRandomBytes(count: 1 << 20, seed: 0x9E37_79B9_7F4A_7C15)
    _ = FileManager.default.createFile(atPath: source.path, contents: nil)
    guard let output = try? FileHandle(forWritingTo: source) else { exit(3) }
    for _ in 0..<megabytes { try? output.write(contentsOf: Data(block)) }
    try? output.close()
    let service = KintoService(
        url: url, bucket: arguments[3], user: arguments[4], password: arguments[5], timeout: .seconds(240))
    say("BASELINE_KB", peakKilobytes())
    let clock = ContinuousClock()
    var start = clock.now
    do {
        let file = try await service.upload(contentsOf: source)
        say("UPLOADED", file.size)
        say("UPLOAD_SECONDS", (clock.now - start).components.seconds)
        say("UPLOAD_PEAK_KB", peakKilobytes())
        start = clock.now
        let copy = folder.appendingPathComponent("copy.bin")
        try await service.download(file, to: copy)
        let size = (try FileManager.default.attributesOfItem(atPath: copy.path)[.size] as? NSNumber)?.int64Value ?? -1
        say("DOWNLOADED", size)
        say("DOWNLOAD_SECONDS", (clock.now - start).components.seconds)
    } catch {
        say("FAILED", "\(error)".replacingOccurrences(of: "\n", with: " "))
    }
    say("PEAK_KB", peakKilobytes())
}

/// Downloads a file of 8 MiB, from the server and from a pending copy, with the process allowed
/// to write files of at most 2 MiB (RLIMIT_FSIZE), as a full disk would stop it, and reports how
/// each ended and what was left in the destination's folder: every write past the limit fails
/// (EFBIG), and the download must fail typed, leaving nothing.
func downloadPastWriteLimit(_ arguments: [String]) async {
    guard arguments.count == 7, let url = URL(string: arguments[2]) else {
        FileHandle.standardError.write(
            Data("usage: ServiceClientChild write-limit URL BUCKET USER PASSWORD FOLDER\n".utf8))
        exit(2)
    }
    let folder = URL(fileURLWithPath: arguments[6])
    let destinations = folder.appendingPathComponent("downloads")
    let service = KintoService(
        url: url, bucket: arguments[3], user: arguments[4], password: arguments[5], timeout: .seconds(240))
    service.pendingFilesFolder = folder.appendingPathComponent("pending")
    let bytes = Data(pseudoRandomBytes(count: 8 << 20, seed: 0x2545_F491_4F6C_DD1D))
    let uploaded: ServiceFile
    let pending: ServiceFile
    do {
        try FileManager.default.createDirectory(at: destinations, withIntermediateDirectories: true)
        uploaded = try await service.upload(bytes, name: "uploaded.bin")
        pending = try service.makeFile(bytes, name: "pending.bin")
    } catch {
        say("SETUP_FAILED", "\(error)".replacingOccurrences(of: "\n", with: " "))
        return
    }
    #if canImport(Glibc)
        // A write past the limit raises SIGXFSZ, which would end the process: ignored, the
        // write fails with EFBIG instead.
        signal(SIGXFSZ, SIG_IGN)
        let resource = __rlimit_resource_t(RLIMIT_FSIZE.rawValue)
        var limit = rlimit()
        getrlimit(resource, &limit)
        limit.rlim_cur = min(limit.rlim_max, 2 << 20)
        guard setrlimit(resource, &limit) == 0 else {
            say("SETUP_FAILED", "setrlimit")
            return
        }
    #endif
    for (label, file) in [("SERVER", uploaded), ("PENDING", pending)] {
        do {
            try await service.download(file, to: destinations.appendingPathComponent("\(label).bin"))
            say(label, "downloaded")
        } catch {
            say(label, "\(error.code)", "\(error)".replacingOccurrences(of: "\n", with: " "))
        }
    }
    let left = (try? FileManager.default.contentsOfDirectory(atPath: destinations.path)) ?? ["unreadable"]
    say("LEFT", left.count, left.joined(separator: " "))
}

let arguments = CommandLine.arguments
if arguments.count > 1, arguments[1] == "files" {
    await transferFile(arguments)
    exit(0)
}
if arguments.count > 1, arguments[1] == "write-limit" {
    await downloadPastWriteLimit(arguments)
    exit(0)
}
guard arguments.count == 6, let url = URL(string: arguments[1]), let limit = Int(arguments[5]) else {
    FileHandle.standardError.write(Data("usage: ServiceClientChild URL BUCKET USER PASSWORD LIMIT\n".utf8))
    exit(2)
}
// Long enough for a server queued behind the other tests on a busy machine (the read went past
// 60 s on PostgreSQL in CI), shorter than the five minutes after which the test kills this child.
let service = KintoService(
    url: url, bucket: arguments[2], user: arguments[3], password: arguments[4], timeout: .seconds(240),
    retry: .never, maximumResponseBytes: limit)
say("BASELINE_KB", peakKilobytes())
await read(service, "FIRST")
await read(service, "NEXT")
say("PEAK_KB", peakKilobytes())
