import GeofenceGeometry
import GeofenceTestSupport
import GeofenceTransitions
import Testing

/// The EXIT rule `d - a > r + h` decided at fixes within a centimetre of `r + h + a`, against
/// the rule evaluated directly with `haversineDistance` (the oracle). The detector decides
/// fixes clearly inside `r + h` by a squared chord and the rest by the haversine distance;
/// the outcome must be the haversine rule's at every fix.
struct ExitBoundaryTests {
  /// A detector inside `region` (entered at its centre) then given one fix at `point`:
  /// whether that fix exits.
  func exits(
    _ regions: RegionSet, at point: Coordinate, accuracy: Double?,
    _ configuration: TransitionConfiguration
  ) -> Bool {
    var detector = TransitionDetector(regions: regions, configuration: configuration)
    var events: [TransitionEvent] = []
    let center = regions.center(at: 0)
    _ = detector.process(
      LocationFix(coordinate: center, time: 0, sourceIndex: 0), into: &events)
    precondition(events.count == 1 && events[0].type == .enter)
    events.removeAll()
    _ = detector.process(
      LocationFix(coordinate: point, time: 10, horizontalAccuracy: accuracy, sourceIndex: 1),
      into: &events)
    return events.contains { $0.type == .exit }
  }

  /// The default rules with the given hysteresis, no outlier filter and no accuracy limit, so
  /// that every fix is judged by the EXIT rule alone.
  static func configuration(
    hysteresisMinimum: Double = 20, hysteresisFraction: Double = 0.1
  ) -> TransitionConfiguration {
    var configuration = TransitionConfiguration()
    configuration.outlierFilter = nil
    configuration.maxAccuracyMeters = .infinity
    configuration.hysteresisMinimumMeters = hysteresisMinimum
    configuration.hysteresisRadiusFraction = hysteresisFraction
    return configuration
  }

  /// A set of one region, "r", at `center` with radius `radius` metres.
  static func oneRegion(at center: Coordinate, radius: Double) throws -> RegionSet {
    RegionSet(geofences: [
      Geofence(id: "r", region: try CircularRegion(center: center, radiusMeters: radius))
    ])
  }

