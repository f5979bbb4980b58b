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
    @usableFromInline indirect enum Node {
        case always
        /// A condition on a model's properties, through a key path, and how an index could
        /// answer it.
        case typed((M) -> Bool, IndexProbe<M>?)
        /// A condition on a stored property, read where it lies in the properties (see
        /// `ScanProgram`), and how an index could answer it. The opener is made where the model
        /// type is known, so that opening a model's properties costs a few loads, not a call
        /// through the protocol.
        case inPlace(FieldMatcher.Kernel, IndexProbe<M>?, PropertiesOpener, InPlaceOrigin?)
        /// A condition on the value at a string key (a dotted path).
        case keyed(path: [String], condition: QueryCondition)
        /// A predicate on the models a reference property leads to: a maker of the test (one per
        /// run, since a test holds a reader's per-run state), and the check of the referenced
        /// type's predicate against its type.
        case related(make: () -> (M) throws -> Bool, validate: () throws -> Void)
        case and([Node])
        case or([Node])
        case not(Node)
        /// What combining predicates deeper than ``ModelPredicate/maximumNesting`` gives: it
        /// keeps none of them, so that no predicate is ever deeper than the limit (a deeper tree
        /// would overflow the stack when it is checked, run or even released), and running it
        /// throws.
        case tooDeep
    }

    /// The operands of a chain of `&&` or of `||` built one operand at a time (`p = p || q` in a
    /// loop). The predicates of such a chain share one array, each seeing a prefix of it, so that
    /// adding an operand to the longest appends in place: copying the operands for each one made
    /// building a chain of n quadratic (100,000 operands took minutes).
    final class Chain {
        let isAnd: Bool
        var nodes: [Node]

        init(isAnd: Bool, nodes: [Node]) {
            self.isAnd = isAnd
            self.nodes = nodes
        }
    }

    /// The predicate, unless it is a chain.
    private let single: Node
    /// The chain and how many of its operands this predicate has, for chains. Not private: the
    /// tests check that a chain built in a loop is one array appended to, without a clock.
    let chain: (operands: Chain, count: Int)?
    /// The nesting of `node`: 0 for ``all``, 1 for a condition, one more per `&&`, `||` or `!`
    /// around it (a chain of `&&` or of `||` is one level).
    let depth: Int

    /// The predicate as a tree.
    ///
    /// - Complexity: O(n) in the operands of a chain.
    @usableFromInline var node: Node {
        guard let (operands, count) = chain else { return single }
        let nodes = Array(operands.nodes[..<count])
        return operands.isAnd ? .and(nodes) : .or(nodes)
    }

    @usableFromInline init(_ node: Node) {
        single = node
        chain = nil
        depth = node.depth
    }

    private init(_ node: Node, depth: Int) {
        chain = nil
        if depth > Self.maximumNesting {
            single = .tooDeep
            self.depth = Self.maximumNesting + 1
        } else {
            single = node
            self.depth = depth
        }
    }

    private init(chain: Chain, count: Int, depth: Int) {
        if depth > Self.maximumNesting {
            single = .tooDeep
            self.chain = nil
            self.depth = Self.maximumNesting + 1
        } else {
            single = .always
            self.chain = (chain, count)
            self.depth = depth
        }
    }

    private var isAll: Bool {
        guard chain == nil, case .always = single else { return false }
        return true
    }

    /// The operands this predicate adds to a chain of `&&` (`isAnd`) or of `||`: its own, if
    /// it is such a chain, else itself.
    private func operands(isAnd: Bool) -> [Node] {
        if let (operands, count) = chain, operands.isAnd == isAnd { return Array(operands.nodes[..<count]) }
        if isAnd, case .and(let nodes) = single { return nodes }
        if !isAnd, case .or(let nodes) = single { return nodes }
        return [node]
    }

    private func isChain(isAnd: Bool) -> Bool {
        if let (operands, _) = chain { return operands.isAnd == isAnd }
        switch single {
        case .and: return isAnd
        case .or: return !isAnd
        default: return false
        }
    }

    /// `lhs && rhs` or `lhs || rhs`, one level deep however long the chain.
    ///
    /// - Complexity: O(1) amortized when `lhs` is the longest predicate of its chain (the usual
    ///   `p = p && q`), else O(n) in the operands.
    private static func chained(_ lhs: Self, _ rhs: Self, isAnd: Bool) -> Self {
        let left = lhs.isChain(isAnd: isAnd) ? lhs.depth : lhs.depth + 1
        let right = rhs.isChain(isAnd: isAnd) ? rhs.depth : rhs.depth + 1
        let depth = max(left, right, 1)
        let added = rhs.operands(isAnd: isAnd)
        if let (operands, count) = lhs.chain, operands.isAnd == isAnd, count == operands.nodes.count {
            operands.nodes.append(contentsOf: added)
            return Self(chain: operands, count: operands.nodes.count, depth: depth)
        }
        let chain = Chain(isAnd: isAnd, nodes: lhs.operands(isAnd: isAnd) + added)
        return Self(chain: chain, count: chain.nodes.count, depth: depth)
    }

    /// Every model matches.
    public static var all: Self { Self(.always) }

    /// The property at `keyPath` satisfies `condition`.
    @inlinable
    public static func `where`<Value>(_ keyPath: KeyPath<M.Properties, Value>, _ condition: Condition<Value>) -> Self {
        if condition.isTooDeep { return Self(.tooDeep) }
        let test = condition.test
        let probe = condition.plan.map { IndexProbe<M>(keyPath: keyPath, plan: $0) }
        // A key path to a stored property (also nested) is read at its offset, in the one pass a
        // scan makes over a model's properties for all such conditions: applying a key path at
        // run time costs more than the rest of the condition. A plain condition compiles to the
        // test its string-key form has; any other calls `test` on the property where it lies.
        if let offset = MemoryLayout<M.Properties>.offset(of: keyPath) {
            // Not `flatMap` and `??`: through their generic parameters, the test would be wrapped
            // in a thunk, one more call per model.
            if let operation = condition.operation,
                let read = FieldMatcher.make(Value.self, at: offset, optional: false, operation)
            {
                return Self(.inPlace(read, probe, PropertiesOpener(M.self), InPlaceOrigin(offset, optional: false, operation)))
            }
            return Self(
                .inPlace(
                    .closure { base in test(base.advanced(by: offset).assumingMemoryBound(to: Value.self).pointee) }, probe,
                    PropertiesOpener(M.self), InPlaceOrigin(offset, optional: false, condition.operation)))
        }
        return Self(.typed({ test($0.storage.values[keyPath: keyPath]) }, probe))
    }

    /// The optional property at `keyPath` satisfies `condition`: a value is tested, and nil
    /// matches as the string-key form decides (`notEquals` and `notIn` match nil, other conditions
    /// don't; see ``Condition``).
    ///
    /// ```swift
    /// Author.query().where(\.nickname, .notEquals("jo"))   // also the authors without a nickname
    /// ```
    @inlinable
    public static func `where`<Value>(_ keyPath: KeyPath<M.Properties, Value?>, _ condition: Condition<Value>) -> Self {
        if condition.isTooDeep { return Self(.tooDeep) }
        let test = condition.test
        let matchesNil = condition.matchesNil
        if let offset = MemoryLayout<M.Properties>.offset(of: keyPath) {
            // The compiled test answers nil as `matchesNil` does: only `notEquals` and `notIn` have
            // an operation that matches nil.
            if let operation = condition.operation,
                let read = FieldMatcher.make(Value.self, at: offset, optional: true, operation)
            {
                return Self(.inPlace(read, nil, PropertiesOpener(M.self), InPlaceOrigin(offset, optional: true, operation)))
            }
            return Self(
                .inPlace(
                    .closure { base in
                        guard let value = base.advanced(by: offset).assumingMemoryBound(to: Value?.self).pointee else {
                            return matchesNil
                        }
                        return test(value)
                    }, nil, PropertiesOpener(M.self), InPlaceOrigin(offset, optional: true, condition.operation)))
        }
        return Self(
            .typed(
                {
                    guard let value = $0.storage.values[keyPath: keyPath] else { return matchesNil }
                    return test(value)
                }, nil))
    }

    /// The model the to-one reference at `keyPath` leads to satisfies `predicate`: typed
    /// conditions through references, such as posts whose author is over 30:
    ///
    /// ```swift
    /// Post.query().filter(.where(\.author, .where(\.age, .greaterThan(30))))
    /// ```
    ///
    /// A reference to no model (or to a model no longer in a context) doesn't match.
    public static func `where`<Target: Model>(
        _ keyPath: KeyPath<M.Properties, ModelRef<Target>>, _ predicate: ModelPredicate<Target>
    ) -> Self {
        related(predicate) { model, test in
            guard let target = model.storage.values[keyPath: keyPath].target(lookupIn: model.storage.lookupContext)
            else { return false }
            return try test(target)
        }
    }

    /// At least one model of the to-many reference at `keyPath` satisfies `predicate`:
    ///
    /// ```swift
    /// Author.query().filter(.where(\.posts, any: .where(\.title, .beginsWith("Swift"))))
    /// ```
    public static func `where`<Target: Model>(
        _ keyPath: KeyPath<M.Properties, ModelArray<Target>>, any predicate: ModelPredicate<Target>
    ) -> Self {
        related(predicate) { model, test in
            let context = model.storage.lookupContext
            for reference in model.storage.values[keyPath: keyPath].references {
                if let target = reference.target(lookupIn: context), try test(target) { return true }
            }
            return false
        }
    }

    /// A condition on the models `M` references: `predicate`, compiled once per run, applied by
    /// `matches` to the targets of each model.
    private static func related<Target: Model>(
        _ predicate: ModelPredicate<Target>,
        _ matches: @escaping (M, _ test: (Target) throws -> Bool) throws -> Bool
    ) -> Self {
        let node = predicate.node
        return Self(
            .related(
                make: {
                    let program = ScanProgram(node, reader: PropertyValues<Target>(), indexes: [])
                    return { model in try matches(model) { try program.matches($0) } }
                }, validate: { try node.validate(Target.self) }))
    }

    /// The property at `key` satisfies `condition`. `key` may be a dotted path through nested
    /// structs and references: `"address.city"`, `"author.age"`.
    public static func `where`(_ key: String, _ condition: QueryCondition) -> Self {
        Self(.keyed(path: key.split(separator: ".", omittingEmptySubsequences: false).map(String.init), condition: condition))
    }

    /// Parses a predicate written in the query language, such as
    /// `age BETWEEN {24, 35} AND (name BEGINSWITH[c] 'jo' OR tags CONTAINS 'swift')`.
    ///
    /// See <doc:Querying> for the grammar. Text from users or servers is safe to pass: a text
    /// longer than ``maximumTextLength`` is refused before it is read, and one nested deeper
    /// than 256 levels at the level that goes over, without reading the rest.
    ///
    /// ```swift
    /// let search = try ModelPredicate<Author>("name BEGINSWITH[c] 'jo' AND age > 30")
    /// ```
    ///
    /// - Throws: ``QueryError/Code/syntax`` with the column of the first character that doesn't
    ///   fit the grammar, or past the maximum length.
    /// - Complexity: O(n) in the length of `text`, which is at most ``maximumTextLength``.
    public init(_ text: String) throws(QueryError) {
        var parser = try QueryParser(text, modelName: M.modelName, maximumLength: Self.maximumTextLength)
        self.init(try parser.parse())
    }

    /// The longest query-language text ``init(_:)`` (and `filter(_:)` with a string) accepts,
    /// in UTF-8 bytes: 65,536. Longer text fails with ``QueryError/Code/syntax`` before it is
    /// read. Build larger conditions (a long `IN` list, say) in code:
    /// `.where(\.objectId, .in(ids))`.
    public static var maximumTextLength: Int { maximumQueryTextLength }

    /// Both predicates hold.
    ///
    /// - Complexity: O(1) amortized for `p = p && q`.
    public static func && (lhs: Self, rhs: Self) -> Self {
        if lhs.isAll { return rhs }
        if rhs.isAll { return lhs }
        return chained(lhs, rhs, isAnd: true)
    }

    /// Either predicate holds.
    ///
    /// - Complexity: O(1) amortized for `p = p || q`.
    public static func || (lhs: Self, rhs: Self) -> Self {
        if lhs.isAll || rhs.isAll { return .all }
        return chained(lhs, rhs, isAnd: false)
    }

    /// The predicate doesn't hold.
    public static prefix func ! (predicate: Self) -> Self {
        // `!!p` is `p`: a chain of negations built in code stays one level deep.
        if predicate.chain == nil, case .not(let node) = predicate.single { return Self(node, depth: predicate.depth - 1) }
        return Self(.not(predicate.node), depth: predicate.depth + 1)
    }

    /// The deepest nesting of `&&`, `||` and `!` a query accepts: checking and running a
    /// predicate recurses through it, and a predicate built in code can be nested arbitrarily.
    public static var maximumNesting: Int { maximumQueryNesting }
}

