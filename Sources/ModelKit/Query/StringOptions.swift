import Foundation

/// How string conditions compare text: the Objective-C version's `[c]`, `[d]` and `[cd]`.
///
/// ```swift
/// Author.query().where("name", .beginsWith("jó", options: [.caseInsensitive, .diacriticInsensitive]))
/// ```
///
/// Without options, strings compare by their Unicode scalars after canonical normalization (the
/// order of Swift's `String` comparison): `"Z" < "a"`, and `"é"` written as one scalar equals `"é"`
/// written as `e` plus a combining accent.
public struct StringOptions: OptionSet, Hashable, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// `[c]`: "Jo" matches "jo" and "JO" (full Unicode case folding).
    public static let caseInsensitive = StringOptions(rawValue: 1)
    /// `[d]`: "José" matches "Jose".
    public static let diacriticInsensitive = StringOptions(rawValue: 2)
}

extension String {
    /// The text as compared under `options`: case-folded and/or stripped of diacritics.
    func folded(_ options: StringOptions) -> String {
        guard !options.isEmpty else { return self }
        var folding: String.CompareOptions = []
        if options.contains(.caseInsensitive) { folding.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { folding.insert(.diacriticInsensitive) }
        return self.folding(options: folding, locale: nil)
    }
}

/// A LIKE pattern: `*` matches any run of characters (also none), `?` exactly one character, and
/// `\` makes the next character literal. The whole string must match.
struct WildcardPattern: Sendable {
    private enum Token: Equatable, Sendable {
        case literal(Character)
        case one
        case any
    }

    private let tokens: [Token]
    let options: StringOptions

    init(_ pattern: String, options: StringOptions) {
        self.options = options
        var tokens: [Token] = []
        var escaped = false
        for character in pattern.folded(options) {
            if escaped {
                tokens.append(.literal(character))
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "*" {
                if tokens.last != .any { tokens.append(.any) }
            } else if character == "?" {
                tokens.append(.one)
            } else {
                tokens.append(.literal(character))
            }
        }
        if escaped { tokens.append(.literal("\\")) }
        self.tokens = tokens
    }

    /// Whether `text` matches. Greedy matching with one backtrack point per `*`: O(n·m) at worst.
    func matches(_ text: String) -> Bool {
        let characters = Array(text.folded(options))
        var t = 0
        var p = 0
        var starToken = -1
        var starText = 0
        while t < characters.count {
            if p < tokens.count {
                switch tokens[p] {
                case .any:
                    starToken = p
                    starText = t
                    p += 1
                    continue
                case .one:
                    t += 1
                    p += 1
                    continue
                case .literal(let character) where character == characters[t]:
                    t += 1
                    p += 1
                    continue
                case .literal:
                    break
                }
            }
            guard starToken >= 0 else { return false }
            p = starToken + 1
            starText += 1
            t = starText
        }
        while p < tokens.count, tokens[p] == .any { p += 1 }
        return p == tokens.count
    }
}
