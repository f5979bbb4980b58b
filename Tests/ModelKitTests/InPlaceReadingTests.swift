import Foundation
import Testing
import ModelKitTestSupport

@testable import ModelKit

// String keys read properties in place (issue 18): Int64 (also optional), UInt64, Bool (also
// optional, also nested), GeoPoint (also optional) and keys through to-one references. Reading in
// place must give exactly what reading by encoding gives, for every condition and every order.

/// A model with a property of every kind the layout reads in place, and some it doesn't.
final class Gadget: ModelObject<Gadget.Properties> {
    struct Properties: ModelProperties {
        var count = 0
        var serial: Int64 = 0
        var rank: Int64?
        var big: UInt64 = 0
        var active = false
        var flag: Bool?
        var spot = GeoPoint(latitude: 0, longitude: 0)
        var maybeSpot: GeoPoint?
        /// Not read in place: these must not stop the other keys from being read in place.
        var level: Int32 = 0
        var ratio: Float?
        var inner = GadgetInner()
        var label = ""
        var owner = ModelRef<GadgetOwner>()
    }
}

struct GadgetInner: Codable {
    var on = false
    var depth = 0
}

/// What gadgets reference: itself referencing another owner.
final class GadgetOwner: ModelObject<GadgetOwner.Properties> {
    struct Properties: ModelProperties {
        var size = 0
        var open = false
        var boss = ModelRef<GadgetOwner>()
    }
}

/// Random gadgets and owners; some gadgets have no owner, some an owner no longer in the context.
private func gadgets(in context: ModelContext, count: Int, seed: UInt64) -> [Gadget] {
    var random = SplitMix64(seed: seed)
    let owners = (0..<8).map { index in
        let owner = GadgetOwner.instance(in: context)
        owner.size = index % 4
        owner.open = index.isMultiple(of: 3)
        return owner
    }
    for (index, owner) in owners.enumerated() where index % 3 != 0 { owner.boss = owners[(index + 1) % owners.count] }
    let points = [GeoPoint(latitude: 48.85, longitude: 2.35), GeoPoint(latitude: 48.9, longitude: 2.3), GeoPoint(latitude: -33, longitude: 151)]
    let gadgets = (0..<count).map { _ in
        let gadget = Gadget.instance(in: context)
        gadget.count = Int.random(in: -3...3, using: &random)
        gadget.serial = [Int64.min, -1, 0, 2, Int64.max].randomElement(using: &random)!
        gadget.rank = [nil, -2, 0, 3].randomElement(using: &random)!
        gadget.big = [0, 7, UInt64(Int64.max), UInt64(Int64.max) + 1, .max].randomElement(using: &random)!
        gadget.active = Bool.random(using: &random)
        gadget.flag = [nil, true, false].randomElement(using: &random)!
        gadget.spot = points.randomElement(using: &random)!
        gadget.maybeSpot = [nil, points[0], points[2]].randomElement(using: &random)!
        gadget.level = Int32.random(in: -2...2, using: &random)
        gadget.ratio = [nil, 0.5, 2].randomElement(using: &random)!
        gadget.inner = GadgetInner(on: Bool.random(using: &random), depth: Int.random(in: 0...2, using: &random))
        gadget.label = ["Ab", "ab", "AB", "b", "É", "e", ""].randomElement(using: &random)!
        gadget.owner = [nil, owners[0], owners[1], owners[2], owners[5], owners[7]].randomElement(using: &random)!
        return gadget
    }
    owners[7].removeFromContext()  // its gadgets' references lead nowhere now
    return gadgets
}

/// Conditions, with their query-language text, for a key holding values like `samples`.
private func conditions(_ key: String, _ samples: [(any QueryValueConvertible, String)]) -> [(QueryCondition, String)] {
    var result: [(QueryCondition, String)] = [(.exists, "\(key) EXISTS"), (.notExists, "\(key) NOT EXISTS")]
    for (value, text) in samples {
        result += [
            (.equals(value), "\(key) == \(text)"), (.notEquals(value), "\(key) != \(text)"),
            (.greaterThan(value), "\(key) > \(text)"), (.lessThanOrEqual(value), "\(key) <= \(text)"),
            (.in([value.queryValue, samples[0].0.queryValue]), "\(key) IN {\(text), \(samples[0].1)}"),
            (.notIn([value.queryValue]), "\(key) NOT IN {\(text)}"),
            (.between(samples[0].0, value), "\(key) BETWEEN {\(samples[0].1), \(text)}"),
        ]
    }
    return result
}

private func ids(_ models: [some Model]) -> [ModelID] { models.map(\.modelId).sorted() }

@Suite("String keys read in place")
struct InPlaceReadingTests {
    @Test("The layout locates Int64, UInt64, Bool, GeoPoint and reference properties, beside an Int32 and a Float?")
    func layoutLocatesEveryKind() {
        let layout = PropertyLayout.of(Gadget.self)
        for key in ["count", "serial", "rank", "big", "active", "flag", "spot", "maybeSpot", "inner.on", "inner.depth", "label"] {
            #expect(layout.fields[key] != nil, "\(key)")
        }
        #expect(layout.fields["level"] == nil && layout.fields["ratio"] == nil)
        #expect(layout.references["owner"] != nil)
        #expect(layout.reader(for: ["owner", "size"]) != nil)
        #expect(layout.reader(for: ["owner", "boss", "open"]) != nil)
        #expect(layout.reader(for: ["owner", "nothing"]) == nil)
    }

