import Foundation

// Coding paths and keyed-container behaviour shared by ModelKit's encoder and decoder.

/// A coding key for array positions and for paths built by ModelKit itself.
struct IndexKey: CodingKey {
    let stringValue: String
    let intValue: Int?
    init(stringValue: String) {
        self.stringValue = stringValue
        intValue = nil
    }
    init(intValue: Int) {
        stringValue = "\(intValue)"
        self.intValue = intValue
    }
}

/// Renders a coding path as `properties.tags[2].name`. Very long paths (from runaway nesting) keep
/// their first and last components around a count of the ones left out.
func describe(_ path: [any CodingKey]) -> String {
    if path.count > 24 {
        return describe(Array(path.prefix(12))) + ".…(\(path.count - 18) more)…." + describe(Array(path.suffix(6)))
    }
    var text = ""
    for key in path {
        if let index = key.intValue, key is IndexKey {
            text += "[\(index)]"
        } else {
            if !text.isEmpty { text += "." }
            text += key.stringValue
        }
    }
    return text
}

/// A keyed container of ModelKit's encoders, which write a nil optional as null: the standard
/// library's `encodeIfPresent` leaves the key out, and then a missing key could no longer mean
/// "not in the data" and take the property's default when the model is read.
protocol NilAsNullKeyedContainer: KeyedEncodingContainerProtocol {}

extension NilAsNullKeyedContainer {
    private mutating func encodeOrNull<T: Encodable>(_ value: T?, forKey key: Key) throws {
        guard let value else { return try encodeNil(forKey: key) }
        try encode(value, forKey: key)
    }

    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { try encodeOrNull(value, forKey: key) }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        try encodeOrNull(value, forKey: key)
    }
}
