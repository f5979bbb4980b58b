import Foundation

/// The filter of a query: conditions on properties combined with `&&`, `||` and `!`, nested as
/// deep as needed (the seed planned OR and subqueries; here they are).
///
/// Build one from key paths (checked by the compiler), from string keys, or from the text query
/// language:
///
/// ```swift
/// let typed: ModelPredicate<Author> = .where(\.age, .between(24, 35))
///     && (.where(\.name, .beginsWith("jo", options: .caseInsensitive)) || .where(\.tags, .contains("swift")))
/// let keyed: ModelPredicate<Author> = .where("age", .between(24, 35))
/// let parsed = try ModelPredicate<Author>("age BETWEEN {24, 35} AND (name BEGINSWITH[c] 'jo' OR tags CONTAINS 'swift')")
/// ```
public struct ModelPredicate<M: Model> {
    indirect enum Node {
        case always
        /// A condition on the properties, through a key path.
        case typed((M.Properties) -> Bool)
        /// A condition on the value at a string key (a dotted path).
        case keyed(path: [String], condition: QueryCondition)
        case and([Node])
        case or([Node])
        case not(Node)
    }

    let node: Node

    init(_ node: Node) {
        self.node = node
    }

    /// Every model matches.
    public static var all: Self { Self(.always) }

    /// The property at `keyPath` satisfies `condition`.
    public static func `where`<Value>(_ keyPath: KeyPath<M.Properties, Value>, _ condition: Condition<Value>) -> Self {
        let test = condition.test
        return Self(.typed { test($0[keyPath: keyPath]) })
    }

    /// The optional property at `keyPath` is not nil and satisfies `condition`.
    public static func `where`<Value>(_ keyPath: KeyPath<M.Properties, Value?>, _ condition: Condition<Value>) -> Self {
        let test = condition.test
        return Self(
            .typed {
                guard let value = $0[keyPath: keyPath] else { return false }
                return test(value)
            })
    }

    /// The property at `key` satisfies `condition`. `key` may be a dotted path through nested
    /// structs and references: `"address.city"`, `"author.age"`.
    public static func `where`(_ key: String, _ condition: QueryCondition) -> Self {
        Self(.keyed(path: key.split(separator: ".", omittingEmptySubsequences: false).map(String.init), condition: condition))
    }

    /// Parses a predicate written in the query language, such as
    /// `age BETWEEN {24, 35} AND (name BEGINSWITH[c] 'jo' OR tags CONTAINS 'swift')`.
    ///
    /// See <doc:Querying> for the grammar.
    ///
    /// - Throws: ``QueryError/Code/syntax`` with the column of the first character that doesn't
    ///   fit the grammar.
    /// - Complexity: O(n) in the length of `text`.
    public init(_ text: String) throws(QueryError) {
        var parser = try QueryParser(text, modelName: M.modelName)
        self.init(try parser.parse())
    }

    /// Both predicates hold.
    public static func && (lhs: Self, rhs: Self) -> Self {
        switch (lhs.node, rhs.node) {
        case (.always, _): return rhs
        case (_, .always): return lhs
        case (.and(let a), .and(let b)): return Self(.and(a + b))
        case (.and(let a), _): return Self(.and(a + [rhs.node]))
        case (_, .and(let b)): return Self(.and([lhs.node] + b))
        default: return Self(.and([lhs.node, rhs.node]))
        }
    }

    /// Either predicate holds.
    public static func || (lhs: Self, rhs: Self) -> Self {
        switch (lhs.node, rhs.node) {
        case (.always, _), (_, .always): return .all
        case (.or(let a), .or(let b)): return Self(.or(a + b))
        case (.or(let a), _): return Self(.or(a + [rhs.node]))
        case (_, .or(let b)): return Self(.or([lhs.node] + b))
        default: return Self(.or([lhs.node, rhs.node]))
        }
    }

    /// The predicate doesn't hold.
    public static prefix func ! (predicate: Self) -> Self {
        Self(.not(predicate.node))
    }
}

extension ModelPredicate.Node {
    /// Whether any condition needs the string-key reader (and so the encoded properties).
    var usesKeys: Bool {
        switch self {
        case .always, .typed: return false
        case .keyed: return true
        case .and(let nodes), .or(let nodes): return nodes.contains { $0.usesKeys }
        case .not(let node): return node.usesKeys
        }
    }

    /// Checks every keyed condition against the model type before any model is read: unknown
    /// first keys and values of a kind the property can't hold are errors even in an empty context.
    func validate(template: ModelValue.Object?, modelName: String) throws {
        switch self {
        case .always, .typed: return
        case .and(let nodes), .or(let nodes): try nodes.forEach { try $0.validate(template: template, modelName: modelName) }
        case .not(let node): try node.validate(template: template, modelName: modelName)
        case .keyed(let path, let condition):
            try condition.validate(key: path.joined(separator: "."), modelName: modelName)
            guard let template else { return }
            var value = ModelValue.object(template)
            for (depth, key) in path.enumerated() {
                guard case .object(let object) = value, object["__type"] == nil else { return }  // references: checked per model
                guard let next = object[key] else {
                    throw QueryError(
                        .unknownKey, modelName: modelName, key: path.joined(separator: "."),
                        expected: "one of " + object.keys.joined(separator: ", "),
                        found: depth == 0 ? "\"\(key)\"" : "\"\(key)\" in \(path[..<depth].joined(separator: "."))")
                }
                value = next
            }
            // A non-nil default shows the property's kind: probe the condition with it.
            if value != .null {
                _ = try condition.matches(value, key: path.joined(separator: "."), modelName: modelName)
            }
        }
    }
}

/// Evaluates a predicate against models, one model at a time.
final class PredicateEvaluator<M: Model> {
    let node: ModelPredicate<M>.Node
    let reader = PropertyReader()
    private let needsProperties: Bool
    private var model: M?
    private var properties: ModelValue.Object?

    init(_ node: ModelPredicate<M>.Node) {
        self.node = node
        self.needsProperties = node.usesKeys
    }

    func matches(_ model: M) throws -> Bool {
        self.model = model
        properties = nil
        return try evaluate(node, model)
    }

    private func evaluate(_ node: ModelPredicate<M>.Node, _ model: M) throws -> Bool {
        switch node {
        case .always: return true
        case .typed(let test): return test(model.storage.values)
        case .and(let nodes):
            for node in nodes where try !evaluate(node, model) { return false }
            return true
        case .or(let nodes):
            for node in nodes where try evaluate(node, model) { return true }
            return false
        case .not(let node): return try !evaluate(node, model)
        case .keyed(let path, let condition):
            let value = try self.value(at: path, of: model)
            return try condition.matches(value, key: path.joined(separator: "."), modelName: M.modelName)
        }
    }

    /// The value at `path` in `model`, encoding its properties at most once per model.
    func value(at path: [String], of model: M) throws -> ModelValue {
        if self.model !== model {
            self.model = model
            properties = nil
        }
        let object: ModelValue.Object
        if let properties {
            object = properties
        } else {
            object = try PropertyReader.properties(of: model)
            properties = object
        }
        return try reader.value(at: path, in: object, of: model)
    }
}
