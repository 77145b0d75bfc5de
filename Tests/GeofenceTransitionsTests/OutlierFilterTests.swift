import GeofenceGeometry
import GeofenceTestSupport
@testable import GeofenceTransitions
import Testing

// On the equator 0.018° of longitude = 0.018 × 111,195.080 m = 2001.511 m; a point `m` metres
// north of (0, 0) is at latitude m / 111,195.080. Default filter: 70 m/s, 3 distinct
// consistent fixes to recover, reset after a 300 s gap.

private let town = regionSet([("town", 0, 0.018, 300)])

/// `meters` north of the equator at longitude `longitude`, accuracy 10 m.
private func walk(_ meters: Double, t: Double, longitude: Double = 0, accuracy: Double = 10)
  -> LocationFix
{
  fix(meters / metersPerDegree, longitude, t: t, accuracy: accuracy)
}

@Suite("Outlier filter")
struct OutlierFilterTests {
  @Test("a 2 km spike within 5 s is dropped as an outlier; without the filter it flaps")
  func spikeIsDropped() {
    let fixes = [
      walk(0, t: 0), walk(50, t: 5), walk(100, t: 10),
      walk(100, t: 15, longitude: 0.018),  // (2001.5 - 20) / 5 s = 396 m/s
      walk(150, t: 20), walk(200, t: 25),
    ]
    let on = runLive(fixes, town)
    #expect(
      on.outcomes == [.accepted, .accepted, .accepted, .dropped(.outlier), .accepted, .accepted])
    #expect(on.events.isEmpty)
    #expect(on.detector.dropCounts[.outlier] == 1)

