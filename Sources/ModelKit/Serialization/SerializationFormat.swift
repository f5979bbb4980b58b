/// Which of ModelKit's two serialized forms to produce.
///
/// Both forms have the same structure (the ModelPointer format of ModelKit for Objective-C). They
/// differ in how values that JSON cannot hold are written:
///
/// | Value | `.propertyList` | `.json` |
/// |---|---|---|
/// | `Date` | ``ModelValue/date(_:)`` | `{"__type": "Date", "iso": "2012-10-29T06:44:01Z"}` |
/// | `Data` | ``ModelValue/data(_:)`` | `{"__type": "Bytes", "base64": "…"}` |
/// | NaN, ±infinity | ``ModelValue/double(_:)`` | `{"__type": "Double", "value": "nan"}` |
///
/// Geo points are `{"__type": "GeoPoint", "latitude": …, "longitude": …}` and references are
/// `{"__type": "ModelPointer", "model": …, "modelId": …, "objectId": …}` in both.
public enum SerializationFormat: Sendable, Hashable {
    /// Native dates and data, for property lists.
    case propertyList
    /// Only JSON types, with `__type` objects for dates, data and non-finite numbers.
    case json
}
