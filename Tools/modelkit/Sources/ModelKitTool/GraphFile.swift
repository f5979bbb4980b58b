import Foundation
import ModelKit

/// The three forms of a ModelKit file, told apart by their first bytes as the library does.
public enum FileFormat: String, Sendable, CaseIterable {
    case json
    case binary
    case xml

    /// The name `info` shows.
    public var title: String {
        switch self {
        case .json: "JSON"
        case .binary: "binary property list"
        case .xml: "XML property list"
        }
    }

    /// The format of a document starting with `bytes`.
    static func detected(in bytes: some Collection<UInt8>) -> FileFormat {
        if bytes.starts(with: Array("bplist00".utf8)) { return .binary }
        var rest = bytes[...]
        if rest.starts(with: [0xEF, 0xBB, 0xBF]) { rest = rest.dropFirst(3) }
        let first = rest.first { ![0x20, 0x0A, 0x0D, 0x09].contains($0) }
        return first == UInt8(ascii: "<") ? .xml : .json
    }
}

/// One model of a file, as the file holds it: no Swift type needed.
public struct ModelEntry: Sendable {
    /// Its position in the file's `models`, from 0.
    public let index: Int
    /// Where it starts in the file and how many bytes it takes (JSON files only).
    public let offset: Int?
    public let length: Int?
    /// The model's dictionary: `model`, `modelId`, `createdAt`, `updatedAt`, `properties`.
    public let value: ModelValue

    public var name: String { value["model"]?.stringValue ?? "?" }
    public var id: String { value["modelId"]?.stringValue ?? "?" }
    public var properties: ModelValue { value["properties"] ?? .object(ModelValue.Object()) }
    /// "model 3 (Post 5F0C…)", for messages.
    public var label: String { "model \(index) (\(name) \(id))" }
}

/// Reads ModelKit files without the app's model types. JSON is read in 1 MiB chunks with one
/// model parsed at a time (memory: a chunk and a model); property lists are read whole, since
/// their layout (an offset table at the end) does not allow reading them forward.
public enum GraphFile {
    /// The envelope's members other than `models` (`format`, `version`, `writtenBy`, `tracking`).
    public typealias Members = [String: ModelValue]

    /// Reads the file at `path`: `member` gets each envelope member, `model` each model in
    /// order and returns false to stop reading.
    ///
    /// - Throws: ``ToolError`` saying where the file stops making sense.
    @discardableResult
    public static func read(
        path: String, progress: ProgressReporter? = nil, member: (String, ModelValue) throws -> Void = { _, _ in },
        model: (ModelEntry) throws -> Bool
    ) throws -> FileFormat {
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
        guard !isDirectory.boolValue, let handle = FileHandle(forReadingAtPath: path) else {
            throw ToolError(
                path: path, expected: "a readable file",
                found: !exists ? "no such file" : (isDirectory.boolValue ? "a directory" : "a file this user cannot read"))
        }
        defer { try? handle.close() }
        do {
            return try read(handle, path: path, progress: progress, member: member, model: model)
        } catch let error as ToolError {
            throw error
        } catch let error as QueryError {
            throw error
        } catch {
            throw ToolError(path: path, expected: "a file that can be read to its end", found: "\(error.localizedDescription)")
        }
    }

    private static func read(
        _ handle: FileHandle, path: String, progress: ProgressReporter?, member: (String, ModelValue) throws -> Void,
        model: (ModelEntry) throws -> Bool
    ) throws -> FileFormat {
        let head = try handle.read(upToCount: 64) ?? Data()
        try handle.seek(toOffset: 0)
        let format = FileFormat.detected(in: head)
        if format == .json {
            var stream = ByteStream(handle: handle) { progress?.update(bytes: $0) }
            try JSONModelReader(path: path).read(&stream, member: member, model: model)
        } else {
            let data = handle.readDataToEndOfFile()
            progress?.update(bytes: data.count)
            try read(data: data, path: path, member: member, model: model)
        }
        return format
    }

    /// Reads a document held in memory (a journal record's, or a property list).
    public static func read(
        data: Data, path: String, base: Int = 0, member: (String, ModelValue) throws -> Void = { _, _ in },
        model: (ModelEntry) throws -> Bool
    ) throws {
        let document: ModelValue
        switch FileFormat.detected(in: data.prefix(64)) {
        case .json:
            do { document = try ModelValue(json: data) } catch { throw ToolError.from(error, path: path, base: base) }
        case .binary, .xml:
            let object: Any
            do {
                object = try PropertyListSerialization.propertyList(from: data, format: nil)
            } catch {
                throw ToolError(
                    path: path, expected: "a property list", found: "one Foundation cannot read (\(error.localizedDescription))")
            }
            do { document = try ModelValue(propertyList: object) } catch { throw ToolError.from(error, path: path) }
        }
        guard case .object(let envelope) = document else {
            throw ToolError(
                path: path, expected: "a ModelKit file: an object with format, version and models",
                found: "\(document)".prefix(60) + "")
        }
        for (key, value) in envelope where key != "models" { try member(key, value) }
        try checkEnvelope(Members(envelope.map { ($0, $1) }, uniquingKeysWith: { $1 }), path: path)
        guard let models = envelope["models"] else { return }
        guard case .array(let entries) = models else {
            throw ToolError(path: path, location: "models", expected: "an array of models", found: kind(of: models))
        }
        for (index, entry) in entries.enumerated() {
            guard try model(ModelEntry(index: index, offset: nil, length: nil, value: entry)) else { return }
        }
    }

