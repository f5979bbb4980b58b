import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@testable import ModelKitServices

final class Moment: ModelObject<Moment.Properties>, RemoteModel {
    struct Properties: ModelProperties {
        var name = ""
        var at = Date(timeIntervalSinceReferenceDate: 0)
        var maybe: Date?
    }
}

/// A holder of many moments: one save writes them all.
final class MomentList: ModelObject<MomentList.Properties>, RemoteModel {
    struct Properties: ModelProperties {
        var moments = ModelArray<Moment>()
    }
}

/// Dates ModelKit writes in every form: years 0000, 0001, 9999 and 10000, negative years, dates
/// so far out that they have no ISO text, the reference date and 1970, fractions of 1 to 7 and
/// 17 digits, and the last instants before whole seconds.
let edgeDates: [Date] = [
    -63_113_904_000, -63_113_904_000.5, -63_082_281_600, -63_082_281_599.999, 252_423_993_599, 252_423_993_599.999_9,
    252_423_993_600, 252_423_993_600.5, -63_145_526_400, -63_145_526_400.5, -1e13, 1e13, 2e14, -2e14, 0, -0.5, 0.5, 1e-9, -1e-9,
    -978_307_200, 99_999_999_999.999, 100_000_000_000, 815_000_000.1, 815_000_000.12, 815_000_000.123_456_7,
    815_000_000.999_999, 815_000_001, 815_000_000.333_333_333_333_3,
].map(Date.init(timeIntervalSinceReferenceDate:))

/// A random date: an edge date, one near it, or one in the years 0001–9999 with a fraction of
/// a random number of digits.
func randomDate(_ random: inout SplitMix64, near others: [Date] = []) -> Date {
    switch Int.random(in: 0..<6, using: &random) {
    case 0: return random.pick(edgeDates)
    case 1 where !others.isEmpty:
        let base = random.pick(others).timeIntervalSinceReferenceDate
        return Date(timeIntervalSinceReferenceDate: base + random.pick([0, 0, 0.001, -0.001, 0.5, -0.5, 1, -1, 1e-6]))
    default:
        let whole = Double(Int64.random(in: -63_000_000_000...252_000_000_000, using: &random))
        let digits = Int.random(in: 0...7, using: &random)
        let scale = pow(10, Double(digits))
        let fraction = digits == 0 ? 0 : Double(Int.random(in: 0..<Int(scale), using: &random)) / scale
        return Date(
            timeIntervalSinceReferenceDate: random.chance(0.1) ? whole + .random(in: 0..<1, using: &random) : whole + fraction)
    }
}

@Suite("Date ranges become ranges on the ISO text")
struct DateRangePlanTests {
    @Test("Every date a save writes inside a range has its text inside the range's text bounds, byte by byte")
    @MainActor
    func textBoundsHoldEveryWrittenDate() throws {
        var random = SplitMix64(seed: 0xDA7E_2026)
        let context = ModelContext()
        let list = MomentList.instance(in: context)
        var dates: [Date] = []
        for _ in 0..<2_000 {
            let moment = Moment.instance(in: context)
            moment.at = randomDate(&random, near: dates)
            dates.append(moment.at)
            list.moments.append(moment)
        }
        // The texts as a save writes them (the record writer's fast path included), by object id.
        let plan = try SavePlan(root: list, context: context, store: "test")
        var written: [String: String?] = [:]
        for write in plan.writes where write.record.collection == "Moment" {
            let fields = try #require(write.fields)
            let record = try JSONSerialization.jsonObject(with: fields.jsonData) as? [String: Any]
            let at = try #require(record?["at"] as? [String: Any])
            written[write.record.id] = .some(at["iso"] as? String)
        }
        var texts: [(date: Date, text: String?)] = []
        for moment in list.moments {
            let id = try #require(moment.objectId)
            let text = try #require(written[id])
            texts.append((moment.at, text))
        }
        #expect(texts.count == 2_000)
        // Not vacuous: far dates without text, signed years and fractions were written.
        #expect(texts.contains { $0.text == nil })
        #expect(texts.contains { $0.text?.hasPrefix("+") == true })
        #expect(texts.contains { $0.text?.hasPrefix("-") == true })
        #expect(texts.contains { $0.text?.contains(".") == true })
        var ranges = 0
        var checked = 0
        for _ in 0..<3_000 {
            let low = random.chance(0.7) ? random.pick(dates) : randomDate(&random)
            let high = random.chance(0.7) ? random.pick(dates) : randomDate(&random)
            guard let bounds = RemoteQueryPlan.isoRange(["at"], optional: false, low: low, high: high) else { continue }
            ranges += 1
            guard case .string(let from) = bounds[0].values[0], case .string(let upTo) = bounds[1].values[0] else {
                Issue.record("\(bounds)")
                continue
            }
            for (date, text) in texts where low <= date && date <= high {
                checked += 1
                let iso = try #require(text, "\(date) is in a range with both ends in 0000–9999 but has no ISO text")
                #expect(Array(iso.utf8).lexicographicallyPrecedes(Array(from.utf8)) == false, "\(iso) < \(from)")
                #expect(Array(iso.utf8).lexicographicallyPrecedes(Array(upTo.utf8)), "\(iso) >= \(upTo)")
            }
        }
        #expect(ranges > 1_000)
        #expect(checked > 100_000)
    }

