import GeofenceGeometry
import GeofenceTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `PolygonRegion.boundaryDistance` (a local equirectangular projection) against the sphere:
/// the oracle is the smallest haversine distance from the point to each edge, taken as the
/// edge is defined (straight in longitude and latitude, RFC 7946), sampled densely and then
/// refined by golden-section search around the best sample. The documented bound is
/// `PolygonRegion.boundaryDistance`'s: relative error `D·|tan φ₀|/(2R) + (D/R)²/6`.
@Suite("Polygon edge distance against the sphere")
struct PolygonEdgeDistanceTests {
  /// Haversine distance from `p` to the point at `t` ∈ [0, 1] along the lat/lon-straight edge.
  static func distance(_ p: Coordinate, _ a: SIMD2<Double>, _ b: SIMD2<Double>, _ t: Double)
    -> Double
  {
    let q = a + (b - a) * t
    var longitude = q.x
    while longitude > 180 { longitude -= 360 }
    while longitude < -180 { longitude += 360 }
    return haversineDistance(p, Coordinate(uncheckedLatitude: q.y, longitude: longitude))
  }

  /// The oracle: the distance from `p` to the region's boundary on the sphere.
  static func sphereDistance(_ p: Coordinate, _ region: PolygonRegion) -> Double {
    var best = Double.infinity
    for r in 0..<region.ringCount {
      let ring = region.ring(r)
      for i in 0..<(ring.count - 1) {
        let (a, b) = (ring[i], ring[i + 1])
        let samples = 400
        var bestK = 0
        var bestD = Double.infinity
        for k in 0...samples {
          let d = distance(p, a, b, Double(k) / Double(samples))
          if d < bestD { (bestD, bestK) = (d, k) }
        }
        // Golden-section search on the two sample intervals around the best sample.
        var lo = Double(max(0, bestK - 1)) / Double(samples)
        var hi = Double(min(samples, bestK + 1)) / Double(samples)
        let g = (5.0.squareRoot() - 1) / 2
        for _ in 0..<80 {
          let m1 = hi - g * (hi - lo)
          let m2 = lo + g * (hi - lo)
          if distance(p, a, b, m1) < distance(p, a, b, m2) { hi = m2 } else { lo = m1 }
        }
        best = min(best, bestD, distance(p, a, b, (lo + hi) / 2))
      }
    }
    return best
  }

  /// The documented bound on the relative error at distance D and latitude φ₀:
  /// `D·|tan φ₀|/(2R) + (D/R)²/6`.
  static func documentedRelativeError(_ d: Double, latitude: Double) -> Double {
    let r = EarthModel.meanRadiusMeters
    return d * abs(tan(latitude * Double.pi / 180)) / (2 * r) + (d / r) * (d / r) / 6
  }

  /// A random convex-ish polygon (a star of 3 to 12 vertices) of 200 m to 20 km around a centre.
  static func polygon(
    latitude: Double, longitude: Double, using rng: inout SeededGenerator
  ) throws -> PolygonRegion {
    let n = Int.random(in: 3...12, using: &rng)
    let size = Double.random(in: 200...20_000, using: &rng)
    let metersPerDegree = EarthModel.meanRadiusMeters * Double.pi / 180
    var ring: [SIMD2<Double>] = []
    for k in 0..<n {
      let angle = 2 * Double.pi * (Double(k) + Double.random(in: 0..<0.8, using: &rng)) / Double(n)
      let reach = size * Double.random(in: 0.5...1, using: &rng)
      ring.append(
        SIMD2(
          longitude + reach * cos(angle) / (metersPerDegree * cos(latitude * Double.pi / 180)),
          latitude + reach * sin(angle) / metersPerDegree))
    }
    ring.append(ring[0])
    return try PolygonRegion(polygons: [[ring]])
  }

