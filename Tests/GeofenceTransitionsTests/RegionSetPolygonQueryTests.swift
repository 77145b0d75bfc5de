import BinarySnapshot
import GeofenceGeometry
import GeofenceIndex
import GeofenceTestSupport
import Testing

@testable import GeofenceTransitions

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

// `RegionSet.forEachPolygon(containing:)` against a brute-force scan of every live polygon's
// `PolygonRegion.contains`, on seeded random sets: small and large polygons (the large ones
// go to the box index's wide list), polygons across the antimeridian (written past 180 and
// cut at ±180), near the poles, mixed with circles, after appends and removals, and after a
// snapshot round trip.

/// A star-shaped ring around (cx, cy) of n vertices, radius scaled in [0.6, 1]; simple and
/// counter-clockwise.
private func starRing(
  cx: Double, cy: Double, rx: Double, ry: Double, n: Int, using rng: inout SeededGenerator
) -> [SIMD2<Double>] {
  var ring = (0..<n).map { i -> SIMD2<Double> in
    let a = (Double(i) + Double.random(in: 0.1...0.9, using: &rng)) / Double(n) * 2 * Double.pi
    let s = Double.random(in: 0.6...1, using: &rng)
    return SIMD2(cx + s * rx * cos(a), cy + s * ry * sin(a))
  }
  ring.append(ring[0])
  return ring
}

private func randomPolygon(using rng: inout SeededGenerator) throws -> PolygonRegion {
  let n = Int.random(in: 3...120, using: &rng)
  switch Int.random(in: 0..<6, using: &rng) {
  case 0:  // large
    let ring = starRing(
      cx: Double.random(in: -10...10, using: &rng), cy: Double.random(in: -10...10, using: &rng),
      rx: 8, ry: 6, n: n, using: &rng)
    return try PolygonRegion(polygons: PolygonRegion.normalizedPolygons([[ring]]))
  case 1:  // across the antimeridian, written past 180
    let ring = starRing(
      cx: Double.random(in: 179.9...180.1, using: &rng),
      cy: Double.random(in: -1...1, using: &rng), rx: 0.2, ry: 0.15, n: n, using: &rng)
    return try PolygonRegion(polygons: PolygonRegion.normalizedPolygons([[ring]]))
  case 2:  // cut at ±180: two boxes touching the meridian from either side
    let y = Double.random(in: -1...1, using: &rng)
    let east: [SIMD2<Double>] = [
      [179.8, y], [180, y], [180, y + 0.2], [179.8, y + 0.2], [179.8, y],
    ]
    let west: [SIMD2<Double>] = [
      [-180, y], [-179.9, y], [-179.9, y + 0.2], [-180, y + 0.2], [-180, y],
    ]
    return try PolygonRegion(polygons: PolygonRegion.normalizedPolygons([[east], [west]]))
  case 3:  // next to a pole, closed along latitude 90
    let x = Double.random(in: -170...170, using: &rng)
    let ring: [SIMD2<Double>] = [[x, 89.5], [x + 5, 89.5], [x + 5, 90], [x, 90], [x, 89.5]]
    return try PolygonRegion(polygons: PolygonRegion.normalizedPolygons([[ring]]))
  default:  // small, in a 2° box
    let ring = starRing(
      cx: Double.random(in: -1...1, using: &rng), cy: Double.random(in: -1...1, using: &rng),
      rx: Double.random(in: 0.01...0.2, using: &rng),
      ry: Double.random(in: 0.01...0.2, using: &rng), n: n, using: &rng)
    return try PolygonRegion(polygons: PolygonRegion.normalizedPolygons([[ring]]))
  }
}

/// Query points: uniform near the sets' places, the polygons' vertices (on the boundary), the
/// antimeridian and the poles.
private func queryPoints(_ set: RegionSet, using rng: inout SeededGenerator) -> [Coordinate] {
  var points: [Coordinate] = []
  for _ in 0..<600 {
    points.append(
      Coordinate(
        uncheckedLatitude: Double.random(in: -12...12, using: &rng),
        longitude: Double.random(in: -12...12, using: &rng)))
    points.append(
      Coordinate(
        uncheckedLatitude: Double.random(in: -1.2...1.2, using: &rng),
        longitude: Bool.random(using: &rng)
          ? Double.random(in: 179.6...180, using: &rng)
          : Double.random(in: -180 ... -179.6, using: &rng)))
    points.append(
      Coordinate(
        uncheckedLatitude: Double.random(in: 89.4...90, using: &rng),
        longitude: Double.random(in: -180...180, using: &rng)))
  }
  for lat in stride(from: -1.0, through: 1.2, by: 0.05) {
    points.append(Coordinate(uncheckedLatitude: lat, longitude: 180))
    points.append(Coordinate(uncheckedLatitude: lat, longitude: -180))
  }
  for polygon in set.polygons {
    for (x, y) in zip(polygon.longitudes, polygon.latitudes).prefix(8) {
      points.append(Coordinate(uncheckedLatitude: y, longitude: x > 180 ? x - 360 : x))
    }
  }
  return points
}

