import Foundation
import GeofenceDefinitions
import GeofenceGeometry
import GeofenceTestSupport
import GeofenceTransitions
import Testing
import TrackFormats

// The posmo train track (Neuchâtel → Lausanne) against real polygons: the cantons of
// Neuchâtel and Vaud, two lakes and the communes the track passes (BFS generalised boundaries
// 2018, data/polygons). The detector's events must equal those of a reference written here
// from the documented rules, with its own ray-casting containment and a haversine distance to
// the boundary (edges sampled every metre or less), sharing no code with the detector.

/// Ray casting, boundary ignored (a real fix never lies on an edge to 1e-12°).
private func referenceContains(_ polygon: PolygonRegion, _ p: Coordinate) -> Bool {
  var inside = false
  for r in 0..<polygon.ringCount {
    let ring = polygon.ring(r)
    for i in 0..<(ring.count - 1) {
      let a = ring[i]
      let b = ring[i + 1]
      if (a.y > p.latitude) != (b.y > p.latitude) {
        let x = a.x + (p.latitude - a.y) * (b.x - a.x) / (b.y - a.y)
        if p.longitude < x { inside.toggle() }
      }
    }
  }
  return inside
}

/// Haversine distance to the boundary, each edge sampled at steps of at most 1 m (edges are
/// straight in longitude and latitude); only edges within `reach` metres of the point by
/// their bounding box are sampled, so a result above `reach` means "farther than reach".
private func referenceDistance(_ polygon: PolygonRegion, _ p: Coordinate, reach: Double) -> Double {
  let degrees = reach / 111_000 * 2 + 0.001
  var best = Double.infinity
  for r in 0..<polygon.ringCount {
    let ring = polygon.ring(r)
    for i in 0..<(ring.count - 1) {
      let a = ring[i]
      let b = ring[i + 1]
      let lonPad = degrees / max(0.1, cos(p.latitude * Double.pi / 180))
      if p.latitude < min(a.y, b.y) - degrees || p.latitude > max(a.y, b.y) + degrees
        || p.longitude < min(a.x, b.x) - lonPad || p.longitude > max(a.x, b.x) + lonPad
      {
        continue
      }
      let length = haversineDistance(
        Coordinate(uncheckedLatitude: a.y, longitude: a.x),
        Coordinate(uncheckedLatitude: b.y, longitude: b.x))
      let steps = max(1, Int(length.rounded(.up)))
      for s in 0...steps {
        let t = Double(s) / Double(steps)
        let q = a + (b - a) * t
        best = min(best, haversineDistance(p, Coordinate(uncheckedLatitude: q.y, longitude: q.x)))
      }
    }
  }
  return best
}

@Test func polygonTransitionsOnTheRealTrackEqualAReferenceOfTheRules() throws {
  let track = try TrackReader.read(
    contentsOf: TestPaths.data.appendingPathComponent("tracks/csv/posmo_trajectory.csv"))
  let loaded = try GeofenceFileReader.read(
    contentsOf: TestPaths.data.appendingPathComponent("polygons/swiss_route_polygons.geojson"),
    defaultRadiusMeters: nil)
  #expect(loaded.rejected.isEmpty)
  #expect(loaded.geofences.count == 38)
  var configuration = TransitionConfiguration()
  configuration.outlierFilter = nil
  configuration.loiteringDelaySeconds = nil
  let regions = RegionSet(geofences: loaded.geofences)
  let result = TransitionDetector.replay(
    track.fixes, regions: regions, configuration: configuration)
  let got = result.events.map {
    "\($0.type.rawValue) \(regions.id(at: $0.slot)) #\($0.fix.sourceIndex)"
  }

  // The reference: the same time-sorted fixes, every polygon at every fix.
  let fixes = ReplayPreparation(track.fixes).tracks.flatMap(\.fixes)
  let polygons = loaded.geofences.map { try! #require($0.polygon) }
  var inside = [Bool](repeating: false, count: polygons.count)
  var expected: [String] = []
  var closeCalls = 0
  var lastTime = -Double.infinity
  for fix in fixes {
    let a = fix.horizontalAccuracy ?? 0
    guard let t = fix.time, t > lastTime, a >= 0, a <= configuration.maxAccuracyMeters else {
      continue
    }
    lastTime = t
    var exits: [String] = []
    var enters: [String] = []
    for (k, polygon) in polygons.enumerated() {
      let id = loaded.geofences[k].id
      let size = polygon.equivalentRadiusMeters
      let h = max(
        configuration.hysteresisMinimumMeters, configuration.hysteresisRadiusFraction * size)
      let contained = referenceContains(polygon, fix.coordinate)
      if inside[k] {
        if contained { continue }
        let d = referenceDistance(polygon, fix.coordinate, reach: a + h + 5)
        if abs(d - a - h) < 0.5 { closeCalls += 1 }
        if d - a > h {
          inside[k] = false
          exits.append(id)
        }
      } else if contained && a <= size {
        inside[k] = true
        enters.append(id)
      }
    }
    expected += exits.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map {
      "exit \($0) #\(fix.sourceIndex)"
    }
    expected += enters.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map {
      "enter \($0) #\(fix.sourceIndex)"
    }
  }
  // Decisions within 0.5 m of `a + h`, where the projection's error (about 1e-4 of the
  // distance) could matter: one on this track, decided alike.
  #expect(closeCalls <= 1)
  #expect(got == expected)

  // With the default rules (outlier filter on, dwell after 300 s): the route, Neuchâtel canton
  // first, Vaud entered after it is left, Lausanne last.
  let defaults = TransitionDetector.replay(track.fixes, regions: regions)
  let route = defaults.events.map {
    "\($0.type.rawValue) \(regions.id(at: $0.slot)) #\($0.fix.sourceIndex)"
  }
  let cantons = route.filter { $0.contains("canton-") && !$0.hasPrefix("dwell") }.map {
    $0.split(separator: " #")[0]
  }
  #expect(cantons == ["enter canton-24", "exit canton-24", "enter canton-22"])
  #expect(route.suffix(2) == ["enter commune-5586 #1194", "exit commune-5589 #1203"])
  // Every commune is entered once, except Orny: fix 801 re-reports fix 792's exact position
  // (a cached network fix, 1.1 km behind the train), and both lie inside Orny.
  let enters = route.filter { $0.hasPrefix("enter commune") }
  let twice = Dictionary(grouping: enters) { $0.split(separator: " #")[0] }.filter {
    $0.value.count > 1
  }
  #expect(twice.keys.sorted() == ["enter commune-5493"])
  #expect(twice["enter commune-5493"] == ["enter commune-5493 #792", "enter commune-5493 #801"])
  let byIndex = Dictionary(uniqueKeysWithValues: track.fixes.map { ($0.sourceIndex, $0) })
  #expect(byIndex[792]?.coordinate == byIndex[801]?.coordinate)
}
