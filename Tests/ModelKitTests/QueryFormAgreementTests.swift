import Foundation
import ModelKit
import Testing
import ModelKitTestSupport

// The same question asked by key path, by string key and in the query language must get the same
// answer (issue 18). Random conditions on optional and plain strings and on string arrays, with
// every string option, are checked in all three forms against a plain-Swift reference.

/// A model with optional and plain strings and a string array, for the agreement tests.
final class Critter: ModelObject<Critter.Properties> {
    struct Properties: ModelProperties {
        var name = ""
        var nickname: String?
        var tags: [String] = []
    }
}

/// One condition on a string, in a form each of the three APIs and the reference can take.
private enum StringAtom: CustomStringConvertible {
    case equals(String), notEquals(String), greater(String), lessOrEqual(String)
    case oneOf([String]), noneOf([String]), beginsWith(String), contains(String)

    /// The query-language operator and operand.
    var text: (op: String, operand: String) {
        switch self {
        case .equals(let v): ("==", quoted(v))
        case .notEquals(let v): ("!=", quoted(v))
        case .greater(let v): (">", quoted(v))
        case .lessOrEqual(let v): ("<=", quoted(v))
        case .oneOf(let vs): ("IN", "{" + vs.map(quoted).joined(separator: ", ") + "}")
        case .noneOf(let vs): ("NOT IN", "{" + vs.map(quoted).joined(separator: ", ") + "}")
        case .beginsWith(let v): ("BEGINSWITH", quoted(v))
        case .contains(let v): ("CONTAINS", quoted(v))
        }
    }

    var description: String { "\(text.op) \(text.operand)" }

    func keyed(_ options: StringOptions) -> QueryCondition {
        switch self {
        case .equals(let v): .equals(v, options: options)
        case .notEquals(let v): .notEquals(v, options: options)
        case .greater(let v): .greaterThan(v, options: options)
        case .lessOrEqual(let v): .lessThanOrEqual(v, options: options)
        case .oneOf(let vs): .in(vs, options: options)
        case .noneOf(let vs): .notIn(vs, options: options)
        case .beginsWith(let v): .beginsWith(v, options: options)
        case .contains(let v): .contains(v, options: options)
        }
    }

    func typed(_ options: StringOptions) -> Condition<String> {
        switch self {
        case .equals(let v): .equals(v, options: options)
        case .notEquals(let v): .notEquals(v, options: options)
        case .greater(let v): .greaterThan(v, options: options)
        case .lessOrEqual(let v): .lessThanOrEqual(v, options: options)
        case .oneOf(let vs): .in(vs, options: options)
        case .noneOf(let vs): .notIn(vs, options: options)
        case .beginsWith(let v): .beginsWith(v, options: options)
        case .contains(let v): .contains(v, options: options)
        }
    }

    /// The reference: nil satisfies only the negative conditions; text compares after folding.
    func holds(for value: String?, _ options: StringOptions) -> Bool {
        guard let value else {
            switch self {
            case .notEquals, .noneOf: return true
            default: return false
            }
        }
        let x = fold(value, options)
        switch self {
        case .equals(let v): return x == fold(v, options)
        case .notEquals(let v): return x != fold(v, options)
        case .greater(let v): return x > fold(v, options)
        case .lessOrEqual(let v): return x <= fold(v, options)
        case .oneOf(let vs): return vs.contains { fold($0, options) == x }
        case .noneOf(let vs): return !vs.contains { fold($0, options) == x }
        case .beginsWith(let v): return x.hasPrefix(fold(v, options))
        case .contains(let v): return v.isEmpty || x.contains(fold(v, options))
        }
    }
}

private func quoted(_ text: String) -> String { "'" + text + "'" }

private func fold(_ text: String, _ options: StringOptions) -> String {
    var folding: String.CompareOptions = []
    if options.contains(.caseInsensitive) { folding.insert(.caseInsensitive) }
    if options.contains(.diacriticInsensitive) { folding.insert(.diacriticInsensitive) }
    return text.folding(options: folding, locale: nil)
}

private func suffix(_ options: StringOptions) -> String {
    switch (options.contains(.caseInsensitive), options.contains(.diacriticInsensitive)) {
    case (true, true): "[cd]"
    case (true, false): "[c]"
    case (false, true): "[d]"
    case (false, false): ""
    }
}

