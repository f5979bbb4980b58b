import Foundation

/// The one rule every reader applies to numbers that may not fit, so that out of range means the
/// same in JSON text, in property lists and in the tree decoders.
enum NumberRange {
    /// 2^53: below it, every whole `Double` is exactly one integer; above it, a `Double` stands
    /// for a range of integers, so reading one into an integer type would pick one silently
    /// (`-9223372036854776832` parses to the same `Double` as `Int64.min`).
    static let exactIntegerLimit: Double = 9_007_199_254_740_992

    /// `number` as an `I` when it is whole, exact, and fits.
    ///
    /// Integers written as digits never come here: they are read exactly, as integers. This is
    /// for numbers in floating-point form (`1e3`, `2.0`) and for digits too long for 64 bits.
    static func integer<I: FixedWidthInteger>(_ type: I.Type, exactly number: Double) -> I? {
        guard number.magnitude < exactIntegerLimit else { return nil }
        return I(exactly: number)
    }

    /// How an error shows a whole number that ``integer(_:exactly:)`` refused.
    static func describe(_ number: Double) -> String {
        guard number.magnitude >= exactIntegerLimit else { return "\(number)" }
        return "\(number) (in floating-point form, exact as an integer only below 2^53)"
    }

    /// The date `seconds` after 2001, or `nil` for a NaN or infinite count, which is no date
    /// (and compares unequal to itself, or sorts past every date).
    static func date(referenceSeconds seconds: Double) -> Date? {
        seconds.isFinite ? Date(timeIntervalSinceReferenceDate: seconds) : nil
    }

    /// The error for a date whose seconds are not finite.
    static func notADate(_ seconds: Double, path: String = "", byteOffset: Int? = nil) -> SerializationError {
        SerializationError(
            .invalidValue, path: path, byteOffset: byteOffset, expected: "a date (a finite number of seconds)",
            found: "\(seconds) seconds")
    }

    /// The error for number text whose value is beyond `Double`'s range (`1e400`), which
    /// parsing would turn into an infinity.
    static func beyondDouble(_ text: String, byteOffset: Int) -> SerializationError {
        SerializationError(
            .numberOutOfRange, byteOffset: byteOffset,
            expected: "a number within Double's range (magnitude up to \(Double.greatestFiniteMagnitude))",
            found: "number \(text.count > 40 ? text.prefix(40) + "…" : text)")
    }
}
