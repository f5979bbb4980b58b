import Foundation
import ModelKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `modelkit compact` and `modelkit check --recover`: a store's base and journal folded into one
/// whole-graph file, without the app's types.
public enum CompactCommand {
    /// Folds the journal into a new base, as `ModelStore.compact()` does: the new base is written
    /// beside the old one and renamed over it, and only then is the journal emptied. Holds the
    /// store's lock meanwhile, so it fails on a store an app has open.
    public static func run(path: String, output: Output) throws {
        guard let store = StoreFiles.at(path) else {
            throw ToolError(
                path: path, expected: "a store: a base with a journal beside it (\(path)-journal)", found: "no journal")
        }
        let descriptor = open(store.journal, O_RDWR)
        guard descriptor >= 0 else {
            throw ToolError(
                path: store.journal, expected: "a journal that can be opened for writing", found: String(cString: strerror(errno))
            )
        }
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            throw ToolError(path: store.journal, expected: "a store no program has open", found: "it locked (storeLocked)")
        }
        let (graph, summary) = try Graph.read(store: store)
        if let damage = summary.damage {
            var error = ToolError.from(damage, path: store.journal)
            error.found += "; `modelkit check --recover OUT` writes the saves before the damage to a new file"
            throw error
        }
        try writeAtomically(try graph.data(format: graph.format), to: store.base)
        // The header stays: the journal is empty, not gone.
        guard ftruncate(descriptor, 16) == 0, fsync(descriptor) == 0 else {
            throw ToolError(path: store.journal, expected: "the journal emptied", found: String(cString: strerror(errno)))
        }
        output.line(
            "compacted: \(grouped(graph.present.count)) models, \(grouped(summary.saves)) saves folded in; "
                + "journal \(grouped(summary.bytes)) → 16 bytes")
    }

    /// Writes a store's base and every whole save before any damage to `destination`, a new
    /// file in the base's format; returns the journal's summary.
    public static func recover(path: String, to destination: String, output: Output) throws -> ModelJournal.Summary {
        guard let store = StoreFiles.at(path) else {
            throw ToolError.usage(
                "--recover with a store (a base with a journal beside it)", found: "\(path) without \(path)-journal")
        }
        try ConvertCommand.refuseSameFile(path, destination)
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw ToolError.usage("a new file for --recover (it never writes over one)", found: "\(destination) exists")
        }
        let (graph, summary) = try Graph.read(store: store)
        try writeAtomically(try graph.data(format: graph.format), to: destination)
        output.line(
            "recovered: \(grouped(graph.present.count)) models from the base and \(grouped(summary.saves)) saves to \(destination)"
        )
        return summary
    }
}
