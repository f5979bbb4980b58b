import Foundation
import ModelKit

/// The fields of a record that a save writes: the UTF-8 JSON text of one object, in the JSON
/// form of ``ModelKit/ModelValue`` (dates, bytes and pointers as `__type` objects).
///
/// A save writes each record's text straight from its model, with no value tree in between, and
/// a backend sends ``jsonData`` as it is (Kinto puts it in its `/batch` body). An adapter that needs
/// the fields one by one reads ``values``.
///
/// ```swift
/// let fields: RecordFields = ["title": "Hello", "stars": 3]
/// print(String(decoding: fields.jsonData, as: UTF8.self))   // {"title":"Hello","stars":3}
/// print(fields.values["stars"] == 3)                     // true
/// ```
public struct RecordFields: Sendable, Equatable, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// The fields as UTF-8 JSON text: one object.
    public let jsonData: Data
    /// The values these fields were made from, when they were made from values.
    private let given: ModelValue.Object?

    /// Fields with these values.
    ///
    /// - Complexity: O(*n*) in the size of the values, which are written out as JSON text.
    public init(_ values: ModelValue.Object) {
        jsonData = ModelValue.object(values).jsonData()
        given = values
    }

    /// Fields with these values, in this order: `["title": "Hello", "stars": 3]`.
    ///
    /// - Complexity: O(*n*) in the size of the values, as ``init(_:)``.
    public init(dictionaryLiteral elements: (String, ModelValue)...) {
        self.init(ModelValue.Object(elements))
    }

    /// Fields whose text is `jsonData`, which must be one JSON object (a save's records are).
    init(jsonData: Data) {
        self.jsonData = jsonData
        given = nil
    }

    /// The fields as values.
    ///
    /// - Complexity: O(*n*) in the size of the text, which is parsed; an empty object if it does
    ///   not parse as one.
    public var values: ModelValue.Object {
        if let given { return given }
        guard case .object(let object)? = try? ModelValue(json: jsonData) else { return ModelValue.Object() }
        return object
    }

    /// The JSON text.
    public var description: String { String(decoding: jsonData, as: UTF8.self) }

    /// Whether both hold the same fields with the same values, whatever their order in the text.
    ///
    /// - Complexity: O(*n*) in the size of the texts, which are parsed.
    public static func == (lhs: RecordFields, rhs: RecordFields) -> Bool {
        lhs.jsonData == rhs.jsonData || lhs.values == rhs.values
    }
}
