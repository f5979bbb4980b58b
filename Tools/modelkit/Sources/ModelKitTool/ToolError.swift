import Foundation
import ModelKit

/// An error the tool reports and exits with: what it was doing, where, what it expected and
/// what it found, as the library's errors say it.
public struct ToolError: Error, CustomStringConvertible, Sendable {
    /// The file, or empty.
    public var path: String
    /// Where in the file: "byte 120", "model 3 (Post 5F0C…), properties.title", or empty.
    public var location: String
    public var expected: String
    public var found: String
    /// The exit status: 1 for a file that fails, 2 for a bad argument.
    public var status: Int32

    public init(path: String = "", location: String = "", expected: String, found: String, status: Int32 = 1) {
        self.path = path
        self.location = location
        self.expected = expected
        self.found = found
        self.status = status
    }

    public var description: String {
        var text = path
        if !location.isEmpty { text += text.isEmpty ? location : ": " + location }
        if !text.isEmpty { text += ": " }
        return text + "expected \(expected), found \(found)"
    }

    /// A bad argument: exit status 2.
    static func usage(_ expected: String, found: String) -> ToolError {
        ToolError(expected: expected, found: found, status: 2)
    }

    /// The library's errors, said in the tool's words; `base` is added to byte offsets that
    /// count from the start of a part of the file.
    public static func from(_ error: any Error, path: String, base: Int = 0, model: Int? = nil) -> ToolError {
        var parts: [String] = []
        if let model { parts.append("model \(model)") }
        switch error {
        case let error as ToolError: return error
        case let error as SerializationError:
            if let offset = error.byteOffset { parts.insert("byte \(base + offset)", at: 0) }
            if !error.path.isEmpty { parts.append(error.path) }
            return ToolError(
                path: path, location: parts.joined(separator: ", "), expected: error.expected,
                found: "\(error.found) (\(error.code))")
        case let error as PersistenceError:
            if let offset = error.offset { parts.insert("byte \(offset)", at: 0) }
            return ToolError(
                path: error.path.isEmpty ? path : error.path, location: parts.joined(separator: ", "),
                expected: error.expected, found: "\(error.found) (\(error.code))")
        default:
            return ToolError(path: path, location: parts.joined(separator: ", "), expected: "a readable file", found: "\(error)")
        }
    }
}
