import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@testable import ModelKitServices

final class Spot: ModelObject<Spot.Properties>, RemoteModel {
    struct Properties: ModelProperties {
        var name = ""
        var place = GeoPoint(latitude: 0, longitude: 0)
        var maybe: GeoPoint?
    }
}

/// A holder of many spots: one save writes them all.
final class SpotList: ModelObject<SpotList.Properties>, RemoteModel {
    struct Properties: ModelProperties {
        var spots = ModelArray<Spot>()
    }
}

/// A service on a fresh bucket with the `Spot` and `SpotList` collections.
func spotService(pageSize: Int = 1_000) async throws -> KintoService {
    try ModelRegistry.register(Spot.self, SpotList.self)
    let server = try await KintoServer.shared.value
    let bucket = try await server.makeBucket(prefix: "g", collections: ["Spot", "SpotList"])
    return server.service(bucket: bucket, timeout: .seconds(300), pageSize: pageSize)
}

/// Saves `spots`, 50 to a list. On Kinto's PostgreSQL backend a batch refused with 409 "please
/// retry" after part of it was done is sent again, and the spots' doubles come back from the server
/// a unit in the last place away: the retry must still recognise its own earlier writes.
func saveSpots(_ spots: [Spot], _ service: KintoService, in context: ModelContext, isolation: isolated (any Actor)? = #isolation)
    async throws
{
    let chunk = 50
    for start in stride(from: 0, to: spots.count, by: chunk) {
        let part = spots[start..<min(start + chunk, spots.count)]
        if let spot = part.first, part.count == 1 {
            try await service.save(spot)
            continue
        }
        let list = SpotList.instance(in: context)
        list.spots.append(contentsOf: part)
        try await service.save(list)
    }
}

/// Edge points: the poles, both sides of the antimeridian, out of range and not finite.
let edgePoints: [GeoPoint] = [
    (90, 0), (-90, 45), (89.999_999, 180), (-89.9, -179.9), (0, 180), (0, -180), (10, 179.999), (10, -179.999),
    (45, 45), (45, 45.000_001), (0, 0), (-0.0, -0.0), (200, 0), (-95, 10), (0, 370), (0, -181), (.nan, 0), (0, .infinity),
    (-.infinity, 0), (90.000_001, 0),
].map { GeoPoint(latitude: $0.0, longitude: $0.1) }

@Suite("WITHIN matches only points on Earth, locally")
struct WithinRangeTests {
    @Test("A point out of range matches no WITHIN, by string key and by key path, whatever its haversine distance")
    func outOfRangePointsNeverMatch() throws {
        let context = ModelContext()
        let inside = Spot.instance(in: context)
        inside.place = GeoPoint(latitude: 0, longitude: 0)
        // Latitude 180 is the point (0, 180) to the haversine formula: 0 km from its centre.
        let beyond = Spot.instance(in: context)
        beyond.place = GeoPoint(latitude: 180, longitude: 0)
        let center = GeoPoint(latitude: 0, longitude: 180)
        #expect(beyond.place.distance(to: center) < 1)
        let byKey = try Spot.query(in: context).where("place", .within(kilometers: 1, of: center)).results()
        let byKeyPath = try Spot.query(in: context).where(\.place, .within(kilometers: 1, of: center)).results()
        #expect(byKey.isEmpty)
        #expect(byKeyPath.isEmpty)
        let everywhere = try Spot.query(in: context).where("place", .within(kilometers: 30_000, of: center)).results()
        #expect(everywhere.map(\.objectId) == [inside.objectId])
    }

    @Test("Bounds on the latitude (and longitude) hold every point a WITHIN matches, at the circle's edge too")
    func boundingBoxHoldsEveryMatch() {
        var random = SplitMix64(seed: 0x6E0_2026)
        let radii: [Double] = [0, 1e-6, 0.01, 1, 62.5, 500, 3_000, 9_000, 15_000, 20_000]
        var pushed = 0
        var checked = 0
        for _ in 0..<4_000 {
            let center =
                random.chance(0.3)
                ? random.pick(edgePoints)
                : GeoPoint(latitude: .random(in: -90...90, using: &random), longitude: .random(in: -180...180, using: &random))
            let kilometers = random.pick(radii)
            guard let bounds = RemoteQueryPlan.boundingBox(["place"], optional: false, center: center, kilometers: kilometers)
            else { continue }
            pushed += 1
            for _ in 0..<50 {
                // Points near the circle's edge, along a random bearing (just in or just out).
                let point = destination(
                    center, kilometers: kilometers * (1 + .random(in: -1e-9...1e-9, using: &random)),
                    bearing: .random(in: 0..<(2 * .pi), using: &random))
                guard point.isWithin(kilometers: kilometers, of: center) else { continue }
                checked += 1
                for bound in bounds {
                    let value = bound.field.path.last == "latitude" ? point.latitude : point.longitude
                    guard case .double(let limit) = bound.values[0] else { Issue.record("\(bound)"); continue }
                    let holds = bound.op == .greaterThanOrEqual ? value >= limit : value <= limit
                    #expect(holds, "\(point) within \(kilometers) km of \(center), outside \(bound)")
                }
            }
        }
        #expect(pushed > 1_000)
        #expect(checked > 10_000)
    }

    /// The point `kilometers` from `start` along `bearing` (radians from north), with its
    /// longitude brought into -180…180.
    func destination(_ start: GeoPoint, kilometers: Double, bearing: Double) -> GeoPoint {
        let toRadians = Double.pi / 180
        let angle = kilometers / GeoPoint.earthRadiusKilometers
        let latitude = start.latitude * toRadians
        let sine = sin(latitude) * cos(angle) + cos(latitude) * sin(angle) * cos(bearing)
        let end = asin(max(-1, min(1, sine)))
        let longitude =
            start.longitude * toRadians
            + atan2(sin(bearing) * sin(angle) * cos(latitude), cos(angle) - sin(latitude) * sin(end))
        var degrees = longitude / toRadians
        while degrees > 180 { degrees -= 360 }
        while degrees < -180 { degrees += 360 }
        return GeoPoint(latitude: end / toRadians, longitude: degrees)
    }

    @Test("A WITHIN query plans a box, only latitudes across a pole or the antimeridian, and nothing it cannot bound")
    func plannedBounds() throws {
        let service = KintoService(url: URL(string: "http://127.0.0.1:1/v1")!, bucket: "b", user: "u", password: "p")
        func sent(_ text: String) throws -> [String] {
            let query = try Spot.query(in: ModelContext()).filter(text)
            return service.plan(of: query).conditions.map { "\($0.field) \($0.op.rawValue)" }
        }
        let box = ["place.latitude greaterThanOrEqual", "place.latitude lessThanOrEqual"]
        let longitudes = ["place.longitude greaterThanOrEqual", "place.longitude lessThanOrEqual"]
        #expect(try sent("place WITHIN 100 KM OF {10, 20}") == box + longitudes)
        #expect(
            try sent("maybe WITHIN 0 KM OF {10, 20}") == box.map { $0.replacingOccurrences(of: "place", with: "maybe") }
                + longitudes.map { $0.replacingOccurrences(of: "place", with: "maybe") })
        #expect(try sent("place WITHIN 100 KM OF {89.5, 20}") == ["place.latitude greaterThanOrEqual"])
        #expect(try sent("place WITHIN 100 KM OF {-90, 20}") == ["place.latitude lessThanOrEqual"])
        #expect(try sent("place WITHIN 100 KM OF {10, 179.5}") == box)
        #expect(try sent("place WITHIN 100 KM OF {10, -180}") == box)
        #expect(try sent("place WITHIN 20000 KM OF {0, 0}").isEmpty)
        #expect(try sent("place WITHIN 100 KM OF {200, 0}").isEmpty)
        #expect(try sent("NOT place WITHIN 100 KM OF {10, 20}").isEmpty)
        let plan = service.plan(of: try Spot.query(in: ModelContext()).filter("place WITHIN 100 KM OF {10, 20}"))
        #expect(!plan.isExact)
        #expect(plan.sentLeafCount == 1)
        // Kinto orders finite coordinates as numbers both ways; nothing else about them is asked.
        let latitude = RecordField(path: ["place", "latitude"], kind: .coordinate, isOptional: false)
        #expect(service.evaluation(of: RecordCondition(latitude, .lessThanOrEqual, [.double(10.5)])) == .superset)
        #expect(service.evaluation(of: RecordCondition(latitude, .greaterThanOrEqual, [.double(-10.5)])) == .superset)
        #expect(service.evaluation(of: RecordCondition(latitude, .lessThan, [.double(.infinity)])) == .unsupported)
        #expect(service.evaluation(of: RecordCondition(latitude, .greaterThan, [.double(.nan)])) == .unsupported)
        #expect(service.evaluation(of: RecordCondition(latitude, .equal, [.double(10.5)])) == .unsupported)
        #expect(!service.canSort(by: latitude))
        // What goes into the request's query string.
        let parameters = try KintoService.parameters(plan.conditions).map(\.0)
        #expect(parameters == ["min_place.latitude", "max_place.latitude", "min_place.longitude", "max_place.longitude"])
    }
}

