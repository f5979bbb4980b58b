import Foundation

extension JSONSink {
    /// Compact JSON text from a ``JSONSink`` laid out with newlines and two-space indentation, a
    /// space after each colon, and empty containers kept as `[]` and `{}`.
    ///
    /// Pretty-printing is a pass over the finished text rather than a second mode of the sink: the
    /// sink's per-value paths stay as fast as they are for files, and text that is read by people
    /// is rarely large.
    ///
    /// - Complexity: O(n) in the size of the text.
    static func prettyPrinted(_ compact: Data) -> Data {
        var output: [UInt8] = []
        output.reserveCapacity(compact.count + compact.count / 2)
        compact.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            var depth = 0
            var index = 0
            func newline() {
                output.append(UInt8(ascii: "\n"))
                output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: depth * 2))
            }
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    // Copied as it is, escapes included: only an unescaped quote ends it.
                    var end = index + 1
                    while end < bytes.count, bytes[end] != UInt8(ascii: "\"") {
                        end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1
                    }
                    output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[index...min(end, bytes.count - 1)]))
                    index = end
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    output.append(byte)
                    let closing = byte == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
                    if index + 1 < bytes.count, bytes[index + 1] == closing {
                        output.append(closing)
                        index += 1
                    } else {
                        depth += 1
                        newline()
                    }
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    newline()
                    output.append(byte)
                case UInt8(ascii: ","):
                    output.append(byte)
                    newline()
                case UInt8(ascii: ":"):
                    output.append(contentsOf: [UInt8(ascii: ":"), UInt8(ascii: " ")])
                default:
                    output.append(byte)
                }
                index += 1
            }
        }
        return Data(output)
    }
}
