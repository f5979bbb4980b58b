import Foundation
import ModelKit
import ModelKitTestSupport

#if canImport(Glibc)
    import Glibc
#endif

// The peak memory of one in-memory output, measured in a process of its own (the test process
// runs other suites in parallel, whose memory would count too). Linux only: the peak resident set
// size is reset through /proc/self/clear_refs and read as VmHWM.
//
//     PersistenceWriterChild --peak <jsonData|json|bplist|xml> <megabytes> [fail]
//
// Builds a generation whose items make about `megabytes` of output, then writes it in memory
// (`jsonData()` from the generation, or `context.data(format:)`) and prints "OUTPUT bytes",
// "EXTRA_KB n" (the peak resident set above the one at the start of the write) and "AFTER_KB n"
// (the resident set once the output is dropped, above the start). With `fail`, the context also
// holds a model whose property refuses to encode, written last: the write throws after
// everything else is in the buffer, and the output is "FAILED code" instead of "OUTPUT".

/// A property that refuses to be encoded.
struct Refusal: Codable, Sendable {
    init() {}
    init(from decoder: any Decoder) throws {}
    func encode(to encoder: any Encoder) throws {
        throw EncodingError.invalidValue(0, .init(codingPath: encoder.codingPath, debugDescription: "refused"))
    }
}

/// Written after the items (model names are written in order), so that its write fails last.
final class ZRefusing: ModelObject<ZRefusing.Properties> {
    struct Properties: ModelProperties {
        var refusal = Refusal()
        init() {}
    }
}

/// A `kB` field of /proc/self/status, in kilobytes (-1 when it cannot be read).
func statusKilobytes(_ field: String) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
    for line in status.split(separator: "\n") where line.hasPrefix(field) {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? -1
    }
    return -1
}

/// Makes the current resident set size the peak (proc(5): "5" resets VmHWM).
func resetPeak() -> Bool {
    guard let file = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return false }
    defer { try? file.close() }
    return (try? file.write(contentsOf: Data("5".utf8))) != nil
}

func measurePeak(_ arguments: [String]) throws -> Int32 {
    guard arguments.count >= 4, let megabytes = Int(arguments[3]) else {
        let usage = "usage: PersistenceWriterChild --peak <jsonData|json|bplist|xml> <megabytes> [fail]\n"
        FileHandle.standardError.write(Data(usage.utf8))
        return 2
    }
    let kind = arguments[2]
    let fails = arguments.count > 4 && arguments[4] == "fail"
    try ModelRegistry.register(Generation.self, Item.self, ZRefusing.self)
    // An app that has run a while has freed large blocks, and glibc then keeps blocks up to that
    // size in its heap instead of mapping them (its mmap threshold rises, to at most 32 MB): free
    // one here as such an app would have, so that the write meets the heap such an app has.
    free(malloc(30 << 20))
    let context = ModelContext()
    let generation = Generation.instance(in: context)
    // Items of about 4 KB of text each (one shared string: the graph itself stays small), so
    // that the output, not the models, is what the memory is made of.
    let text = String(repeating: "a line of an item's text, ", count: 4096 / 26)
    for index in 0..<(megabytes << 8) {
        let item = Item.instance(in: context)
        item.generation = index
        item.text = text
        item.owner = generation
        generation.items.append(item)
    }
    if fails { _ = ZRefusing.instance(in: context) }
    guard resetPeak() else {
        FileHandle.standardError.write(Data("cannot reset the peak through /proc/self/clear_refs\n".utf8))
        return 3
    }
    let start = statusKilobytes("VmRSS:")
    do {
        let output: Data
        switch kind {
        case "jsonData": output = try generation.jsonData()
        case "bplist": output = try context.data(format: .binaryPropertyList)
        case "xml": output = try context.data(format: .xmlPropertyList)
        default: output = try context.data(format: .json)
        }
        print("OUTPUT", output.count)
    } catch let error as SerializationError {
        print("FAILED", error.code)
    }
    print("EXTRA_KB", statusKilobytes("VmHWM:") - start)
    print("AFTER_KB", statusKilobytes("VmRSS:") - start)
    withExtendedLifetime(context) {}
    return 0
}