/// ``ModelPredicate/maximumNesting``, for conditions too (see ``Condition``).
let maximumQueryNesting = 512

/// ``ModelPredicate/maximumTextLength``.
let maximumQueryTextLength = 65_536

extension ModelPredicate.Node {
    /// The nesting of a node made in one piece (by the parser, or a single condition).
    var depth: Int {
        switch self {
        case .always: 0
        case .typed, .inPlace, .keyed, .related: 1
        case .tooDeep: ModelPredicate<M>.maximumNesting + 1
        case .and(let nodes), .or(let nodes): 1 + nodes.reduce(0) { max($0, $1.depth) }
        case .not(let node): 1 + node.depth
        }
    }

    /// Checks the predicate against `M`'s default values (see `validate(template:modelName:)`).
    func validate(_ type: M.Type) throws {
        try validate(template: Self.template, modelName: M.modelName)
    }

    /// `M`'s default values, encoded: what keys and kinds are checked against.
    static var template: ModelValue.Object? {
        if case .object(let object)? = DefaultValues.of(M.self) { object } else { nil }
    }

    /// Checks every keyed condition against the model type before any model is read: unknown
    /// first keys and values of a kind the property can't hold are errors even in an empty context.
    func validate(template: ModelValue.Object?, modelName: String, depth: Int = 0) throws {
        guard depth < ModelPredicate<M>.maximumNesting else {
            throw QueryError(
                .invalidCondition, modelName: modelName,
                expected: "predicates nested at most \(ModelPredicate<M>.maximumNesting) levels deep",
                found: "deeper nesting")
        }
        switch self {
        case .always, .typed, .inPlace: return
        case .tooDeep:
            throw QueryError(
                .invalidCondition, modelName: modelName,
                expected: "predicates nested at most \(ModelPredicate<M>.maximumNesting) levels deep",
                found: "deeper nesting")
        case .related(_, let validate): try validate()
        case .and(let nodes), .or(let nodes):
            try nodes.forEach { try $0.validate(template: template, modelName: modelName, depth: depth + 1) }
        case .not(let node): try node.validate(template: template, modelName: modelName, depth: depth + 1)
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

/// Reads values by string key from one model after another, encoding each model's properties at
/// most once however many conditions and sort keys read them.
final class PropertyValues<M: Model> {
    let reader = PropertyReader()
    private var model: M?
    private var properties: ModelValue.Object?

    /// The value at `path` in `model`.
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

    /// Drops the encoding kept of the last model read: it may have changed since.
    func forget() {
        model = nil
        properties = nil
    }
}