  @Test(arguments: [
    (100.0, 20.0, 0.0), (100.0, 0.0, 0.0), (100.0, 20.0, 0.1), (2_000.0, 20.0, 0.1),
    (5_000_000.0, 20.0, 0.1),
  ])
  func exitDecisionEqualsTheHaversineRule(
    radius: Double, hysteresisMinimum: Double, hysteresisFraction: Double
  ) throws {
    let configuration = Self.configuration(
      hysteresisMinimum: hysteresisMinimum, hysteresisFraction: hysteresisFraction)
    let center = Coordinate(uncheckedLatitude: 46, longitude: 7)
    let regions = try Self.oneRegion(at: center, radius: radius)
    let h = configuration.hysteresisMeters(forRadius: radius)
    var rng = SeededGenerator(seed: UInt64(radius) &+ UInt64(hysteresisMinimum))
    var exitsSeen = 0
    var staysSeen = 0
    for accuracy in [nil, 0, 0.5, 7] as [Double?] {
      let edge = radius + h + (accuracy ?? 0)
      for k in 0..<150 {
        // Within 1 cm of the edge, a third of the fixes within 2 µm (the margin of the chord
        // test is 1 µm plus a relative 1e-9).
        let spread = k % 3 == 0 ? 2e-6 : 0.01
        let meters = edge + Double.random(in: -spread...spread, using: &rng)
        let point = Coordinate(
          uncheckedLatitude: center.latitude - meters / (Double.pi / 180 * 6_371_008.8),
          longitude: center.longitude)
        let expected = haversineDistance(center, point) - (accuracy ?? 0) > radius + h
        let got = exits(regions, at: point, accuracy: accuracy, configuration)
        #expect(
          got == expected,
          "r \(radius), h \(h), a \(String(describing: accuracy)), \(meters) m south")
        if expected { exitsSeen += 1 } else { staysSeen += 1 }
      }
    }
    // Both outcomes occur, so the comparison is not one-sided.
    #expect(exitsSeen > 100 && staysSeen > 100)
  }

  /// `r + h` within metres of half the circumference, fixes within about a metre of the
  /// antipode: there the squared chord cannot resolve centimetres, so the detector must fall
  /// back to the haversine distance and still follow its rule exactly.
  @Test(arguments: [
    // (r, minimum hysteresis, hysteresis fraction, accuracy)
    ((Double.pi * 6_371_008.8 - 0.05) / 1.1, 20.0, 0.1, nil as Double?),
    (Double.pi * 6_371_008.8 - 20.3, 20.0, 0.0, nil),
    (Double.pi * 6_371_008.8 - 1, 0.0, 0.0, 2e-6),
    (Double.pi * 6_371_008.8 - 600, 0.0, 0.0, 0.5),
  ])
  func exitNearTheAntipodeEqualsTheHaversineRule(
    radius: Double, hysteresisMinimum: Double, hysteresisFraction: Double, accuracy: Double?
  ) throws {
    let configuration = Self.configuration(
      hysteresisMinimum: hysteresisMinimum, hysteresisFraction: hysteresisFraction)
    let center = Coordinate(uncheckedLatitude: 10, longitude: 20)
    let regions = try Self.oneRegion(at: center, radius: radius)
    let h = configuration.hysteresisMeters(forRadius: radius)
    var rng = SeededGenerator(seed: UInt64(radius.bitPattern % 1_000_003))
    var exitsSeen = 0
    var staysSeen = 0
    // Fixes north of the antipode (-10, -160), toward the centre along its meridian, at
    // `πR - (r + h + a)` from it give `d - a = r + h`; around that, within 5 cm for half of
    // them and 50 cm for the rest, with about 1 cm of longitude jitter.
    let metersPerDegree = Double.pi / 180 * 6_371_008.8
    let atEdge = Double.pi * 6_371_008.8 - (radius + h + (accuracy ?? 0))
    for k in 0..<600 {
      let spread = k % 2 == 0 ? 0.05 : 0.5
      let fromAntipode = abs(atEdge + Double.random(in: -spread...spread, using: &rng))
      let point = Coordinate(
        uncheckedLatitude: -10 + fromAntipode / metersPerDegree,
        longitude: -160 + Double.random(in: -1e-7...1e-7, using: &rng))
      let expected = haversineDistance(center, point) - (accuracy ?? 0) > radius + h
      let got = exits(regions, at: point, accuracy: accuracy, configuration)
      #expect(got == expected, "r \(radius), h \(h), a \(String(describing: accuracy)) at \(point)")
      if expected { exitsSeen += 1 } else { staysSeen += 1 }
    }
    #expect(exitsSeen > 20 && staysSeen > 20, "exits \(exitsSeen), stays \(staysSeen)")
  }

  /// `r + h` beyond half the circumference: no point on the sphere is that far, so no fix
  /// exits, including the antipode.
  @Test func hysteresisBeyondHalfTheCircumferenceNeverExits() throws {
    let configuration = Self.configuration()
    let center = Coordinate(uncheckedLatitude: 46, longitude: 7)
    let radius = 19_000_000.0
    #expect(radius + configuration.hysteresisMeters(forRadius: radius) > 20_015_087)
    let regions = try Self.oneRegion(at: center, radius: radius)
    for point in [
      Coordinate(uncheckedLatitude: -46, longitude: -173),
      Coordinate(uncheckedLatitude: -45.99, longitude: -173),
      Coordinate(uncheckedLatitude: 0, longitude: 0),
    ] {
      #expect(!exits(regions, at: point, accuracy: nil, configuration), "\(point)")
    }
  }
}
