import Foundation
import ModelKit

/// `modelkit check`: reads every model and checks what a load checks without the app's types:
/// the envelope, each model's `model`, `modelId` and `properties`, ids once each, and every
/// pointer's target in the file. Memory: one model, and the ids (16 bytes each).
public enum CheckCommand {
    public struct Result {
        public var models = 0
        public var types: [String: Int] = [:]
        public var notes: [String] = []
    }

    public static func run(path: String, output: Output) throws {
        var result = Result()
        if let store = StoreFiles.at(path) {
            try checkFile(path: store.base, into: &result)
            try checkJournal(store, into: &result)
        } else {
            try checkFile(path: path, into: &result)
        }
        let types = result.types.sorted { $0.key < $1.key }.map { "\(grouped($1)) \($0)" }.joined(separator: ", ")
        output.line("ok: \(grouped(result.models)) models" + (types.isEmpty ? "" : " (\(types))"))
        result.notes.forEach { output.line("note: " + $0) }
    }

    static func checkFile(path: String, into result: inout Result) throws {
        let size = fileSize(path)
        let progress = ProgressReporter.forStandardError(label: "checking \(path)", total: size)
        defer { progress?.finish() }
        var checker = ModelChecker(path: path, pointersMustResolve: true)
        try GraphFile.read(path: path, progress: progress) { entry in
            try checker.check(entry)
            result.models += 1
            result.types[entry.name, default: 0] += 1
            return true
        }
        try checker.finish()
    }

    /// Each save's document (its pointers may lead to models of the base or of earlier saves: a
    /// store opens records with placeholders), then damage as opening sees it.
    static func checkJournal(_ store: StoreFiles, into result: inout Result) throws {
        var saves = 0
        let summary = try ModelJournal.read(at: URL(fileURLWithPath: store.journal)) { save in
            var checker = ModelChecker(path: store.journal, pointersMustResolve: false)
            let base = save.offset + save.size - save.document.count
            if !save.document.isEmpty {
                try GraphFile.read(data: save.document, path: store.journal, base: base) { entry in
                    do { try checker.check(entry) } catch var error as ToolError {
                        error.location = "journal record at byte \(save.offset), " + error.location
                        throw error
                    }
                    return true
                }
            }
            saves += 1
        }
        if let damage = summary.damage { throw ToolError.from(damage, path: store.journal) }
        result.notes.append("journal: \(grouped(saves)) saves, \(grouped(summary.bytes)) bytes")
        if summary.tornBytes > 0 {
            result.notes.append(
                "the journal ends with \(grouped(summary.tornBytes)) bytes of a save torn by a crash: opening cuts them off")
        }
    }
}

/// The checks a load makes of each model that need no Swift type.
struct ModelChecker {
    let path: String
    let pointersMustResolve: Bool
    private var seen = Set<ModelID>()
    /// Pointers to ids not seen yet, with where the first was (the pointing model's index and
    /// its key path, interned in `paths`): files may list a model after the models that point to
    /// it (an author's posts before the posts), so this can hold an entry per model; 8 bytes of
    /// value each rather than a string keeps a million of them near 50 MB.
    private var pending: [ModelID: (model: Int32, path: Int32)] = [:]
    private var paths: [String] = []

    init(path: String, pointersMustResolve: Bool) {
        self.path = path
        self.pointersMustResolve = pointersMustResolve
    }

    mutating func check(_ entry: ModelEntry) throws {
        let path = self.path
        func fail(_ key: String, _ expected: String, _ found: String) -> ToolError {
            var location = "model \(entry.index)"
            if let offset = entry.offset { location = "byte \(offset), " + location }
            return ToolError(path: path, location: location + (key.isEmpty ? "" : ", " + key), expected: expected, found: found)
        }
        guard case .object(let model) = entry.value else {
            throw fail("", "a model object", GraphFile.kind(of: entry.value))
        }
        guard case .string(let name)? = model["model"], !name.isEmpty else {
            throw fail("model", "a model name", model["model"].map(GraphFile.kind) ?? "no model member")
        }
        guard case .string(let idText)? = model["modelId"], let id = ModelID(idText) else {
            throw fail(
                "modelId", "a model id such as 5F0C61A2-93D4-4E1B-0000-00000000002A",
                model["modelId"].map(GraphFile.kind) ?? "no modelId member")
        }
        guard seen.insert(id).inserted else { throw fail("modelId", "each model id once", "\(idText) again (duplicateModelId)") }
        pending[id] = nil
        if let properties = model["properties"] {
            guard case .object = properties else { throw fail("properties", "an object", GraphFile.kind(of: properties)) }
            steps = [.key("properties")]
            try checkPointers(in: properties, owner: Int32(truncatingIfNeeded: entry.index), fail: fail)
        }
    }

    /// Where the walk is: keys and array positions. Strings of it are made only for an error or
    /// a pointer whose model has not come yet, not for every member of every model.
    private enum Step: Hashable {
        case key(String)
        case index(Int)
    }
    private var steps: [Step] = []
    private var shapeIndex: [[Step]: Int32] = [:]

    private static func text(_ steps: some Sequence<Step>) -> String {
        steps.reduce(into: "") { text, step in
            switch step {
            case .key(let key): text += text.isEmpty ? key : "." + key
            case .index(let index): text += index < 0 ? "[]" : "[\(index)]"
            }
        }
    }

    private mutating func checkPointers(
        in value: ModelValue, owner: Int32, fail: (String, String, String) -> ToolError
    ) throws {
        switch value {
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                steps.append(.index(index))
                defer { steps.removeLast() }
                try checkPointers(in: element, owner: owner, fail: fail)
            }
        case .object(let object):
            if case .string("ModelPointer")? = object["__type"] {
                guard case .string(let name)? = object["model"], !name.isEmpty else {
                    throw fail(Self.text(steps), "a pointer's model name", object["model"].map(GraphFile.kind) ?? "none")
                }
                guard case .string(let idText)? = object["modelId"], let id = ModelID(idText) else {
                    throw fail(Self.text(steps), "a pointer's model id", object["modelId"].map(GraphFile.kind) ?? "none")
                }
                if pointersMustResolve && !seen.contains(id) && pending[id] == nil {
                    // Array positions are left out of the interned path: "properties.posts[]".
                    var shape = steps.map { step in if case .index = step { Step.index(-1) } else { step } }
                    shape.append(.key(name))
                    let interned =
                        shapeIndex[shape]
                        ?? {
                            paths.append(Self.text(shape.dropLast()) + " → " + name)
                            shapeIndex[shape] = Int32(paths.count - 1)
                            return Int32(paths.count - 1)
                        }()
                    pending[id] = (owner, interned)
                }
                return
            }
            for (key, member) in object {
                switch member {
                case .array, .object:
                    steps.append(.key(key))
                    defer { steps.removeLast() }
                    try checkPointers(in: member, owner: owner, fail: fail)
                default:
                    continue
                }
            }
        default:
            return
        }
    }

    /// Pointers whose model never came are errors, as a load's default (`danglingPointers: .fail`).
    func finish() throws {
        guard let (id, first) = pending.min(by: { $0.value.model < $1.value.model }) else { return }
        throw ToolError(
            path: path, location: "model \(first.model), \(paths[Int(first.path)]) \(id)",
            expected: "the model a pointer names, in the file",
            found: "no such model (danglingPointer\(pending.count > 1 ? ", and \(pending.count - 1) more" : ""))")
    }
}
