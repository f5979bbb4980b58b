import Foundation

/// Standard output, buffered: a query of a million rows makes a few large writes, not a million.
public final class Output {
    private var buffer: [UInt8] = []
    private let handle: FileHandle

    public init(handle: FileHandle = .standardOutput) {
        self.handle = handle
    }

    public func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 16 { flush() }
    }

    public func write(_ data: Data) {
        buffer.append(contentsOf: data)
        if buffer.count >= 1 << 16 { flush() }
    }

    public func line(_ text: String = "") {
        write(text + "\n")
    }

    public func flush() {
        guard !buffer.isEmpty else { return }
        handle.write(Data(buffer))
        buffer.removeAll(keepingCapacity: true)
    }

    deinit { flush() }
}

/// Lines of cells padded to their column's widest, two spaces apart.
func alignedTable(_ rows: [[String]]) -> [String] {
    var widths: [Int] = []
    for row in rows {
        for (column, cell) in row.enumerated() {
            if column == widths.count { widths.append(0) }
            widths[column] = max(widths[column], cell.count)
        }
    }
    return rows.map { row in
        var line = ""
        for (column, cell) in row.enumerated() {
            if column == row.count - 1 {
                line += cell
            } else {
                line += cell + String(repeating: " ", count: widths[column] - cell.count + 2)
            }
        }
        // An empty last cell leaves no padding behind.
        while line.hasSuffix(" ") { line.removeLast() }
        return line
    }
}

/// `1234567` as `1,234,567`.
func grouped(_ number: Int) -> String {
    let digits = String(number.magnitude)
    var result = ""
    for (index, character) in digits.enumerated() {
        if index > 0 && (digits.count - index) % 3 == 0 { result += "," }
        result.append(character)
    }
    return number < 0 ? "-" + result : result
}

/// The size of the file at `path` in bytes, 0 when it cannot be read (the read then says why).
func fileSize(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
}