  @Test(arguments: [0.0, 30.0, 46.5, 60.0, 75.0, -70.0])
  func projectedDistanceIsWithinTheDocumentedBound(latitude: Double) throws {
    var rng = SeededGenerator(seed: UInt64(1000 + latitude + 90))
    let metersPerDegree = EarthModel.meanRadiusMeters * Double.pi / 180
    var worstRatio = 0.0
    var checked = 0
    for _ in 0..<40 {
      let longitude = Double.random(in: -179...179, using: &rng)
      let region = try Self.polygon(latitude: latitude, longitude: longitude, using: &rng)
      for _ in 0..<10 {
        // A point up to 10 km from the polygon's box, inside or outside.
        let d = Double.random(in: 5...10_000, using: &rng)
        let bearing = Double.random(in: 0..<(2 * Double.pi), using: &rng)
        let centre = region.boundingCap.center
        let reach = region.boundingCap.radiusMeters * Double.random(in: 0...1, using: &rng) + d
        let lat = centre.latitude + reach * sin(bearing) / metersPerDegree
        let lon =
          centre.longitude + reach * cos(bearing)
          / (metersPerDegree * cos(centre.latitude * Double.pi / 180))
        let point = Coordinate(uncheckedLatitude: lat, longitude: lon)
        let projected = region.boundaryDistance(to: point, notBeyond: .infinity)
        let sphere = Self.sphereDistance(point, region)
        guard sphere > 1 else { continue }
        let error = abs(projected - sphere) / sphere
        let bound = Self.documentedRelativeError(sphere, latitude: point.latitude)
        worstRatio = max(worstRatio, error / bound)
        checked += 1
        #expect(
          error <= bound,
          "at (\(lat), \(lon)): projected \(projected) m, sphere \(sphere) m, relative error \(error), bound \(bound)"
        )
      }
    }
    #expect(checked > 300)
    // The bound is not slack by orders of magnitude: the worst error found is 0.38-0.40 of
    // it at every latitude (away from the equator the worst case is 2/(3√3) ≈ 0.385 of it, a
    // displacement of bearing atan(1/√2) from east), so a change to the projection that
    // loses accuracy fails here.
    #expect(worstRatio > 0.3 && worstRatio <= 1, "worst error / bound \(worstRatio)")
  }
}

/// A ring of no area (a self-crossing one whose two lobes cancel, which GEOS refuses) has no
/// certain winding: it is kept as written, so that a region built from a region's own rings
/// is the same region. Rounding once gave the two directions sums of the same sign, and the
/// ring flipped at every rebuild (found by the `stored-polygon` fuzz target).
@Test func aRingOfNoAreaKeepsItsOrderAcrossRebuilds() throws {
  let ring: [SIMD2<Double>] = [
    SIMD2(6.0, 46.0), SIMD2(6.1, 46.1), SIMD2(46.1, 46.0), SIMD2(6.0, 46.1), SIMD2(6.0, 46.0),
  ]
  let region = try PolygonRegion(polygons: [[ring]])
  #expect(region.ring(0) == ring)
  let again = try PolygonRegion(polygons: region.polygons)
  #expect(again == region)
  #expect(again.ring(0) == ring)
  // A ring with area is still turned counter-clockwise, and a second build keeps it.
  let clockwise: [SIMD2<Double>] = [
    SIMD2(6.0, 46.0), SIMD2(6.0, 46.1), SIMD2(6.1, 46.1), SIMD2(6.1, 46.0), SIMD2(6.0, 46.0),
  ]
  let turned = try PolygonRegion(polygons: [[clockwise]])
  #expect(turned.ring(0) == Array(clockwise.reversed()))
  #expect(try PolygonRegion(polygons: turned.polygons) == turned)
}

/// A MultiPolygon cut at ±180 (RFC 7946 §3.1.9) has its parts at both ends of its frame
/// (−180 … 180): its bounding cap covers the short way across the antimeridian, not the whole
/// Earth. Oracle: every vertex within the cap by haversine, and the cap no larger than the
/// half-diagonal of the 4° × 2° box the parts fill, widened by 1 %.
@Test func aMultiPolygonCutAtTheAntimeridianGetsATightCap() throws {
  func box(_ x0: Double, _ x1: Double) -> [[SIMD2<Double>]] {
    [[SIMD2(x0, -18), SIMD2(x1, -18), SIMD2(x1, -16), SIMD2(x0, -16), SIMD2(x0, -18)]]
  }
  let fiji = try PolygonRegion(
    polygons: PolygonRegion.normalizedPolygons([box(177, 180), box(-180, -178)]))
  let cap = fiji.boundingCap
  for (x, y) in zip(fiji.longitudes, fiji.latitudes) {
    let vertex = try Coordinate(latitude: y, longitude: x > 180 ? x - 360 : x)
    #expect(haversineDistance(cap.center, vertex) <= cap.radiusMeters)
  }
  // The box 177 … 182 × −18 … −16: its corners from its middle (179.5, −17).
  let middle = try Coordinate(latitude: -17, longitude: 179.5)
  let corner = try Coordinate(latitude: -18, longitude: 177)
  #expect(cap.radiusMeters <= haversineDistance(middle, corner) * 1.01 + 1)
  #expect(abs(cap.center.longitude - 179.5) < 1e-9)
  // Both parts still answer, the antimeridian included.
  for x in [177.5, 180, -180, -179.5] {
    #expect(fiji.contains(try Coordinate(latitude: -17, longitude: x)))
  }
  #expect(!fiji.contains(try Coordinate(latitude: -17, longitude: 0)))

  // Hand cases of the arc: the wrap-around gap largest, an inner gap largest, one interval.
  #expect(PolygonRegion.shortestCoveringArc([(177, 180), (-180, -178)]) == (177, 182))
  #expect(PolygonRegion.shortestCoveringArc([(-179, -170), (170, 180)]) == (170, 190))
  #expect(PolygonRegion.shortestCoveringArc([(-10, 10), (20, 30)]) == (-10, 30))
  #expect(PolygonRegion.shortestCoveringArc([(5, 6)]) == (5, 6))
}

