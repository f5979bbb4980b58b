import Foundation
import ModelKit

/// What a query asks of a backend: the conditions it sends, whether the backend's answer is then
/// exactly the query's filter, which references the client must follow to evaluate the rest, and
/// the order the backend can apply.
///
/// The rule: a condition is sent only when the backend's answer holds every record the condition
/// matches (``RecordConditionSupport/superset`` or better), for every value ModelKit writes.
/// What is not sent, or not exact, is evaluated again on the client, over the candidates, by the
/// query itself; so sending less is never wrong, only slower.
struct RemoteQueryPlan {
    /// Conditions that all hold for every match, each accepted by the backend.
    private(set) var conditions: [RecordCondition] = []
    /// Whether the backend's answer to `conditions` is exactly the query's matches.
    private(set) var isExact = true
    /// The names of the fields whose references the client follows, and how many hops deep;
    /// `nil` hops: every reference, to any depth.
    private(set) var followedFields: Set<String> = []
    private(set) var followedDepth: Int? = 0
    /// The order the backend applies, equal to the query's (ties by model id, as locally), when
    /// the filter is exact and every sort key is one the backend orders as ModelKit does.
    private(set) var serverOrder: [RecordSortKey]?

    /// How many conditions the query had, and how many of them were sent: for tests and
    /// diagnostics.
    private(set) var leafCount = 0
    private(set) var sentLeafCount = 0

    init<M: Model>(_ outline: QueryOutline, _ type: M.Type, service: any ModelService) {
        var sent = Set<String>()
        let parts = translate(outline.filter, M.self, service)
        for condition in parts.conditions {
            // One condition per field and operator: a backend may not take the same parameter
            // twice. The rest stays on the client.
            if sent.insert("\(condition.field) \(condition.op)").inserted {
                conditions.append(condition)
            } else {
                isExact = false
            }
        }
        if !parts.exact { isExact = false }
        for key in outline.sortKeys {
            if case .key(let path, _, _) = key { follow(path, M.self) }
        }
        serverOrder = Self.order(outline, M.self, service, exact: isExact)
    }

    /// The order to ask for, or `nil` when only the client can order the results.
    private static func order<M: Model>(_ outline: QueryOutline, _ type: M.Type, _ service: any ModelService, exact: Bool)
        -> [RecordSortKey]?
    {
        guard exact, service.canSort(by: .modelId) else { return nil }
        var keys: [RecordSortKey] = []
        for key in outline.sortKeys {
            guard case .key(let path, let ascending, let options) = key, options.isEmpty,
                let field = Self.field(path, M.self), service.canSort(by: field)
            else { return nil }
            keys.append(RecordSortKey(field, ascending: ascending))
        }
        // Ties go by model id, as the query orders them locally.
        keys.append(RecordSortKey(.modelId, ascending: true))
        return keys
    }

    /// The record field of a stored property of a kind conditions can describe.
    static func field<M: Model>(_ path: [String], _ type: M.Type) -> RecordField? {
        guard let (kind, optional) = M.storedField(at: path) else { return nil }
        let recordKind: RecordField.Kind
        switch kind {
        case .int, .uint: recordKind = .integer
        case .double: recordKind = .double
        case .string: recordKind = .string
        case .bool: recordKind = .bool
        case .strings: recordKind = .strings
        case .date, .geoPoint: return nil
        }
        return RecordField(path: path, kind: recordKind, isOptional: optional)
    }

    /// Notes the references a condition or sort key at `path` reads through: a path that is
    /// not a stored field of `M` may lead through references, as many hops as it has steps.
    private mutating func follow<M: Model>(_ path: [String], _ type: M.Type) {
        guard M.storedField(at: path) == nil else { return }
        followedFields.formUnion(path)
        if let depth = followedDepth { followedDepth = max(depth, path.count) }
    }

