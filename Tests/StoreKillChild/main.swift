// A helper process for the store's kill test: opens a store of the test's blog and saves random
// changes to it, compacting now and then, until it is killed.
// Usage: StoreKillChild <base path> <json|bplist> <full|relaxed> <seed>
//
// It reports on standard output, one line per event, each written by one `write` (so the test
// never reads half a line that counts):
//
//     opened <sequence> <digest>            the state it opened
//     saving <sequence> <digest>            before save(): the state that save writes
//     saved <sequence>                      save() returned
//     compacting <sequence> <digest>        before compact() (which saves first)
//     compacted <sequence>                  compact() returned
//     error <description>                   anything thrown; it then exits with status 1
import Foundation
import ModelKit
import ModelKitTestSupport

let arguments = CommandLine.arguments
guard arguments.count == 5, let seed = UInt64(arguments[4]) else {
    FileHandle.standardError.write(Data("usage: StoreKillChild <base path> <json|bplist> <full|relaxed> <seed>\n".utf8))
    exit(2)
}

func report(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

do {
    try StoreBlog.register()
    var options = ModelStore.Options()
    options.format = arguments[2] == "bplist" ? .binaryPropertyList : .json
    options.durability = arguments[3] == "relaxed" ? .relaxed : .full
    options.deserialization.unknownKeys = .fail
    let store = try ModelStore(url: URL(fileURLWithPath: arguments[1]), options: options)
    let context = store.context
    report("opened \(StoreBlog.sequence(context)) \(StoreBlog.digest(context))")
    let marker = context.models(of: SaveMarker.self).first ?? SaveMarker.instance(in: context)
    var generator = SplitMix64(seed: seed)
    while true {
        StoreBlog.change(context, using: &generator)
        marker.sequence += 1
        // One operation in four is a compaction, so that many kills land in one.
        if generator.chance(0.25) {
            report("compacting \(marker.sequence) \(StoreBlog.digest(context))")
            try store.compact()
            report("compacted \(marker.sequence)")
        } else {
            report("saving \(marker.sequence) \(StoreBlog.digest(context))")
            try store.save()
            report("saved \(marker.sequence)")
        }
    }
} catch {
    report("error \(error)")
    exit(1)
}
