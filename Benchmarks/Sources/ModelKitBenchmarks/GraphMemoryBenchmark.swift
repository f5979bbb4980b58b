import BlogFixture
import Foundation
import ModelKit

// The memory the blog graph takes: ModelKit (a new context, its models, the references both ways)
// against plain final classes with the same data and references, with `UUID` ids. The rows'
// `seconds` field holds bytes.
//
// How: before each build, free heap memory is handed back (`malloc_trim`), the C heap's count of
// allocated bytes is read (glibc's `mallinfo2`: bytes in allocated chunks, with malloc's per-chunk
// overhead, in every arena, plus chunks mapped on their own), the graph is built and the count read
// again; the row is the median difference. Only one graph is alive at a time, and each is released
// before the next run. The count does not depend on what earlier benchmarks left freed or on pages
// malloc keeps, which the resident set size does, so it needs no child process; the resident set
// growth of the same runs is printed as a cross-check. Strings and tag arrays are shared with the
// input data by both subjects (Swift's copy on write), so neither is charged for their text.

extension Benchmarks {
    static let graphMemory = Benchmark(name: "graph-memory") { data, session in
        let objects = data.n + data.authorCount
        let modelKit = GraphFootprint(Report.modelKit) {
            let context = ModelContext()
            let graph = buildModelKitGraph(data, in: context)
            return (context.count, (context, graph))
        }
        let plain = GraphFootprint("plain classes") {
            let graph = buildPlainObjectGraph(data, ids: UUID.self)
            return (graph.authors.count + graph.posts.count, graph)
        }
        // Also measured (a note, not a row): the plain classes with what a context adds to
        // them, every object registered by id in a dictionary, as a user who looks objects up by
        // id would keep them.
        let registered = GraphFootprint(alsoMeasured) {
            let graph = buildPlainObjectGraph(data, ids: UUID.self, registered: true)
            return (graph.objects.count, graph)
        }
        let subjects = [modelKit, plain, registered]
        var runs = [[GraphFootprint.Run]](repeating: [], count: subjects.count)
        for round in 0..<session.runs {
            for offset in subjects.indices {
                let index = (round + offset) % subjects.count
                let run = try subjects[index].measure(expecting: objects)
                session.checksum.add(run.heapBytes ?? run.residentBytes ?? 0)
                runs[index].append(run)
            }
        }
        var result = BenchmarkResult(rows: [], notes: [], peakRSSBytes: [:])
        result.unit = .bytes
        for (subject, list) in zip(subjects, runs) {
            let heap = list.compactMap(\.heapBytes).map(Double.init)
            let resident = list.compactMap(\.residentBytes).map(Double.init)
            // Without heap statistics (not glibc, not Darwin), the resident set growth is the row.
            let values = heap.isEmpty ? resident : heap
            guard !values.isEmpty else {
                result.notes.append("\(subject.name): no memory measure on this platform")
                continue
            }
            let bytes = median(values)
            if subject.name != alsoMeasured { result.rows.append((subject.name, bytes)) }
            var note = subject.name == alsoMeasured ? "also measured: " : ""
            note += "\(subject.name): \(fixed(bytes / Double(objects), 1)) bytes per object"
            note += ", runs \(megabytes(Int(values.min()!)))–\(megabytes(Int(values.max()!)))"
            if !heap.isEmpty, !resident.isEmpty { note += ", resident set growth \(megabytes(Int(median(resident))))" }
            result.notes.append(note)
            if session.verbose {
                printError("\(session.label) \(subject.name): \(values.map { grouped(Int($0)) }.joined(separator: " ")) bytes")
            }
        }
        result.notes.insert(
            "\(grouped(objects)) objects (\(grouped(data.n)) posts, \(grouped(data.authorCount)) authors); "
                + (Memory.heapBytes() == nil ? "resident set growth" : "heap bytes allocated (mallinfo2)"),
            at: 0)
        return result
    }
}

/// The subject of `graph-memory` reported in a note only.
private let alsoMeasured = "plain classes + Dictionary (UUID ids)"

/// One subject of `graph-memory`: builds a graph and returns how many objects it made, and
/// something that keeps the graph alive.
struct GraphFootprint {
    let name: String
    let build: () -> (objects: Int, graph: Any)

    init(_ name: String, build: @escaping () -> (objects: Int, graph: Any)) {
        self.name = name
        self.build = build
    }

    /// What one build took, in bytes.
    struct Run {
        var heapBytes: Int?
        var residentBytes: Int?
    }

    /// Builds the graph once and measures it while it is alive; releases it before returning.
    func measure(expecting objects: Int) throws -> Run {
        let residentBefore = Memory.settledResidentBytes()
        let heapBefore = Memory.heapBytes()
        let built = build()
        let heapAfter = Memory.heapBytes()
        let residentAfter = Memory.residentBytes()
        _ = try expect(built.objects, objects, "\(name): objects in the graph")
        blackHole(built.graph)
        return Run(
            heapBytes: heapBefore.flatMap { before in heapAfter.map { $0 - before } },
            residentBytes: residentBefore.flatMap { before in residentAfter.map { $0 - before } })
    }
}
