import Foundation

/// The median time of one subject in one benchmark at one size.
struct Measurement: Codable, Equatable {
    var benchmark: String
    var n: Int
    var subject: String
    var seconds: Double
    /// The subject's peak resident memory during its runs, where measured (Linux); omitted otherwise.
    var peakRSSBytes: Int? = nil
    /// The share of the queried models that match, for the query benchmarks (each runs at two);
    /// omitted otherwise.
    var selectivity: Double? = nil
    /// Service benchmarks only: HTTP requests, request and response body bytes, and this
    /// process's CPU time per model in seconds (medians); omitted otherwise.
    var requests: Int? = nil
    var bytesSent: Int? = nil
    var bytesReceived: Int? = nil
    var cpuSecondsPerModel: Double? = nil
}

/// Collects measurements, prints a table per benchmark and size, and writes the JSON report.
struct Report {
    private(set) var measurements: [Measurement] = []

    /// The subject every ratio is computed against.
    static let modelKit = "ModelKit"

    /// Records the rows of one benchmark at one size (ModelKit first) and prints their table.
    mutating func add(benchmark: String, n: Int, runs: Int, result: BenchmarkResult) {
        let rows = result.rows.map {
            let stats = result.serviceStats[$0.subject]
            return Measurement(
                benchmark: benchmark, n: n, subject: $0.subject, seconds: $0.seconds,
                peakRSSBytes: result.peakRSSBytes[$0.subject], selectivity: result.selectivity, requests: stats?.requests,
                bytesSent: stats?.bytesSent, bytesReceived: stats?.bytesReceived,
                cpuSecondsPerModel: stats.map { $0.cpuSeconds / Double(max(1, $0.models)) })
        }
        measurements += rows
        if !result.serviceStats.isEmpty {
            print(Self.serviceTable(benchmark: benchmark, n: n, runs: runs, rows: rows, stats: result.serviceStats, notes: result.notes))
            fflush(nil)
            return
        }
        print(
            Self.table(
                benchmark: benchmark, n: n, runs: runs, rows: rows, notes: result.notes, selectivity: result.selectivity,
                unit: result.unit))
        fflush(nil)  // show each table as soon as it is done, also when the output is a file
    }

    /// The table for one benchmark at one size: subject, median seconds (or bytes), ratio to ModelKit.
    static func table(
        benchmark: String, n: Int, runs: Int, rows: [Measurement], notes: [String], selectivity: Double? = nil,
        unit: MeasuredUnit = .seconds
    ) -> String {
        // Against ModelKit's row, or the first row when ModelKit has several ("ModelKit (scan)", …).
        let base = (rows.first { $0.subject == modelKit } ?? rows.first)?.seconds
        let subjectWidth = max(30, rows.map(\.subject.count).max() ?? 0)
        let selected = selectivity.map { "  selectivity \(fixed($0 * 100, 1))%" } ?? ""
        var lines: [String] = []
        lines.append("\(benchmark)  n=\(grouped(n))\(selected)  (median of \(runs) run\(runs == 1 ? "" : "s"))")
        let column = unit == .bytes ? "bytes" : "seconds"
        lines.append(pad("subject", subjectWidth) + "  " + pad(column, 14, right: true) + "  " + pad("ratio", 8, right: true))
        lines.append(String(repeating: "-", count: subjectWidth + 26))
        for row in rows {
            let ratio = base.map { $0 > 0 ? fixed(row.seconds / $0, 2) : "-" } ?? "-"
            let value = unit == .bytes ? grouped(Int(row.seconds)) : fixed(row.seconds, 6)
            lines.append(pad(row.subject, subjectWidth) + "  " + pad(value, 14, right: true) + "  " + pad(ratio, 8, right: true))
        }
        for note in notes { lines.append("  " + note) }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Writes every measurement as a JSON array to `path`.
    func writeJSON(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(measurements)
        try data.write(to: URL(fileURLWithPath: path))
    }
}

/// `value` with `digits` decimals, without Foundation's locale-dependent formatting.
func fixed(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return "\(value)" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    guard scaled < 9e15 else { return "\(value)" }
    let whole = Int(scaled) / Int(scale)
    let fraction = Int(scaled) % Int(scale)
    var text = (value < 0 && scaled > 0 ? "-" : "") + String(whole)
    if digits > 0 {
        let fractionText = String(fraction)
        text += "." + String(repeating: "0", count: digits - fractionText.count) + fractionText
    }
    return text
}

/// `1000000` as `1,000,000`.
func grouped(_ value: Int) -> String {
    let digits = Array(String(value.magnitude))
    var text = ""
    for (position, digit) in digits.enumerated() {
        if position > 0 && (digits.count - position) % 3 == 0 { text += "," }
        text.append(digit)
    }
    return (value < 0 ? "-" : "") + text
}

/// `text` padded with spaces to `width` characters, on the right unless `right` aligns it there.
func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
    let padding = String(repeating: " ", count: max(0, width - text.count))
    return right ? padding + text : text + padding
}

/// Prints a line to standard error.
func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
