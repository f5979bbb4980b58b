import Foundation
import ModelKit

/// `modelkit query`: the models that match a query-language filter, read forward. Without
/// `--sort` it stops reading at `--limit`; with it, it keeps at most twice the limit in memory.
public enum QueryCommand {
    public enum Style: String, Sendable, CaseIterable {
        case table
        case json
        case ndjson
    }

    public struct Options {
        public var filter = "TRUEPREDICATE"
        public var type: String?
        /// A key, `-key` for descending.
        public var sort: String?
        public var limit: Int?
        public var style = Style.table

        public init() {}
    }

    public static func run(path: String, options: Options, output: Output) throws {
        let filter: ModelValueFilter
        do {
            filter = try ModelValueFilter(options.filter)
        } catch {
            throw ToolError.usage(
                "a query such as title BEGINSWITH[c] \"swift\" (\(error.expected))",
                found: "\(error.found)" + (error.column.map { " at column \($0)" } ?? ""))
        }
        if let limit = options.limit, limit < 0 { throw ToolError.usage("a limit of 0 or more", found: String(limit)) }
        let sortKey = options.sort.map { $0.hasPrefix("-") ? String($0.dropFirst()) : $0 }
        let path_ = sortKey?.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        if let path_, path_.contains(where: \.isEmpty) {
            throw ToolError.usage("a sort key such as createdAt or -title", found: "\"\(options.sort ?? "")\"")
        }
        let descending = options.sort?.hasPrefix("-") ?? false

        var matches: [(ModelEntry, ModelValue)] = []
        let keep = options.limit.map { max($0, 1) * 2 }
        func ordered(_ a: (ModelEntry, ModelValue), _ b: (ModelEntry, ModelValue)) -> Bool {
            switch ModelValueFilter.compare(a.1, b.1) {
            case .orderedAscending: return !descending
            case .orderedDescending: return descending
            case .orderedSame: return a.0.index < b.0.index
            }
        }
        let size = fileSize(path)
        let progress = ProgressReporter.forStandardError(label: "querying \(path)", total: size)
        let streaming = options.style == .ndjson && path_ == nil
        var written = 0
        do {
            try GraphFile.read(path: path, progress: progress) { entry in
                if let type = options.type, entry.name != type { return true }
                if options.limit == 0 { return false }
                guard try filter.matches(entry.properties, modelName: entry.name) else { return true }
                if streaming {
                    output.line(entry.value.jsonString())
                    written += 1
                    return options.limit.map { written < $0 } ?? true
                }
                matches.append((entry, path_.map { Values.value(at: $0, in: entry) } ?? .null))
                guard path_ != nil else { return options.limit.map { matches.count < $0 } ?? true }
                if let keep, matches.count >= keep {
                    matches.sort(by: ordered)
                    matches.removeLast(matches.count - keep / 2)
                }
                return true
            }
        } catch let error as QueryError {
            progress?.finish()
            throw ToolError(
                path: path, location: error.modelName.map { "a \($0)" } ?? "", expected: error.expected, found: error.found)
        } catch {
            progress?.finish()
            throw error
        }
        progress?.finish()
        if streaming { return }
        if path_ != nil { matches.sort(by: ordered) }
        if let limit = options.limit, matches.count > limit { matches.removeLast(matches.count - limit) }
        let models = matches.map(\.0)
        switch options.style {
        case .ndjson:
            for model in models { output.line(model.value.jsonString()) }
        case .json:
            output.line("[")
            for (index, model) in models.enumerated() {
                output.line("  " + model.value.jsonString() + (index < models.count - 1 ? "," : ""))
            }
            output.line("]")
        case .table:
            table(models).forEach(output.line)
        }
    }

    /// Columns: the model's name and id, then each property key in the order first met.
    static func table(_ models: [ModelEntry]) -> [String] {
        var keys: [String] = []
        var known = Set<String>()
        for model in models {
            guard case .object(let properties) = model.properties else { continue }
            for key in properties.keys where known.insert(key).inserted { keys.append(key) }
        }
        // Object ids, when the models have them, are what an app knows them by.
        let objectIds = models.contains { $0.value["objectId"] != nil }
        var rows = [["model"] + (objectIds ? ["objectId"] : []) + ["modelId"] + keys]
        for model in models {
            let objectId = objectIds ? [Values.cell(model.value["objectId"])] : []
            rows.append([model.name] + objectId + [model.id] + keys.map { Values.cell(model.properties[$0]) })
        }
        return alignedTable(rows) + ["(\(grouped(models.count)) model\(models.count == 1 ? "" : "s"))"]
    }
}