    @Test("Ranges with both ends in years 0000–9999 are sent; one end, a negation, other years or operands are not")
    func plannedRanges() throws {
        let service = KintoService(url: URL(string: "http://127.0.0.1:1/v1")!, bucket: "b", user: "u", password: "p")
        func at(_ condition: QueryCondition) -> ModelPredicate<Moment> { ModelPredicate<Moment>.where("at", condition) }
        func sent(_ predicate: ModelPredicate<Moment>) -> [String] {
            service.plan(of: Moment.query(in: ModelContext()).filter(predicate)).conditions.map { $0.description }
        }
        let a = Date(timeIntervalSinceReferenceDate: 815_000_000.25)  // 2026-10-29T20:53:20.25Z
        let b = Date(timeIntervalSinceReferenceDate: 815_086_399.999)  // 2026-10-30T20:53:19.999Z
        let range = [#"at.iso greaterThanOrEqual "2026-10-29T20:53:20""#, #"at.iso lessThan "2026-10-30T20:53:20""#]
        #expect(sent(at(.between(a, b))) == range)
        #expect(sent(at(.greaterThan(a)) && at(.lessThanOrEqual(b))) == range)
        #expect(
            sent(at(.lessThan(b)) && ModelPredicate<Moment>.where("name", .equals("x")) && at(.greaterThanOrEqual(a))) == [
                #"name equal "x""#
            ] + range)
        // The tightest of several bounds.
        #expect(sent(at(.greaterThan(a.addingTimeInterval(-99))) && at(.greaterThan(a)) && at(.lessThan(b))) == range)
        // Equality: the second it is in.
        #expect(
            sent(at(.equals(a))) == [
                #"at.iso greaterThanOrEqual "2026-10-29T20:53:20""#, #"at.iso lessThan "2026-10-29T20:53:21""#,
            ])
        #expect(
            sent(ModelPredicate<Moment>.where("maybe", .between(a, b))).first
                == #"maybe.iso greaterThanOrEqual "2026-10-29T20:53:20""#)
        // One end alone: `+10000-…` sorts below every 4-digit year, far dates have no text.
        #expect(sent(at(.greaterThan(a))).isEmpty)
        #expect(sent(at(.lessThanOrEqual(b))).isEmpty)
        #expect(sent(at(.greaterThan(a)) || at(.lessThan(b))).isEmpty)
        #expect(sent(!at(.between(a, b))).isEmpty)
        #expect(sent(!at(.greaterThan(a)) && !at(.lessThan(b))).isEmpty)
        #expect(sent(!(at(.greaterThan(a)) && at(.lessThan(b)))).isEmpty)
        #expect(sent(at(.notEquals(a))).isEmpty)
        #expect(sent(at(.in([a, b]))).isEmpty)
        // Ends outside 0000–9999 (the upper end's next second included).
        let year10000 = Date(timeIntervalSinceReferenceDate: 252_423_993_600)
        #expect(sent(at(.between(a, year10000))).isEmpty)
        #expect(sent(at(.between(a, year10000.addingTimeInterval(-0.5)))).isEmpty)
        #expect(sent(at(.between(a, year10000.addingTimeInterval(-1.5)))).count == 2)
        let yearMinus1 = Date(timeIntervalSinceReferenceDate: -63_145_526_400.5)
        #expect(sent(at(.between(yearMinus1, a))).isEmpty)
        #expect(sent(at(.between(Date(timeIntervalSinceReferenceDate: .nan), a))).isEmpty)
        #expect(sent(at(.between(Date(timeIntervalSinceReferenceDate: -.infinity), a))).isEmpty)
        // Not a date operand: the client compares.
        #expect(sent(at(.between(1, 2))).isEmpty)
        let plan = service.plan(of: Moment.query(in: ModelContext()).filter(at(.between(a, b))))
        #expect(!plan.isExact)
        #expect(plan.sentLeafCount == 1)
        let pair = service.plan(
            of: Moment.query(in: ModelContext()).filter(at(.greaterThan(a)) && at(.lessThan(b))))
        #expect(pair.leafCount == 2 && pair.sentLeafCount == 2 && !pair.isExact)
        // Kinto takes only bounds of the fixed shape, as a superset; and never orders by them.
        let text = RecordField(path: ["at", "iso"], kind: .dateText, isOptional: false)
        #expect(service.evaluation(of: RecordCondition(text, .greaterThanOrEqual, [.string("2026-10-29T20:53:20")])) == .superset)
        #expect(service.evaluation(of: RecordCondition(text, .lessThan, [.string("2026-10-29T20:53:20Z")])) == .unsupported)
        #expect(service.evaluation(of: RecordCondition(text, .lessThan, [.string("+10000-01-01T00:00:00")])) == .unsupported)
        #expect(service.evaluation(of: RecordCondition(text, .equal, [.string("2026-10-29T20:53:20")])) == .unsupported)
        #expect(!service.canSort(by: text))
        #expect(try KintoService.parameters(plan.conditions).map(\.0) == ["min_at.iso", "lt_at.iso"])
    }
}