    private mutating func translate<M: Model>(_ filter: QueryOutline.Filter, _ type: M.Type, _ service: any ModelService)
        -> (conditions: [RecordCondition], exact: Bool)
    {
        switch filter {
        case .all:
            return ([], true)
        case .opaque:
            leafCount += 1
            return ([], false)
        case .related:
            leafCount += 1
            followedDepth = nil
            return ([], false)
        case .condition(let path, let condition):
            leafCount += 1
            follow(path, M.self)
            let part = sendable(Self.equivalent(path, condition, negated: false, M.self), service)
            // A box is never exactly a circle, nor a text range exactly a date range, whatever
            // the backend says of their bounds.
            return (part.conditions, part.exact && condition.op != .within && !Self.isDate(path, M.self))
        case .not(.condition(let path, let condition)):
            leafCount += 1
            follow(path, M.self)
            return sendable(Self.equivalent(path, condition, negated: true, M.self), service)
        case .not(.not(let inner)):
            return translate(inner, M.self, service)
        case .not(.and(let filters)):
            // De Morgan: the negations of the leaves have exact equivalents (nil included).
            return translate(.or(filters.map { .not($0) }), M.self, service)
        case .not(.or(let filters)):
            return translate(.and(filters.map { .not($0) }), M.self, service)
        case .not(let inner):
            // Nothing else negated is sent; what it reads is still followed.
            let before = sentLeafCount
            _ = translate(inner, M.self, service)
            sentLeafCount = before
            return ([], false)
        case .and(let filters):
            var conditions: [RecordCondition] = []
            var exact = true
            for filter in filters {
                let part = translate(filter, M.self, service)
                conditions += part.conditions
                exact = exact && part.exact
            }
            // A date's lower and upper bounds, each unsendable alone, together make a range.
            for range in Self.dateRanges(filters, M.self) {
                let before = sentLeafCount
                let part = sendable(range.conditions, service)
                if sentLeafCount > before { sentLeafCount = before + range.leaves }
                conditions += part.conditions
                exact = false
            }
            return (conditions, exact)
        case .or(let filters):
            // Equalities and memberships on one field become one membership; anything else
            // makes the whole OR a client-side condition.
            var field: RecordField?
            var values: [ModelValue] = []
            var mergeable = true
            for filter in filters {
                let before = sentLeafCount
                let part = translate(filter, M.self, service)
                sentLeafCount = before
                guard mergeable, part.exact, part.conditions.count == 1, let condition = part.conditions.first,
                    condition.op == .equal || condition.op == .in, field == nil || field == condition.field
                else {
                    mergeable = false
                    continue
                }
                field = condition.field
                values += condition.values
            }
            guard mergeable, let field, !values.isEmpty else { return ([], false) }
            let merged = RecordCondition(field, .in, values)
            switch service.evaluation(of: merged) {
            case .unsupported: return ([], false)
            case .superset:
                sentLeafCount += filters.count
                return ([merged], false)
            case .exact:
                sentLeafCount += filters.count
                return ([merged], true)
            }
        }
    }

    /// The conditions of `equivalent` the backend takes, and whether they are exact.
    private mutating func sendable(_ equivalent: [RecordCondition]?, _ service: any ModelService)
        -> (conditions: [RecordCondition], exact: Bool)
    {
        guard let equivalent else { return ([], false) }
        var kept: [RecordCondition] = []
        var exact = true
        for condition in equivalent {
            switch service.evaluation(of: condition) {
            case .unsupported: exact = false
            case .superset:
                kept.append(condition)
                exact = false
            case .exact: kept.append(condition)
            }
        }
        if !kept.isEmpty || equivalent.isEmpty { sentLeafCount += 1 }
        return (kept, exact)
    }

