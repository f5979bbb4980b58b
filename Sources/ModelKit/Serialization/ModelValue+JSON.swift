import Foundation

// JSON text for ModelValue, written and parsed over bytes: no JSONSerialization, no NSNumber,
// so integers, doubles and booleans keep their exact kind and value.

extension ModelValue {
    /// Options for ``jsonData(options:)``.
    public struct JSONWritingOptions: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Newlines and two-space indentation.
        public static let prettyPrinted = JSONWritingOptions(rawValue: 1)
    }

    /// The value as UTF-8 JSON text.
    ///
    /// Dates, data and non-finite doubles are written in their `__type` forms
    /// (`{"__type": "Date", "iso": …}`, `{"__type": "Bytes", "base64": …}`,
    /// `{"__type": "Double", "value": "nan"}`), so the text reads back exactly.
    ///
    /// - Complexity: O(n) in the size of the output.
    public func jsonData(options: JSONWritingOptions = []) -> Data {
        let buffer = OutputBuffer(descriptor: nil)
        write(to: JSONSink(buffer: buffer))
        let compact = buffer.takeData()
        return options.contains(.prettyPrinted) ? JSONSink.prettyPrinted(compact) : compact
    }

    /// The value as a JSON string. See ``jsonData(options:)``.
    public func jsonString(options: JSONWritingOptions = []) -> String {
        String(decoding: jsonData(options: options), as: UTF8.self)
    }

    /// Parses UTF-8 JSON text.
    ///
    /// - Throws: ``SerializationError`` with code ``SerializationError/Code/malformedInput`` and the
    ///   byte offset of the problem, or ``SerializationError/Code/nestingTooDeep`` beyond
    ///   ``SerializationError/maximumDepth`` levels.
    /// - Complexity: O(n) in the size of the input.
    public init(json data: Data) throws {
        self = try data.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            // A UTF-8 byte order mark is allowed and skipped.
            let start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
            // The same tape the file loader reads, over the whole text: one JSON syntax for both.
            let tape = JSONTape(bytes: bytes)
            var scanner = JSONScanner(bytes: bytes, position: try tape.parse(at: start))
            scanner.skipWhitespace()
            guard scanner.position == bytes.count else { throw scanner.error(expected: "the end of the JSON text") }
            return try ModelValue(node: 0, in: JSONDocument(tape: tape))
        }
    }

    /// The value of a node of a parsed document, and of everything in it.
    ///
    /// Recursion is bounded: the parser refused nesting deeper than
    /// ``SerializationError/maximumDepth``.
    init<D: TreeDocument>(node: Int, in document: D) throws {
        switch document.kind(of: node) {
        case .null: self = .null
        case .bool: self = .bool(document.bool(node))
        case .integer, .real:
            switch try document.number(node) {
            case .int(let value): self = .int(value)
            case .uint(let value): self = .uint(value)
            case .double(let value): self = .double(value)
            }
        case .string: self = .string(try document.string(node))
        case .date: self = .date(Date(timeIntervalSinceReferenceDate: try document.date(node)))
        case .data: self = .data(try document.data(node))
        case .array:
            var elements: [ModelValue] = []
            elements.reserveCapacity(try document.count(of: node))
            try document.forEach(in: node) { _, value in
                elements.append(try ModelValue(node: value, in: document))
                return true
            }
            self = .array(elements)
        case .object:
            var object = Object()
            try document.forEach(in: node) { key, value in
                // A repeated key keeps its last value, as assigning each member in turn does.
                object[try document.string(key)] = try ModelValue(node: value, in: document)
                return true
            }
            self = .object(object)
        case .other:
            throw SerializationError(
                .malformedInput, byteOffset: document.byteOffset(of: node), expected: "a value ModelKit writes",
                found: document.describeNode(node))
        }
    }

    /// The `__type` object used for a date in the JSON form.
    static func jsonDate(_ date: Date) -> ModelValue {
        if let iso = ISODate.string(from: date) {
            return .object(Object([("__type", "Date"), ("iso", .string(iso))]))
        }
        // Far outside any calendar (or not finite): keep the exact number of seconds instead.
        return .object(Object([("__type", "Date"), ("referenceSeconds", jsonNumber(date.timeIntervalSinceReferenceDate))]))
    }

    static func jsonBytes(_ data: Data) -> ModelValue {
        .object(Object([("__type", "Bytes"), ("base64", .string(data.base64EncodedString()))]))
    }

    /// A double as JSON can hold it: a number, or a `__type` object for NaN and infinities.
    static func jsonNumber(_ value: Double) -> ModelValue {
        if value.isFinite { return .double(value) }
        let text = value.isNaN ? "nan" : (value < 0 ? "-inf" : "inf")
        return .object(Object([("__type", "Double"), ("value", .string(text))]))
    }
}

extension ModelValue {
    /// Writes the value to `sink`, as the streaming writer writes the same values: each pointer
    /// (as ``pointer(name:id:objectId:)`` makes it) through the sink's `pointer` call, since a
    /// sink may write pointers in a form of its own (records name their targets by object id)
    /// and count them.
    ///
    /// - Complexity: O(n) in the size of the value.
    func write(to sink: any GraphSink) {
        switch self {
        case .null: sink.null()
        case .bool(let flag): sink.bool(flag)
        case .int(let number): sink.int(number)
        case .uint(let number): sink.uint(number)
        case .double(let number): sink.double(number)
        case .string(let text): sink.string(text)
        case .date(let date): sink.date(date)
        case .data(let data): sink.data(data)
        case .array(let elements):
            sink.beginArray()
            for element in elements { element.write(to: sink) }
            sink.endArray()
        case .object(let object):
            if let (name, id, objectId) = Self.pointerParts(of: object) {
                return sink.pointer(name: name, id: id, objectId: objectId)
            }
            sink.beginObject()
            for (key, member) in object {
                sink.key(key)
                member.write(to: sink)
            }
            sink.endObject()
        }
    }
}

extension ModelValue: CustomStringConvertible {
    /// The value as compact JSON text (dates and data in their `__type` forms).
    public var description: String { jsonString() }
}

extension ModelValue.Object: CustomStringConvertible {
    /// The object as compact JSON text, in its keys' order: `{"name":"Jon","age":40}`.
    public var description: String { ModelValue.object(self).jsonString() }
}