@Suite(
    "WITHIN on a real Kinto server downloads the bounding box and agrees with local queries",
    .enabled(if: serviceTestsEnabled, serviceTestsSkipped), .hangBackstop)
struct GeoPushdownTests {
    @Test("Random WITHIN queries over random points, poles and antimeridian included, give the same models both ways")
    func randomQueries() async throws {
        let seed = ProcessInfo.processInfo.environment["MODELKIT_QUERY_SEED"].flatMap { UInt64($0) } ?? 0x6E0_5EED
        var random = SplitMix64(seed: seed)
        let service = try await spotService(pageSize: 100)
        let context = ModelContext()
        var spots: [Spot] = []
        func randomPoint() -> GeoPoint {
            switch Int.random(in: 0..<4, using: &random) {
            case 0: return random.pick(edgePoints)
            case 1:
                // Clustered near an edge point, so that small circles find something.
                let near = random.pick(edgePoints)
                return GeoPoint(
                    latitude: max(-90, min(90, near.latitude + .random(in: -0.5...0.5, using: &random))),
                    longitude: max(-180, min(180, near.longitude + .random(in: -0.5...0.5, using: &random))))
            default:
                return GeoPoint(
                    latitude: .random(in: -90...90, using: &random), longitude: .random(in: -180...180, using: &random))
            }
        }
        var points: [GeoPoint] = []
        for index in 0..<300 {
            let spot = Spot.instance(in: context)
            spot.name = "s\(index)"
            spot.place = randomPoint()
            spot.maybe = random.chance(0.3) ? nil : randomPoint()
            points.append(spot.place)
            spots.append(spot)
        }
        try await saveSpots(spots, service, in: context)

        let radii: [Double] = [0, 0.001, 1, 30, 111, 1_000, 5_000, 10_007, 20_015, 25_000, .infinity]
        let queryCount = 120
        let pushed = await compareRandomQueries(queryCount, seed: seed, on: service) {
            // Sometimes a stored point itself, with radius 0: the box's bounds are equal.
            let center = random.chance(0.25) ? random.pick(points) : randomPoint()
            let kilometers = random.pick(radii)
            let key = random.pick(["place", "maybe"])
            var query = Spot.query(in: context).where(key, .within(kilometers: kilometers, of: center))
            if random.chance(0.2) {
                query = query.where(random.pick(["place", "maybe"]), .within(kilometers: random.pick(radii), of: randomPoint()))
            }
            return (query, "\(key) WITHIN \(kilometers) of \(center)")
        }
        print("Random WITHIN queries (seed \(seed)): \(queryCount), \(pushed) sending a bounding box")
        #expect(pushed >= queryCount / 2)
    }

