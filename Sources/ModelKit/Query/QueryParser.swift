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
///
/// Tokens are read one at a time as the grammar needs them, so a query too deep is refused at the
/// 257th level without reading on, and the text is bounded (``ModelPredicate/maximumTextLength``):
/// the work for any input is at most linear in that bound.
struct QueryParser {
    private var lexer: QueryLexer
    /// The next token, not yet consumed.
    private var peek: QueryToken
    /// The column of the token consumed last, for errors about a value already read.
    private var lastColumn = 1
    /// How many lists the parser is inside.
    private var listDepth = 0
    let modelName: String

    /// The deepest nesting of parentheses and negations the language accepts.
    static let maximumNesting = 256

    /// - Throws: ``QueryError/Code/syntax`` for a text longer than
    ///   ``ModelPredicate/maximumTextLength`` bytes (at the column where it goes over), or one
    ///   whose first token is malformed.
    init(_ text: String, modelName: String, maximumLength: Int) throws(QueryError) {
        // utf8.count is O(1) for native strings: the length is checked before anything is read.
        let length = text.utf8.count
        guard length <= maximumLength else {
            var column = 1
            var bytes = 0
            for character in text {
                bytes += character.utf8.count
                if bytes > maximumLength { break }
                column += 1
            }
            throw QueryError(
                .syntax, modelName: modelName, column: column,
                expected: "a query of at most \(maximumLength) bytes (UTF-8)", found: "\(length) bytes")
        }
        lexer = QueryLexer(text, modelName: modelName)
        peek = try lexer.next()
        self.modelName = modelName
    }

    /// The whole query as a predicate.
    mutating func parse<M: Model>() throws(QueryError) -> ModelPredicate<M>.Node {
        let node: ModelPredicate<M>.Node = try parseOr(depth: 0)
        guard peek.kind == .end else { throw unexpected("AND, OR or the end of the query") }
        return node
    }

    /// Consumes the next token and reads the one after it.
    @discardableResult
    private mutating func advance() throws(QueryError) -> QueryToken {
        let token = peek
        lastColumn = token.column
        if token.kind != .end { peek = try lexer.next() }
        return token
    }

    private func unexpected(_ expected: String) -> QueryError {
        QueryError(.syntax, modelName: modelName, column: peek.column, expected: expected, found: peek.shown)
    }

    private mutating func expectSymbol(_ symbol: String) throws(QueryError) {
        guard peek.isSymbol(symbol) else { throw unexpected("\"\(symbol)\"") }
        try advance()
    }

    private mutating func parseOr<M: Model>(depth: Int) throws(QueryError) -> ModelPredicate<M>.Node {
        var nodes: [ModelPredicate<M>.Node] = [try parseAnd(depth: depth)]
        while peek.isKeyword("OR") || peek.isSymbol("||") {
            try advance()
            nodes.append(try parseAnd(depth: depth))
        }
        return nodes.count == 1 ? nodes[0] : .or(nodes)
    }

    private mutating func parseAnd<M: Model>(depth: Int) throws(QueryError) -> ModelPredicate<M>.Node {
        var nodes: [ModelPredicate<M>.Node] = [try parseNot(depth: depth)]
        while peek.isKeyword("AND") || peek.isSymbol("&&") {
            try advance()
            nodes.append(try parseNot(depth: depth))
        }
        return nodes.count == 1 ? nodes[0] : .and(nodes)
    }

    private mutating func parseNot<M: Model>(depth: Int) throws(QueryError) -> ModelPredicate<M>.Node {
        // Nesting is bounded so that a hostile query string can't exhaust the stack.
        guard depth < Self.maximumNesting else { throw unexpected("at most \(Self.maximumNesting) levels of nesting") }
        if peek.isKeyword("NOT") || peek.isSymbol("!") {
            try advance()
            return .not(try parseNot(depth: depth + 1))
        }
        if peek.isSymbol("(") {
            try advance()
            let node: ModelPredicate<M>.Node = try parseOr(depth: depth + 1)
            try expectSymbol(")")
            return node
        }
        if peek.isKeyword("TRUEPREDICATE") {
            try advance()
            return .always
        }
        return try parseComparison()
    }

