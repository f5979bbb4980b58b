import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

/// A model with a property of each kind a sort reads: strings, integers, doubles and dates
/// (and their optionals), types sorted through their own `Comparable` conformance, and a
/// computed property.
final class SortSubject: ModelObject<SortSubject.Properties> {
    enum Grade: Int, Codable, Comparable, Sendable {
        case low, middle, high
        static func < (a: Grade, b: Grade) -> Bool { a.rawValue < b.rawValue }
    }

    struct Properties: ModelProperties {
        var name = ""
        var nickname: String?
        var age = 0
        var rank: Int?
        var score = 0.0
        var ratio: Double?
        var day = Date(timeIntervalSinceReferenceDate: 0)
        var seen: Date?
        var grade = Grade.low
        var level: Int32 = 0
        /// A key path with no stored offset.
        var initial: String { String(name.prefix(1)) }
    }
}

/// One random sort key, applied to a query and compared by brute force: directly on the
/// properties, as the documentation says a sort orders (nil first, strings by `<` after
/// folding under the options, descending reversed).
private struct RandomSortKey: CustomStringConvertible {
    enum Field: CaseIterable {
        case name, nickname, age, rank, score, ratio, day, seen, grade, level, initial
    }
    let field: Field
    let ascending: Bool
    /// Sorts by string key (with these options) instead of by key path.
    let keyed: StringOptions?

    var description: String {
        "\(field) \(ascending ? "ascending" : "descending")" + (keyed.map { " by string key, options \($0.rawValue)" } ?? "")
    }

    static func random(using random: inout SplitMix64) -> RandomSortKey {
        let field = random.pick(Field.allCases)
        // String keys for the fields a string key reads (grade, level and initial are key paths only).
        let keyable: Set<Field> = [.name, .nickname, .age, .rank, .score, .ratio, .day, .seen]
        let keyed: StringOptions? =
            keyable.contains(field) && random.chance(0.5)
            ? random.pick([[], .caseInsensitive, .diacriticInsensitive, [.caseInsensitive, .diacriticInsensitive]]) : nil
        return RandomSortKey(field: field, ascending: random.chance(0.5), keyed: keyed)
    }

    func apply(to query: Query<SortSubject>) -> Query<SortSubject> {
        if let options = keyed { return query.sorted(by: "\(field)", ascending: ascending, options: options) }
        switch field {
        case .name: return query.sorted(by: \.name, ascending: ascending)
        case .nickname: return query.sorted(by: \.nickname, ascending: ascending)
        case .age: return query.sorted(by: \.age, ascending: ascending)
        case .rank: return query.sorted(by: \.rank, ascending: ascending)
        case .score: return query.sorted(by: \.score, ascending: ascending)
        case .ratio: return query.sorted(by: \.ratio, ascending: ascending)
        case .day: return query.sorted(by: \.day, ascending: ascending)
        case .seen: return query.sorted(by: \.seen, ascending: ascending)
        case .grade: return query.sorted(by: \.grade, ascending: ascending)
        case .level: return query.sorted(by: \.level, ascending: ascending)
        case .initial: return query.sorted(by: \.initial, ascending: ascending)
        }
    }

    /// The order of two subjects by this key alone.
    func compare(_ a: SortSubject, _ b: SortSubject) -> ComparisonResult {
        let result: ComparisonResult
        switch field {
        case .name: result = order(fold(a.name), fold(b.name))
        case .nickname: result = order(a.nickname.map(fold), b.nickname.map(fold))
        case .age: result = order(a.age, b.age)
        case .rank: result = order(a.rank, b.rank)
        case .score: result = order(a.score, b.score)
        case .ratio: result = order(a.ratio, b.ratio)
        case .day: result = order(a.day, b.day)
        case .seen: result = order(a.seen, b.seen)
        case .grade: result = order(a.grade, b.grade)
        case .level: result = order(a.level, b.level)
        case .initial: result = order(a.initial, b.initial)
        }
        guard !ascending else { return result }
        return result == .orderedAscending ? .orderedDescending : result == .orderedDescending ? .orderedAscending : .orderedSame
    }

    private func fold(_ text: String) -> String {
        var options: String.CompareOptions = []
        if keyed?.contains(.caseInsensitive) == true { options.insert(.caseInsensitive) }
        if keyed?.contains(.diacriticInsensitive) == true { options.insert(.diacriticInsensitive) }
        return options.isEmpty ? text : text.folding(options: options, locale: nil)
    }

    private func order<T: Comparable>(_ a: T?, _ b: T?) -> ComparisonResult {
        switch (a, b) {
        case (nil, nil): .orderedSame
        case (nil, _): .orderedAscending
        case (_, nil): .orderedDescending
        case (let x?, let y?): x == y ? .orderedSame : (x < y ? .orderedAscending : .orderedDescending)
        }
    }
}