    var offConfig = TransitionConfiguration()
    offConfig.outlierFilter = nil
    let off = runLive(fixes, town, offConfig)
    #expect(off.outcomes.allSatisfy { $0 == .accepted })
    #expect(
      summaries(off.events, town) == [
        Summary(type: .enter, id: "town", time: 15), Summary(type: .exit, id: "town", time: 20),
      ])
  }

  @Test("a real jump is accepted after 3 mutually consistent distinct fixes")
  func recoveryByConsistentFixes() {
    let run = runLive(
      [
        walk(0, t: 0), walk(0, t: 5, longitude: 0.018), walk(10, t: 10, longitude: 0.018),
        walk(20, t: 15, longitude: 0.018),
      ], town)
    #expect(run.outcomes == [.accepted, .dropped(.outlier), .dropped(.outlier), .accepted])
    #expect(summaries(run.events, town) == [Summary(type: .enter, id: "town", time: 15)])
    #expect(abs(run.events[0].distanceMeters - 20) < 0.01)
  }

  @Test("repeated identical positions count once; elapsed time makes the jump plausible")
  func identicalRepeatsAndElapsedTime() {
    var fixes = [walk(0, t: 0)]
    for t in stride(from: 5.0, through: 30, by: 5) { fixes.append(walk(0, t: t, longitude: 0.018)) }
    let run = runLive(fixes, town)
    // At 25 s: (2001.511 - 20) / 25 = 79.3 m/s, rejected; at 30 s: 66.1 m/s, accepted.
    #expect(
      run.outcomes == [.accepted] + Array(repeating: .dropped(.outlier), count: 5) + [.accepted])
    #expect(summaries(run.events, town) == [Summary(type: .enter, id: "town", time: 30)])
  }

  @Test("a fix after a gap of 300 s or more is accepted whatever its speed")
  func resetAfterLongGap() {
    let far = fix(0, 1.0, t: 300, accuracy: 10)  // 111 km away
    #expect(runLive([walk(0, t: 0), far], town).outcomes == [.accepted, .accepted])
    var early = far
    early.time = 299.5
    #expect(runLive([walk(0, t: 0), early], town).outcomes == [.accepted, .dropped(.outlier)])
  }

  @Test("the speed test subtracts both accuracies: max(0, d - a1 - a2) / dt <= 70 m/s")
  func accuracyAware() {
    // d = 500 m in 5 s; a1 = 10. a2 = 141: 349 / 5 = 69.8 m/s. a2 = 139: 351 / 5 = 70.2 m/s.
    var config = TransitionConfiguration()
    config.maxAccuracyMeters = 1000
    #expect(
      runLive([walk(0, t: 0), walk(500, t: 5, accuracy: 141)], town, config).outcomes == [
        .accepted, .accepted,
      ])
    #expect(
      runLive([walk(0, t: 0), walk(500, t: 5, accuracy: 139)], town, config).outcomes == [
        .accepted, .dropped(.outlier),
      ])
  }

  @Test("a diagonal step is judged on its haversine distance, not on the cheap bound")
  func diagonalStepAtTheLimit() {
    // 350 m at 45° (247.49 m north and east) in 5 s with accuracy 0 + 0: the cheap bound,
    // north plus east (495 m, 99 m/s), is above 70 m/s, so the haversine distance decides.
    // The step is shrunk or stretched by 0.05 m about 350 m = 70 m/s x 5 s.
    let side = 350 / 2.0.squareRoot() / metersPerDegree
    func step(_ scale: Double) -> [LocationFix] {
      [fix(0, 0, t: 0, accuracy: 0), fix(side * scale, side * scale, t: 5, accuracy: 0)]
    }
    let below = step(1 - 0.05 / 350)
    let above = step(1 + 0.05 / 350)
    let dBelow = haversineDistance(below[0].coordinate, below[1].coordinate)
    let dAbove = haversineDistance(above[0].coordinate, above[1].coordinate)
    #expect(dBelow < 350 && dBelow > 349.9)
    #expect(dAbove > 350 && dAbove < 350.1)
    #expect(TransitionDetector.distanceUpperBound(below[0].coordinate, below[1].coordinate) > 494)
    #expect(runLive(below, town).outcomes == [.accepted, .accepted])
    #expect(runLive(above, town).outcomes == [.accepted, .dropped(.outlier)])
  }

  @Test("the cheap distance bound is never below the haversine distance")
  func distanceUpperBoundHoldsEverywhere() {
    // Hand-computed: (0, 0) to (0.001, 0.001) is 0.002° x 111,195.080234 m = 222.3901605 m,
    // widened by 1e-9 relative and 1e-6 m: 222.3901617 m.
    let origin = Coordinate(uncheckedLatitude: 0, longitude: 0)
    let diagonal = Coordinate(uncheckedLatitude: 0.001, longitude: 0.001)
    #expect(
      abs(TransitionDetector.distanceUpperBound(origin, diagonal) - 222.390_161_7) < 1e-7)
    // Across the antimeridian the longitude difference wraps: 179.999 to -179.999 is 0.002°.
    let west = Coordinate(uncheckedLatitude: 10, longitude: 179.999)
    let east = Coordinate(uncheckedLatitude: 10, longitude: -179.999)
    #expect(abs(TransitionDetector.distanceUpperBound(west, east) - 222.390_161_7) < 1e-7)
    // Out-of-range or NaN input has no bound.
    let nan = Coordinate(uncheckedLatitude: .nan, longitude: 0)
    let beyondPole = Coordinate(uncheckedLatitude: 91, longitude: 0)
    #expect(TransitionDetector.distanceUpperBound(origin, nan) == .infinity)
    #expect(TransitionDetector.distanceUpperBound(beyondPole, origin) == .infinity)

    // Oracle: the haversine distance, over uniform pairs, short steps anywhere (near the
    // poles and the antimeridian too) and pairs straddling the antimeridian.
    var rng = SeededGenerator(seed: 7)
    func random(_ range: ClosedRange<Double>) -> Double { Double.random(in: range, using: &rng) }
    var failures: [String] = []
    for k in 0..<30_000 {
      var a = Coordinate(uncheckedLatitude: random(-90...90), longitude: random(-180...180))
      let b: Coordinate
      switch k % 3 {
      case 0: b = Coordinate(uncheckedLatitude: random(-90...90), longitude: random(-180...180))
      case 1:
        let latitude = min(90, max(-90, a.latitude + random(-0.01...0.01)))
        var longitude = a.longitude + random(-0.01...0.01)
        if longitude > 180 { longitude -= 360 }
        if longitude < -180 { longitude += 360 }
        b = Coordinate(uncheckedLatitude: latitude, longitude: longitude)
      default:
        a = Coordinate(uncheckedLatitude: a.latitude, longitude: 180 - random(0...0.01))
        let latitude = min(90, max(-90, a.latitude + random(-0.01...0.01)))
        b = Coordinate(uncheckedLatitude: latitude, longitude: -180 + random(0...0.01))
      }
      let bound = TransitionDetector.distanceUpperBound(a, b)
      let d = haversineDistance(a, b)
      if !(bound >= d) { failures.append("a = \(a), b = \(b): bound \(bound) < \(d)") }
    }
    #expect(failures.isEmpty, "\(failures.prefix(5))")
  }

  @Test("the maximum speed is configurable")
  func configurableSpeed() {
    var config = TransitionConfiguration()
    config.outlierFilter = OutlierFilter(maxSpeedMetersPerSecond: 400)
    let run = runLive(
      [walk(100, t: 10), walk(100, t: 15, longitude: 0.018)], town, config)
    #expect(run.outcomes == [.accepted, .accepted])
    #expect(summaries(run.events, town) == [Summary(type: .enter, id: "town", time: 15)])
  }
}
