import Foundation

/// The tokens of the query language, each with the column (1-based, in characters) where it
/// starts, for error messages.
struct QueryToken: Equatable {
    enum Kind: Equatable {
        case identifier(String)
        case number(ModelValue)
        case string(String)
        case symbol(String)
        case end
    }

    let kind: Kind
    let column: Int

    /// The token as quoted in an error message.
    var shown: String {
        switch kind {
        case .identifier(let name): return "\"\(name)\""
        case .number(let value): return "number \(value)"
        case .string(let text): return text.count > 40 ? "string '\(text.prefix(40))…'" : "string '\(text)'"
        case .symbol(let symbol): return "\"\(symbol)\""
        case .end: return "the end of the query"
        }
    }

    /// Whether this is the keyword `word`, in any case.
    func isKeyword(_ word: String) -> Bool {
        if case .identifier(let name) = kind { return name.caseInsensitiveCompare(word) == .orderedSame }
        return false
    }

    func isSymbol(_ symbol: String) -> Bool { kind == .symbol(symbol) }
}

/// Splits a query string into tokens, one at a time as the parser asks for them: a hostile
/// query is refused at the first place it goes wrong (too deep, say) without reading the rest.
struct QueryLexer {
    private let characters: [Character]
    private var index = 0
    let modelName: String

    init(_ text: String, modelName: String) {
        characters = Array(text)
        self.modelName = modelName
    }

    /// The next token; `.end` at the end of the text (and again if asked again).
    ///
    /// - Throws: ``QueryError/Code/syntax`` for an unterminated string, a malformed number or a
    ///   character the language doesn't use.
    /// - Complexity: O(*k*) in the length of the token.
    mutating func next() throws(QueryError) -> QueryToken {
        while index < characters.count, characters[index].isWhitespace { index += 1 }
        let column = index + 1
        guard index < characters.count else { return QueryToken(kind: .end, column: column) }
        let character = characters[index]
        if character.isLetter || character == "_" {
            var name = ""
            while index < characters.count,
                characters[index].isLetter || characters[index].isNumber || characters[index] == "_" || characters[index] == "."
            {
                name.append(characters[index])
                index += 1
            }
            return QueryToken(kind: .identifier(name), column: column)
        }
        if character.isASCII, character.isNumber {
            return QueryToken(kind: .number(try number(column: column)), column: column)
        }
        if character == "'" || character == "\"" {
            return QueryToken(kind: .string(try string(quote: character, column: column)), column: column)
        }
        if let symbol = symbol(at: index) {
            index += symbol.count
            return QueryToken(kind: .symbol(symbol), column: column)
        }
        throw QueryError(
            .syntax, modelName: modelName, column: column, expected: "a key, a value, an operator or a parenthesis",
            found: "\"\(character)\"")
    }

    /// The operator or punctuation at `position`, longest first (`<=` before `<`). A switch on
    /// the character rather than a search through a list: this runs for every parenthesis.
    private func symbol(at position: Int) -> String? {
        let second = position + 1 < characters.count ? characters[position + 1] : nil
        switch characters[position] {
        case "=": return second == "=" ? "==" : "="
        case "!": return second == "=" ? "!=" : "!"
        case "<": return second == ">" ? "<>" : second == "=" ? "<=" : "<"
        case ">": return second == "=" ? ">=" : ">"
        case "&": return second == "&" ? "&&" : nil
        case "|": return second == "|" ? "||" : nil
        case "(": return "("
        case ")": return ")"
        case "{": return "{"
        case "}": return "}"
        case "[": return "["
        case "]": return "]"
        case ",": return ","
        case "-": return "-"
        default: return nil
        }
    }

    private mutating func number(column: Int) throws(QueryError) -> ModelValue {
        var text = ""
        while index < characters.count,
            characters[index].isASCII
                && (characters[index].isNumber || ".eE_".contains(characters[index])
                    || ((characters[index] == "-" || characters[index] == "+") && (text.last == "e" || text.last == "E")))
        {
            if characters[index] != "_" { text.append(characters[index]) }
            index += 1
        }
        if !text.contains(where: { ".eE".contains($0) }), let integer = Int64(text) { return .int(integer) }
        if !text.contains(where: { ".eE".contains($0) }), let integer = UInt64(text) { return .uint(integer) }
        if let double = Double(text), double.isFinite { return .double(double) }
        throw QueryError(.syntax, modelName: modelName, column: column, expected: "a number", found: "\"\(text)\"")
    }

    private mutating func string(quote: Character, column: Int) throws(QueryError) -> String {
        index += 1
        var text = ""
        while index < characters.count {
            let character = characters[index]
            index += 1
            if character == quote { return text }
            guard character == "\\" else {
                text.append(character)
                continue
            }
            guard index < characters.count else { break }
            let escaped = characters[index]
            index += 1
            switch escaped {
            case "n": text.append("\n")
            case "t": text.append("\t")
            case "r": text.append("\r")
            case "0": text.append("\0")
            default: text.append(escaped)  // \\, \', \" and anything else stand for themselves
            }
        }
        throw QueryError(
            .syntax, modelName: modelName, column: column, expected: "a closing \(quote) for the string",
            found: "the end of the query")
    }
}
