import Foundation
import ModelKit

// What a backend needs to answer a query, in Sendable, backend-neutral terms: conditions on the
// fields of records, an order, a count of records wanted, and pages. The model-level layer
// (ModelService+Queries.swift) decides what to ask; the backend says, condition by condition, how
// closely it can answer (see `evaluation(of:)`), and only gets the conditions it accepted.

/// A field of a record, and what ModelKit stores in it.
public struct RecordField: Hashable, Sendable, CustomStringConvertible {
    /// The kinds of value ModelKit writes into a field.
    public enum Kind: Hashable, Sendable {
        /// Integers (`Int`, `Int64`, `UInt`…), written as JSON numbers.
        case integer
        /// `Double`s: finite ones as JSON numbers, NaN and the infinities as
        /// `{"__type": "Double", "value": "nan"}` objects.
        case double
        /// Strings, compared by ModelKit under canonical equivalence (`"é"` in one scalar or two
        /// is one string).
        case string
        /// `Bool`s.
        case bool
        /// Arrays of strings.
        case strings
        /// The `latitude` or `longitude` number of a `GeoPoint`. Only finite numbers in range
        /// matter: a point out of range, NaN or infinite matches no `WITHIN`, the one condition
        /// that reads these fields, so a backend may leave such values out of any answer.
        case coordinate
        /// The `iso` text of a `Date` (`{"__type": "Date", "iso": …}`): `YYYY-MM-DDTHH:MM:SS`,
        /// then `.` and fraction digits when the date has a fraction, then `Z`, for the years
        /// 0000–9999 (other years are signed, `-0001-…` or `+10000-…`, and dates millions of
        /// years out have no `iso` at all). Only ranges with both ends are sent, as two
        /// conditions whose operands are 19-character texts `YYYY-MM-DDTHH:MM:SS`: a backend that
        /// orders such texts by code point (or by any collation that orders digits ascending and
        /// the fixed punctuation alike) answers a superset of the dates in the range.
        case dateText
        /// Ids: the record id (`id`) and the model id (`modelId`), ASCII letters, digits and `-`,
        /// compared and ordered byte by byte.
        case identifier
    }

    /// The path of the field: `["age"]`, or `["home", "city"]` inside a nested struct.
    public let path: [String]
    public let kind: Kind
    /// Whether the field may hold `null` (an optional property).
    public let isOptional: Bool

    /// A field at `path` holding values of `kind`, and `null` when `isOptional`.
    public init(path: [String], kind: Kind, isOptional: Bool) {
        self.path = path
        self.kind = kind
        self.isOptional = isOptional
    }

    /// The record id.
    public static let recordId = RecordField(path: ["id"], kind: .identifier, isOptional: false)
    /// The model id ModelKit writes in each record: the order of results that have no other.
    public static let modelId = RecordField(path: ["modelId"], kind: .identifier, isOptional: false)

    /// The dotted path, such as `home.city`.
    public var description: String { path.joined(separator: ".") }
}

/// A condition on one field of a record, with ModelKit's meaning: what the same condition by
/// string key decides locally (a `nil` property differs from every value, matches no ordering
/// condition and no pattern; strings equal under canonical equivalence).
public struct RecordCondition: Equatable, Sendable, CustomStringConvertible {
    /// What the condition asks of the field.
    public enum Operator: String, Hashable, Sendable {
        /// The field equals `values[0]` (`.null`: the field is null).
        case equal
        /// The field differs from `values[0]` (null differs from every value but null).
        case notEqual
        /// The field orders after `values[0]` (null orders nowhere).
        case greaterThan
        /// The field orders after `values[0]` or equals it.
        case greaterThanOrEqual
        /// The field orders before `values[0]` (null orders nowhere).
        case lessThan
        /// The field orders before `values[0]` or equals it.
        case lessThanOrEqual
        /// The field equals one of `values` (which may hold `.null`).
        case `in`
        /// The field equals none of `values`.
        case notIn
        /// The whole string matches the pattern `values[0]`: `*` is any run of characters, `?`
        /// one character, `\` escapes the next one.
        case like
        /// The array field has every one of `values` as an element.
        case containsAll
        /// The array field has at least one of `values` as an element.
        case containsAny
    }

