import Foundation

// Evaluating a string-key condition against a property's value, in the ModelValue form the
// property encodes to. Kinds that can't be compared are an error, not a non-match, so a query
// with a typo in a value's type fails loudly; a nil property simply doesn't match ordering and
// string conditions.

extension QueryCondition {
    /// Whether `value` satisfies the condition.
    ///
    /// - Throws: ``QueryError/Code/incompatibleTypes`` when the value's kind can't be compared
    ///   with the condition's values.
    func matches(_ value: ModelValue, key: String, modelName: String) throws -> Bool {
        switch op {
        case .exists: return value != .null
        case .notExists: return value == .null
        case .equal: return try isEqual(value, values[0], key: key, modelName: modelName)
        case .notEqual: return try !isEqual(value, values[0], key: key, modelName: modelName)
        case .in:
            for candidate in values where try isEqual(value, candidate, key: key, modelName: modelName) { return true }
            return false
        case .notIn:
            for candidate in values where try isEqual(value, candidate, key: key, modelName: modelName) { return false }
            return true
        case .greater: return try order(value, values[0], key, modelName).map { $0 == .orderedDescending } ?? false
        case .greaterOrEqual: return try order(value, values[0], key, modelName).map { $0 != .orderedAscending } ?? false
        case .less: return try order(value, values[0], key, modelName).map { $0 == .orderedAscending } ?? false
        case .lessOrEqual: return try order(value, values[0], key, modelName).map { $0 != .orderedDescending } ?? false
        case .between:
            guard let low = try order(value, values[0], key, modelName), low != .orderedAscending,
                let high = try order(value, values[1], key, modelName), high != .orderedDescending
            else { return false }
            return true
        case .beginsWith, .endsWith, .like:
            guard case .string(let text) = value else {
                if value == .null { return false }
                throw mismatch(value, expected: "a string property", key, modelName)
            }
            guard case .string(let needle) = values[0] else { return false }
            switch op {
            case .beginsWith: return text.folded(options).hasPrefix(needle.folded(options))
            case .endsWith: return text.folded(options).hasSuffix(needle.folded(options))
            default: return WildcardPattern(needle, options: options).matches(text)
            }
        case .contains:
            switch value {
            case .null: return false
            case .string(let text):
                guard case .string(let needle) = values[0] else {
                    throw mismatch(values[0], expected: "a string to look for in a string property", key, modelName)
                }
                if needle.isEmpty { return true }
                return text.folded(options).contains(needle.folded(options))
            case .array(let elements):
                for element in elements where try isEqual(element, values[0], key: key, modelName: modelName) {
                    return true
                }
                return false
            default:
                throw mismatch(value, expected: "a string or array property", key, modelName)
            }
        case .containsAll, .containsAny:
            guard case .array(let elements) = value else {
                if value == .null { return false }
                throw mismatch(value, expected: "an array property", key, modelName)
            }
            for candidate in values {
                var found = false
                for element in elements where try isEqual(element, candidate, key: key, modelName: modelName) {
                    found = true
                    break
                }
                if found && op == .containsAny { return true }
                if !found && op == .containsAll { return false }
            }
            return op == .containsAll
        case .within:
            guard let point = value.geoPoint, let center else {
                if value == .null { return false }
                throw mismatch(value, expected: "a GeoPoint property", key, modelName)
            }
            return point.isWithin(kilometers: kilometers, of: center)
        }
    }

    private func isEqual(_ value: ModelValue, _ other: ModelValue, key: String, modelName: String) throws -> Bool {
        if value == .null || other == .null { return value == other }
        guard value.isComparable(with: other) else { throw mismatch(value, other, key, modelName) }
        switch (value, other) {
        case (.array, _), (.object, _): return value == other
        default: return value.compare(to: other, options: options) == .orderedSame
        }
    }

    private func order(_ value: ModelValue, _ other: ModelValue, _ key: String, _ modelName: String) throws
        -> ComparisonResult?
    {
        if value == .null || other == .null { return nil }
        guard value.isComparable(with: other), let result = value.compare(to: other, options: options) else {
            if case .double(let number) = value, number.isNaN { return nil }
            throw mismatch(value, other, key, modelName)
        }
        return result
    }

    private func mismatch(_ value: ModelValue, _ other: ModelValue, _ key: String, _ modelName: String) -> QueryError {
        QueryError(
            .incompatibleTypes, modelName: modelName, key: key,
            expected: "a value comparable with \(value.kindName) for \(op.rawValue)", found: other.kindName)
    }

    private func mismatch(_ value: ModelValue, expected: String, _ key: String, _ modelName: String) -> QueryError {
        QueryError(
            .incompatibleTypes, modelName: modelName, key: key, expected: "\(expected) for \(op.rawValue)",
            found: value.kindName)
    }

    /// Checks the condition's own values before any model is looked at.
    func validate(key: String, modelName: String) throws {
        if op == .within && !(kilometers >= 0) {
            throw QueryError(
                .invalidCondition, modelName: modelName, key: key, expected: "a distance of 0 km or more",
                found: "\(kilometers)")
        }
    }
}
