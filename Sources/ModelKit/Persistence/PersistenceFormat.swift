import Foundation

/// The file formats ``ModelContext/write(to:format:)`` produces.
///
/// All three hold the same thing: a small envelope (format name, format version, the version of
/// ModelKit that wrote it) around the models in the ModelPointer format of ``Model/serialize(as:)``.
/// Loading tells them apart by their first bytes, so the file name does not matter.
///
/// ```swift
/// try context.write(to: url, format: .binaryPropertyList)
/// try other.load(from: url)                // detects the format itself
/// ```
public enum PersistenceFormat: Sendable, Hashable, CaseIterable {
    /// UTF-8 JSON text; dates, data and non-finite numbers as `__type` objects. The default.
    case json
    /// A binary property list (`bplist00`), readable by `PropertyListSerialization`.
    case binaryPropertyList
    /// An XML property list. Written through Foundation; read by ModelKit's own streaming reader,
    /// which keeps no member nobody reads.
    case xmlPropertyList
}

/// The envelope around the models in a persisted file.
enum Envelope {
    /// The value of the `format` key.
    static let formatName = "ModelKit"
    /// The major version of the file format this build writes. Readers accept this version and
    /// every earlier one; a larger one means the file needs a newer ModelKit.
    static let version: Int64 = 1
    /// The value of the `writtenBy` key: which implementation wrote the file, for diagnostics.
    static let writtenBy = "ModelKit-Swift 1.0"
}
