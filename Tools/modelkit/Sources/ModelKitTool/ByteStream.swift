import Foundation

/// A file read forward in chunks, keeping only the bytes from `position` on: what lets the JSON
/// reader hold one model at a time however large the file.
struct ByteStream {
    private let handle: FileHandle
    private(set) var buffer: [UInt8] = []
    /// The index in `buffer` of the next byte not yet consumed.
    var position = 0
    /// The file offset of `buffer[0]`.
    private(set) var base = 0
    private var ended = false
    private let chunkSize: Int
    /// Told the number of bytes read so far after each chunk.
    private let onRead: (Int) -> Void

    init(handle: FileHandle, chunkSize: Int = 1 << 20, onRead: @escaping (Int) -> Void) {
        self.handle = handle
        self.chunkSize = chunkSize
        self.onRead = onRead
    }

    /// The file offset of the next byte.
    var offset: Int { base + position }

    /// Reads the next chunk, dropping the bytes before `position`; false at the end of the file.
    mutating func more() throws -> Bool {
        if ended { return false }
        if position > 0 {
            buffer.removeSubrange(0..<position)
            base += position
            position = 0
        }
        guard let data = try handle.read(upToCount: chunkSize), !data.isEmpty else {
            ended = true
            return false
        }
        buffer.append(contentsOf: data)
        onRead(base + buffer.count)
        return true
    }

    /// The byte `index` bytes after `position`, reading on as needed; `nil` at the end of the file.
    @inline(__always)
    mutating func byte(at index: Int) throws -> UInt8? {
        while position + index >= buffer.count {
            guard try more() else { return nil }
        }
        return buffer[position + index]
    }

    /// Consumes whitespace and returns the next byte without consuming it.
    mutating func peek() throws -> UInt8? {
        while let byte = try byte(at: 0) {
            guard byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return byte }
            position += 1
        }
        return nil
    }

    /// The length of the JSON value at `position` (not consumed): brackets and strings are matched,
    /// anything else runs to the next delimiter. Whether the value is valid JSON is for the parser.
    ///
    /// - Throws: ``ToolError`` when the file ends inside the value.
    mutating func valueLength(path: String) throws -> Int {
        guard let first = try byte(at: 0) else { throw endOfFile(path: path, expected: "a value") }
        if first != UInt8(ascii: "{") && first != UInt8(ascii: "[") && first != UInt8(ascii: "\"") {
            var index = 1
            while let byte = try byte(at: index), !Self.isDelimiter(byte) { index += 1 }
            return index
        }
        var depth = 0
        var inString = false
        var escaped = false
        var index = 0
        while true {
            // Scan what is buffered without a call per byte, then read on. The state lives in
            // locals inside the closure (captured variables would be boxed on the heap).
            let start = position
            let (found, end, state) = buffer.withUnsafeBufferPointer { bytes -> (Int?, Int, (Int, Bool, Bool)) in
                var (depth, inString, escaped) = (depth, inString, escaped)
                var i = start + index
                while i < bytes.count {
                    let byte = bytes[i]
                    if inString {
                        if escaped {
                            escaped = false
                        } else if byte == 0x5C {
                            escaped = true
                        } else if byte == 0x22 {
                            inString = false
                            if depth == 0 { return (i + 1 - start, i, (depth, inString, escaped)) }
                        }
                    } else if byte == 0x22 {
                        inString = true
                    } else if byte == 0x7B || byte == 0x5B {
                        depth += 1
                    } else if byte == 0x7D || byte == 0x5D {
                        depth -= 1
                        if depth == 0 { return (i + 1 - start, i, (depth, inString, escaped)) }
                    }
                    i += 1
                }
                return (nil, i, (depth, inString, escaped))
            }
            (depth, inString, escaped) = state
            if let found { return found }
            index = end - position
            guard try more() else { throw endOfFile(path: path, expected: "the rest of a value that starts at byte \(offset)") }
        }
    }

    /// The `count` bytes at `position`, consumed.
    mutating func take(_ count: Int) -> Data {
        let data = Data(buffer[position..<position + count])
        position += count
        return data
    }

    func endOfFile(path: String, expected: String) -> ToolError {
        ToolError(path: path, location: "byte \(base + buffer.count)", expected: expected, found: "the end of the file")
    }

    private static func isDelimiter(_ byte: UInt8) -> Bool {
        byte == 0x2C || byte == 0x5D || byte == 0x7D || byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }
}