    @Test("A narrow WITHIN query downloads a small part of the collection")
    func narrowQueryDownloadsLess() async throws {
        let service = try await spotService()
        let context = ModelContext()
        var spots: [Spot] = []
        var random = SplitMix64(seed: 7)
        let count = Int(ProcessInfo.processInfo.environment["MODELKIT_PUSHDOWN_RECORDS"] ?? "") ?? 1_000
        for index in 0..<count {
            let spot = Spot.instance(in: context)
            spot.name = "spot \(index)"
            // Uniform over a 10° square near the equator.
            spot.place = GeoPoint(latitude: .random(in: 0..<10, using: &random), longitude: .random(in: 0..<10, using: &random))
            spots.append(spot)
        }
        try await saveSpots(spots, service, in: context)

        var before = service.metrics.bytesReceived
        let all = try await service.fetch(Spot.query(in: ModelContext()))
        let collectionBytes = service.metrics.bytesReceived - before
        #expect(all.count == count)

        // About 1% of the square's area: a circle of 62.5 km at its centre.
        let query = Spot.query(in: context).where("place", .within(kilometers: 62.5, of: GeoPoint(latitude: 5, longitude: 5)))
        before = service.metrics.bytesReceived
        let (local, remote) = try await bothWays(query, service)
        let queryBytes = service.metrics.bytesReceived - before
        #expect(local == remote)
        print(
            "WITHIN over \(count) spots: \(remote.count) matches, \(queryBytes) bytes received; "
                + "the collection is \(collectionBytes) bytes (\(Double(queryBytes * 10_000 / collectionBytes) / 100)%)")
        #expect(queryBytes * 20 <= collectionBytes)
    }
}
