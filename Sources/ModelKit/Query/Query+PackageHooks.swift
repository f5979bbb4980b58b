import Foundation

// What ModelKitServices needs to run a query on a server, at `package` access (not public API):
// the query's parts in a form it can read (`QueryOutline`), the same query on another context
// (the scratch context remote candidates are decoded into), and what the stored properties are.

/// Where a key-path condition reads (its offset in the properties) and what it asks, kept when
/// the condition is a plain operator with operands, so that it can be described by string key.
@usableFromInline struct InPlaceOrigin {
    let offset: Int
    let optional: Bool
    let op: QueryCondition.Operator
    /// The operands as the condition holds them: an array of the property's (or its elements')
    /// type.
    let operands: Any

    @usableFromInline init?<Value>(_ offset: Int, optional: Bool, _ operation: Condition<Value>.Operation?) {
        guard let operation else { return nil }
        self.offset = offset
        self.optional = optional
        op = operation.op
        operands = operation.operands
    }

    /// The operands as query values, for the types a stored field the layout locates can hold.
    var values: [ModelValue]? {
        switch operands {
        case let values as [Int]: values.map { .int(Int64($0)) }
        case let values as [Int64]: values.map { .int($0) }
        case let values as [UInt]: values.map { PropertyLayout.Field.unsigned(UInt64($0)) }
        case let values as [UInt64]: values.map { PropertyLayout.Field.unsigned($0) }
        case let values as [Double]: values.map { .double($0) }
        case let values as [String]: values.map { .string($0) }
        case let values as [Bool]: values.map { .bool($0) }
        case let values as [Date]: values.map { .date($0) }
        default: nil
        }
    }
}

/// A query's filter, order and window as values a backend adapter can translate.
package struct QueryOutline: Sendable {
    /// The filter as a tree.
    package indirect enum Filter: Sendable {
        /// Every model.
        case all
        case and([Filter])
        case or([Filter])
        case not(Filter)
        /// A condition on the value at a dotted path, with string-key semantics; a key-path
        /// condition made of a plain operator (no string options, not combined) is described so
        /// too, since it decides exactly as its string-key form.
        case condition(path: [String], QueryCondition)
        /// A condition that can only run on the models: a closure, or a key path that is not a
        /// stored property.
        case opaque
        /// A condition on the models that references lead to, through key paths: the targets of
        /// any reference may be read, at any depth.
        case related
    }

    /// One key of the order.
    package enum SortKey: Sendable {
        /// By the value at a dotted path.
        case key(path: [String], ascending: Bool, options: StringOptions)
        /// By a key path or a distance: only the models can be ordered by it.
        case opaque
    }

    package var filter: Filter
    package var sortKeys: [SortKey]
    package var limit: Int?
    package var offset: Int
}

/// The kinds of stored property a query can describe, as ``PropertyLayout`` locates them.
package enum StoredFieldKind: Sendable, Hashable {
    case int, uint, double, string, date, bool, geoPoint
    /// `[String]`.
    case strings
}

extension Query {
    /// The context the query runs on.
    package var queryContext: ModelContext { context }

    /// The same filter, order and window over the models of `context`.
    package func running(in context: ModelContext) -> Query<M> {
        var query = Query(context: context)
        query.predicate = predicate
        query.sortKeys = sortKeys
        query.limitCount = limitCount
        query.offsetCount = offsetCount
        return query
    }

    /// The query's parts, as far as they can be described without running closures.
    package var outline: QueryOutline {
        let layout = PropertyLayout.of(M.self)
        let keys: [QueryOutline.SortKey] = sortKeys.map { key in
            switch key {
            case .keyed(let path, let ascending, let options): .key(path: path, ascending: ascending, options: options)
            case .typed(let ascending, let field?, _, _):
                // A key path to an integer or a Bool orders as its string key does; other kinds
                // (strings, doubles) may not, so they stay the models' to order.
                Self.key(at: field.offset, optional: field.optional, layout).flatMap { key -> QueryOutline.SortKey? in
                    guard let kind = layout.fields[key]?.kind, kind == .int || kind == .uint || kind == .bool else { return nil }
                    let path = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
                    return .key(path: path, ascending: ascending, options: [])
                } ?? .opaque
            case .typed, .distance: .opaque
            }
        }
        return QueryOutline(
            filter: Self.outline(predicate.node, layout), sortKeys: keys, limit: limitCount, offset: offsetCount)
    }

    /// The dotted key of the stored field at `offset`, with that optionality, if the layout
    /// located one.
    private static func key(at offset: Int, optional: Bool, _ layout: PropertyLayout) -> String? {
        layout.fields.first { $0.value.offset == offset && $0.value.optional == optional }?.key
    }

    private static func outline(_ node: ModelPredicate<M>.Node, _ layout: PropertyLayout) -> QueryOutline.Filter {
        switch node {
        case .always: return .all
        case .tooDeep, .typed: return .opaque
        case .related: return .related
        case .keyed(let path, let condition): return .condition(path: path, condition)
        case .and(let nodes): return .and(nodes.map { outline($0, layout) })
        case .or(let nodes): return .or(nodes.map { outline($0, layout) })
        case .not(let node): return .not(outline(node, layout))
        case .inPlace(_, _, _, let origin):
            // The key of the stored field at the condition's offset: found when the layout
            // located it, with the optionality the key path has.
            guard let origin, let values = origin.values, let key = key(at: origin.offset, optional: origin.optional, layout)
            else { return .opaque }
            return .condition(
                path: key.split(separator: ".", omittingEmptySubsequences: false).map(String.init),
                QueryCondition(origin.op, values))
        }
    }
}

extension Model {
    /// The kind of the stored property at `path` (a dotted path through nested structs, not
    /// references) and whether it is optional, when the property layout locates it; `nil` for
    /// other properties (custom coding, enums, references, dictionaries…).
    package static func storedField(at path: [String]) -> (kind: StoredFieldKind, optional: Bool)? {
        guard let field = PropertyLayout.of(Self.self).fields[path.joined(separator: ".")] else { return nil }
        let kind: StoredFieldKind =
            switch field.kind {
            case .int: .int
            case .uint: .uint
            case .double: .double
            case .string: .string
            case .date: .date
            case .bool: .bool
            case .geoPoint: .geoPoint
            case .strings: .strings
            }
        return (kind, field.optional)
    }

    /// Whether `key` is a to-one reference property (or one in a nested struct) that the layout
    /// located.
    package static func isStoredReference(at path: [String]) -> Bool {
        PropertyLayout.of(Self.self).references[path.joined(separator: ".")] != nil
    }
}