    /// The field the condition is on.
    public let field: RecordField
    /// What it asks.
    public let op: Operator
    /// The operands, in the JSON form records hold.
    public let values: [ModelValue]

    /// A condition on `field`: `RecordCondition(age, .greaterThan, [30])`.
    public init(_ field: RecordField, _ op: Operator, _ values: [ModelValue]) {
        self.field = field
        self.op = op
        self.values = values
    }

    /// The field, the operator and the values as JSON, such as `age greaterThan 30`.
    public var description: String {
        "\(field) \(op.rawValue) " + values.map { $0.jsonString() }.joined(separator: ", ")
    }
}

/// How closely a backend evaluates a ``RecordCondition``, over every value ModelKit writes into
/// the field.
public enum RecordConditionSupport: Hashable, Sendable {
    /// Not at all: the condition is evaluated on the client.
    case unsupported
    /// The backend's answer holds every record the condition matches, and maybe more: the
    /// client evaluates the condition again on what comes back.
    case superset
    /// The backend's answer is exactly the records the condition matches.
    case exact
}

/// One key of an order: ascending puts `null` first, as ModelKit does.
public struct RecordSortKey: Hashable, Sendable {
    /// The field ordered by.
    public let field: RecordField
    /// Whether smaller values come first.
    public let ascending: Bool

    /// A key ordering by `field`.
    public init(_ field: RecordField, ascending: Bool) {
        self.field = field
        self.ascending = ascending
    }
}

/// What to list: the records of a collection that satisfy every condition, in an order, at most
/// `limit` of them.
public struct RecordListRequest: Equatable, Sendable {
    /// The collection (the model name).
    public let collection: String
    /// Conditions that all hold; only ones the backend accepted (see
    /// ``ModelService/evaluation(of:)``).
    public let conditions: [RecordCondition]
    /// The order; empty for the backend's own.
    public let order: [RecordSortKey]
    /// How many records are wanted in all, over every page; `nil` for all.
    public let limit: Int?

    /// A request for the records of `collection`.
    public init(collection: String, conditions: [RecordCondition] = [], order: [RecordSortKey] = [], limit: Int? = nil) {
        self.collection = collection
        self.conditions = conditions
        self.order = order
        self.limit = limit
    }
}

/// Where the next page of a list starts: opaque to everything but the backend that made it.
public struct RecordCursor: Hashable, Sendable {
    /// The backend's text for the position (Kinto: the `_token` of `Next-Page`).
    public let token: String

    /// A cursor holding `token`.
    public init(token: String) {
        self.token = token
    }
}

/// One page of a list.
public struct RecordPage: Sendable {
    /// The page's records, in the request's order.
    public let records: [RemoteRecord]
    /// The next page, or `nil` after the last one.
    public let next: RecordCursor?

    /// A page of `records`, followed by the page at `next`.
    public init(records: [RemoteRecord], next: RecordCursor?) {
        self.records = records
        self.next = next
    }
}

// A backend that does not list records still saves, fetches and deletes: querying it throws.
extension ModelService {
    /// By default nothing is evaluated on the server: every condition runs on the client.
    public func evaluation(of condition: RecordCondition) -> RecordConditionSupport { .unsupported }

    /// By default the client orders.
    public func canSort(by field: RecordField) -> Bool { false }

    /// By default a backend cannot list records.
    ///
    /// - Throws: ``ServiceError/Code/notSupported``.
    public func listRecords(_ request: RecordListRequest, after cursor: RecordCursor?) async throws(ServiceError) -> RecordPage {
        throw ServiceError(.notSupported("listing records"))
    }

    /// By default a backend cannot count records.
    ///
    /// - Throws: ``ServiceError/Code/notSupported``.
    public func countRecords(_ request: RecordListRequest) async throws(ServiceError) -> Int {
        throw ServiceError(.notSupported("counting records"))
    }
}
