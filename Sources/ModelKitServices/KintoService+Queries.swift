import Foundation
import ModelKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Listing and counting records on Kinto, with its filters (`gt_age=30`, `in_name="a","b"`,
// `like_name="jo*"`, …), `_sort`, `_limit` and `Next-Page`. Which conditions are sent, and how
// exactly Kinto answers them, follows what Kinto 26.5 was seen to do (Notes/services-design.md
// §2 and §8): values are parsed as JSON, `lt_`/`max_` include null, `like_` is case-insensitive
// and fails on a null field, strings compare by code point, `in_` splits on commas, and NaN and
// the infinities are objects that sort above every number.

extension KintoService {
    /// How Kinto answers `condition` (see the table in Docs/Services.md, "Queries"): exactly for
    /// integers, Bools, nil and stable strings; a superset for doubles, optional upper bounds and
    /// patterns; not at all for what only the client folds or orders.
    ///
    /// ```swift
    /// let age = RecordField(path: ["age"], kind: .integer, isOptional: false)
    /// service.evaluation(of: RecordCondition(age, .greaterThan, [30]))   // .exact
    /// ```
    ///
    /// - Complexity: O(*n*) in the length of the condition's values.
    public func evaluation(of condition: RecordCondition) -> RecordConditionSupport {
        let field = condition.field
        guard Self.isFilterable(field) else { return .unsupported }
        let values = condition.values
        switch condition.op {
        case .equal, .notEqual:
            guard values.count == 1 else { return .unsupported }
            let value = values[0]
            if value == .null { return field.kind == .identifier ? .unsupported : .exact }
            switch (field.kind, value) {
            case (.integer, .int), (.integer, .uint), (.bool, .bool): return .exact
            case (.double, .int), (.double, .uint): return .superset
            case (.double, .double(let number)): return number.isFinite ? .superset : .unsupported
            case (.identifier, .string(let text)): return RecordCodec.isValidId(text) ? .exact : .unsupported
            case (.string, .string(let text)):
                // A string that other strings equal under canonical equivalence is only found as
                // written: its equality is not sent, its inequality is a superset.
                if Self.isStable(text) { return .exact }
                return condition.op == .notEqual ? .superset : .unsupported
            default: return .unsupported
            }
        case .greaterThan, .greaterThanOrEqual, .lessThan, .lessThanOrEqual:
            guard values.count == 1 else { return .unsupported }
            let below = condition.op == .lessThan || condition.op == .lessThanOrEqual
            switch (field.kind, values[0]) {
            case (.dateText, .string(let text)):
                // Kinto orders strings by code point (memory) or by the database's collation
                // (PostgreSQL): for the fixed-width bounds the planner sends, either way holds
                // every date of the range (RemoteQueryPlan+Dates.swift).
                return RemoteQueryPlan.isSecondText(text) ? .superset : .unsupported
            case (.coordinate, .double(let number)):
                // Only finite coordinates matter, and Kinto orders those as numbers, both ways;
                // the JSON text of a double reads back as the same double.
                return number.isFinite ? .superset : .unsupported
            case (.integer, .int), (.integer, .uint):
                // null sorts below every number: `lt_`/`max_` return it too.
                return below && field.isOptional ? .superset : .exact
            case (.double, .int), (.double, .uint), (.double, .double):
                // NaN and ±inf are objects, above every number: `gt_` keeps them (a superset),
                // `lt_` would drop -inf.
                if case .double(let number) = values[0], !number.isFinite { return .unsupported }
                return below ? .unsupported : .superset
            default: return .unsupported
            }
        case .in, .notIn:
            guard !values.isEmpty else { return .unsupported }
            var support = RecordConditionSupport.exact
            for value in values {
                switch (field.kind, value) {
                case (.identifier, .null): return .unsupported
                case (_, .null), (.integer, .int), (.integer, .uint), (.bool, .bool): continue
                case (.double, .int), (.double, .uint): support = .superset
                case (.double, .double(let number)):
                    guard number.isFinite else { return .unsupported }
                    support = .superset
                case (.identifier, .string(let text)):
                    guard RecordCodec.isValidId(text) else { return .unsupported }
                case (.string, .string(let text)):
                    // `in_` splits its value on commas.
                    guard !text.contains(",") else { return .unsupported }
                    if !Self.isStable(text) {
                        guard condition.op == .notIn else { return .unsupported }
                        support = .superset
                    }
                default: return .unsupported
                }
            }
            return support
        case .like:
            // `like_` fails (HTTP 500) when a record's field is null: only on non-optional strings.
            // Its `.*` stops at a line break: only when the app says there are none.
            guard patternFilters, field.kind == .string, !field.isOptional, values.count == 1,
                case .string(let pattern) = values[0],
                pattern.unicodeScalars.allSatisfy({ $0 == "*" || $0 == "?" || Self.isPatternLiteral($0) })
            else { return .unsupported }
            return .superset
        case .containsAll, .containsAny:
            guard field.kind == .strings, !values.isEmpty else { return .unsupported }
            for value in values {
                guard case .string(let text) = value, Self.isStable(text), !text.contains(",") else { return .unsupported }
            }
            return .exact
        }
    }

    /// Whether Kinto's `_sort` orders `field` as ModelKit does: integers, Bools and ids.
    ///
    /// - Complexity: O(1) in the field's path length.
    public func canSort(by field: RecordField) -> Bool {
        // Integers and Bools order as ModelKit orders them, null first; strings do not (code
        // points, not canonical equivalence), nor do doubles (NaN and ±inf are objects).
        Self.isFilterable(field) && (field.kind == .integer || field.kind == .bool || field.kind == .identifier)
    }

    /// One page of records: `GET …/records` with the request's filters, `_sort` and a `_limit` of
    /// at most ``pageSize``; the next page's cursor is the `_token` of `Next-Page`.
    ///
    /// ```swift
    /// let page = try await service.listRecords(RecordListRequest(collection: "Author"), after: nil)
    /// ```
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/invalidResponse`` for a body that is not a
    ///   list of records with ids and versions, or a `Next-Page` to another host or path; the
    ///   network and server errors.
    /// - Complexity: One request; O(*n*) in the size of the page.
    public func listRecords(_ request: RecordListRequest, after cursor: RecordCursor?) async throws(ServiceError) -> RecordPage {
        let path = collectionPath(request.collection)
        var parameters = try Self.parameters(request.conditions)
        if !request.order.isEmpty {
            parameters.append(
                ("_sort", request.order.map { ($0.ascending ? "" : "-") + $0.field.description }.joined(separator: ",")))
        }
        parameters.append(("_limit", String(min(pageSize, max(1, request.limit ?? pageSize)))))
        if let cursor { parameters.append(("_token", cursor.token)) }
        let response = try await send("GET", path: path + "?" + Self.encode(parameters), body: nil)
        guard response.status == 200 else {
            throw Self.failure(status: response.status, body: response.body, headers: response.headers)
        }
        // Read where it lies: the records are loaded from this text, without a value tree.
        let text = try Self.jsonText(response.body, record: nil)
        let data = text.member(text.root, "data")
        guard let items = data.flatMap(text.elements) else {
            throw ServiceError(.invalidResponse(expected: "an array 'data'", found: Self.describe(data, in: text)))
        }
        var records: [RemoteRecord] = []
        records.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            guard let id = text.member(item, "id").flatMap(text.string), RecordCodec.isValidId(id) else {
                throw ServiceError(
                    .invalidResponse(
                        expected: "a record with a string 'id' at data[\(index)]", found: Self.describe(item, in: text)))
            }
            let recordId = RecordID(collection: request.collection, id: id)
            records.append(
                RemoteRecord(
                    id: recordId,
                    version: try Self.version(
                        text.member(item, "last_modified"), in: text, at: "data[\(index)].last_modified", record: recordId),
                    text: text, node: item))
        }
        let next = try nextCursor(response.headers, path: path)
        return RecordPage(records: records, next: next)
    }

    /// The number of records that satisfy the request's filters: `HEAD …/records` and its
    /// `Total-Records` header.
    ///
    /// ```swift
    /// let count = try await service.countRecords(RecordListRequest(collection: "Author"))
    /// ```
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/invalidResponse`` without a count; the
    ///   network and server errors.
    /// - Complexity: One request.
    public func countRecords(_ request: RecordListRequest) async throws(ServiceError) -> Int {
        var parameters = try Self.parameters(request.conditions)
        parameters.append(("_limit", "1"))
        let response = try await send("HEAD", path: collectionPath(request.collection) + "?" + Self.encode(parameters), body: nil)
        guard response.status == 200 else {
            throw Self.failure(status: response.status, body: Data(), headers: response.headers)
        }
        let header = response.headers.first { $0.key.lowercased() == "total-records" }?.value
        guard let header, let count = Int(header.trimmingCharacters(in: .whitespaces)), count >= 0 else {
            throw ServiceError(
                .invalidResponse(expected: "a 'Total-Records' header with a count", found: header.map { "'\($0)'" } ?? "none"))
        }
        return count
    }

    func collectionPath(_ collection: String) -> String {
        "/buckets/\(bucket)/collections/\(collection)/records"
    }

    /// The cursor in a `Next-Page` header: only its `_token`, and only from a URL of this
    /// service's own server and collection (a hostile answer must not send the next request
    /// elsewhere).
    func nextCursor(_ headers: [String: String], path: String) throws(ServiceError) -> RecordCursor? {
        guard let header = headers.first(where: { $0.key.lowercased() == "next-page" })?.value, !header.isEmpty else {
            return nil
        }
        guard let next = URLComponents(string: header), let base = URLComponents(url: baseURL, resolvingAgainstBaseURL: false),
            next.scheme?.lowercased() == base.scheme?.lowercased(), next.host?.lowercased() == base.host?.lowercased(),
            next.port == base.port, next.path == base.path + path
        else {
            throw ServiceError(
                .invalidResponse(expected: "a Next-Page on \(baseURL.absoluteString + path)", found: "'\(header.prefix(200))'"))
        }
        guard let token = next.queryItems?.first(where: { $0.name == "_token" })?.value, !token.isEmpty else {
            throw ServiceError(.invalidResponse(expected: "a Next-Page with a _token", found: "'\(header.prefix(200))'"))
        }
        return RecordCursor(token: token)
    }

    /// The query parameters of `conditions`; each was accepted by ``evaluation(of:)``.
    static func parameters(_ conditions: [RecordCondition]) throws(ServiceError) -> [(String, String)] {
        var parameters: [(String, String)] = []
        for condition in conditions {
            let name = condition.field.description
            let values = condition.values
            func scalar(_ prefix: String) -> (String, String) { (prefix + name, json(values[0])) }
            func list(_ prefix: String) -> (String, String) {
                (prefix + name, values.map(json).joined(separator: ","))
            }
            switch condition.op {
            case .equal: parameters.append(scalar(""))
            case .notEqual: parameters.append(scalar("not_"))
            case .greaterThan: parameters.append(scalar("gt_"))
            case .greaterThanOrEqual: parameters.append(scalar("min_"))
            case .lessThan: parameters.append(scalar("lt_"))
            case .lessThanOrEqual: parameters.append(scalar("max_"))
            case .in: parameters.append(list("in_"))
            case .notIn: parameters.append(list("exclude_"))
            case .containsAll: parameters.append(("contains_" + name, ModelValue.array(values).jsonString()))
            case .containsAny: parameters.append(("contains_any_" + name, ModelValue.array(values).jsonString()))
            case .like:
                guard case .string(let pattern) = values.first else {
                    throw ServiceError(.invalidModel(expected: "a pattern", found: "\(condition)"))
                }
                // `?` (one character) widens to `*`: Kinto's `like_` has no single-character
                // wildcard that matches a whole character.
                var widened = ""
                for character in pattern.replacingOccurrences(of: "?", with: "*") where !(character == "*" && widened.last == "*")
                {
                    widened.append(character)
                }
                parameters.append(("like_" + name, ModelValue.string(widened).jsonString()))
            }
        }
        return parameters
    }

    /// `value` as JSON text; a string that needs no escape (a record id: a chunk of ids is a
    /// hundred of them; a record's path in a `/batch` body) without going through the writer.
    static func json(_ value: ModelValue) -> String {
        if case .string(let text) = value,
            text.utf8.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") && $0 < 0x80 })
        {
            return "\"" + text + "\""
        }
        return value.jsonString()
    }

    /// `name=value&…`, percent-encoded but for unreserved characters.
    ///
    /// Byte by byte over the UTF-8: Foundation's `addingPercentEncoding` on Linux goes through
    /// `NSString` and UTF-16, and cost more than parsing the answer to a list request of 100 ids.
    static func encode(_ parameters: [(String, String)]) -> String {
        var bytes: [UInt8] = []
        for (index, (name, value)) in parameters.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: "&")) }
            percentEncode(name, into: &bytes)
            bytes.append(UInt8(ascii: "="))
            percentEncode(value, into: &bytes)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `text` to `bytes` with every byte but the unreserved ones (letters, digits, `-`,
    /// `.`, `_`, `~`) as `%XX`.
    private static func percentEncode(_ text: String, into bytes: inout [UInt8]) {
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                bytes.append(byte)
            default:
                bytes.append(UInt8(ascii: "%"))
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0x0F)])
            }
        }
    }

    /// Fields Kinto filters on by name: plain names, none of which Kinto would read as an
    /// operator prefix (`gt_age`) or a parameter (`_sort`).
    private static func isFilterable(_ field: RecordField) -> Bool {
        guard let first = field.path.first else { return false }
        let prefixes = ["_", "min_", "max_", "not_", "lt_", "gt_", "in_", "exclude_", "like_", "has_", "contains_", "eq_"]
        guard !prefixes.contains(where: { first.hasPrefix($0) }) else { return false }
        return field.path.allSatisfy { component in
            !component.isEmpty
                && component.unicodeScalars.allSatisfy {
                    $0.isASCII && ($0 == "_" || $0.properties.isAlphabetic || ("0"..."9").contains($0))
                }
        }
    }

    /// Whether `text` is equal under canonical equivalence only to itself: printable ASCII
    /// without `K`, `` ` `` and `;`, the targets of the singleton decompositions U+212A, U+1FEF
    /// and U+037E.
    static func isStable(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value <= 0x7E && $0 != "K" && $0 != "`" && $0 != ";" }
    }

    /// Characters a `like_` pattern holds literally: ASCII letters (but `K`, which the Kelvin sign
    /// equals), digits, space, `-` and `_`; none is a regular-expression character.
    private static func isPatternLiteral(_ scalar: Unicode.Scalar) -> Bool {
        guard scalar.isASCII, scalar != "K" else { return false }
        return scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == " " || scalar == "-" || scalar == "_"
    }
}