/// A service on a fresh bucket with the `Moment` and `MomentList` collections.
func momentService(pageSize: Int = 1_000) async throws -> KintoService {
    try ModelRegistry.register(Moment.self, MomentList.self)
    let fresh = try await KintoServer.freshService(collections: ["Moment", "MomentList"])
    let server = try await KintoServer.shared.value
    return server.service(bucket: fresh.bucket, timeout: .seconds(300), pageSize: pageSize)
}

/// Saves `moments`, 50 to a list.
func saveMoments(
    _ moments: [Moment], _ service: KintoService, in context: ModelContext, isolation: isolated (any Actor)? = #isolation
)
    async throws
{
    for start in stride(from: 0, to: moments.count, by: 50) {
        let list = MomentList.instance(in: context)
        list.moments.append(contentsOf: moments[start..<min(start + 50, moments.count)])
        try await service.save(list)
    }
}

@Suite(
    "Date ranges on a real Kinto server download the text range and agree with local queries",
    .enabled(if: serviceTestsEnabled, serviceTestsSkipped), .hangBackstop)
struct DatePushdownTests {
    @Test("Random date ranges over random dates, edge years and fractions included, give the same models both ways")
    func randomRanges() async throws {
        let seed = ProcessInfo.processInfo.environment["MODELKIT_QUERY_SEED"].flatMap { UInt64($0) } ?? 0xDA7E_5EED
        var random = SplitMix64(seed: seed)
        let service = try await momentService(pageSize: 100)
        let context = ModelContext()
        var moments: [Moment] = []
        var dates: [Date] = []
        for index in 0..<300 {
            let moment = Moment.instance(in: context)
            moment.name = "m\(index)"
            moment.at = randomDate(&random, near: dates)
            moment.maybe = random.chance(0.3) ? nil : randomDate(&random, near: dates)
            dates.append(moment.at)
            moments.append(moment)
        }
        try await saveMoments(moments, service, in: context)

        func bound() -> Date { random.chance(0.6) ? random.pick(dates) : randomDate(&random, near: dates) }
        func leaf(_ key: String) -> (ModelPredicate<Moment>, String) {
            let a = bound()
            let b = random.chance(0.8) ? a.addingTimeInterval(.random(in: 0...1e9, using: &random)) : bound()
            switch Int.random(in: 0..<7, using: &random) {
            case 0: return (.where(key, .greaterThan(a)), "\(key) > \(a)")
            case 1: return (.where(key, .greaterThanOrEqual(a)), "\(key) >= \(a)")
            case 2: return (.where(key, .lessThan(b)), "\(key) < \(b)")
            case 3: return (.where(key, .lessThanOrEqual(b)), "\(key) <= \(b)")
            case 4: return (.where(key, .equals(a)), "\(key) == \(a)")
            default: return (.where(key, .between(a, b)), "\(key) BETWEEN \(a), \(b)")
            }
        }
        let queryCount = 150
        // Compared as sets of object ids, as these tests always have.
        let pushed = await compareRandomQueries(queryCount, seed: seed, on: service, comparing: .asSets) {
            let key = random.pick(["at", "at", "maybe"])
            var (predicate, text) = leaf(key)
            switch Int.random(in: 0..<6, using: &random) {
            case 0, 1:
                // A lower and an upper bound together.
                let a = bound()
                let b = random.chance(0.8) ? a.addingTimeInterval(.random(in: 0...1e9, using: &random)) : bound()
                let lower: ModelPredicate<Moment> =
                    random.chance(0.5) ? .where(key, .greaterThan(a)) : .where(key, .greaterThanOrEqual(a))
                let upper: ModelPredicate<Moment> =
                    random.chance(0.5) ? .where(key, .lessThan(b)) : .where(key, .lessThanOrEqual(b))
                predicate = lower && upper
                text = "\(key) from \(a) to \(b)"
            case 2:
                predicate = !predicate
                text = "NOT \(text)"
            case 3:
                let (other, otherText) = leaf(random.pick(["at", "maybe"]))
                predicate = random.chance(0.5) ? predicate && other : predicate || other
                text += " AND/OR \(otherText)"
            default: break
            }
            return (Moment.query(in: context).filter(predicate), text)
        }
        print("Random date queries (seed \(seed)): \(queryCount), \(pushed) sending a text range")
        #expect(pushed >= queryCount / 3)
    }