    @Test("Every condition on every in-place key selects what reading by encoding selects, in both string forms")
    func inPlaceAgreesWithEncoding() throws {
        let context = ModelContext()
        let all = gadgets(in: context, count: 120, seed: 0x18)
        let reference = PropertyValues<Gadget>()
        let numbers: [(any QueryValueConvertible, String)] = [(-1, "-1"), (0, "0"), (2.5, "2.5"), (3, "3")]
        let wide: [(any QueryValueConvertible, String)] = [
            (Int64.min, "\(Int64.min)"), (0, "0"), (Int64.max, "\(Int64.max)"), (UInt64.max, "\(UInt64.max)"),
        ]
        let bools: [(any QueryValueConvertible, String)] = [(false, "FALSE"), (true, "TRUE")]
        let strings: [(any QueryValueConvertible, String)] = [("ab", "'ab'"), ("b", "'b'"), ("É", "'É'")]
        var cases: [(String, QueryCondition, String)] = []
        for key in ["count", "rank", "inner.depth", "owner.size", "owner.boss.size", "level"] {
            cases += conditions(key, numbers).map { (key, $0.0, $0.1) }
        }
        for key in ["serial", "big"] { cases += conditions(key, wide).map { (key, $0.0, $0.1) } }
        for key in ["active", "flag", "inner.on", "owner.open", "owner.boss.open"] {
            cases += conditions(key, bools).map { (key, $0.0, $0.1) }
        }
        cases += conditions("label", strings).map { ("label", $0.0, $0.1) }
        cases.append(("label", .equals("ab", options: .caseInsensitive), "label ==[c] 'ab'"))
        cases.append(("label", .greaterThan("e", options: [.caseInsensitive, .diacriticInsensitive]), "label >[cd] 'e'"))
        for key in ["spot", "maybeSpot"] {
            cases += [
                (key, .within(kilometers: 10, of: GeoPoint(latitude: 48.86, longitude: 2.35)), "\(key) WITHIN 10 KM OF {48.86, 2.35}"),
                (key, .exists, "\(key) EXISTS"), (key, .notExists, "\(key) NOT EXISTS"),
            ]
        }
        for (key, condition, text) in cases {
            let path = key.split(separator: ".").map(String.init)
            let expected = try all.filter {
                try condition.matches(reference.value(at: path, of: $0), key: key, modelName: Gadget.modelName)
            }
            #expect(try ids(Gadget.query(in: context).where(key, condition).results()) == ids(expected), "\(text)")
            #expect(try ids(Gadget.query(in: context).filter(text).results()) == ids(expected), "\(text)")
        }
    }

    @Test("Sorting by string key, in place and with options, orders as the values read by encoding do")
    func sortsAgreeWithEncoding() throws {
        let context = ModelContext()
        let all = gadgets(in: context, count: 150, seed: 0x1818)
        let reference = PropertyValues<Gadget>()
        let keys: [(String, StringOptions, Bool)] = [
            ("count", [], true), ("rank", [], false), ("big", [], true), ("active", [], true), ("flag", [], false),
            ("label", [], true), ("label", .caseInsensitive, true), ("label", [.caseInsensitive, .diacriticInsensitive], false),
            ("owner.size", [], true), ("inner.on", [], false),
        ]
        for (key, options, ascending) in keys {
            let path = key.split(separator: ".").map(String.init)
            let values = try Dictionary(uniqueKeysWithValues: all.map { ($0.modelId, try reference.value(at: path, of: $0)) })
            // The reference order: nil first, values compared under the options, ties by model id.
            let expected = all.sorted { a, b in
                let (x, y) = (values[a.modelId]!, values[b.modelId]!)
                let order: ComparisonResult =
                    switch (x, y) {
                    case (.null, .null): .orderedSame
                    case (.null, _): .orderedAscending
                    case (_, .null): .orderedDescending
                    default: x.compare(to: y, options: options)!
                    }
                if order == .orderedSame { return a.modelId < b.modelId }
                return (order == .orderedAscending) == ascending
            }
            let sorted = try Gadget.query(in: context).sorted(by: key, ascending: ascending, options: options).results()
            #expect(sorted.map(\.modelId) == expected.map(\.modelId), "\(key) \(options)")
        }
        let center = GeoPoint(latitude: 48.86, longitude: 2.35)
        let byKey = try Gadget.query(in: context).sorted(byDistanceOf: "maybeSpot", from: center).results()
        let byDistance = all.sorted { a, b in
            let (x, y) = (a.maybeSpot?.distance(to: center) ?? .infinity, b.maybeSpot?.distance(to: center) ?? .infinity)
            return x == y ? a.modelId < b.modelId : x < y
        }
        #expect(byKey.map(\.modelId) == byDistance.map(\.modelId))
        let typed = try Gadget.query(in: context).sorted(by: \.label).sorted(by: \.rank, ascending: false).results()
        let plain = all.sorted { a, b in
            if a.label != b.label { return a.label < b.label }
            if a.rank != b.rank { return (a.rank ?? .min) > (b.rank ?? .min) && a.rank != nil }
            return a.modelId < b.modelId
        }
        #expect(typed.map(\.modelId) == plain.map(\.modelId))
    }
}