    /// Checks the envelope's `format` and `version` as a load does.
    static func checkEnvelope(_ members: Members, path: String) throws {
        guard members["format"] == .string("ModelKit") else {
            throw ToolError(
                path: path, location: "format", expected: "\"ModelKit\"",
                found: members["format"].map { kind(of: $0) } ?? "no format member")
        }
        guard case .int(let version)? = members["version"] else {
            throw ToolError(
                path: path, location: "version", expected: "an integer",
                found: members["version"].map { kind(of: $0) } ?? "no version member")
        }
        guard version <= 1 else {
            throw ToolError(
                path: path, location: "version", expected: "format version 1 or earlier (this modelkit reads up to 1)",
                found: "version \(version): written by a newer ModelKit")
        }
    }

    /// A short description of a value, for messages.
    static func kind(of value: ModelValue) -> String {
        let text = value.jsonString()
        return text.count > 60 ? String(text.prefix(60)) + "…" : text
    }
}

/// The JSON envelope read forward: its members, then its models one at a time.
struct JSONModelReader {
    let path: String

    func read(
        _ stream: inout ByteStream, member: (String, ModelValue) throws -> Void, model: (ModelEntry) throws -> Bool
    ) throws {
        if try stream.byte(at: 0) == 0xEF, try stream.byte(at: 1) == 0xBB, try stream.byte(at: 2) == 0xBF {
            stream.position += 3
        }
        try expect(UInt8(ascii: "{"), &stream, "a ModelKit file: a JSON object")
        var members: GraphFile.Members = [:]
        var first = true
        var sawModels = false
        while true {
            guard let next = try stream.peek() else { throw stream.endOfFile(path: path, expected: "the rest of the file") }
            if next == UInt8(ascii: "}") && first {
                stream.position += 1
                break
            }
            if !first {
                if next == UInt8(ascii: "}") {
                    stream.position += 1
                    break
                }
                try expect(UInt8(ascii: ","), &stream, ", or } after a member")
                _ = try stream.peek()
            }
            first = false
            let keyOffset = stream.offset
            guard try stream.byte(at: 0) == UInt8(ascii: "\"") else {
                throw unexpected(&stream, "a member name in quotes")
            }
            let keyValue = try parse(&stream, at: keyOffset)
            guard let key = keyValue.stringValue else { throw unexpected(&stream, "a member name") }
            _ = try stream.peek()
            try expect(UInt8(ascii: ":"), &stream, ": after \"\(key)\"")
            _ = try stream.peek()
            if key == "models" {
                try GraphFile.checkEnvelope(members, path: path)
                sawModels = true
                if try readModels(&stream, model: model) { return }
            } else {
                let value = try parse(&stream, at: stream.offset)
                members[key] = value
                try member(key, value)
            }
        }
        if !sawModels { try GraphFile.checkEnvelope(members, path: path) }
        if let extra = try stream.peek() {
            throw ToolError(
                path: path, location: "byte \(stream.offset)", expected: "the end of the file",
                found: "more text (\(Self.describe(extra)))")
        }
    }

    /// Reads the models array; returns true when `model` asked to stop.
    private func readModels(_ stream: inout ByteStream, model: (ModelEntry) throws -> Bool) throws -> Bool {
        try expect(UInt8(ascii: "["), &stream, "an array of models")
        guard let next = try stream.peek() else { throw stream.endOfFile(path: path, expected: "the models") }
        if next == UInt8(ascii: "]") {
            stream.position += 1
            return false
        }
        var index = 0
        while true {
            let offset = stream.offset
            let length = try stream.valueLength(path: path)
            let data = stream.take(length)
            let value: ModelValue
            do { value = try ModelValue(json: data) } catch {
                throw ToolError.from(error, path: path, base: offset, model: index)
            }
            guard try model(ModelEntry(index: index, offset: offset, length: length, value: value)) else { return true }
            index += 1
            guard let next = try stream.peek() else {
                throw stream.endOfFile(path: path, expected: ", or ] after model \(index - 1)")
            }
            if next == UInt8(ascii: "]") {
                stream.position += 1
                return false
            }
            try expect(UInt8(ascii: ","), &stream, ", or ] after model \(index - 1)")
            _ = try stream.peek()
        }
    }

    private func parse(_ stream: inout ByteStream, at offset: Int) throws -> ModelValue {
        let length = try stream.valueLength(path: path)
        do { return try ModelValue(json: stream.take(length)) } catch { throw ToolError.from(error, path: path, base: offset) }
    }

    private func expect(_ byte: UInt8, _ stream: inout ByteStream, _ expected: String) throws {
        guard let found = try stream.peek() else { throw stream.endOfFile(path: path, expected: expected) }
        guard found == byte else { throw unexpected(&stream, expected) }
        stream.position += 1
    }

    private func unexpected(_ stream: inout ByteStream, _ expected: String) -> ToolError {
        let found = (try? stream.byte(at: 0)).flatMap { $0 }.map(Self.describe) ?? "the end of the file"
        return ToolError(path: path, location: "byte \(stream.offset)", expected: expected, found: found)
    }

    static func describe(_ byte: UInt8) -> String {
        (0x21...0x7E).contains(byte) ? "\"\(Character(Unicode.Scalar(byte)))\"" : String(format: "byte 0x%02X", byte)
    }
}
