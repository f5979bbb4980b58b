/// An error from serializing or deserializing models: says where and what was expected.
///
/// ```swift
/// do {
///     let author = try Author.instance(fromJSON: data)
/// } catch let error as SerializationError where error.code == .unknownModel {
///     print(error.modelIndex ?? -1, error.found)    // 3 "Autor" (with the quotes)
/// } catch SerializationError.Code.danglingPointer {
///     // `~=` matches an error against a code
/// }
/// ```
///
/// Its ``description`` reads like
/// `Model index 2 (Post), properties.author: expected a pointer to a model in the data but found modelId 7E… instead.`
public struct SerializationError: Error, CustomStringConvertible, Sendable {
    /// What went wrong.
    public let code: Code
    /// The position of the offending model in the serialized array (0 for a single dictionary).
    public let modelIndex: Int?
    /// The model name written at that position, when it could be read.
    public let modelName: String?
    /// The path to the offending value inside the model, such as `properties.tags[2]`; empty when
    /// the model's header itself is at fault.
    public let path: String
    /// The byte offset in the input, for errors found while parsing bytes.
    public let byteOffset: Int?
    /// What was expected at that place.
    public let expected: String
    /// What was found instead.
    public let found: String

    init(
        _ code: Code, modelIndex: Int? = nil, modelName: String? = nil, path: String = "", byteOffset: Int? = nil,
        expected: String, found: String
    ) {
        self.code = code
        self.modelIndex = modelIndex
        self.modelName = modelName
        self.path = path
        self.byteOffset = byteOffset
        self.expected = expected
        self.found = found
    }

    func located(modelIndex: Int, modelName: String?) -> SerializationError {
        SerializationError(
            code, modelIndex: self.modelIndex ?? modelIndex, modelName: self.modelName ?? modelName, path: path,
            byteOffset: byteOffset, expected: expected, found: found)
    }

    /// The error at `path` (a property path such as `properties.count`) when it has none yet:
    /// for errors from readers that know bytes, not properties.
    func at(path newPath: String) -> SerializationError {
        guard path.isEmpty else { return self }
        return SerializationError(
            code, modelIndex: modelIndex, modelName: modelName, path: newPath, byteOffset: byteOffset, expected: expected,
            found: found)
    }

    /// The error of a store's journal record at `record` whose document starts at `document`:
    /// the path names the record, and the byte offset counts from the journal's start.
    func inJournalRecord(at record: Int, documentAt document: Int) -> SerializationError {
        SerializationError(
            code, modelIndex: modelIndex, modelName: modelName,
            path: "journal record at byte \(record)" + (path.isEmpty ? "" : ", " + path),
            byteOffset: byteOffset.map { document + $0 }, expected: expected, found: found)
    }

    /// The error without its byte offset: for input read through a conversion, whose offsets
    /// are not the file's.
    func withoutByteOffset() -> SerializationError {
        SerializationError(
            code, modelIndex: modelIndex, modelName: modelName, path: path, byteOffset: nil, expected: expected,
            found: found)
    }

    public var description: String {
        var location: [String] = []
        if let byteOffset { location.append("Byte offset \(byteOffset)") }
        if let modelIndex {
            location.append(modelName.map { "Model index \(modelIndex) (\($0))" } ?? "Model index \(modelIndex)")
        }
        if !path.isEmpty { location.append(path) }
        let prefix = location.isEmpty ? "" : location.joined(separator: ", ") + ": "
        return "\(prefix)expected \(expected) but found \(found) instead. [\(code)]"
    }

    /// The kinds of serialization errors. Compare with `==`, or match an `Error` against one with
    /// `~=` (in `catch` clauses and `switch`).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// A value has the wrong type, such as a string where a number belongs.
        public static let typeMismatch = Code("typeMismatch")
        /// A required value is missing.
        public static let valueNotFound = Code("valueNotFound")
        /// A number does not fit in the property's type, such as 300 for a `UInt8`.
        public static let numberOutOfRange = Code("numberOutOfRange")
        /// A value has the right type but is not valid (a malformed date, base64 text or URL).
        public static let invalidValue = Code("invalidValue")
        /// A model name that no registered type has.
        public static let unknownModel = Code("unknownModel")
        /// A `ModelPointer` to a model that is not in the data.
        public static let danglingPointer = Code("danglingPointer")
        /// Two models in the data share a model id.
        public static let duplicateModelId = Code("duplicateModelId")
        /// Two models of one type share an object id: in the data, or one in the data and one
        /// in the context. A context holds one model per type and object id.
        public static let duplicateObjectId = Code("duplicateObjectId")
        /// A model id that is not in the `8-4-4-4-12` hexadecimal form.
        public static let invalidModelId = Code("invalidModelId")
        /// The data or the model type does not match what the caller or the context expects
        /// (a root of the wrong type, or an id the context holds as another type).
        public static let modelTypeConflict = Code("modelTypeConflict")
        /// Values nested deeper than the limit, for example a cycle among non-model objects.
        public static let nestingTooDeep = Code("nestingTooDeep")
        /// Input that would make more than a documented limit allows, such as a binary property
        /// list whose shared objects would decode to far more than its size (see
        /// Docs/Persistence.md, "Limits").
        public static let limitExceeded = Code("limitExceeded")
        /// Input bytes that are not well-formed (JSON syntax, invalid UTF-8, truncated data).
        public static let malformedInput = Code("malformedInput")
        /// A file written by a newer, incompatible version of the format.
        public static let unsupportedVersion = Code("unsupportedVersion")
        /// A stored property that the model's `Properties` does not decode (renamed without
        /// ``PropertyRenaming``, or removed), with
        /// ``DeserializationOptions/unknownKeys`` set to ``DeserializationOptions/UnknownKeyPolicy/fail``.
        /// ``SerializationError/path`` is `properties.<key>`; ``SerializationError/found`` names
        /// the key and the model's id.
        public static let unknownKey = Code("unknownKey")
        /// A model a ``ModelStore`` saves refers to a model that is not in the store's context
        /// (it is in another context, or in none). The store could not follow that model's later
        /// changes, so the save refuses it: make it with `instance(in: store.context)`, or insert
        /// it there. ``SerializationError/found`` names the model.
        public static let foreignReference = Code("foreignReference")
    }

    /// The nesting depth beyond which encoding and decoding stop with ``Code/nestingTooDeep``.
    /// Model references do not count: they are flattened, so graphs of any length are fine.
    public static let maximumDepth = 512
}

extension SerializationError.Code {
    /// Whether `error` is a ``SerializationError`` with this code.
    public static func ~= (code: SerializationError.Code, error: any Error) -> Bool {
        (error as? SerializationError)?.code == code
    }
}