    @Test("A 1%-selective date range downloads a small part of the collection")
    func narrowRangeDownloadsLess() async throws {
        let service = try await momentService()
        let context = ModelContext()
        var random = SplitMix64(seed: 11)
        let count = Int(ProcessInfo.processInfo.environment["MODELKIT_PUSHDOWN_RECORDS"] ?? "") ?? 1_000
        // Ten years from 2020, with fractions of up to 7 digits.
        let start = 599_616_000.0
        let span = 10 * 365.25 * 86_400
        var moments: [Moment] = []
        for index in 0..<count {
            let moment = Moment.instance(in: context)
            moment.name = "moment \(index)"
            moment.at = Date(
                timeIntervalSinceReferenceDate: start + (.random(in: 0..<span, using: &random) * 1e7).rounded() / 1e7)
            moments.append(moment)
        }
        try await saveMoments(moments, service, in: context)

        var before = service.metrics
        let all = try await service.fetch(Moment.query(in: ModelContext()))
        let collectionBytes = service.metrics.bytesReceived - before.bytesReceived + service.metrics.bytesSent - before.bytesSent
        #expect(all.count == count)

        // 1% of the span, in its middle.
        let low = Date(timeIntervalSinceReferenceDate: start + span * 0.495)
        let query = Moment.query(in: context).where("at", .between(low, low.addingTimeInterval(span / 100)))
        before = service.metrics
        let (local, remote) = try await bothWays(query, service, comparing: .asSets)
        let queryBytes = service.metrics.bytesReceived - before.bytesReceived + service.metrics.bytesSent - before.bytesSent
        #expect(local == remote)
        print(
            "Date range over \(count) moments: \(remote.count) matches, \(queryBytes) bytes sent and received; "
                + "the collection is \(collectionBytes) bytes (\(Double(queryBytes * 10_000 / collectionBytes) / 100)%)")
        #expect(queryBytes * 20 <= collectionBytes)
    }
}
