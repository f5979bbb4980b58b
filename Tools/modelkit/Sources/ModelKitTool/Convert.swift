import Foundation
import ModelKit

/// `modelkit convert` and `modelkit pretty`: the same models in another form. The whole file is
/// read into memory (a property list can only be written whole).
public enum ConvertCommand {
    public static func run(path: String, to format: FileFormat, output: String, pretty: Bool) throws {
        try refuseSameFile(path, output)
        let graph = try readGraph(path)
        let data: Data
        do { data = try graph.data(format: format, pretty: pretty) } catch {
            throw ToolError(path: output, expected: "models that \(format.title) can hold", found: "\(error)")
        }
        try writeAtomically(data, to: output)
    }

    /// The file as pretty-printed JSON, on standard output.
    public static func pretty(path: String, output: Output) throws {
        output.write(try readGraph(path).data(format: .json, pretty: true))
        output.line()
    }

    static func readGraph(_ path: String) throws -> Graph {
        if let store = StoreFiles.at(path) {
            let (graph, summary) = try Graph.read(store: store)
            if let damage = summary.damage { throw ToolError.from(damage, path: store.journal) }
            return graph
        }
        let size = fileSize(path)
        let progress = ProgressReporter.forStandardError(label: "reading \(path)", total: size)
        defer { progress?.finish() }
        return try Graph.read(path: path, progress: progress)
    }

    /// Never write over the input, nor over a store's files.
    static func refuseSameFile(_ input: String, _ output: String) throws {
        let a = URL(fileURLWithPath: input).standardizedFileURL.resolvingSymlinksInPath().path
        let b = URL(fileURLWithPath: output).standardizedFileURL.resolvingSymlinksInPath().path
        guard a != b && b != a + "-journal" else {
            throw ToolError.usage("an output file other than the input", found: "\"\(output)\"")
        }
    }
}

/// `modelkit diff`: models added, removed and changed, by id, field by field.
public enum DiffCommand {
    /// Writes the differences; returns whether there were any.
    public static func run(_ a: String, _ b: String, output: Output) throws -> Bool {
        let old = try ConvertCommand.readGraph(a)
        let new = try ConvertCommand.readGraph(b)
        var (added, removed, changed) = (0, 0, 0)
        for model in old.present {
            let id = model["modelId"]?.stringValue ?? "?"
            guard let other = new.model(id: id) else {
                output.line("- " + label(model))
                removed += 1
                continue
            }
            let fields = differences(model, other)
            guard !fields.isEmpty else { continue }
            changed += 1
            output.line("~ " + label(model))
            for line in fields { output.line("    " + line) }
        }
        for model in new.present where old.model(id: model["modelId"]?.stringValue ?? "") == nil {
            output.line("+ " + label(model))
            added += 1
        }
        let total = added + removed + changed
        output.line(
            total == 0 ? "no differences" : "\(grouped(added)) added, \(grouped(removed)) removed, \(grouped(changed)) changed")
        return total > 0
    }

    /// `Post 5F0C… (objectId)`.
    static func label(_ model: ModelValue) -> String {
        let text = "\(model["model"]?.stringValue ?? "?") \(model["modelId"]?.stringValue ?? "?")"
        guard let objectId = model["objectId"]?.stringValue else { return text }
        return text + " (\(objectId))"
    }

    /// `key: old → new` for each member and property that differs.
    static func differences(_ a: ModelValue, _ b: ModelValue) -> [String] {
        var lines: [String] = []
        func compare(_ x: ModelValue.Object, _ y: ModelValue.Object, prefix: String) {
            var keys = x.keys
            for key in y.keys where x[key] == nil { keys.append(key) }
            for key in keys where key != "properties" || !prefix.isEmpty {
                let (old, new) = (x[key], y[key])
                if let old, let new, Values.same(old, new) { continue }
                if case .array(let a)? = old, case .array(let b)? = new {
                    lines.append("\(prefix)\(key): \(a.count) elements → \(b.count)" + elements(a, b))
                    continue
                }
                lines.append("\(prefix)\(key): \(show(old)) → \(show(new))")
            }
        }
        guard case .object(let x) = a, case .object(let y) = b else { return [] }
        compare(x, y, prefix: "")
        if case .object(let p) = x["properties"] ?? .object(.init()), case .object(let q) = y["properties"] ?? .object(.init()) {
            compare(p, q, prefix: "properties.")
        }
        return lines
    }

    /// The elements only one of two arrays has: `; - Post:5F0C…; + tag`.
    private static func elements(_ a: [ModelValue], _ b: [ModelValue]) -> String {
        let removed = a.filter { x in !b.contains { Values.same(x, $0) } }
        let added = b.filter { x in !a.contains { Values.same(x, $0) } }
        let shown = removed.prefix(5).map { "- " + Values.cell($0) } + added.prefix(5).map { "+ " + Values.cell($0) }
        let more = max(0, removed.count - 5) + max(0, added.count - 5)
        return shown.isEmpty ? " (reordered)" : ": " + shown.joined(separator: ", ") + (more > 0 ? ", and \(more) more" : "")
    }

    private static func show(_ value: ModelValue?) -> String {
        guard let value else { return "(none)" }
        let text = value.jsonString()
        return text.count > 80 ? String(text.prefix(79)) + "…" : text
    }
}