/// A random tree of conditions on one property, with `!`, `&&` and `||`.
private indirect enum Tree {
    case atom(StringAtom, StringOptions)
    case not(Tree)
    case and(Tree, Tree)
    case or(Tree, Tree)

    static let words = ["jo", "Jo", "JO", "José", "jose", "JOSÉ", "Émile", "emile", "zoë", ""]
    static let optionSets: [StringOptions] = [[], .caseInsensitive, .diacriticInsensitive, [.caseInsensitive, .diacriticInsensitive]]

    static func random(depth: Int, _ generator: inout SplitMix64) -> Tree {
        var random = generator
        defer { generator = random }
        if depth == 0 || Int.random(in: 0..<3, using: &random) == 0 {
            let word = words.randomElement(using: &random)!
            let list = (0..<Int.random(in: 0...3, using: &random)).map { _ in words.randomElement(using: &random)! }
            let atoms: [StringAtom] = [
                .equals(word), .notEquals(word), .greater(word), .lessOrEqual(word), .oneOf(list), .noneOf(list),
                .beginsWith(word), .contains(word),
            ]
            return .atom(atoms.randomElement(using: &random)!, optionSets.randomElement(using: &random)!)
        }
        switch Int.random(in: 0..<3, using: &random) {
        case 0: return .not(Tree.random(depth: depth - 1, &random))
        case 1: return .and(Tree.random(depth: depth - 1, &random), Tree.random(depth: depth - 1, &random))
        default: return .or(Tree.random(depth: depth - 1, &random), Tree.random(depth: depth - 1, &random))
        }
    }

    /// The tree as one key-path condition, combined with the condition operators.
    var condition: Condition<String> {
        switch self {
        case .atom(let atom, let options): atom.typed(options)
        case .not(let tree): !tree.condition
        case .and(let a, let b): a.condition && b.condition
        case .or(let a, let b): a.condition || b.condition
        }
    }

    /// The tree as a predicate of string-key conditions on `key`.
    func keyed(_ key: String) -> ModelPredicate<Critter> {
        switch self {
        case .atom(let atom, let options): .where(key, atom.keyed(options))
        case .not(let tree): !tree.keyed(key)
        case .and(let a, let b): a.keyed(key) && b.keyed(key)
        case .or(let a, let b): a.keyed(key) || b.keyed(key)
        }
    }

    /// The tree in the query language.
    func text(_ key: String) -> String {
        switch self {
        case .atom(let atom, let options):
            let (op, operand) = atom.text
            return "\(key) \(op)\(suffix(options)) \(operand)"
        case .not(let tree): return "NOT (\(tree.text(key)))"
        case .and(let a, let b): return "(\(a.text(key)) AND \(b.text(key)))"
        case .or(let a, let b): return "(\(a.text(key)) OR \(b.text(key)))"
        }
    }

    func holds(for value: String?) -> Bool {
        switch self {
        case .atom(let atom, let options): atom.holds(for: value, options)
        case .not(let tree): !tree.holds(for: value)
        case .and(let a, let b): a.holds(for: value) && b.holds(for: value)
        case .or(let a, let b): a.holds(for: value) || b.holds(for: value)
        }
    }
}

/// Critters with every word (and nil) as nickname and name, and tags drawn from the words.
private func critters(in context: ModelContext) -> [Critter] {
    var random = SplitMix64(seed: 18)
    let nicknames: [String?] = Tree.words + [nil, nil]
    return nicknames.enumerated().map { index, nickname in
        let critter = Critter.instance(in: context)
        critter.nickname = nickname
        critter.name = Tree.words[index % Tree.words.count]
        critter.tags = (0..<Int.random(in: 0...3, using: &random)).map { _ in Tree.words.randomElement(using: &random)! }
        return critter
    }
}

private func ids(_ models: [Critter]) -> Set<ModelID> { Set(models.map(\.modelId)) }