@Suite("Sorting reads each key once and orders as the keys say")
@MainActor struct QuerySortRandomTests {
    static let names = ["ann", "Ann", "ánn", "bob", "Bob", "", "zoë", "Zoe", "ann"]
    static let scores = [0.0, -0.0, 0.5, -1, 2, 1e300]
    static let days = [0.0, -86_400, 1e9].map { Date(timeIntervalSinceReferenceDate: $0) }

    /// Random values from small sets, so that ties are frequent; nil often.
    static func randomize(_ subject: SortSubject, _ random: inout SplitMix64) {
        subject.name = random.pick(names)
        subject.nickname = random.chance(0.3) ? nil : random.pick(names)
        subject.age = Int.random(in: -2...2, using: &random)
        subject.rank = random.chance(0.3) ? nil : Int.random(in: 0...2, using: &random)
        subject.score = random.pick(scores)
        subject.ratio = random.chance(0.3) ? nil : random.pick(scores)
        subject.day = random.pick(days)
        subject.seen = random.chance(0.3) ? nil : random.pick(days)
        subject.grade = random.pick([.low, .middle, .high])
        subject.level = Int32.random(in: 0...2, using: &random)
    }

    /// The subjects in the order of `keys` by brute force, ties by model id.
    private static func bruteForce(_ subjects: [SortSubject], _ keys: [RandomSortKey]) -> [SortSubject] {
        subjects.sorted { a, b in
            for key in keys {
                let result = key.compare(a, b)
                if result != .orderedSame { return result == .orderedAscending }
            }
            return a.modelId < b.modelId
        }
    }

    @Test(
        "Random sorts by one to three keys (key paths and string keys, options, descending, nil and ties) order as a brute-force comparison does, in a query and in a live query through batches of edits",
        arguments: [1, 2, 3] as [UInt64])
    func randomSorts(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let context = ModelContext()
        var subjects: [SortSubject] = []
        for _ in 0..<60 {
            let subject = SortSubject.instance(in: context)
            Self.randomize(subject, &random)
            subjects.append(subject)
        }
        for round in 0..<150 {
            // Every other round one key alone: the specialized sorts of a single key.
            let keys = (0..<(round % 2 == 0 ? 1 : Int.random(in: 1...3, using: &random))).map { _ in
                RandomSortKey.random(using: &random)
            }
            let query = keys.reduce(SortSubject.query(in: context)) { $1.apply(to: $0) }
            let expected = Self.bruteForce(subjects, keys).map(ObjectIdentifier.init)
            #expect(try query.results().map(ObjectIdentifier.init) == expected, "\(keys)")

            // The live query, after a batch of edits (several models placed at once) and after
            // one edit (a binary search).
            let live = try query.live()
            context.batchChanges {
                for _ in 0..<Int.random(in: 2...12, using: &random) { Self.randomize(random.pick(subjects), &random) }
            }
            #expect(
                live.map(ObjectIdentifier.init) == Self.bruteForce(subjects, keys).map(ObjectIdentifier.init), "batch, \(keys)")
            Self.randomize(random.pick(subjects), &random)
            #expect(
                live.map(ObjectIdentifier.init) == Self.bruteForce(subjects, keys).map(ObjectIdentifier.init), "edit, \(keys)")
            #expect(live.lastError == nil)
        }
    }

    @Test("A sort of no models, and of one, gives them back")
    func emptyAndSingle() throws {
        let context = ModelContext()
        #expect(try SortSubject.query(in: context).sorted(by: \.name).results().isEmpty)
        #expect(try SortSubject.query(in: context).sorted(by: "score", ascending: false).results().isEmpty)
        let only = SortSubject.instance(in: context)
        #expect(
            try SortSubject.query(in: context).sorted(by: \.ratio).sorted(by: "name").results().map(ObjectIdentifier.init) == [
                ObjectIdentifier(only)
            ])
    }

    @Test("A sort by a string key whose values can't be ordered is a typed error naming the key; a live query keeps its results")
    func unorderableValues() throws {
        let context = ModelContext()
        let first = LiveWriter.instance(in: context)
        first.tags = ["b"]
        let second = LiveWriter.instance(in: context)
        second.tags = ["a"]
        #expect {
            try LiveWriter.query(in: context).sorted(by: "tags").results()
        } throws: { error in
            let error = error as? QueryError
            return error?.code == .incompatibleTypes && error?.key == "tags"
        }
        // One value alone is never compared: the live query starts, then can't place a second.
        second.removeFromContext()
        let live = try LiveWriter.query(in: context).sorted(by: "tags").live()
        #expect(live.map(ObjectIdentifier.init) == [ObjectIdentifier(first)])
        let third = LiveWriter.instance(in: context)
        third.tags = ["c"]
        #expect(live.lastError?.code == .incompatibleTypes)
        #expect(live.map(ObjectIdentifier.init) == [ObjectIdentifier(first)])
    }
}
