import Foundation
import ModelKit

// WITHIN as a bounding box on the point's `latitude` and `longitude` numbers (RecordCodec writes a
// GeoPoint as `{"__type": "GeoPoint", "latitude": …, "longitude": …}`). The box is a superset
// only because WITHIN matches no point out of range (GeoPoint.isOnEarth): the haversine formula
// would put a latitude of 200 at some distance no box predicts.

extension RemoteQueryPlan {
    /// Bounds on the coordinates of every point on Earth at most `kilometers` from `center`, as
    /// computed by `GeoPoint.distance(to:)`; `nil` when nothing bounds them (a centre out of
    /// range, an infinite radius, a circle covering every latitude).
    ///
    /// Latitudes are bounded unless the box passes a pole, which leaves them unbounded on that
    /// side; longitudes only when neither pole is inside the circle and the box does not reach
    /// ±180 (a box across the antimeridian is two ranges, which one pair of bounds can't say).
    static func boundingBox(_ path: [String], optional: Bool, center: GeoPoint, kilometers: Double) -> [RecordCondition]? {
        guard center.isOnEarth, kilometers.isFinite, kilometers >= 0 else { return nil }
        let degrees = 180 / Double.pi
        // Widened for the haversine formula's rounding: relative for small angles, and about
        // 1e-8 rad where its asin is steep (near the antipode); 1e-7 rad is 0.6 m.
        let angle = kilometers / GeoPoint.earthRadiusKilometers * (1 + 1e-9) + 1e-7
        let reach = angle * degrees
        let south = center.latitude - reach
        let north = center.latitude + reach
        let latitude = RecordField(path: path + ["latitude"], kind: .coordinate, isOptional: optional)
        let longitude = RecordField(path: path + ["longitude"], kind: .coordinate, isOptional: optional)
        var bounds: [RecordCondition] = []
        if south > -90 { bounds.append(RecordCondition(latitude, .greaterThanOrEqual, [.double(south)])) }
        if north < 90 { bounds.append(RecordCondition(latitude, .lessThanOrEqual, [.double(north)])) }
        if south > -90, north < 90 {
            // Neither pole is inside (so the angle is below 90°): the meridians tangent to the
            // circle are asin(sin(angle) / cos(latitude)) away. Near 1 asin is too steep to trust.
            let ratio = sin(angle) / cos(center.latitude / degrees)
            if ratio < 0.999_999 {
                let spread = asin(ratio) * degrees * (1 + 1e-9) + 1e-7
                let west = center.longitude - spread
                let east = center.longitude + spread
                if west > -180, east < 180 {
                    bounds.append(RecordCondition(longitude, .greaterThanOrEqual, [.double(west)]))
                    bounds.append(RecordCondition(longitude, .lessThanOrEqual, [.double(east)]))
                }
            }
        }
        return bounds.isEmpty ? nil : bounds
    }
}