    /// Record conditions that, together, decide exactly as the string-key condition (or its
    /// negation) does on every value of the property, nil included; `nil` when there are none.
    static func equivalent<M: Model>(_ path: [String], _ condition: QueryCondition, negated: Bool, _ type: M.Type)
        -> [RecordCondition]?
    {
        if condition.op == .within {
            guard !negated, let (kind, optional) = M.storedField(at: path), kind == .geoPoint, let center = condition.center
            else { return nil }
            return boundingBox(path, optional: optional, center: center, kilometers: condition.kilometers)
        }
        if let (kind, optional) = M.storedField(at: path), kind == .date {
            guard !negated, condition.options.isEmpty else { return nil }
            return dateEquivalent(path, condition, optional: optional)
        }
        guard condition.options.isEmpty, let field = field(path, M.self) else { return nil }
        let values = condition.values
        func fits(_ value: ModelValue) -> Bool {
            switch (field.kind, value) {
            case (_, .null): true
            case (.integer, .int), (.integer, .uint), (.bool, .bool), (.string, .string), (.strings, .string): true
            case (.double, .int), (.double, .uint): true
            case (.double, .double(let number)): number.isFinite
            default: false
            }
        }
        func one(_ op: RecordCondition.Operator, _ value: ModelValue) -> [RecordCondition]? {
            guard fits(value), field.kind != .strings else { return nil }
            return [RecordCondition(field, op, [value])]
        }
        func ordered(_ op: RecordCondition.Operator, _ value: ModelValue) -> [RecordCondition]? {
            // A nil operand orders nothing; strings and bools order differently on servers.
            guard value != .null, field.kind == .integer || field.kind == .double else { return nil }
            return one(op, value)
        }
        // An ordering's negation also matches nil: only a property that is never nil has one.
        let complementable = !field.isOptional && field.kind == .integer
        switch (condition.op, negated) {
        case (.exists, false), (.notExists, true): return [RecordCondition(field, .notEqual, [.null])]
        case (.notExists, false), (.exists, true): return [RecordCondition(field, .equal, [.null])]
        case (.equal, false), (.notEqual, true): return values.count == 1 ? one(.equal, values[0]) : nil
        case (.notEqual, false), (.equal, true): return values.count == 1 ? one(.notEqual, values[0]) : nil
        case (.in, false), (.notIn, true):
            guard !values.isEmpty, field.kind != .strings, values.allSatisfy(fits) else { return nil }
            return [RecordCondition(field, .in, values)]
        case (.notIn, false), (.in, true):
            guard field.kind != .strings, values.allSatisfy(fits) else { return nil }
            return values.isEmpty ? [] : [RecordCondition(field, .notIn, values)]
        case (.greater, false): return values.count == 1 ? ordered(.greaterThan, values[0]) : nil
        case (.greaterOrEqual, false): return values.count == 1 ? ordered(.greaterThanOrEqual, values[0]) : nil
        case (.less, false): return values.count == 1 ? ordered(.lessThan, values[0]) : nil
        case (.lessOrEqual, false): return values.count == 1 ? ordered(.lessThanOrEqual, values[0]) : nil
        case (.greater, true): return complementable && values.count == 1 ? ordered(.lessThanOrEqual, values[0]) : nil
        case (.greaterOrEqual, true): return complementable && values.count == 1 ? ordered(.lessThan, values[0]) : nil
        case (.less, true): return complementable && values.count == 1 ? ordered(.greaterThanOrEqual, values[0]) : nil
        case (.lessOrEqual, true): return complementable && values.count == 1 ? ordered(.greaterThan, values[0]) : nil
        case (.between, false):
            guard values.count == 2, let low = ordered(.greaterThanOrEqual, values[0]),
                let high = ordered(.lessThanOrEqual, values[1])
            else { return nil }
            return low + high
        case (.contains, false) where field.kind == .strings:
            guard values.count == 1, case .string = values[0] else { return nil }
            return [RecordCondition(field, .containsAll, values)]
        case (.beginsWith, false), (.endsWith, false), (.contains, false):
            guard field.kind == .string, values.count == 1, case .string(let text) = values[0] else { return nil }
            // The empty string begins, ends and is in every string, and in no nil.
            if text.isEmpty { return field.isOptional ? [RecordCondition(field, .notEqual, [.null])] : [] }
            let literal = Self.escaped(text)
            let pattern =
                switch condition.op {
                case .beginsWith: literal + "*"
                case .endsWith: "*" + literal
                default: "*" + literal + "*"
                }
            return [RecordCondition(field, .like, [.string(pattern)])]
        case (.like, false):
            guard field.kind == .string, values.count == 1, case .string = values[0] else { return nil }
            return [RecordCondition(field, .like, values)]
        case (.containsAll, false):
            guard field.kind == .strings, values.allSatisfy({ if case .string = $0 { true } else { false } }) else { return nil }
            if values.isEmpty { return field.isOptional ? [RecordCondition(field, .notEqual, [.null])] : [] }
            return [RecordCondition(field, .containsAll, values)]
        case (.containsAny, false):
            guard field.kind == .strings, !values.isEmpty, values.allSatisfy({ if case .string = $0 { true } else { false } })
            else { return nil }
            return [RecordCondition(field, .containsAny, values)]
        default:
            return nil
        }
    }

    /// `text` as a pattern that matches it literally.
    private static func escaped(_ text: String) -> String {
        var pattern = ""
        for character in text {
            if character == "*" || character == "?" || character == "\\" { pattern.append("\\") }
            pattern.append(character)
        }
        return pattern
    }
}
