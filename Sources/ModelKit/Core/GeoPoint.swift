import Foundation

/// A location on Earth, in degrees: the Swift counterpart of ModelKit's `MKitGeoPoint`.
///
/// A `GeoPoint` is a value, not a model: use it as a property.
///
/// ```swift
/// struct Properties: ModelProperties {
///     var name = ""
///     var location = GeoPoint(latitude: 10.765, longitude: 106.690)
/// }
/// ```
///
/// In ModelKit's JSON form it is written as
/// `{"__type": "GeoPoint", "latitude": 10.765, "longitude": 106.69}`.
public struct GeoPoint: Hashable, Sendable, Codable {
    /// Degrees north of the equator, from -90 to 90.
    public var latitude: Double
    /// Degrees east of the prime meridian, from -180 to 180.
    public var longitude: Double

    /// Creates a point from degrees of latitude and longitude.
    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }

    /// The mean radius of the Earth used by ``distance(to:)``, in kilometres.
    public static let earthRadiusKilometers = 6371.0088

    /// The great-circle distance to `other`, in kilometres (haversine formula on a sphere).
    ///
    /// - Complexity: O(1).
    public func distance(to other: GeoPoint) -> Double {
        let toRadians = Double.pi / 180
        let dLat = (other.latitude - latitude) * toRadians
        let dLon = (other.longitude - longitude) * toRadians
        let a =
            sin(dLat / 2) * sin(dLat / 2)
            + cos(latitude * toRadians) * cos(other.latitude * toRadians) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * Self.earthRadiusKilometers * asin(min(1, a.squareRoot()))
    }

    /// Whether the point is on Earth: a latitude from -90 to 90 and a longitude from -180 to 180.
    /// Queries need it: a `WITHIN` condition matches only such points, as the haversine formula
    /// puts an out-of-range point (latitude 200) at some distance that no bounding box predicts.
    package var isOnEarth: Bool { (-90...90).contains(latitude) && (-180...180).contains(longitude) }

    /// Whether the point is on Earth and at most `kilometers` from `center`: what `WITHIN` decides.
    package func isWithin(kilometers: Double, of center: GeoPoint) -> Bool {
        isOnEarth && distance(to: center) <= kilometers
    }
}
