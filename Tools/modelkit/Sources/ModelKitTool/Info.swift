import Foundation
import ModelKit

/// `modelkit info`: what a file or store holds, read forward without keeping the models.
public enum InfoCommand {
    public static func run(path: String, output: Output) throws {
        let fileSize = fileSize(path)
        let progress = ProgressReporter.forStandardError(label: "reading \(path)", total: fileSize)
        var counts: [String: (models: Int, bytes: Int)] = [:]
        var members: GraphFile.Members = [:]
        var total = 0
        let format: FileFormat
        do {
            format = try GraphFile.read(path: path, progress: progress, member: { members[$0] = $1 }) { entry in
                counts[entry.name, default: (0, 0)].models += 1
                counts[entry.name, default: (0, 0)].bytes += entry.length ?? 0
                total += 1
                return true
            }
        } catch {
            progress?.finish()
            throw error
        }
        progress?.finish()
        var rows: [[String]] = [
            ["file:", path],
            ["format:", "\(format.title), version \(Values.cell(members["version"]))"],
            ["written by:", Values.cell(members["writtenBy"])],
            ["size:", "\(grouped(fileSize)) bytes"],
            ["models:", grouped(total)],
        ]
        for (name, count) in counts.sorted(by: { $0.key < $1.key }) {
            let bytes = format == .json ? "  \(grouped(count.bytes)) bytes" : ""
            rows.append(["  \(name)", grouped(count.models) + bytes])
        }
        rows.append(["sync state:", syncState(members["tracking"])])
        if let store = StoreFiles.at(path) { rows += try journalRows(store) }
        alignedTable(rows).forEach(output.line)
    }

    /// What the envelope's `tracking` member holds: server versions per namespace, models new or
    /// changed since the last sync.
    static func syncState(_ tracking: ModelValue?) -> String {
        guard case .object(let object)? = tracking, !object.isEmpty else { return "none" }
        return object.map { key, value in
            switch value {
            case .object(let inner): "\(key): \(inner.count)"
            case .array(let elements): "\(key): \(elements.count)"
            default: key
            }
        }.joined(separator: ", ")
    }

    static func journalRows(_ store: StoreFiles) throws -> [[String]] {
        let summary = try ModelJournal.read(at: URL(fileURLWithPath: store.journal)) { _ in }
        let modified = (try? FileManager.default.attributesOfItem(atPath: store.journal)[.modificationDate]) as? Date
        var rows = [
            ["journal:", store.journal],
            ["  saves:", grouped(summary.saves)],
            ["  bytes:", grouped(summary.bytes)],
            ["  last save:", summary.saves > 0 ? modified.map { ISO8601DateFormatter().string(from: $0) } ?? "?" : "none"],
        ]
        if summary.tornBytes > 0 {
            rows.append(["  torn save:", "\(grouped(summary.tornBytes)) bytes at the end (opening cuts them off)"])
        }
        if let damage = summary.damage {
            rows.append(["  damage:", "at byte \(damage.offset ?? 0): \(damage.found) (open fails; see check --recover)"])
        }
        return rows
    }
}
