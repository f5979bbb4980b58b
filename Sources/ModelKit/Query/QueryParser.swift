import Foundation

/// Parses the query language into a predicate. The grammar (keywords in any case):
///
/// ```
/// predicate  := or
/// or         := and (("OR" | "||") and)*
/// and        := not (("AND" | "&&") not)*
/// not        := ("NOT" | "!") not | "(" or ")" | "TRUEPREDICATE" | comparison
/// comparison := key ( compare options? value
///                   | ("BEGINSWITH" | "ENDSWITH" | "CONTAINS" | "LIKE") options? value
///                   | "BETWEEN" "{" value "," value "}"
///                   | "NOT"? "IN" options? list
///                   | ("CONTAINSALL" | "CONTAINSANY") options? list
///                   | "NOT"? "EXISTS"
///                   | "WITHIN" number "KM"? "OF" "{" number "," number "}" )
/// compare    := "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">="
/// options    := "[" ("c" | "d" | "cd" | "dc") "]"
/// key        := name ("." name)*
/// value      := number | string | "TRUE" | "FALSE" | "NIL" | "NULL" | "DATE" "(" string ")" | list
/// list       := "{" (value ("," value)*)? "}"
/// string     := '…' | "…"            (backslash escapes \' \" \\ \n \t)
/// ```
struct QueryParser {
    private var tokens: [QueryToken]
    private var position = 0
    let modelName: String

    init(_ text: String, modelName: String) throws(QueryError) {
        var lexer = QueryLexer(text, modelName: modelName)
        tokens = try lexer.tokens()
        self.modelName = modelName
    }

    /// The whole query as a predicate.
    mutating func parse<M: Model>() throws(QueryError) -> ModelPredicate<M>.Node {
        let node: ModelPredicate<M>.Node = try parseOr(depth: 0)
        guard peek.kind == .end else { throw unexpected("AND, OR or the end of the query") }
        return node
    }

    private var peek: QueryToken { tokens[position] }

    private mutating func advance() -> QueryToken {
        let token = tokens[position]
        if position < tokens.count - 1 { position += 1 }
        return token
    }

    private func unexpected(_ expected: String) -> QueryError {
        QueryError(.syntax, modelName: modelName, column: peek.column, expected: expected, found: peek.shown)
    }

    private mutating func expectSymbol(_ symbol: String) throws(QueryError) {
        guard peek.isSymbol(symbol) else { throw unexpected("\"\(symbol)\"") }
        _ = advance()
    }

    private mutating func parseOr<M: Model>(depth: Int) throws(QueryError) -> ModelPredicate<M>.Node {
        var nodes: [ModelPredicate<M>.Node] = [try parseAnd(depth: depth)]
        while peek.isKeyword("OR") || peek.isSymbol("||") {
            _ = advance()
            nodes.append(try parseAnd(depth: depth))
        }
        return nodes.count == 1 ? nodes[0] : .or(nodes)
    }

    private mutating func parseAnd<M: Model>(depth: Int) throws(QueryError) -> ModelPredicate<M>.Node {
        var nodes: [ModelPredicate<M>.Node] = [try parseNot(depth: depth)]
        while peek.isKeyword("AND") || peek.isSymbol("&&") {
            _ = advance()
            nodes.append(try parseNot(depth: depth))
        }
        return nodes.count == 1 ? nodes[0] : .and(nodes)
    }

    private mutating func parseNot<M: Model>(depth: Int) throws(QueryError) -> ModelPredicate<M>.Node {
        // Nesting is bounded so that a hostile query string can't exhaust the stack.
        guard depth < 256 else { throw unexpected("at most 256 levels of nesting") }
        if peek.isKeyword("NOT") || peek.isSymbol("!") {
            _ = advance()
            return .not(try parseNot(depth: depth + 1))
        }
        if peek.isSymbol("(") {
            _ = advance()
            let node: ModelPredicate<M>.Node = try parseOr(depth: depth + 1)
            try expectSymbol(")")
            return node
        }
        if peek.isKeyword("TRUEPREDICATE") {
            _ = advance()
            return .always
        }
        return try parseComparison()
    }

    private mutating func parseComparison<M: Model>() throws(QueryError) -> ModelPredicate<M>.Node {
        guard case .identifier(let key) = peek.kind, !isReserved(key) else { throw unexpected("a key") }
        let keyColumn = peek.column
        _ = advance()
        let path = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !path.contains(where: \.isEmpty) else {
            throw QueryError(
                .syntax, modelName: modelName, column: keyColumn, expected: "a key like name or author.name",
                found: "\"\(key)\"")
        }
        let condition = try parseCondition()
        return .keyed(path: path, condition: condition)
    }

