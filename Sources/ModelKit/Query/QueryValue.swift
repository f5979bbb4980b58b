import Foundation

/// A Swift value that a query condition can hold: numbers, strings, dates, booleans, UUIDs, URLs,
/// decimals, geo points, arrays of these, and `nil`.
///
/// Values are compared in the form ModelKit serializes properties in, so a condition on a `UUID`
/// or `URL` property compares the same text the property is stored as.
public protocol QueryValueConvertible {
    /// The value as a query compares it.
    var queryValue: ModelValue { get }
}

extension ModelValue: QueryValueConvertible {
    public var queryValue: ModelValue { self }
}

extension Bool: QueryValueConvertible {
    public var queryValue: ModelValue { .bool(self) }
}

extension String: QueryValueConvertible {
    public var queryValue: ModelValue { .string(self) }
}

extension Substring: QueryValueConvertible {
    public var queryValue: ModelValue { .string(String(self)) }
}

extension Double: QueryValueConvertible {
    public var queryValue: ModelValue { .double(self) }
}

extension Float: QueryValueConvertible {
    public var queryValue: ModelValue { .double(Double(self)) }
}

extension Int: QueryValueConvertible {
    public var queryValue: ModelValue { .int(Int64(self)) }
}

extension Int8: QueryValueConvertible {
    public var queryValue: ModelValue { .int(Int64(self)) }
}

extension Int16: QueryValueConvertible {
    public var queryValue: ModelValue { .int(Int64(self)) }
}

extension Int32: QueryValueConvertible {
    public var queryValue: ModelValue { .int(Int64(self)) }
}

extension Int64: QueryValueConvertible {
    public var queryValue: ModelValue { .int(self) }
}

extension UInt: QueryValueConvertible {
    public var queryValue: ModelValue { UInt64(self).queryValue }
}

extension UInt8: QueryValueConvertible {
    public var queryValue: ModelValue { .int(Int64(self)) }
}

extension UInt16: QueryValueConvertible {
    public var queryValue: ModelValue { .int(Int64(self)) }
}

extension UInt32: QueryValueConvertible {
    public var queryValue: ModelValue { .int(Int64(self)) }
}

extension UInt64: QueryValueConvertible {
    public var queryValue: ModelValue { Int64(exactly: self).map(ModelValue.int) ?? .uint(self) }
}

extension Decimal: QueryValueConvertible {
    /// A decimal compares as the nearest `Double`.
    public var queryValue: ModelValue { .double(NSDecimalNumber(decimal: self).doubleValue) }
}

extension Date: QueryValueConvertible {
    public var queryValue: ModelValue { .date(self) }
}

extension UUID: QueryValueConvertible {
    public var queryValue: ModelValue { .string(uuidString) }
}

extension URL: QueryValueConvertible {
    public var queryValue: ModelValue { .string(absoluteString) }
}

extension ModelID: QueryValueConvertible {
    public var queryValue: ModelValue { .string(description) }
}

extension GeoPoint: QueryValueConvertible {
    public var queryValue: ModelValue {
        .object(
            ModelValue.Object([
                ("__type", "GeoPoint"), ("latitude", .double(latitude)), ("longitude", .double(longitude)),
            ]))
    }
}

extension Optional: QueryValueConvertible where Wrapped: QueryValueConvertible {
    public var queryValue: ModelValue { self?.queryValue ?? .null }
}

extension Array: QueryValueConvertible where Element: QueryValueConvertible {
    public var queryValue: ModelValue { .array(map(\.queryValue)) }
}

extension ModelValue {
    /// The geo point this value holds, in the form properties of type ``GeoPoint`` encode to.
    var geoPoint: GeoPoint? {
        guard case .object(let object) = self, case .string("GeoPoint")? = object["__type"],
            let latitude = object["latitude"]?.doubleValue, let longitude = object["longitude"]?.doubleValue
        else { return nil }
        return GeoPoint(latitude: latitude, longitude: longitude)
    }

    /// The number as a Double.
    var doubleValue: Double? {
        switch self {
        case .int(let value): return Double(value)
        case .uint(let value): return Double(value)
        case .double(let value): return value
        default: return nil
        }
    }
}
