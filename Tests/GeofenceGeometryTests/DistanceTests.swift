import GeofenceGeometry
import GeofenceTestSupport
import Testing

/// Expected values were computed independently with Vincenty's atan2 formula for the sphere
/// (R = 6,371,008.8 m) in Python, and by hand for the meridian arc (R · π/180 · 1e-3).
private func coord(_ lat: Double, _ lon: Double) -> Coordinate {
  Coordinate(uncheckedLatitude: lat, longitude: lon)
}

@Test(arguments: [
  (coord(0, 0), coord(0.001, 0), 111.19508023353292),
  (coord(51.5074, -0.1278), coord(48.8566, 2.3522), 343_556.53488088364),
  (coord(47.0516249, 7.0389004), coord(46.5197, 6.6323), 66_759.13361718044),
  (coord(-33.8688, 151.2093), coord(51.5074, -0.1278), 16_993_956.932816535),
  (coord(0, 179.9995), coord(0, -179.9995), 111.19508023338885),
  (coord(89.9, 0), coord(89.9, 180), 22_239.01604670598),
])
func haversineMatchesIndependentComputation(a: Coordinate, b: Coordinate, expected: Double) {
  #expect(abs(haversineDistance(a, b) - expected) < 1e-6)
  #expect(abs(haversineDistance(b, a) - expected) < 1e-6)
}

@Test func antipodesAndPolesAreExact() {
  let halfCircumference = 20_015_114.442035925
  #expect(abs(haversineDistance(coord(0, 0), coord(0, 180)) - halfCircumference) < 1e-6)
  #expect(abs(haversineDistance(coord(90, 0), coord(-90, 0)) - halfCircumference) < 1e-6)
  #expect(abs(haversineDistance(coord(10, 20), coord(-10, -160)) - halfCircumference) < 1)
  #expect(haversineDistance(coord(90, 0), coord(90, 123)) < 1e-9)
  #expect(haversineDistance(coord(-90, -180), coord(-90, 45)) < 1e-9)
  #expect(haversineDistance(coord(12, 180), coord(12, -180)) < 1e-6)
  #expect(abs(EarthModel.halfCircumferenceMeters - halfCircumference) < 1e-6)
}

@Test func haversineTermIsClampedAndDistanceIsNeverNaN() {
  var rng = SeededGenerator(seed: 7)
  for _ in 0..<10_000 {
    let lat = Double.random(in: -90...90, using: &rng)
    let lon = Double.random(in: -180...180, using: &rng)
    let a = coord(lat, lon)
    let antipode = coord(-lat, lon > 0 ? lon - 180 : lon + 180)
    let h = haversineTerm(a, antipode)
    #expect(h >= 0 && h <= 1)
    let d = haversineDistance(a, antipode)
    #expect(!d.isNaN)
    // Haversine is ill-conditioned at the antipode: a rounding of 1e-16 in the term moves the
    // angle by about 1.5e-8 rad, so 1 m is the honest bound there (documented on the function).
    #expect(abs(d - EarthModel.halfCircumferenceMeters) < 1)
  }
}

@Test func coordinateValidationNamesTheBadValue() {
  #expect(throws: CoordinateError.invalidLatitude(90.5)) {
    try Coordinate(latitude: 90.5, longitude: 0)
  }
  #expect(throws: CoordinateError.invalidLongitude(-180.01)) {
    try Coordinate(latitude: 0, longitude: -180.01)
  }
  #expect(throws: CoordinateError.self) { try Coordinate(latitude: .nan, longitude: 0) }
  #expect(throws: CoordinateError.self) { try Coordinate(latitude: 0, longitude: .infinity) }
  #expect((try? Coordinate(latitude: -90, longitude: 180)) != nil)
  #expect((try? Coordinate(latitude: 90, longitude: -180)) != nil)
}
