import Foundation
import ModelKit

/// A store's files: the base (a whole-graph file) and the journal beside it (`<base>-journal`).
public struct StoreFiles {
    public let base: String
    public var journal: String { base + "-journal" }

    /// The store whose base is at `path`, when a journal is beside it.
    public static func at(_ path: String) -> StoreFiles? {
        FileManager.default.fileExists(atPath: path + "-journal") ? StoreFiles(base: path) : nil
    }
}

/// A whole graph in memory, read without types: the envelope's members and the models in order,
/// each found by id. What `compact`, `check --recover`, `convert` and `diff` work on.
public struct Graph {
    public var members: GraphFile.Members = [:]
    public private(set) var models: [ModelValue?] = []
    private var indexById: [String: Int] = [:]
    public private(set) var format: FileFormat = .json

    public init() {}

    /// The models that are there (not removed), in order.
    public var present: [ModelValue] { models.compactMap { $0 } }

    /// Inserts `model`, or replaces the model with its id where it is.
    mutating func put(_ model: ModelValue) {
        let id = model["modelId"]?.stringValue ?? ""
        if let index = indexById[id] {
            models[index] = model
        } else {
            indexById[id] = models.count
            models.append(model)
        }
    }

    mutating func remove(id: String) {
        guard let index = indexById.removeValue(forKey: id) else { return }
        models[index] = nil
    }

    func model(id: String) -> ModelValue? { indexById[id].flatMap { models[$0] } }

    /// The whole file at `path`.
    public static func read(path: String, progress: ProgressReporter? = nil) throws -> Graph {
        var graph = Graph()
        graph.format = try GraphFile.read(
            path: path, progress: progress, member: { graph.members[$0] = $1 },
            model: { entry in
                graph.put(entry.value)
                return true
            })
        return graph
    }

    /// A store's base with the journal's saves applied in order, up to the first damage (as
    /// `recovery: .savesBeforeDamage` opens it); the journal's summary says what was left out.
    public static func read(store: StoreFiles) throws -> (Graph, ModelJournal.Summary) {
        var graph = try read(path: store.base)
        let summary = try ModelJournal.read(at: URL(fileURLWithPath: store.journal)) { save in
            if !save.document.isEmpty {
                let base = save.offset + save.size - save.document.count
                try GraphFile.read(
                    data: save.document, path: store.journal, base: base,
                    member: { key, value in
                        if key == "tracking" { graph.members["tracking"] = merged(graph.members["tracking"], value) }
                    },
                    model: { entry in
                        graph.put(entry.value)
                        return true
                    })
            }
            for id in save.removedIds { graph.remove(id: id.description) }
        }
        return (graph, summary)
    }

    /// A record's `tracking` over the one before: objects merged member by member, later values
    /// winning; arrays joined without repeats.
    static func merged(_ old: ModelValue?, _ new: ModelValue) -> ModelValue {
        switch (old, new) {
        case (.object(var a)?, .object(let b)):
            for (key, value) in b { a[key] = merged(a[key], value) }
            return .object(a)
        case (.array(let a)?, .array(let b)):
            return .array(a + b.filter { !a.contains($0) })
        default:
            return new
        }
    }

    /// The graph as a file's bytes in `format`.
    public func data(format: FileFormat, pretty: Bool = false) throws -> Data {
        var envelope = ModelValue.Object()
        envelope["format"] = members["format"] ?? "ModelKit"
        envelope["version"] = members["version"] ?? 1
        envelope["writtenBy"] = members["writtenBy"] ?? "ModelKit-Swift 1.0"
        envelope["models"] = .array(present)
        for (key, value) in members.sorted(by: { $0.key < $1.key }) where envelope[key] == nil { envelope[key] = value }
        let document = ModelValue.object(envelope)
        switch format {
        case .json:
            return document.jsonData(options: pretty ? .prettyPrinted : [])
        case .binary:
            return try PropertyListSerialization.data(fromPropertyList: document.propertyListObject, format: .binary, options: 0)
        case .xml:
            // XML dates keep whole seconds only: dates go as the JSON form's ISO text, as the
            // library writes them.
            let jsonForm = try ModelValue(json: document.jsonData())
            return try PropertyListSerialization.data(fromPropertyList: jsonForm.propertyListObject, format: .xml, options: 0)
        }
    }
}

/// Writes `data` to `path` as the library does: a temporary file beside it, flushed, renamed
/// over it; a crash leaves the old file or the new one.
func writeAtomically(_ data: Data, to path: String) throws {
    let temporary = path + ".modelkit-\(getpid())"
    guard FileManager.default.createFile(atPath: temporary, contents: nil) else {
        throw ToolError(path: temporary, expected: "a file that can be created", found: "an error creating it")
    }
    do {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: temporary))
        try handle.write(contentsOf: data)
        try handle.synchronize()
        try handle.close()
        guard rename(temporary, path) == 0 else {
            throw ToolError(path: path, expected: "a rename over the file", found: String(cString: strerror(errno)))
        }
    } catch {
        try? FileManager.default.removeItem(atPath: temporary)
        throw error as? ToolError ?? ToolError(path: path, expected: "a file written", found: "\(error)")
    }
}
