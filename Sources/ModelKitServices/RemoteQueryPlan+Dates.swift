import Foundation
import ModelKit

// Date ranges as text ranges on the `iso` member of a date (RecordCodec writes a Date as
// `{"__type": "Date", "iso": …}`, see ISODate): sent only when the range has both ends, as a
// superset the client then narrows.
//
// Why that is a superset. A date in the years 0000–9999 is written as `YYYY-MM-DDTHH:MM:SS`, then
// `.` and 1 to 17 fraction digits when it has a fraction, then `Z`: the first 19 characters are
// fixed-width, and they order as the whole seconds do. Let p(s) be those 19 characters for the
// whole second s. Then d ≥ a implies text(d) ≥ p(⌊a⌋) (same prefix, or a greater one), and d ≤ b
// implies text(d) < p(⌊b⌋ + 1 s) (a smaller prefix, decided within the 19 characters). Dates in
// other years are written `-YYYY…`, `+YYYYY…` or, far out, as `referenceSeconds` with no `iso`:
// they fall outside a range with both ends in 0000–9999 anyway, but a one-sided range would match
// them and the text bound would drop them (`+` orders before every digit), so one end alone is
// never sent. Comparisons never look past the 19th character of a bound, where the texts differ
// in length; so any collation that orders digits ascending and treats the fixed punctuation the
// same in every text (byte order, glibc's and ICU's en_US, which may ignore it) orders them alike.

extension RemoteQueryPlan {
    /// Whether the stored property at `path` of `M` is a `Date`.
    static func isDate<M: Model>(_ path: [String], _ type: M.Type) -> Bool {
        M.storedField(at: path)?.kind == .date
    }

    /// The text range on the `iso` member of the date at `path` that holds every date from `low`
    /// to `high` (both included): `iso ≥ p(⌊low⌋)` and `iso < p(⌊high⌋ + 1 s)`; `nil` when either
    /// end's year is outside 0000–9999 (or the end is not finite).
    static func isoRange(_ path: [String], optional: Bool, low: Date, high: Date) -> [RecordCondition]? {
        let first = low.timeIntervalSinceReferenceDate.rounded(.down)
        let last = high.timeIntervalSinceReferenceDate.rounded(.down)
        guard let from = isoSecond(first), let upTo = isoSecond(last + 1) else { return nil }
        let field = RecordField(path: path + ["iso"], kind: .dateText, isOptional: optional)
        return [
            RecordCondition(field, .greaterThanOrEqual, [.string(from)]),
            RecordCondition(field, .lessThan, [.string(upTo)]),
        ]
    }

    /// `YYYY-MM-DDTHH:MM:SS`, the first 19 characters of the ISO text of the whole second
    /// `seconds` (since 2001), when that text has a 4-digit year without a sign.
    static func isoSecond(_ seconds: Double) -> String? {
        // Whole seconds this far out are exact doubles; 1e12 s is past the year 9999.
        guard seconds.isFinite, abs(seconds) < 1e12, seconds == seconds.rounded(.down),
            let text = ISODate.string(from: Date(timeIntervalSinceReferenceDate: seconds)),
            text.utf8.count == 20, text.utf8.first.map({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) == true
        else { return nil }
        return String(text.prefix(19))
    }

    /// The text range for a date condition at `path` taken alone: `BETWEEN` and `==` (a range
    /// of one date). Every other date condition has at most one end, or is negated.
    static func dateEquivalent(_ path: [String], _ condition: QueryCondition, optional: Bool) -> [RecordCondition]? {
        switch (condition.op, condition.values.count) {
        case (.between, 2):
            guard case .date(let low) = condition.values[0], case .date(let high) = condition.values[1] else { return nil }
            return isoRange(path, optional: optional, low: low, high: high)
        case (.equal, 1):
            guard case .date(let date) = condition.values[0] else { return nil }
            return isoRange(path, optional: optional, low: date, high: date)
        default:
            return nil
        }
    }

    /// Text ranges made of the one-sided date conditions among `filters`, all of which hold
    /// (the members of an AND): for each date with both a lower (`>`, `>=`) and an upper (`<`,
    /// `<=`) bound, the range from the highest lower bound to the lowest upper bound, and how
    /// many conditions it stands for.
    static func dateRanges<M: Model>(_ filters: [QueryOutline.Filter], _ type: M.Type)
        -> [(conditions: [RecordCondition], leaves: Int)]
    {
        var bounds: [[String]: (low: Date?, high: Date?, leaves: Int, optional: Bool)] = [:]
        var paths: [[String]] = []
        for filter in filters {
            guard case .condition(let path, let condition) = filter, condition.options.isEmpty, condition.values.count == 1,
                case .date(let date) = condition.values[0], let (kind, optional) = M.storedField(at: path), kind == .date
            else { continue }
            var bound = bounds[path] ?? (nil, nil, 0, optional)
            switch condition.op {
            case .greater, .greaterOrEqual: bound.low = max(bound.low ?? date, date)
            case .less, .lessOrEqual: bound.high = min(bound.high ?? date, date)
            default: continue
            }
            bound.leaves += 1
            if bounds[path] == nil { paths.append(path) }
            bounds[path] = bound
        }
        return paths.compactMap { path in
            guard let bound = bounds[path], let low = bound.low, let high = bound.high,
                let conditions = isoRange(path, optional: bound.optional, low: low, high: high)
            else { return nil }
            return (conditions, bound.leaves)
        }
    }
}

extension RemoteQueryPlan {
    /// Whether `text` has the form of a bound ``isoSecond(_:)`` makes: `DDDD-DD-DDTDD:DD:DD`.
    static func isSecondText(_ text: String) -> Bool {
        let shape = Array("0000-00-00T00:00:00".utf8)
        let bytes = Array(text.utf8)
        guard bytes.count == shape.count else { return false }
        return zip(bytes, shape).allSatisfy { byte, expected in
            expected == UInt8(ascii: "0") ? (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) : byte == expected
        }
    }
}
