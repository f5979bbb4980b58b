import Foundation

// The tests a scan checks inline, without calling a closure: the comparisons query predicates
// are mostly made of (an integer against integers, a string equal to a string, a string array
// holding a string). They decide exactly as the closures `FieldMatcher` makes for the same
// conditions would; the others are such closures.

extension FieldMatcher {
    /// A compiled test of a property in place.
    @usableFromInline enum Kernel {
        case integers(IntegerRange)
        case text(TextEquality)
        case element(ElementMembership)
        case closure(Test)

        /// The test as a closure, for a caller that runs it on its own.
        var test: Test {
            switch self {
            case .integers(let range): { range.holds($0) }
            case .text(let equality): { equality.holds($0) }
            case .element(let membership): { membership.holds($0) }
            case .closure(let test): test
            }
        }
    }
}

/// An `Int` property within `lower ... upper` (outside it when `negated`; the range is empty when
/// `lower > upper`). A nil optional answers `nilMatches`. A value, so a step holds it inline.
@usableFromInline struct IntegerRange {
    let offset: Int
    let optional: Bool
    let nilMatches: Bool
    let lower: Int
    let upper: Int
    let negated: Bool

    @inline(__always) func holds(_ base: UnsafeRawPointer) -> Bool {
        let value: Int
        if optional {
            guard let present = base.load(fromByteOffset: offset, as: Int?.self) else { return nilMatches }
            value = present
        } else {
            value = base.load(fromByteOffset: offset, as: Int.self)
        }
        return (lower <= value && value <= upper) != negated
    }
}

/// A `String` property equal to `value` (different from it when `negated`), compared where it
/// lies. A nil optional answers `nilMatches`. An object, so that a scan can refer to it without
/// retaining the string.
@usableFromInline final class TextEquality {
    let offset: Int
    let optional: Bool
    let nilMatches: Bool
    let value: String
    let negated: Bool

    init(_ place: FieldMatcher.Place, _ value: String, negated: Bool) {
        (offset, optional, nilMatches) = (place.offset, place.optional, place.nilMatches)
        self.value = value
        self.negated = negated
    }

    @inline(__always) func holds(_ base: UnsafeRawPointer) -> Bool {
        let field = base.advanced(by: offset)
        if optional {
            guard let text = field.assumingMemoryBound(to: String?.self).pointee else { return nilMatches }
            return (text == value) != negated
        }
        return (field.assumingMemoryBound(to: String.self).pointee == value) != negated
    }
}

/// A `[String]` property that has `element` as an element. A nil optional answers `nilMatches`.
@usableFromInline final class ElementMembership {
    let offset: Int
    let optional: Bool
    let nilMatches: Bool
    let element: String

    init(_ place: FieldMatcher.Place, _ element: String) {
        (offset, optional, nilMatches) = (place.offset, place.optional, place.nilMatches)
        self.element = element
    }

    @inline(__always) func holds(_ base: UnsafeRawPointer) -> Bool {
        let field = base.advanced(by: offset)
        if optional {
            guard let array = field.assumingMemoryBound(to: [String]?.self).pointee else { return nilMatches }
            return array.contains(element)
        }
        return field.assumingMemoryBound(to: [String].self).pointee.contains(element)
    }
}
