import Foundation

/// An error from building or running a query: an unknown key, a value of the wrong type, or a
/// syntax error in a query string. Match it by ``code``:
///
/// ```swift
/// do {
///     let adults = try Author.query().filter("agee > 18").results()
/// } catch let error as QueryError where error.code == .unknownKey {
///     print(error)   // unknown key "agee" in Author: expected one of age, email, name, …
/// }
/// ```
public struct QueryError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A key that the model type's persisted properties don't have.
        public static let unknownKey = Code("unknownKey")
        /// A condition whose value can't be compared with the property's values.
        public static let incompatibleTypes = Code("incompatibleTypes")
        /// A query string that doesn't follow the grammar; ``QueryError/column`` says where.
        public static let syntax = Code("syntax")
        /// A condition that can't be used as given, such as a negative distance.
        public static let invalidCondition = Code("invalidCondition")
    }

    public let code: Code
    /// The model type queried.
    public let modelName: String?
    /// The key (a dotted path) of the condition or sort, when the error concerns one.
    public let key: String?
    /// For syntax errors, the column (1-based, in characters) where the query string went wrong.
    public let column: Int?
    /// What was expected there.
    public let expected: String
    /// What was found instead.
    public let found: String

    init(
        _ code: Code, modelName: String? = nil, key: String? = nil, column: Int? = nil, expected: String,
        found: String
    ) {
        self.code = code
        self.modelName = modelName
        self.key = key
        self.column = column
        self.expected = expected
        self.found = found
    }

    public var description: String {
        var place: [String] = []
        if let modelName { place.append("in \(modelName)") }
        if let key { place.append("key \"\(key)\"") }
        if let column { place.append("column \(column)") }
        let location = place.isEmpty ? "" : " (" + place.joined(separator: ", ") + ")"
        return "\(code)\(location): expected \(expected) but found \(found) instead"
    }
}

extension QueryError.Code {
    /// Matches an error against a code: `catch QueryError.Code.unknownKey`.
    public static func ~= (code: Self, error: any Error) -> Bool {
        (error as? QueryError)?.code == code
    }
}
