import Foundation

extension Report {
    /// The run's results in one table, printed at the end: for each benchmark, size and
    /// selectivity, ModelKit's median and each peer's ratio to it (above 1: ModelKit is faster,
    /// or for `graph-memory`, smaller), the strongest peer (the lowest ratio) first, so that the
    /// first ratio of a line is the one to state.
    func summary() -> String {
        struct Key: Hashable {
            var benchmark: String
            var n: Int
            var selectivity: Double?
        }
        var order: [Key] = []
        var groups: [Key: [Measurement]] = [:]
        for measurement in measurements {
            let key = Key(benchmark: measurement.benchmark, n: measurement.n, selectivity: measurement.selectivity)
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(measurement)
        }
        var lines = ["", "Summary (ratio = peer / ModelKit: above 1, ModelKit is faster or smaller; strongest peer first)"]
        let width = order.map { label(of: $0.benchmark, $0.n, $0.selectivity).count }.max() ?? 0
        for key in order {
            let rows = groups[key] ?? []
            // ModelKit, or for the queries its scan by key path, which the targets are about.
            guard
                let base = rows.first(where: { $0.subject == Self.modelKit })
                    ?? rows.first(where: { $0.subject == "\(Self.modelKit) (scan)" }) ?? rows.first
            else { continue }
            let isMemory = key.benchmark == "graph-memory"
            let value =
                isMemory ? "\(fixed(base.seconds / 1_048_576, 1)) MB" : "\(fixed(base.seconds, base.seconds < 0.01 ? 6 : 4)) s"
            // Sorted by time, not by the order of the rows: a benchmark's heavier peer (the same
            // information, or `UUID` ids) may come first in its table.
            let peers = rows.filter { !$0.subject.hasPrefix(Self.modelKit) }.sorted { $0.seconds < $1.seconds }
                .map { "\($0.subject) \(fixed($0.seconds / base.seconds, 2))" }
            let text = label(of: key.benchmark, key.n, key.selectivity)
            lines.append(
                text + String(repeating: " ", count: width - text.count) + "  \(base.subject) \(value)"
                    + (peers.isEmpty ? "" : "; " + peers.joined(separator: ", ")))
        }
        return lines.joined(separator: "\n")
    }

    private func label(of benchmark: String, _ n: Int, _ selectivity: Double?) -> String {
        "\(benchmark) n=\(grouped(n))" + (selectivity.map { " \(fixed($0 * 100, 1))%" } ?? "")
    }
}
