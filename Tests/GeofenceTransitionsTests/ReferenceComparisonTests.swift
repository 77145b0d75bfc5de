import GeofenceGeometry
import GeofenceTestSupport
import GeofenceTransitions
import Testing

/// A brute-force reference: every region at every fix, no index, no hysteresis, no accuracy,
/// no outlier filter. ENTER when `CircularRegion.contains`, EXIT when the haversine distance
/// exceeds the radius, DWELL once per visit after `delay` seconds; events of one fix ordered
/// exits, enters, dwells, each by the UTF-8 bytes of the id, then by slot.
private func referenceEvents(
  _ fixes: [LocationFix], ids: [String], regions: [CircularRegion], delay: Double
) -> [TransitionEvent] {
  var enterTime = [Double?](repeating: nil, count: regions.count)
  var dwelled = [Bool](repeating: false, count: regions.count)
  var out: [TransitionEvent] = []
  let bytes = ids.map { Array($0.utf8) }
  func byID(_ a: (Int, Double, Double?), _ b: (Int, Double, Double?)) -> Bool {
    bytes[a.0].lexicographicallyPrecedes(bytes[b.0])
      || (bytes[a.0] == bytes[b.0] && a.0 < b.0)
  }
  for f in fixes {
    guard let t = f.time else { continue }
    var exits: [(Int, Double, Double?)] = []
    var enters: [(Int, Double, Double?)] = []
    var dwells: [(Int, Double, Double?)] = []
    for s in regions.indices where enterTime[s] != nil {
      let d = haversineDistance(regions[s].center, f.coordinate)
      if d > regions[s].radiusMeters {
        exits.append((s, d, nil))
        enterTime[s] = nil
      }
    }
    for s in regions.indices
    where enterTime[s] == nil && !exits.contains(where: { $0.0 == s })
      && regions[s].contains(f.coordinate)
    {
      enters.append((s, haversineDistance(regions[s].center, f.coordinate), nil))
      enterTime[s] = t
      dwelled[s] = false
    }
    for s in regions.indices {
      if let e = enterTime[s], !dwelled[s], t - e >= delay {
        dwelled[s] = true
        dwells.append((s, haversineDistance(regions[s].center, f.coordinate), t - e))
      }
    }
    for (type, list) in [(TransitionType.exit, exits), (.enter, enters), (.dwell, dwells)] {
      for e in list.sorted(by: byID) {
        out.append(
          TransitionEvent(
            type: type, slot: Int32(e.0), fix: f, distanceMeters: e.1, dwellSeconds: e.2))
      }
    }
  }
  return out
}

@Suite("Detector against a brute-force reference")
struct ReferenceComparisonTests {
  @Test("seeded random tracks: hysteresis 0, no outlier filter, no accuracies", arguments: 1...25)
  func matchesReference(seed: UInt64) {
    var rng = SeededGenerator(seed: seed)
    let alphabet: [String] = ["a", "A", "b", "_", "\u{E9}", "e\u{301}", "0"]
    var ids: [String] = []
    var regions: [CircularRegion] = []
    for _ in 0..<40 {
      let length = Int.random(in: 1...3, using: &rng)
      ids.append((0..<length).map { _ in alphabet.randomElement(using: &rng)! }.joined())
      let center = Coordinate(
        uncheckedLatitude: Double.random(in: 45.0...45.05, using: &rng),
        longitude: Double.random(in: 7.0...7.07, using: &rng))
      regions.append(
        try! CircularRegion(center: center, radiusMeters: Double.random(in: 50...1500, using: &rng))
      )
    }
    let set = RegionSet(ids: ids, regions: regions)

    var fixes: [LocationFix] = []
    var lat = 45.025
    var lon = 7.035
    var t = 1_000_000.0
    for i in 0..<400 {
      switch Int.random(in: 0..<10, using: &rng) {
      case 0:  // teleport
        lat = Double.random(in: 44.99...45.06, using: &rng)
        lon = Double.random(in: 6.99...7.08, using: &rng)
      case 1:  // exactly on a centre
        let c = regions.randomElement(using: &rng)!.center
        lat = c.latitude
        lon = c.longitude
      default:
        lat += Double.random(in: -0.003...0.003, using: &rng)
        lon += Double.random(in: -0.004...0.004, using: &rng)
      }
      t += Double(Int.random(in: 1...200, using: &rng))
      fixes.append(fix(lat, lon, t: t, index: i))
    }

    var config = TransitionConfiguration()
    config.hysteresisMinimumMeters = 0
    config.hysteresisRadiusFraction = 0
    config.outlierFilter = nil
    var detector = TransitionDetector(regions: set, configuration: config)
    var events: [TransitionEvent] = []
    for f in fixes { #expect(detector.process(f, into: &events) == .accepted) }
    let expected = referenceEvents(fixes, ids: ids, regions: regions, delay: 300)

    #expect(events.count == expected.count, "seed \(seed)")
    #expect(expected.count > 20, "seed \(seed): too few events to be a test")
    for (got, want) in zip(events, expected) {
      #expect(got.type == want.type && got.slot == want.slot, "seed \(seed)")
      #expect(got.fix == want.fix, "seed \(seed)")
      #expect(abs(got.distanceMeters - want.distanceMeters) < 1e-6, "seed \(seed)")
      #expect(got.dwellSeconds == want.dwellSeconds, "seed \(seed)")
      if got.type != want.type || got.slot != want.slot || got.fix != want.fix { break }
    }
  }
}
