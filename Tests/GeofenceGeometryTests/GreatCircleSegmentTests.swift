import GeofenceGeometry
import GeofenceTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

private let R = EarthModel.meanRadiusMeters
private let metersPerDegree = Double.pi / 180 * R

private func vector(_ latitude: Double, _ longitude: Double) -> UnitVector {
  UnitVector(Coordinate(uncheckedLatitude: latitude, longitude: longitude))
}

@Suite("GreatCircleSegment: closest approach and disc crossings")
struct GreatCircleSegmentTests {
  /// Equator from 0.03° W to 0.03° E (6,671.705 m), a 1,000 m disc centred 0.005° north
  /// (555.975 m). In the plane the chord's half length is √(1000² − 555.975²) = 831.199 m; on
  /// the sphere it differs by about (r/R)² relative, some 20 µm.
  @Test func chordThroughADisc() throws {
    let segment = try #require(GreatCircleSegment(from: vector(0, -0.03), to: vector(0, 0.03)))
    #expect(abs(EarthModel.meters(fromRadians: segment.angle) - 0.06 * metersPerDegree) < 1e-6)
    let c = try #require(
      segment.crossing(
        ofDiscAt: vector(0.005, 0), radius: EarthModel.radians(fromMeters: 1000)))
    let half = (1000.0 * 1000 - pow(0.005 * metersPerDegree, 2)).squareRoot()
    #expect(abs(half - 831.199) < 1e-3)
    let middle = 0.03 * metersPerDegree
    #expect(abs(EarthModel.meters(fromRadians: c.entry) - (middle - half)) < 1e-3)
    #expect(abs(EarthModel.meters(fromRadians: c.exit) - (middle + half)) < 1e-3)
    #expect(abs(EarthModel.meters(fromRadians: c.closest) - middle) < 1e-6)
    #expect(abs(EarthModel.meters(fromRadians: c.distance) - 0.005 * metersPerDegree) < 1e-6)
    // The entry point is on the circle, on the equator.
    let entry = segment.point(atAngle: c.entry).coordinate
    #expect(abs(entry.latitude) < 1e-12)
    #expect(
      abs(haversineDistance(entry, Coordinate(uncheckedLatitude: 0.005, longitude: 0)) - 1000)
        < 1e-6)
  }

  /// A disc whose circle passes 1 m beyond the segment, and one whose centre is off the end
  /// of the segment (the nearest point is an end).
  @Test func passingOutsideAndBeyondTheEnds() throws {
    let segment = try #require(GreatCircleSegment(from: vector(0, -0.03), to: vector(0, 0.03)))
    let offset = (1000.0 + 1) / metersPerDegree
    #expect(
      segment.crossing(ofDiscAt: vector(offset, 0), radius: EarthModel.radians(fromMeters: 1000))
        == nil)
    let near = segment.closestApproach(to: vector(offset, 0))
    #expect(abs(EarthModel.meters(fromRadians: near.distance) - 1001) < 1e-6)
    // Centre 0.05° east on the equator: nearest the east end, 0.02° away.
    let beyond = segment.closestApproach(to: vector(0, 0.05))
    #expect(beyond.angle == segment.angle)
    #expect(abs(EarthModel.meters(fromRadians: beyond.distance) - 0.02 * metersPerDegree) < 1e-6)
    #expect(
      segment.crossing(ofDiscAt: vector(0, 0.05), radius: EarthModel.radians(fromMeters: 3000))
        == nil)
  }

  /// From 179.99° E to 179.99° W at 10° N is 0.02° of longitude, not the long way round; a
  /// 500 m disc on the antimeridian 200 m north of the path is crossed around longitude 180.
  @Test func acrossTheAntimeridian() throws {
    let segment = try #require(
      GreatCircleSegment(from: vector(10, 179.99), to: vector(10, -179.99)))
    let length = EarthModel.meters(fromRadians: segment.angle)
    let expected = haversineDistance(
      Coordinate(uncheckedLatitude: 10, longitude: 179.99),
      Coordinate(uncheckedLatitude: 10, longitude: -179.99))
    #expect(abs(length - expected) < 1e-6)
    #expect(length < 2200)
    let center = vector(10 + 200 / metersPerDegree, 180)
    let c = try #require(
      segment.crossing(ofDiscAt: center, radius: EarthModel.radians(fromMeters: 500)))
    let middle = segment.point(atAngle: c.closest).coordinate
    #expect(abs(abs(middle.longitude) - 180) < 1e-6)
    // Symmetric about the antimeridian: the chord is centred on the segment's midpoint.
    #expect(abs(EarthModel.meters(fromRadians: (c.entry + c.exit) / 2 - segment.angle / 2)) < 1e-3)
    // The great circle bulges north of the parallel: at its midpoint its latitude is
    // atan(tan 10° / cos 0.01°), 1.66 cm north of 10°.
    let bulge = atan(tan(10 * Double.pi / 180) / cos(0.01 * Double.pi / 180)) - 10 * Double.pi / 180
    #expect(abs(bulge * R - 0.0166) < 1e-4)
    #expect(abs(EarthModel.meters(fromRadians: c.distance) - (200 - bulge * R)) < 1e-5)
  }

  /// Same or antipodal ends have no great circle.
  @Test func degenerateSegments() {
    #expect(GreatCircleSegment(from: vector(46, 7), to: vector(46, 7)) == nil)
    #expect(GreatCircleSegment(from: vector(0, 0), to: vector(0, 180)) == nil)
  }

  /// The closest approach and the crossing against dense sampling of the segment with the
  /// haversine distance, for random segments (50 m to 20 km) and discs (50 m to 3 km) near
  /// them, anywhere on the sphere (poles and the antimeridian included).
  @Test(arguments: [UInt64(1), 2, 3, 4])
  func matchesDenseSampling(seed: UInt64) throws {
    var rng = SeededGenerator(seed: seed)
    let samples = 4000
    var crossings = 0
    for _ in 0..<200 {
      let lat = Double.random(in: -89.5...89.5, using: &rng)
      let lon = Double.random(in: -180...180, using: &rng)
      let length = Double.random(in: 50...20_000, using: &rng)
      let bearing = Double.random(in: 0..<(2 * Double.pi), using: &rng)
      let start = Coordinate(uncheckedLatitude: lat, longitude: lon)
      let end = destination(start, meters: length, bearing: bearing)
      guard
        let segment = GreatCircleSegment(from: UnitVector(start), to: UnitVector(end))
      else { continue }
      let radius = Double.random(in: 50...3000, using: &rng)
      // Near a random point of the segment (or a little beyond its ends).
      let along = destination(
        start, meters: Double.random(in: -0.1...1.1, using: &rng) * length, bearing: bearing)
      let center = destination(
        along, meters: Double.random(in: 0...(2 * radius), using: &rng),
        bearing: Double.random(in: 0..<(2 * Double.pi), using: &rng))
      // Sampled: the points and their distances.
      let step = segment.angle / Double(samples)
      var best = Double.infinity
      var firstInside: Int? = nil
      var lastInside: Int? = nil
      for k in 0...samples {
        let d = haversineDistance(center, segment.point(atAngle: Double(k) * step).coordinate)
        best = min(best, d)
        if d < radius {
          if firstInside == nil { firstInside = k }
          lastInside = k
        }
      }
      let stepMeters = EarthModel.meters(fromRadians: step)
      let near = segment.closestApproach(to: UnitVector(center))
      let nearMeters = EarthModel.meters(fromRadians: near.distance)
      // Sampling overestimates the minimum by at most stepMeters; the vector and the
      // haversine computations agree to about 1e-9 relative (1e-5 m allowed).
      #expect(nearMeters <= best + 1e-5, "seed \(seed)")
      #expect(best - nearMeters <= stepMeters + 1e-5, "seed \(seed)")
      let endsOutside =
        haversineDistance(center, start) > radius && haversineDistance(center, end) > radius
      guard endsOutside, abs(nearMeters - radius) > 1 else { continue }
      let c = segment.crossing(
        ofDiscAt: UnitVector(center), radius: EarthModel.radians(fromMeters: radius))
      #expect((c != nil) == (firstInside != nil), "seed \(seed)")
      if let c, let firstInside, let lastInside {
        crossings += 1
        #expect(abs(c.entry / step - Double(firstInside)) <= 1.001, "seed \(seed)")
        #expect(abs(c.exit / step - Double(lastInside)) <= 1.001, "seed \(seed)")
      }
    }
    #expect(crossings > 50)
  }
}

/// The point `meters` from `start` along the initial `bearing` (radians from north), by the
/// spherical destination formula (an independent construction from the segment's own).
private func destination(_ start: Coordinate, meters: Double, bearing: Double) -> Coordinate {
  let phi = start.latitude * Double.pi / 180
  let lambda = start.longitude * Double.pi / 180
  let delta = meters / R
  let phi2 = asin(sin(phi) * cos(delta) + cos(phi) * sin(delta) * cos(bearing))
  var lambda2 =
    lambda + atan2(sin(bearing) * sin(delta) * cos(phi), cos(delta) - sin(phi) * sin(phi2))
  if lambda2 > Double.pi { lambda2 -= 2 * Double.pi }
  if lambda2 < -Double.pi { lambda2 += 2 * Double.pi }
  return Coordinate(uncheckedLatitude: phi2 * 180 / Double.pi, longitude: lambda2 * 180 / Double.pi)
}