    private mutating func parseCondition() throws(QueryError) -> QueryCondition {
        let token = advance()
        if case .symbol(let symbol) = token.kind, let op = Self.comparisons[symbol] {
            let options = try parseOptions()
            return QueryCondition(op, [try parseValue()], options: options)
        }
        guard case .identifier(let word) = token.kind else {
            position -= 1
            throw unexpected("an operator such as =, <, BETWEEN, IN, BEGINSWITH or EXISTS")
        }
        switch word.uppercased() {
        case "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE":
            let options = try parseOptions()
            let op: QueryCondition.Operator =
                switch word.uppercased() {
                case "BEGINSWITH": .beginsWith
                case "ENDSWITH": .endsWith
                case "CONTAINS": .contains
                default: .like
                }
            return QueryCondition(op, [try parseValue()], options: options)
        case "BETWEEN":
            let bounds = try parseList()
            guard bounds.count == 2 else {
                throw QueryError(
                    .syntax, modelName: modelName, column: token.column, expected: "two bounds: BETWEEN {lower, upper}",
                    found: "\(bounds.count) values")
            }
            return QueryCondition(.between, bounds)
        case "IN":
            let options = try parseOptions()
            return QueryCondition(.in, try parseList(), options: options)
        case "CONTAINSALL", "CONTAINSANY":
            let options = try parseOptions()
            return QueryCondition(
                word.uppercased() == "CONTAINSALL" ? .containsAll : .containsAny, try parseList(), options: options)
        case "EXISTS":
            return .exists
        case "NOT":
            if peek.isKeyword("EXISTS") {
                _ = advance()
                return .notExists
            }
            guard peek.isKeyword("IN") else { throw unexpected("IN or EXISTS after NOT") }
            _ = advance()
            let options = try parseOptions()
            return QueryCondition(.notIn, try parseList(), options: options)
        case "WITHIN":
            let distance = try parseNumber()
            if peek.isKeyword("KM") { _ = advance() }
            guard peek.isKeyword("OF") else { throw unexpected("OF {latitude, longitude}") }
            _ = advance()
            let center = try parseList()
            guard center.count == 2, let latitude = center[0].doubleValue, let longitude = center[1].doubleValue else {
                throw unexpected("a centre as {latitude, longitude}")
            }
            return .within(kilometers: distance, of: GeoPoint(latitude: latitude, longitude: longitude))
        default:
            position -= 1
            throw unexpected("an operator such as =, <, BETWEEN, IN, BEGINSWITH or EXISTS")
        }
    }

    private static let comparisons: [String: QueryCondition.Operator] = [
        "=": .equal, "==": .equal, "!=": .notEqual, "<>": .notEqual, "<": .less, "<=": .lessOrEqual, ">": .greater,
        ">=": .greaterOrEqual,
    ]

    private mutating func parseOptions() throws(QueryError) -> StringOptions {
        guard peek.isSymbol("[") else { return [] }
        _ = advance()
        guard case .identifier(let flags) = peek.kind, !flags.isEmpty,
            flags.lowercased().allSatisfy({ $0 == "c" || $0 == "d" })
        else { throw unexpected("string options c, d or cd") }
        _ = advance()
        try expectSymbol("]")
        var options: StringOptions = []
        if flags.lowercased().contains("c") { options.insert(.caseInsensitive) }
        if flags.lowercased().contains("d") { options.insert(.diacriticInsensitive) }
        return options
    }

    private mutating func parseNumber() throws(QueryError) -> Double {
        let value = try parseValue()
        guard let number = value.doubleValue else {
            throw QueryError(
                .syntax, modelName: modelName, column: tokens[max(position - 1, 0)].column, expected: "a number",
                found: value.kindName)
        }
        return number
    }

    private mutating func parseList() throws(QueryError) -> [ModelValue] {
        try expectSymbol("{")
        var values: [ModelValue] = []
        if peek.isSymbol("}") {
            _ = advance()
            return values
        }
        while true {
            values.append(try parseValue())
            if peek.isSymbol(",") {
                _ = advance()
                continue
            }
            try expectSymbol("}")
            return values
        }
    }

    private mutating func parseValue() throws(QueryError) -> ModelValue {
        let token = peek
        switch token.kind {
        case .number(let value):
            _ = advance()
            return value
        case .string(let text):
            _ = advance()
            return .string(text)
        case .symbol("-"):
            _ = advance()
            guard case .number(let value) = peek.kind else { throw unexpected("a number after -") }
            _ = advance()
            switch value {
            case .int(let integer): return integer == .min ? .double(-Double(integer)) : .int(-integer)
            case .uint(let integer):
                return integer == UInt64(Int64.max) + 1 ? .int(.min) : .double(-Double(integer))
            case .double(let double): return .double(-double)
            default: return value
            }
        case .symbol("{"):
            return .array(try parseList())
        case .identifier(let word):
            switch word.uppercased() {
            case "TRUE", "YES":
                _ = advance()
                return .bool(true)
            case "FALSE", "NO":
                _ = advance()
                return .bool(false)
            case "NIL", "NULL":
                _ = advance()
                return .null
            case "DATE":
                _ = advance()
                try expectSymbol("(")
                guard case .string(let text) = peek.kind else { throw unexpected("an ISO 8601 date in quotes") }
                guard let date = ISODate.date(from: text) else {
                    throw unexpected("an ISO 8601 date such as '2024-05-01T12:00:00Z'")
                }
                _ = advance()
                try expectSymbol(")")
                return .date(date)
            default:
                throw unexpected("a value: a number, a string in quotes, TRUE, FALSE, NIL, DATE('…') or {…}")
            }
        default:
            throw unexpected("a value: a number, a string in quotes, TRUE, FALSE, NIL, DATE('…') or {…}")
        }
    }

    /// Words that can't be keys, so that a missing key is reported as such.
    private func isReserved(_ word: String) -> Bool {
        [
            "AND", "OR", "NOT", "BETWEEN", "IN", "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE", "CONTAINSALL", "CONTAINSANY",
            "EXISTS", "WITHIN", "TRUEPREDICATE",
        ].contains(word.uppercased())
    }
}
