import BlogFixture
import Foundation
import ModelKit

// One ModelKit operation on the suite's blog, for a profiler: no peers, no timing loop, no
// dispatch main (valgrind 3.19 stops with an internal error on the suite's binary, in
// libdispatch's signal thread). The blog is the suite's, from the BlogFixture module both build
// (n posts, n / 10 authors, each post referencing its author and each author holding its posts,
// under one blog).
//
//     swift build -c release --product ModelKitProfile
//     objcopy --strip-debug .build/release/ModelKitProfile /tmp/profile   # valgrind cannot read Swift's DWARF here
//     valgrind --tool=callgrind --toggle-collect='*jsonData7options*' /tmp/profile jsonData 10000
//     valgrind --tool=callgrind --toggle-collect='*ContextC4data6format*' /tmp/profile context-json 10000
//
//     valgrind --tool=callgrind --toggle-collect='*endBatch*' /tmp/profile live-batch 100000 20
//     perf record -g .build/release/ModelKitProfile live-batch 100000 200
//     perf record -g .build/release/ModelKitProfile create 100000 20
//
// Prints the output's size, so that the two can be compared; live-batch prints a batch's time.

let arguments = CommandLine.arguments
guard arguments.count >= 3, let posts = Int(arguments[2]), posts >= 10 else {
    FileHandle.standardError.write(
        Data(
            "usage: ModelKitProfile <jsonData|context-json|context-bplist|live-batch|create> POSTS [REPEATS] [1|15 (live-batch's selectivity in %)]\n"
                .utf8))
    exit(2)
}
let repeats = max(1, arguments.count > 3 ? Int(arguments[3]) ?? 1 : 1)
try ModelRegistry.register(BenchAuthor.self, BenchPost.self, BenchBlog.self)
if arguments[1] == "live-batch" {
    try profileLiveBatch(authors: posts, repeats: repeats, selectivity: arguments.count > 4 ? arguments[4] : nil)
    exit(0)
}
if arguments[1] == "create" {
    // The body of the suite's "create", `repeats` times, each in a new context; prints the median.
    let data = BlogData(posts: posts)
    var times: [Double] = []
    for _ in 0..<repeats {
        let context = ModelContext()
        let start = ContinuousClock.now
        let graph = buildModelKitGraph(data, in: context)
        let elapsed = ContinuousClock.now - start
        times.append(Double(elapsed.components.attoseconds) / 1e18 + Double(elapsed.components.seconds))
        withExtendedLifetime(graph) {}
    }
    times.sort()
    print("create median", times[times.count / 2], "s, least", times[0], "s")
    exit(0)
}
let context = ModelContext()
let blog = buildModelKitBlog(BlogData(posts: posts), in: context)
var bytes = 0
for _ in 0..<repeats {
    switch arguments[1] {
    case "jsonData": bytes = try blog.jsonData().count
    case "context-bplist": bytes = try context.data(format: .binaryPropertyList).count
    default: bytes = try context.data(format: .json).count
    }
}
print("output", bytes)
