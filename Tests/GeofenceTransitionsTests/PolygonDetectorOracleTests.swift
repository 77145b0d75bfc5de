import Foundation
import GeofenceGeometry
import GeofenceTestSupport
import GeofenceTransitions
import Testing

// The detector takes polygon candidates from the polygon box grid (`RegionSet.forEachPolygon`,
// whose subcells decide most points without reading the polygon) and circles from the grid
// index. Its events must equal a reference that tests every region at every fix with
// `PolygonRegion.contains` and the haversine distance, on dense overlapping polygons mixed
// with circles, and on polygons alone (where the detector skips the circle index).

/// A star-shaped ring of `n` vertices around (cx, cy), radius scaled in [0.6, 1], closed.
private func star(
  cx: Double, cy: Double, r: Double, n: Int, using rng: inout SeededGenerator
) -> [SIMD2<Double>] {
  var ring = (0..<n).map { i -> SIMD2<Double> in
    let a = (Double(i) + Double.random(in: 0.1...0.9, using: &rng)) / Double(n) * 2 * Double.pi
    let s = Double.random(in: 0.6...1, using: &rng)
    return SIMD2(cx + s * r * 1.3 * cos(a), cy + s * r * sin(a))
  }
  ring.append(ring[0])
  return ring
}

/// The events of `fixes` (one device, times increasing, accuracy given) by the documented
/// rules, every region tested at every fix: "type id #fixIndex".
private func referenceEvents(
  _ fixes: [LocationFix], _ geofences: [Geofence], _ configuration: TransitionConfiguration
) -> [String] {
  var inside = [Bool](repeating: false, count: geofences.count)
  var events: [String] = []
  let byteOrder: (String, String) -> Bool = { $0.utf8.lexicographicallyPrecedes($1.utf8) }
  for fix in fixes {
    let p = fix.coordinate
    let a = fix.horizontalAccuracy ?? 0
    var exits: [String] = []
    var enters: [String] = []
    for (k, g) in geofences.enumerated() {
      let contained: Bool
      let size: Double
      let outsideBy: () -> Double
      switch g.shape {
      case .polygon(let polygon):
        contained = polygon.contains(p)
        size = polygon.equivalentRadiusMeters
        outsideBy = { polygon.boundaryDistance(to: p, notBeyond: .infinity) }
      case .circle(let circle):
        let d = haversineDistance(circle.center, p)
        contained = d <= circle.radiusMeters
        size = circle.radiusMeters
        outsideBy = { d - circle.radiusMeters }
      }
      let h = max(
        configuration.hysteresisMinimumMeters, configuration.hysteresisRadiusFraction * size)
      if inside[k] {
        if !contained && outsideBy() - a > h {
          inside[k] = false
          exits.append(g.id)
        }
      } else if contained && a <= size {
        inside[k] = true
        enters.append(g.id)
      }
    }
    events += exits.sorted(by: byteOrder).map { "exit \($0) #\(fix.sourceIndex)" }
    events += enters.sorted(by: byteOrder).map { "enter \($0) #\(fix.sourceIndex)" }
  }
  return events
}

@Suite struct PolygonDetectorOracleTests {
  @Test(arguments: [(UInt64(1), true), (2, true), (3, false), (4, false)])
  func detectorEqualsEveryRegionTestedAtEveryFix(seed: UInt64, withCircles: Bool) throws {
    var rng = SeededGenerator(seed: seed)
    let cx = 8.54
    let cy = 47.37
    var geofences: [Geofence] = []
    for i in 0..<250 {
      let r = Double.random(in: 0.0005...0.004, using: &rng)
      let n = Int(exp(Double.random(in: log(4)...log(300), using: &rng)))
      let ring = star(
        cx: cx + Double.random(in: -0.03...0.03, using: &rng),
        cy: cy + Double.random(in: -0.02...0.02, using: &rng), r: r, n: n, using: &rng)
      geofences.append(
        Geofence(id: "p\(i)", shape: .polygon(try PolygonRegion(polygons: [[ring]]))))
    }
    if withCircles {
      for i in 0..<150 {
        let center = Coordinate(
          uncheckedLatitude: cy + Double.random(in: -0.02...0.02, using: &rng),
          longitude: cx + Double.random(in: -0.03...0.03, using: &rng))
        let circle = try CircularRegion(
          center: center, radiusMeters: Double.random(in: 30...400, using: &rng))
        geofences.append(Geofence(id: "c\(i)", shape: .circle(circle)))
      }
    }
    let regions = RegionSet(geofences: geofences)
    let polygons = geofences.compactMap(\.polygon)

    // A random walk; every seventh fix lies on a vertex or an edge of a random polygon.
    var fixes: [LocationFix] = []
    var x = cx
    var y = cy
    for k in 0..<6_000 {
      var p: Coordinate
      if k % 7 == 3 {
        let polygon = polygons[Int.random(in: 0..<polygons.count, using: &rng)]
        let xs = polygon.longitudes
        let ys = polygon.latitudes
        let i = Int.random(in: 0..<(xs.count - 1), using: &rng)
        let t = k % 2 == 0 ? 0 : Double.random(in: 0...1, using: &rng)
        p = Coordinate(
          uncheckedLatitude: ys[i] + t * (ys[i + 1] - ys[i]),
          longitude: xs[i] + t * (xs[i + 1] - xs[i]))
      } else {
        x = min(cx + 0.035, max(cx - 0.035, x + Double.random(in: -0.0008...0.0008, using: &rng)))
        y = min(cy + 0.025, max(cy - 0.025, y + Double.random(in: -0.0006...0.0006, using: &rng)))
        p = Coordinate(uncheckedLatitude: y, longitude: x)
      }
      fixes.append(
        LocationFix(
          coordinate: p, time: 1_700_000_000 + Double(k),
          horizontalAccuracy: Double.random(in: 0...60, using: &rng), sourceIndex: k))
    }

    var configuration = TransitionConfiguration()
    configuration.outlierFilter = nil
    configuration.loiteringDelaySeconds = nil
    let result = TransitionDetector.replay(fixes, regions: regions, configuration: configuration)
    let got = result.events.map {
      "\($0.type.rawValue) \(regions.id(at: $0.slot)) #\($0.fix.sourceIndex)"
    }
    let expected = referenceEvents(fixes, geofences, configuration)
    // The first event that differs, named alone (the lists hold thousands).
    let n = min(got.count, expected.count)
    let first = (0..<n).first { got[$0] != expected[$0] } ?? n
    #expect(
      got.count == expected.count && first == n,
      """
      seed \(seed): \(got.count) events against \(expected.count); at \(first): \
      \(first < got.count ? got[first] : "none") against \
      \(first < expected.count ? expected[first] : "none")
      """)
    // Enough polygon events for the comparison to judge the polygon path.
    #expect(expected.filter { $0.contains(" p") }.count > 200, "seed \(seed)")
  }
}
