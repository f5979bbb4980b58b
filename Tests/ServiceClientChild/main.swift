import Foundation
import ModelKitServices

// Reads one record through a service with a response size limit, then reads another, and
// reports how each ended and the process's peak memory before and after: the service tests run
// it against a proxy that answers the first read with an endless or compressed body, so that the
// memory a cut-off answer costs is measured in a process of its own.
//
//     ServiceClientChild URL BUCKET USER PASSWORD LIMIT
//
// Prints lines "BASELINE_KB n", "FIRST code seconds", "NEXT code seconds", "PEAK_KB n".

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
    print(label, outcome, String(format: "%.2f", Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
}

let arguments = CommandLine.arguments
guard arguments.count == 6, let url = URL(string: arguments[1]), let limit = Int(arguments[5]) else {
    FileHandle.standardError.write(Data("usage: ServiceClientChild URL BUCKET USER PASSWORD LIMIT\n".utf8))
    exit(2)
}
// Long enough for a server queued behind the other tests on a busy machine (the read went past
// 60 s on PostgreSQL in CI), shorter than the five minutes after which the test kills this child.
let service = KintoService(
    url: url, bucket: arguments[2], user: arguments[3], password: arguments[4], timeout: .seconds(240),
    retry: .never, maximumResponseBytes: limit)
print("BASELINE_KB", peakKilobytes())
await read(service, "FIRST")
await read(service, "NEXT")
print("PEAK_KB", peakKilobytes())