    private mutating func parseComparison<M: Model>() throws(QueryError) -> ModelPredicate<M>.Node {
        guard case .identifier(let key) = peek.kind, !isReserved(key) else { throw unexpected("a key") }
        let keyColumn = peek.column
        try advance()
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
        let token = peek
        if case .symbol(let symbol) = token.kind, let op = Self.comparisons[symbol] {
            try advance()
            let options = try parseOptions()
            return QueryCondition(op, [try parseValue()], options: options)
        }
        guard case .identifier(let word) = token.kind, Self.conditionWords.contains(word.uppercased()) else {
            throw unexpected("an operator such as =, <, BETWEEN, IN, BEGINSWITH or EXISTS")
        }
        try advance()
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
                try advance()
                return .notExists
            }
            guard peek.isKeyword("IN") else { throw unexpected("IN or EXISTS after NOT") }
            try advance()
            let options = try parseOptions()
            return QueryCondition(.notIn, try parseList(), options: options)
        case "WITHIN":
            let distance = try parseNumber()
            if peek.isKeyword("KM") { try advance() }
            guard peek.isKeyword("OF") else { throw unexpected("OF {latitude, longitude}") }
            try advance()
            let center = try parseList()
            guard center.count == 2, let latitude = center[0].doubleValue, let longitude = center[1].doubleValue else {
                throw unexpected("a centre as {latitude, longitude}")
            }
            return .within(kilometers: distance, of: GeoPoint(latitude: latitude, longitude: longitude))
        default:
            throw unexpected("an operator such as =, <, BETWEEN, IN, BEGINSWITH or EXISTS")
        }
    }

    /// The words that can follow a key as its condition.
    private static let conditionWords: Set<String> = [
        "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE", "BETWEEN", "IN", "CONTAINSALL", "CONTAINSANY", "EXISTS", "NOT", "WITHIN",
    ]

    private static let comparisons: [String: QueryCondition.Operator] = [
        "=": .equal, "==": .equal, "!=": .notEqual, "<>": .notEqual, "<": .less, "<=": .lessOrEqual, ">": .greater,
        ">=": .greaterOrEqual,
    ]

    private mutating func parseOptions() throws(QueryError) -> StringOptions {
        guard peek.isSymbol("[") else { return [] }
        try advance()
        guard case .identifier(let flags) = peek.kind, !flags.isEmpty,
            flags.lowercased().allSatisfy({ $0 == "c" || $0 == "d" })
        else { throw unexpected("string options c, d or cd") }
        try advance()
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
                .syntax, modelName: modelName, column: lastColumn, expected: "a number",
                found: value.kindName)
        }
        return number
    }

    private mutating func parseList() throws(QueryError) -> [ModelValue] {
        // Lists nest (`{{…}}`) and are read recursively: bounded like parentheses, for the stack.
        guard listDepth < Self.maximumNesting else { throw unexpected("at most \(Self.maximumNesting) levels of nesting") }
        try expectSymbol("{")
        listDepth += 1
        defer { listDepth -= 1 }
        var values: [ModelValue] = []
        if peek.isSymbol("}") {
            try advance()
            return values
        }
        while true {
            values.append(try parseValue())
            if peek.isSymbol(",") {
                try advance()
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
            try advance()
            return value
        case .string(let text):
            try advance()
            return .string(text)
        case .symbol("-"):
            try advance()
            guard case .number(let value) = peek.kind else { throw unexpected("a number after -") }
            try advance()
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
                try advance()
                return .bool(true)
            case "FALSE", "NO":
                try advance()
                return .bool(false)
            case "NIL", "NULL":
                try advance()
                return .null
            case "DATE":
                try advance()
                try expectSymbol("(")
                guard case .string(let text) = peek.kind else { throw unexpected("an ISO 8601 date in quotes") }
                guard let date = ISODate.date(from: text) else {
                    throw unexpected("an ISO 8601 date such as '2024-05-01T12:00:00Z'")
                }
                try advance()
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
