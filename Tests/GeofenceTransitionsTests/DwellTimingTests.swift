import GeofenceGeometry
import GeofenceTestSupport
import GeofenceTransitions
import Testing

/// DWELL timing against the detector's own ENTER and EXIT events: a region entered at `tₑ` and
/// not left dwells at the first fix with `t - tₑ >= delay`, exactly once, including across
/// migrations to the same set and to a set without some regions. The detector skips its DWELL
/// pass while no visit can be due; this checks the skip never delays or drops a DWELL.
struct DwellTimingTests {
  @Test(arguments: [UInt64(1), 2, 3])
  func dwellAtTheFirstDueFix(seed: UInt64) throws {
    var rng = SeededGenerator(seed: seed)
    var configuration = TransitionConfiguration()
    configuration.outlierFilter = nil
    configuration.maxAccuracyMeters = .infinity
    configuration.loiteringDelaySeconds = 20
    // Twelve overlapping regions of 60-300 m within about 1 km.
    let geofences = try (0..<12).map { k in
      Geofence(
        id: "g\(k)",
        region: try CircularRegion(
          center: Coordinate(
            uncheckedLatitude: 46 + Double.random(in: -0.005...0.005, using: &rng),
            longitude: 7 + Double.random(in: -0.007...0.007, using: &rng)),
          radiusMeters: Double.random(in: 60...300, using: &rng)))
    }
    let regions = RegionSet(geofences: geofences)
    var detector = TransitionDetector(regions: regions, configuration: configuration)
    var events: [TransitionEvent] = []
    var inside: [Int32: Double] = [:]  // slot -> ENTER time, until DWELL or EXIT
    var position = Coordinate(uncheckedLatitude: 46, longitude: 7)
    var time = 0.0
    var dwellsSeen = 0
    for step in 0..<3_000 {
      // Walk: steps of up to 40 m, gaps of 1-30 s (sometimes 60 s).
      time += Bool.random(using: &rng) ? 1 : Double(Int.random(in: 2...30, using: &rng))
      if step % 97 == 0 { time += 60 }
      position = Coordinate(
        uncheckedLatitude: min(
          46.008,
          max(
            45.992,
            position.latitude + Double.random(in: -3.6e-4...3.6e-4, using: &rng))),
        longitude: min(
          7.011,
          max(
            6.989,
            position.longitude + Double.random(in: -5e-4...5e-4, using: &rng))))
      if step % 500 == 250 {
        // Same set, identity map: nothing may change.
        detector = detector.migrated(to: regions) { $0 }
      }
      if step == 1_500 {
        // A set without the first four regions: their visits end without an event, the
        // others are renumbered and keep their ENTER times.
        let smaller = RegionSet(geofences: Array(geofences[4...]))
        detector = detector.migrated(to: smaller) { $0 >= 4 ? $0 - 4 : nil }
        inside = Dictionary(
          uniqueKeysWithValues: inside.compactMap { $0.key >= 4 ? ($0.key - 4, $0.value) : nil })
      }
      events.removeAll()
      _ = detector.process(
        LocationFix(coordinate: position, time: time, sourceIndex: step), into: &events)
      var dwellSlots: [Int32] = []
      for e in events {
        switch e.type {
        case .exit: inside[e.slot] = nil
        case .enter: inside[e.slot] = time
        case .dwell: dwellSlots.append(e.slot)
        }
      }
      let due = inside.filter { time - $0.value >= 20 }.map(\.key).sorted()
      #expect(dwellSlots.sorted() == due, "seed \(seed) step \(step) t \(time)")
      for slot in dwellSlots { inside[slot] = nil }
      dwellsSeen += dwellSlots.count
    }
    #expect(dwellsSeen > 20, "seed \(seed): \(dwellsSeen) dwells")
  }
}