/// A region cut at the antimeridian measures the distance to its real boundary: the cut
/// edges, which face each other, lie inside it. The oracle is the same shape written as one
/// polygon past 180 (no cut edges): equal distances at points inside, outside and on the
/// meridian. Where only one side has an edge along the meridian, that piece bounds the
/// region, by hand.
@Test func aRegionCutAtTheAntimeridianMeasuresItsRealBoundary() throws {
  func box(_ x0: Double, _ x1: Double, _ y0: Double, _ y1: Double) -> [[SIMD2<Double>]] {
    [[SIMD2(x0, y0), SIMD2(x1, y0), SIMD2(x1, y1), SIMD2(x0, y1), SIMD2(x0, y0)]]
  }
  let cut = try PolygonRegion(
    polygons: PolygonRegion.normalizedPolygons([box(179, 180, 30, 31), box(-180, -179, 30, 31)]))
  let whole = try PolygonRegion(
    polygons: PolygonRegion.normalizedPolygons([box(179, 181, 30, 31)]))
  for latitude in stride(from: 29.5, through: 31.5, by: 0.25) {
    for longitude in [178.5, 179.5, 179.9, 180, -180, -179.9, -179.5, -178.5] {
      let p = try Coordinate(latitude: latitude, longitude: longitude)
      let d = cut.boundaryDistance(to: p, notBeyond: .infinity)
      let expected = whole.boundaryDistance(to: p, notBeyond: .infinity)
      #expect(abs(d - expected) <= 1e-6 * expected + 1e-6, "(\(latitude), \(longitude))")
    }
  }
  // The helper's case: (30.5, 179.9) is 0.5° of latitude from the edges at 30 and 31.
  let metersPerDegree = EarthModel.meanRadiusMeters * Double.pi / 180
  let p = try Coordinate(latitude: 30.5, longitude: 179.9)
  #expect(abs(cut.boundaryDistance(to: p, notBeyond: .infinity) - 0.5 * metersPerDegree) < 1e-6)
  // A reach that holds no real edge finds nothing within it (the cut edge, 0.1° away, is not
  // one).
  #expect(cut.boundaryDistance(to: p, notBeyond: 20_000) > 20_000)

  // The west part reaches only 30 … 30.5: the meridian bounds the east part from 30.5 to 31.
  let partial = try PolygonRegion(
    polygons: PolygonRegion.normalizedPolygons([
      box(179, 180, 30, 31), box(-180, -179, 30, 30.5),
    ]))
  let q = try Coordinate(latitude: 30.75, longitude: 179.99)
  let toMeridian = 0.01 * metersPerDegree * cos(30.75 * Double.pi / 180)
  #expect(abs(partial.boundaryDistance(to: q, notBeyond: .infinity) - toMeridian) < 1e-6)
  // Below 30.5 the parts meet: the nearest boundary is the edge at 30, 0.25° away.
  let r = try Coordinate(latitude: 30.25, longitude: 179.99)
  #expect(
    abs(partial.boundaryDistance(to: r, notBeyond: .infinity) - 0.25 * metersPerDegree) < 1e-6)

  // An edge along 180 with nothing on the other side bounds the region.
  let edge = try PolygonRegion(polygons: PolygonRegion.normalizedPolygons([box(179, 180, 30, 31)]))
  #expect(abs(edge.boundaryDistance(to: q, notBeyond: .infinity) - toMeridian) < 1e-6)
}