@Suite("Query forms agree")
struct QueryFormAgreementTests {
    @Test("notEquals and notIn on an optional property match nil by key path, by string key and in the query language")
    func negativeConditionsMatchNil() throws {
        let context = ModelContext()
        let all = critters(in: context)
        let withoutNickname = ids(all.filter { $0.nickname == nil })
        let answers: [[Critter]] = [
            try Critter.query(in: context).where(\.nickname, .notEquals("jo")).results(),
            try Critter.query(in: context).where(\.nickname, Condition<String?>.notEquals("jo")).results(),
            try Critter.query(in: context).where("nickname", .notEquals("jo")).results(),
            try Critter.query(in: context).filter("nickname != 'jo'").results(),
        ]
        for answer in answers {
            #expect(ids(answer) == ids(all.filter { $0.nickname != "jo" }))
            #expect(withoutNickname.isSubset(of: ids(answer)))
        }
        let none: [[Critter]] = [
            try Critter.query(in: context).where(\.nickname, .notIn(["jo", "Jo"])).results(),
            try Critter.query(in: context).where(\.nickname, Condition<String?>.notIn(["jo", "Jo"])).results(),
            try Critter.query(in: context).where("nickname", .notIn(["jo", "Jo"])).results(),
            try Critter.query(in: context).filter("nickname NOT IN {'jo', 'Jo'}").results(),
        ]
        for answer in none { #expect(ids(answer) == ids(all.filter { $0.nickname != "jo" && $0.nickname != "Jo" })) }
        // nil in the list: the one form where nil is excluded by notIn and included by in.
        let withNil: [String?] = [nil, "jo"]
        let oneOf: [[Critter]] = [
            try Critter.query(in: context).where(\.nickname, .in(withNil)).results(),
            try Critter.query(in: context).where("nickname", .in(withNil)).results(),
            try Critter.query(in: context).filter("nickname IN {nil, 'jo'}").results(),
        ]
        for answer in oneOf { #expect(ids(answer) == ids(all.filter { $0.nickname == nil || $0.nickname == "jo" })) }
        let noneOf: [[Critter]] = [
            try Critter.query(in: context).where(\.nickname, .notIn(withNil)).results(),
            try Critter.query(in: context).where("nickname", .notIn(withNil)).results(),
            try Critter.query(in: context).filter("nickname NOT IN {nil, 'jo'}").results(),
        ]
        for answer in noneOf { #expect(ids(answer) == ids(all.filter { $0.nickname != nil && $0.nickname != "jo" })) }
    }

    @Test("Random trees of string conditions, with every option, give the reference's answer in all three forms")
    func randomStringConditions() throws {
        let context = ModelContext()
        let all = critters(in: context)
        var random = SplitMix64(seed: 0x18)
        for _ in 0..<400 {
            let tree = Tree.random(depth: 3, &random)
            for key in ["nickname", "name"] {
                let expected = ids(all.filter { tree.holds(for: key == "name" ? $0.name : $0.nickname) })
                let typed =
                    key == "name"
                    ? try Critter.query(in: context).where(\.name, tree.condition).results()
                    : try Critter.query(in: context).where(\.nickname, tree.condition).results()
                let keyed = try Critter.query(in: context).filter(tree.keyed(key)).results()
                let parsed = try Critter.query(in: context).filter(tree.text(key)).results()
                #expect(ids(typed) == expected, "key path: \(tree.text(key))")
                #expect(ids(keyed) == expected, "string key: \(tree.text(key))")
                #expect(ids(parsed) == expected, "query language: \(tree.text(key))")
            }
        }
    }

    @Test("Array conditions take string options by key path, by string key and in the query language alike")
    func arrayConditionsWithOptions() throws {
        let context = ModelContext()
        let all = critters(in: context)
        var random = SplitMix64(seed: 0x1818)
        for _ in 0..<200 {
            let options = Tree.optionSets.randomElement(using: &random)!
            let words = (0..<Int.random(in: 0...3, using: &random)).map { _ in Tree.words.randomElement(using: &random)! }
            let word = Tree.words.randomElement(using: &random)!
            let list = "{" + words.map(quoted).joined(separator: ", ") + "}"
            let folded = { (tags: [String]) in Set(tags.map { fold($0, options) }) }
            let cases: [(Condition<[String]>, QueryCondition, String, ([String]) -> Bool)] = [
                (
                    .contains(word, options: options), .contains(word, options: options),
                    "tags CONTAINS\(suffix(options)) \(quoted(word))", { folded($0).contains(fold(word, options)) }
                ),
                (
                    .containsAll(words, options: options), .containsAll(words, options: options),
                    "tags CONTAINSALL\(suffix(options)) \(list)",
                    { tags in words.allSatisfy { folded(tags).contains(fold($0, options)) } }
                ),
                (
                    .containsAny(words, options: options), .containsAny(words, options: options),
                    "tags CONTAINSANY\(suffix(options)) \(list)",
                    { tags in words.contains { folded(tags).contains(fold($0, options)) } }
                ),
            ]
            for (typed, keyed, text, reference) in cases {
                let expected = ids(all.filter { reference($0.tags) })
                #expect(try ids(Critter.query(in: context).where(\.tags, typed).results()) == expected, "\(text)")
                #expect(try ids(Critter.query(in: context).where("tags", keyed).results()) == expected, "\(text)")
                #expect(try ids(Critter.query(in: context).filter(text).results()) == expected, "\(text)")
            }
        }
    }

    @Test("Plain key-path equality keeps its index plan; with options it is answered by a scan with the same result")
    func optionsAndIndexes() throws {
        let context = ModelContext()
        let all = critters(in: context)
        context.addIndex(on: \.name, of: Critter.self)
        let plain = try Critter.query(in: context).where(\.name, .equals("jo")).results()
        let folded = try Critter.query(in: context).where(\.name, .equals("jo", options: .caseInsensitive)).results()
        #expect(ids(plain) == ids(all.filter { $0.name == "jo" }))
        #expect(ids(folded) == ids(all.filter { $0.name.lowercased() == "jo" }))
        #expect(ids(folded) == ids(try Critter.query(in: context).filter("name ==[c] 'jo'").results()))
    }
}
