import Foundation

/// A query-language filter for models read without their Swift types, as a file holds them: what
/// the `modelkit` command-line tool uses to query any file (see <doc:Querying>).
///
/// It takes the text of ``ModelPredicate/init(_:)`` and checks it against a model's
/// `properties` object, in either form a file holds (JSON's `{"__type": "Date", …}` objects or a
/// property list's dates). A dotted key walks into nested objects; it does not follow a reference
/// (the model it points to is not at hand), so a key through a `ModelPointer` reads as `nil`.
///
/// ```swift
/// let filter = try ModelValueFilter("title BEGINSWITH[c] 'swift' AND views > 10")
/// let properties: ModelValue = ["title": "Swift on Linux", "views": 12]
/// print(try filter.matches(properties))     // true
/// ```
public struct ModelValueFilter: Sendable {
    /// The parsed query, without the closures a typed predicate may hold.
    private indirect enum Node: Sendable {
        case always
        case keyed(path: [String], condition: QueryCondition)
        case and([Node])
        case or([Node])
        case not(Node)
    }

    private let node: Node

    /// Parses `text` in the query language.
    ///
    /// - Throws: ``QueryError/Code/syntax`` with the column of the first character that doesn't
    ///   fit the grammar; ``QueryError/Code/invalidCondition`` for a condition that can never hold
    ///   (a negative distance).
    /// - Complexity: O(n) in the length of `text`, at most ``ModelPredicate/maximumTextLength``.
    public init(_ text: String) throws(QueryError) {
        var parser = try QueryParser(text, modelName: "", maximumLength: maximumQueryTextLength)
        let parsed: ModelPredicate<UntypedModel>.Node = try parser.parse()
        node = try Self.convert(parsed)
    }

    private static func convert(_ node: ModelPredicate<UntypedModel>.Node) throws(QueryError) -> Node {
        switch node {
        case .keyed(let path, let condition):
            do {
                try condition.validate(key: path.joined(separator: "."), modelName: "")
            } catch let error as QueryError {
                throw error
            } catch {
                throw QueryError(.invalidCondition, modelName: "", expected: "a valid condition", found: "\(error)")
            }
            return .keyed(path: path, condition: condition)
        case .and(let nodes): return .and(try nodes.map { node throws(QueryError) in try convert(node) })
        case .or(let nodes): return .or(try nodes.map { node throws(QueryError) in try convert(node) })
        case .not(let inner): return .not(try convert(inner))
        // The parser makes only the cases above and `always`.
        case .always, .typed, .inPlace, .related, .tooDeep: return .always
        }
    }

    /// Whether `properties` (a model's `properties` object) satisfies the filter.
    ///
    /// - Parameters:
    ///   - properties: the model's `properties` object, as a file holds it.
    ///   - modelName: the model's name, for errors.
    /// - Throws: ``QueryError/Code/incompatibleTypes`` when a value's kind can't be compared with
    ///   the condition's (a string property against a number), as a typed query does; a key the
    ///   model does not have reads as `nil` (models of several types share one filter).
    /// - Complexity: O(n) in the conditions, each O(m) in the value it reads.
    public func matches(_ properties: ModelValue, modelName: String = "") throws(QueryError) -> Bool {
        do {
            return try Self.evaluate(node, properties, modelName: modelName)
        } catch let error as QueryError {
            throw error
        } catch {
            throw QueryError(.incompatibleTypes, modelName: modelName, expected: "comparable values", found: "\(error)")
        }
    }

    private static func evaluate(_ node: Node, _ properties: ModelValue, modelName: String) throws -> Bool {
        switch node {
        case .always: return true
        case .and(let nodes): return try nodes.allSatisfy { try evaluate($0, properties, modelName: modelName) }
        case .or(let nodes): return try nodes.contains { try evaluate($0, properties, modelName: modelName) }
        case .not(let inner): return try !evaluate(inner, properties, modelName: modelName)
        case .keyed(let path, let condition):
            return try condition.matches(
                value(at: path[...], in: properties), key: path.joined(separator: "."), modelName: modelName)
        }
    }

    /// The value at `path`, in the property-list form conditions compare (native dates and data).
    private static func value(at path: ArraySlice<String>, in value: ModelValue) -> ModelValue {
        let value = native(value)
        guard let key = path.first else { return value }
        switch value {
        case .array(let elements): return .array(elements.map { Self.value(at: path, in: $0) })
        case .object(let object) where object["__type"] == nil:
            return object[key].map { Self.value(at: path.dropFirst(), in: $0) } ?? .null
        default: return .null
        }
    }

    /// `value` with a JSON file's tagged dates and bytes as native values, and `{"__type":
    /// "Null"}` (a property list's null) as null.
    private static func native(_ value: ModelValue) -> ModelValue {
        guard case .object(let object) = value, case .string(let type)? = object["__type"] else {
            if case .array(let elements) = value, elements.contains(where: { if case .object = $0 { true } else { false } }) {
                return .array(elements.map(native))
            }
            return value
        }
        switch type {
        case "Date":
            if case .string(let text)? = object["iso"], let date = ISODate.date(from: text) { return .date(date) }
        case "Bytes":
            if case .string(let text)? = object["base64"], let data = Data(base64Encoded: text) { return .data(data) }
        case "Null":
            return .null
        default: break
        }
        return value
    }

    /// The order of two property values for sorting: values in either form of a file, numbers
    /// by value, strings by Unicode scalars, dates by time; `nil` first, then values of different
    /// kinds by kind (booleans, numbers, strings, dates, anything else).
    ///
    /// ```swift
    /// let sorted = values.sorted { ModelValueFilter.compare($0, $1) == .orderedAscending }
    /// ```
    ///
    /// - Complexity: O(n) in the length of strings, O(1) otherwise.
    public static func compare(_ lhs: ModelValue, _ rhs: ModelValue) -> ComparisonResult {
        let (a, b) = (native(lhs), native(rhs))
        if let order = a.compare(to: b) { return order }
        let (x, y) = (rank(a), rank(b))
        return x == y ? .orderedSame : (x < y ? .orderedAscending : .orderedDescending)
    }

    private static func rank(_ value: ModelValue) -> Int {
        switch value {
        case .null: 0
        case .bool: 1
        case .int, .uint, .double: 2
        case .string: 3
        case .date: 4
        default: 5
        }
    }
}

/// The model type the parser builds a ``ModelValueFilter``'s nodes for: never instantiated.
final class UntypedModel: ModelObject<UntypedModel.Properties> {
    struct Properties: ModelProperties {}
}
