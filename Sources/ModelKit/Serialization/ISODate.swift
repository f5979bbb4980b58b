import Foundation

/// Exact ISO 8601 text for dates.
///
/// A `Date` is a `Double` count of seconds since 2001-01-01. Writing it with a fixed number of
/// fractional digits (as ISO8601DateFormatter does, to the millisecond) loses precision. Instead we
/// take the shortest decimal text that reads back as the same `Double`, split it into whole seconds
/// and fractional digits, and write those digits after the seconds. Reading reassembles the same
/// decimal text and parses it once, so every date comes back `==`.
package enum ISODate {
    /// Whole seconds beyond this (about 3 million years) are not written as ISO text.
    static let maximumSeconds: Int64 = 100_000_000_000_000

    /// Seconds from 1970-01-01 to 2001-01-01.
    static let referenceOffset: Int64 = 978_307_200

    /// The ISO text for `date` in UTC, or `nil` when the date is not finite or too far out.
    package static func string(from date: Date) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        guard append(date, to: &bytes) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the ISO text for `date` to `bytes`; returns `false` (appending nothing) when the
    /// date is not finite or too far out.
    static func append(_ date: Date, to bytes: inout [UInt8]) -> Bool {
        let seconds = date.timeIntervalSinceReferenceDate
        guard seconds.isFinite, let (whole, fraction) = split(seconds), abs(whole) <= maximumSeconds else { return false }
        let since1970 = whole + referenceOffset
        let days = since1970.floorDivided(by: 86_400)
        let secondOfDay = since1970 - days * 86_400
        let (year, month, day) = civil(fromDays: days)
        if year < 0 {
            bytes.append(UInt8(ascii: "-"))
            appendPadded(-year, width: 4, to: &bytes)
        } else {
            if year > 9999 { bytes.append(UInt8(ascii: "+")) }
            appendPadded(year, width: 4, to: &bytes)
        }
        bytes.append(UInt8(ascii: "-"))
        appendPadded(Int64(month), width: 2, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        appendPadded(Int64(day), width: 2, to: &bytes)
        bytes.append(UInt8(ascii: "T"))
        appendPadded(secondOfDay / 3600, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        appendPadded(secondOfDay / 60 % 60, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        appendPadded(secondOfDay % 60, width: 2, to: &bytes)
        if !fraction.isEmpty {
            bytes.append(UInt8(ascii: "."))
            bytes.append(contentsOf: fraction.utf8)
        }
        bytes.append(UInt8(ascii: "Z"))
        return true
    }

    /// Appends the decimal digits of `value` (not negative), with leading zeros up to `width`.
    private static func appendPadded(_ value: Int64, width: Int, to bytes: inout [UInt8]) {
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { buffer in
            var count = 0
            var rest = value
            repeat {
                buffer[count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                count += 1
            } while rest > 0 && count < buffer.count
            for _ in count..<max(count, width) { bytes.append(UInt8(ascii: "0")) }
            for index in stride(from: count - 1, through: 0, by: -1) { bytes.append(buffer[index]) }
        }
    }

    /// Parses ISO 8601 text: `[±]YYYY-MM-DD(T| )HH:MM:SS[.fraction][Z|±HH:MM|±HHMM| ±HHMM]`.
    /// Returns `nil` for anything else.
    package static func date(from text: String) -> Date? {
        var scanner = Scanner(Array(text.utf8))
        var sign: Int64 = 1
        if scanner.take(UInt8(ascii: "-")) { sign = -1 } else { _ = scanner.take(UInt8(ascii: "+")) }
        guard let year = scanner.number(minDigits: 4, maxDigits: 9), scanner.take(UInt8(ascii: "-")),
            let month = scanner.number(minDigits: 2, maxDigits: 2), scanner.take(UInt8(ascii: "-")),
            let day = scanner.number(minDigits: 2, maxDigits: 2),
            scanner.take(UInt8(ascii: "T")) || scanner.take(UInt8(ascii: " ")),
            let hour = scanner.number(minDigits: 2, maxDigits: 2), scanner.take(UInt8(ascii: ":")),
            let minute = scanner.number(minDigits: 2, maxDigits: 2), scanner.take(UInt8(ascii: ":")),
            let second = scanner.number(minDigits: 2, maxDigits: 2),
            (1...12).contains(month), (1...daysIn(month: Int(month), year: sign * year)).contains(Int(day)),
            hour < 24, minute < 60, second < 61
        else { return nil }
        var fraction: [UInt8] = []
        if scanner.take(UInt8(ascii: ".")) {
            while let digit = scanner.digit() { fraction.append(digit) }
            guard !fraction.isEmpty, fraction.count <= 40 else { return nil }
        }
        _ = scanner.take(UInt8(ascii: " "))
        var offset: Int64 = 0
        if scanner.take(UInt8(ascii: "Z")) {
        } else if let zoneSign = scanner.sign() {
            guard let hours = scanner.number(minDigits: 2, maxDigits: 2) else { return nil }
            _ = scanner.take(UInt8(ascii: ":"))
            guard let minutes = scanner.number(minDigits: 2, maxDigits: 2), hours < 24, minutes < 60 else { return nil }
            offset = zoneSign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard scanner.isAtEnd else { return nil }
        let days = days(fromCivil: sign * year, Int(month), Int(day))
        let whole = days * 86_400 + hour * 3600 + minute * 60 + second - offset - referenceOffset
        while fraction.last == UInt8(ascii: "0") { fraction.removeLast() }
        let decimal: String
        if fraction.isEmpty {
            decimal = String(whole)
        } else if whole >= 0 {
            decimal = String(whole) + "." + String(decoding: fraction, as: UTF8.self)
        } else {
            // whole + 0.F == -((|whole| - 1) + (1 - 0.F)); 1 - 0.F is the ten's complement of F.
            decimal = "-" + String(-whole - 1) + "." + String(decoding: tensComplement(fraction), as: UTF8.self)
        }
        guard let seconds = Double(decimal) else { return nil }
        return Date(timeIntervalSinceReferenceDate: seconds)
    }

    /// Splits `value` into floor(value) and the decimal digits of value - floor(value), using the
    /// shortest text that round-trips.
    private static func split(_ value: Double) -> (Int64, String)? {
        var description = value.description
        // Fast path: "123.45" (not negative, no exponent), the form of almost every real date.
        let fast: (Int64, String)?? = description.withUTF8 { utf8 in
            guard let first = utf8.first, first != UInt8(ascii: "-"), !utf8.contains(UInt8(ascii: "e")) else { return nil }
            var whole: Int64 = 0
            var index = 0
            while index < utf8.count, utf8[index] != UInt8(ascii: ".") {
                guard index < 18 else { return .some(nil) }
                whole = whole * 10 + Int64(utf8[index] &- UInt8(ascii: "0"))
                index += 1
            }
            var end = utf8.count
            while end > index + 1, utf8[end - 1] == UInt8(ascii: "0") { end -= 1 }
            let fraction =
                end > index + 1 ? String(decoding: UnsafeBufferPointer(rebasing: utf8[(index + 1)..<end]), as: UTF8.self) : ""
            return (whole, fraction)
        }
        if let fast { return fast }
        var text = Array(description.utf8)
        var negative = false
        if text.first == UInt8(ascii: "-") {
            negative = true
            text.removeFirst()
        }
        // Mantissa digits and the position of the decimal point, from "123.45" or "1.2345e+02".
        var exponent = 0
        if let e = text.firstIndex(of: UInt8(ascii: "e")) {
            guard let parsed = Int(String(decoding: text[(e + 1)...], as: UTF8.self)) else { return nil }
            exponent = parsed
            text.removeSubrange(e...)
        }
        var digits: [UInt8] = []
        var pointPosition = text.count
        for byte in text {
            if byte == UInt8(ascii: ".") { pointPosition = digits.count } else { digits.append(byte) }
        }
        pointPosition += exponent
        if pointPosition < 0 {
            digits.insert(contentsOf: repeatElement(UInt8(ascii: "0"), count: -pointPosition), at: 0)
            pointPosition = 0
        }
        if pointPosition > digits.count {
            digits.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: pointPosition - digits.count))
        }
        let integerDigits = digits[..<pointPosition]
        var fraction = Array(digits[pointPosition...])
        while fraction.last == UInt8(ascii: "0") { fraction.removeLast() }
        guard integerDigits.count <= 18 else { return nil }
        var whole = Int64(String(decoding: integerDigits, as: UTF8.self)) ?? 0
        if negative {
            whole = -whole
            if !fraction.isEmpty {
                whole -= 1
                fraction = tensComplement(fraction)
            }
        }
        return (whole, String(decoding: fraction, as: UTF8.self))
    }

    /// 10^n - F for the n decimal digits F, as n digits. F must not end in 0 (callers strip
    /// trailing zeros), so no borrow crosses the last digit: it becomes 10 - d, the others 9 - d.
    private static func tensComplement(_ digits: [UInt8]) -> [UInt8] {
        var result = digits.map { UInt8(ascii: "9") - ($0 - UInt8(ascii: "0")) }
        result[result.count - 1] += 1
        return result
    }

    private static func isLeap(_ year: Int64) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    private static func daysIn(month: Int, year: Int64) -> Int {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (after Howard Hinnant's algorithm).
    static func days(fromCivil year: Int64, _ month: Int, _ day: Int) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = y.floorDivided(by: 400)
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The proleptic Gregorian date of a day count since 1970-01-01.
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int, day: Int) {
        let z = days + 719_468
        let era = z.floorDivided(by: 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * mp + 2) / 5 + 1)
        let month = Int(mp < 10 ? mp + 3 : mp - 9)
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    private struct Scanner {
        let bytes: [UInt8]
        var position = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }
        var isAtEnd: Bool { position == bytes.count }

        mutating func take(_ byte: UInt8) -> Bool {
            guard position < bytes.count, bytes[position] == byte else { return false }
            position += 1
            return true
        }

        mutating func digit() -> UInt8? {
            guard position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) else { return nil }
            defer { position += 1 }
            return bytes[position]
        }

        mutating func number(minDigits: Int, maxDigits: Int) -> Int64? {
            var value: Int64 = 0
            var count = 0
            while count < maxDigits, let digit = digit() {
                value = value * 10 + Int64(digit - UInt8(ascii: "0"))
                count += 1
            }
            return count >= minDigits ? value : nil
        }

        mutating func sign() -> Int64? {
            if take(UInt8(ascii: "+")) { return 1 }
            if take(UInt8(ascii: "-")) { return -1 }
            return nil
        }
    }
}

extension Int64 {
    /// Division rounding toward negative infinity.
    func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
