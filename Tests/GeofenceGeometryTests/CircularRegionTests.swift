import GeofenceGeometry
import GeofenceTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

private func coord(_ lat: Double, _ lon: Double) -> Coordinate {
  Coordinate(uncheckedLatitude: lat, longitude: lon)
}

/// The point at `distance` metres from `start` on initial bearing `bearing` (radians), by the
/// spherical direct formula (independent of the code under test).
private func destination(_ start: Coordinate, bearing: Double, distance: Double) -> Coordinate {
  let delta = distance / EarthModel.meanRadiusMeters
  let phi1 = start.latitude * .pi / 180
  let lambda1 = start.longitude * .pi / 180
  let phi2 = asin(sin(phi1) * cos(delta) + cos(phi1) * sin(delta) * cos(bearing))
  let lambda2 =
    lambda1 + atan2(sin(bearing) * sin(delta) * cos(phi1), cos(delta) - sin(phi1) * sin(phi2))
  var lon = lambda2 * 180 / .pi
  lon = (lon + 540).truncatingRemainder(dividingBy: 360) - 180
  return coord(phi2 * 180 / .pi, max(-180, min(180, lon)))
}

@Test func radiusMustBeFiniteAndPositive() throws {
  let c = coord(46.5, 6.6)
  for bad in [0, -1, Double.nan, .infinity, -.infinity] {
    #expect(throws: RegionError.self) { try CircularRegion(center: c, radiusMeters: bad) }
  }
  let r = try CircularRegion(center: c, radiusMeters: 0.01)
  #expect(r.contains(c))
}

@Test func containmentAgreesWithHaversineAwayFromTheBoundary() throws {
  var rng = SeededGenerator(seed: 42)
  for _ in 0..<5_000 {
    let center = coord(
      asin(Double.random(in: -1...1, using: &rng)) * 180 / .pi,
      Double.random(in: -180...180, using: &rng))
    let radius = exp(Double.random(in: log(0.01)...log(3e7), using: &rng))
    let region = try CircularRegion(center: center, radiusMeters: radius)
    let p = destination(
      center, bearing: Double.random(in: 0...(2 * .pi), using: &rng),
      distance: Double.random(in: 0...(2.5 * radius), using: &rng))
    let d = haversineDistance(center, p)
    if abs(d - radius) > 1e-6 * max(1, radius) {
      #expect(region.contains(p) == (d <= radius), "seed 42 center \(center) r \(radius) p \(p)")
    }
  }
}

@Test func aRadiusBeyondHalfTheCircumferenceCoversEverything() throws {
  let region = try CircularRegion(center: coord(10, 20), radiusMeters: 2.1e7)
  #expect(region.coversSphere)
  #expect(region.contains(coord(-10, -160)))
  #expect(region.boundingBox == BoundingBox.world)
  let almost = try CircularRegion(center: coord(10, 20), radiusMeters: 2.0e7)
  #expect(!almost.coversSphere)
  #expect(!almost.contains(coord(-10, -160)))
}

@Test func capBoxWrapsTheAntimeridian() throws {
  let region = try CircularRegion(center: coord(0, 179.99), radiusMeters: 5_000)
  let box = region.boundingBox
  #expect(box.wrapsAntimeridian)
  // 5 km on the equator is 0.044966 degrees of longitude.
  #expect(abs(box.minLongitude - (179.99 - 0.0449661)) < 1e-6)
  #expect(abs(box.maxLongitude - (-180 + (179.99 + 0.0449661 - 180))) < 1e-6)
  #expect(box.contains(coord(0, 180)) && box.contains(coord(0, -180)))
  #expect(box.contains(coord(0, -179.97)))
  #expect(!box.contains(coord(0, -179.9)))
}

@Test func capBoxTouchingAPoleCoversAllLongitudes() throws {
  let north = try CircularRegion(center: coord(89.99, 45), radiusMeters: 2_000).boundingBox
  #expect(north.coversAllLongitudes && north.maxLatitude == 90)
  let south = try CircularRegion(center: coord(-90, 0), radiusMeters: 3_000).boundingBox
  #expect(south.coversAllLongitudes && south.minLatitude == -90)
  #expect(south.contains(coord(-89.98, 137)))
}

@Test func capBoxContainsEverySampledPointOfTheDisc() throws {
  var rng = SeededGenerator(seed: 1234)
  for _ in 0..<2_000 {
    let center = coord(
      Double.random(in: -89.9...89.9, using: &rng), Double.random(in: -180...180, using: &rng))
    let radius = exp(Double.random(in: log(1)...log(5e6), using: &rng))
    let region = try CircularRegion(center: center, radiusMeters: radius)
    let box = region.boundingBox
    for k in 0..<16 {
      let p = destination(center, bearing: Double(k) * .pi / 8, distance: radius * 0.999_999)
      #expect(box.contains(p), "seed 1234 center \(center) r \(radius) bearing \(k)")
    }
  }
}