private func bruteForce(_ set: RegionSet, _ point: Coordinate) -> [Int32] {
  (0..<Int32(set.count)).filter { slot in
    !set.isRemoved(slot) && (set.polygon(at: slot)?.contains(point) ?? false)
  }
}

private func indexed(_ set: RegionSet, _ point: Coordinate) -> [Int32] {
  var slots: [Int32] = []
  set.forEachPolygon(containing: point) { slots.append($0) }
  return slots.sorted()
}

@Suite struct RegionSetPolygonQueryTests {
  @Test(arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
  func answersEqualABruteForceScan(seed: UInt64) throws {
    var rng = SeededGenerator(seed: seed)
    var geofences: [Geofence] = []
    for i in 0..<150 {
      if i % 5 == 0 {
        let circle = try CircularRegion(
          center: Coordinate(
            uncheckedLatitude: Double.random(in: -1...1, using: &rng),
            longitude: Double.random(in: -1...1, using: &rng)), radiusMeters: 20_000)
        geofences.append(Geofence(id: "c\(i)", region: circle))
      } else {
        geofences.append(Geofence(id: "p\(i)", shape: .polygon(try randomPolygon(using: &rng))))
      }
    }
    var set = RegionSet(geofences: geofences)
    var matches = 0
    func check(_ label: String) {
      for point in queryPoints(set, using: &rng) {
        let expected = bruteForce(set, point)
        matches += expected.count
        #expect(indexed(set, point) == expected, "seed \(seed), \(label), \(point)")
      }
    }
    check("built")
    // Appends (into the wide list, then past the rebuild threshold) and removals.
    for i in 0..<90 {
      set.append(id: "a\(i)", shape: .polygon(try randomPolygon(using: &rng)))
      if i % 3 == 0 { set.remove(Int32.random(in: 0..<Int32(set.count), using: &rng)) }
      if i == 10 { check("appended") }
    }
    check("appended and removed")
    var writer = SnapshotWriter(formatVersion: 1)
    set.write(to: &writer)
    let bytes = writer.finish()
    set = try bytes.withUnsafeBytes { raw in
      var reader = try SnapshotReader(raw, formatVersion: 1)
      return try RegionSet(snapshot: &reader)
    }
    check("snapshot")
    #expect(matches > 1_000, "seed \(seed): too few matches to test anything")
  }

  /// A polygon whose west side is the meridian −180 (not crossing it): a point on that side is
  /// on the boundary, so inside, whether it is written −180 or 180; the mirror polygon ending
  /// at 180 the same. Checked by hand (the squares' sides), through the index and the edge
  /// test.
  @Test func aPointOnTheMeridian180IsInsideWhicheverWayItIsWritten() throws {
    let west: [SIMD2<Double>] = [[-180, 0], [-179, 0], [-179, 1], [-180, 1], [-180, 0]]
    let east: [SIMD2<Double>] = [[179, 2], [180, 2], [180, 3], [179, 3], [179, 2]]
    let set = RegionSet(geofences: [
      Geofence(
        id: "west",
        shape: .polygon(try PolygonRegion(polygons: PolygonRegion.normalizedPolygons([[west]])))),
      Geofence(
        id: "east",
        shape: .polygon(try PolygonRegion(polygons: PolygonRegion.normalizedPolygons([[east]])))),
    ])
    let cases: [(latitude: Double, longitude: Double, slots: [Int32])] = [
      (0.5, -180, [0]), (0.5, 180, [0]), (0.5, -179.5, [0]), (0.5, 179.5, []),
      (0, 180, [0]), (1, -180, [0]), (0.5, -178.9, []),
      (2.5, 180, [1]), (2.5, -180, [1]), (2.5, 179.5, [1]), (2.5, -179.5, []),
    ]
    for c in cases {
      let point = Coordinate(uncheckedLatitude: c.latitude, longitude: c.longitude)
      #expect(bruteForce(set, point) == c.slots, "edge test at \(point)")
      #expect(indexed(set, point) == c.slots, "index at \(point)")
    }
  }

  /// A pole is one point at every longitude: a polygon with a vertex on it (or an edge along
  /// its latitude) holds it whatever longitude the fix gives; one that stops short of it
  /// holds it at none. By hand, through the index and the edge test.
  @Test func aPoleIsInsideAtEveryLongitudeWhenThePolygonReachesIt() throws {
    let cap: [SIMD2<Double>] = [[0, 80], [90, 80], [90, 90], [0, 90], [0, 80]]
    let short: [SIMD2<Double>] = [[0, -85], [0, -89], [90, -89], [90, -85], [0, -85]]
    let south: [SIMD2<Double>] = [[-10, -80], [-10, -90], [10, -90], [10, -80], [-10, -80]]
    let set = RegionSet(
      geofences: try [("cap", cap), ("short", short), ("south", south)].map { id, ring in
        Geofence(
          id: id,
          shape: .polygon(try PolygonRegion(polygons: PolygonRegion.normalizedPolygons([[ring]]))))
      })
    let cases: [(latitude: Double, longitude: Double, slots: [Int32])] = [
      (90, 45, [0]), (90, 120, [0]), (90, -180, [0]), (90, 180, [0]),
      (89.999, 120, []), (89.999, 45, [0]),
      (-90, 0, [2]), (-90, 170, [2]), (-90, -95, [2]), (-87, 45, [1]), (-89.5, 45, []),
    ]
    for c in cases {
      let point = Coordinate(uncheckedLatitude: c.latitude, longitude: c.longitude)
      #expect(bruteForce(set, point) == c.slots, "edge test at \(point)")
      #expect(indexed(set, point) == c.slots, "index at \(point)")
    }
  }

  @Test(arguments: [11, 12, 13] as [UInt64])
  func aDenseCityOfStarsEqualsTheEdgeTest(seed: UInt64) throws {
    // Many small, jagged, overlapping polygons in a few kilometres (as the polygon benchmark
    // builds them): the box index decides most points from its subcells (wholly inside or
    // wholly outside a polygon). Every answer must equal the edge test of every polygon, on
    // random points, on every vertex and on points along every edge.
    var rng = SeededGenerator(seed: seed)
    var geofences: [Geofence] = []
    for i in 0..<300 {
      let ry = Double.random(in: 0.0005...0.005, using: &rng)
      let n = Int(exp(Double.random(in: log(4)...log(400), using: &rng)))
      let ring = starRing(
        cx: -122.3 + Double.random(in: -0.04...0.04, using: &rng),
        cy: 37.7 + Double.random(in: -0.04...0.04, using: &rng), rx: ry * 1.26, ry: ry, n: n,
        using: &rng)
      geofences.append(
        Geofence(id: "p\(i)", shape: .polygon(try PolygonRegion(polygons: [[ring]]))))
    }
    let set = RegionSet(geofences: geofences)
    var points: [Coordinate] = []
    for _ in 0..<20_000 {
      points.append(
        Coordinate(
          uncheckedLatitude: 37.7 + Double.random(in: -0.046...0.046, using: &rng),
          longitude: -122.3 + Double.random(in: -0.047...0.047, using: &rng)))
    }
    for polygon in set.polygons {
      let xs = polygon.longitudes
      let ys = polygon.latitudes
      for i in 0..<(xs.count - 1) {
        points.append(Coordinate(uncheckedLatitude: ys[i], longitude: xs[i]))
        let t = Double.random(in: 0...1, using: &rng)
        points.append(
          Coordinate(
            uncheckedLatitude: ys[i] + t * (ys[i + 1] - ys[i]),
            longitude: xs[i] + t * (xs[i + 1] - xs[i])))
      }
    }
    var certain = 0
    var matches = 0
    for point in points {
      let expected = bruteForce(set, point)
      matches += expected.count
      #expect(indexed(set, point) == expected, "seed \(seed): \(point)")
      set.polygonIndex.forEachCandidate(longitude: point.longitude, latitude: point.latitude) {
        _, inside in if inside { certain += 1 }
      }
    }
    // The fast path must have answered many points for the test to judge it.
    #expect(certain > 2_000 && matches > 5_000, "seed \(seed): \(certain) certain, \(matches)")
  }

  @Test func outOfRangeAndNaNPoints() throws {
    var rng = SeededGenerator(seed: 9)
    let ring = starRing(cx: 179.95, cy: 0, rx: 0.2, ry: 0.2, n: 40, using: &rng)
    let polygon = try PolygonRegion(polygons: PolygonRegion.normalizedPolygons([[ring]]))
    let set = RegionSet(geofences: [Geofence(id: "p", shape: .polygon(polygon))])
    // 180.05 lies past the range the grid knows; the scan answers it as the polygon does.
    let past = Coordinate(uncheckedLatitude: 0, longitude: 180.05)
    #expect(polygon.contains(past))
    #expect(indexed(set, past) == [0])
    #expect(indexed(set, Coordinate(uncheckedLatitude: 0, longitude: -179.95)) == [0])
    #expect(indexed(set, Coordinate(uncheckedLatitude: .nan, longitude: 0)) == [])
  }
}
