import Foundation
import GeofenceDefinitions
import GeofenceEngine
import GeofenceGeometry
import GeofenceTestSupport
import GeofenceTransitions
import Testing
import TrackFormats

private func loadHeadline() throws -> (TrackReadResult, [Geofence]) {
  let track = try TrackReader.read(
    contentsOf: TestPaths.data.appendingPathComponent("tracks/csv/posmo_trajectory.csv"))
  let towns = try GeofenceFileReader.read(
    contentsOf: TestPaths.data.appendingPathComponent("places/rg_cities1000_geofences.csv"),
    defaultRadiusMeters: 1500)
  return (track, towns.geofences)
}

/// In naive mode (no hysteresis, no accuracy rules, no outlier filter) the pipeline must equal a
/// brute-force scan of every town at every fix with `haversineDistance <= r`, which shares no
/// code with the grid index or the detector.
@Test func naiveReplayEqualsABruteForceScanOfAllTowns() async throws {
  let (track, towns) = try loadHeadline()
  var naive = TransitionConfiguration()
  naive.outlierFilter = nil
  naive.hysteresisMinimumMeters = 0
  naive.hysteresisRadiusFraction = 0
  naive.maxAccuracyMeters = .infinity
  naive.requiresAccuracyWithinRadiusToEnter = false
  naive.loiteringDelaySeconds = nil
  let engine = try GeofenceEngine(
    configuration: .init(transitions: naive, checkpoints: .none), geofences: towns)
  let report = try #require(
    try await engine.replay([ReplayInput(file: "posmo", track: track)], ignoringAccuracy: true)
      .first)

  // Brute force: stable time sort, drop repeated times, then d <= r both ways.
  let sorted = track.fixes.enumerated().sorted {
    ($0.element.time ?? 0, $0.offset) < ($1.element.time ?? 0, $1.offset)
  }.map(\.element)
  var fixes: [LocationFix] = []
  for f in sorted where fixes.last?.time != f.time { fixes.append(f) }
  // Towns that can matter: centres within 0.2 degrees of the track's box (radius is 1.5 km).
  let lats = fixes.map(\.coordinate.latitude)
  let lons = fixes.map(\.coordinate.longitude)
  let (lat0, lat1) = (lats.min()! - 0.2, lats.max()! + 0.2)
  let (lon0, lon1) = (lons.min()! - 0.3, lons.max()! + 0.3)
  let near = towns.filter { g in
    let c = g.region.center
    return c.latitude >= lat0 && c.latitude <= lat1 && c.longitude >= lon0 && c.longitude <= lon1
  }
  var inside = Set<String>()
  var expected: [String] = []
  for f in fixes {
    var exits: [String] = []
    var enters: [String] = []
    for g in near {
      let d = haversineDistance(f.coordinate, g.region.center)
      if d <= g.region.radiusMeters, !inside.contains(g.id) { enters.append(g.id) }
      if d > g.region.radiusMeters, inside.contains(g.id) { exits.append(g.id) }
    }
    for id in exits.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
      inside.remove(id)
      expected.append("exit \(id) \(f.sourceIndex)")
    }
    for id in enters.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
      inside.insert(id)
      expected.append("enter \(id) \(f.sourceIndex)")
    }
  }
  let actual = report.events.map { "\($0.type) \($0.geofenceID) \($0.fixIndex ?? -1)" }
  #expect(actual == expected)
  #expect(actual.count == 83)
  #expect(report.fixesRead == 1327)
}

@Test func defaultReplayKeepsEveryTownToOneVisitAndCountsDrops() async throws {
  let (track, towns) = try loadHeadline()
  let engine = try GeofenceEngine(geofences: towns)
  let report = try #require(
    try await engine.replay([ReplayInput(file: "posmo", track: track)]).first)
  let enters = report.events.filter { $0.type == .enter }.map(\.geofenceID)
  #expect(Set(enters).count == enters.count)
  #expect(report.dropCounts[.outlier] == 86)
  #expect(report.fixesUsed == 1241)
  #expect(report.eventCounts[.enter] == 22)
  #expect(report.eventCounts[.exit] == 21)
  // Enter and exit alternate per region, starting with enter; an EXIT's visit length is the
  // time since its ENTER.
  var open: [String: Double] = [:]
  for e in report.events where e.type != .dwell {
    if e.type == .enter {
      #expect(open[e.geofenceID] == nil)
      open[e.geofenceID] = e.time
    }
    if e.type == .exit {
      let entered = open.removeValue(forKey: e.geofenceID)
      #expect(entered != nil)
      #expect(abs((e.visitSeconds ?? -1) - ((e.time ?? 0) - (entered ?? 0))) < 1e-9)
    }
  }
}

@Test func theEncoderEscapesAndRoundsAsDocumented() throws {
  var encoder = GeofenceEventEncoder(format: .jsonl)
  let e = GeofenceEvent(
    id: "ev-1", type: .dwell, geofenceID: "a\"b", geofenceName: "Zürich, \"Kreis 6\"\n",
    metadataJSON: #"{"url":"myapp://offer/7","n":1}"#, url: "myapp://offer/7", deviceID: "d",
    time: 1_548_446_416.1789999, latitude: 47.1, longitude: 8.5, distanceMeters: 12.34567,
    dwellSeconds: 300.0004, fixIndex: 7)
  let line = encoder.encode(e)
  let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
  #expect(object?["id"] as? String == "ev-1")
  #expect(object?["geofence_id"] as? String == "a\"b")
  #expect(object?["geofence_name"] as? String == "Zürich, \"Kreis 6\"\n")
  #expect(object?["time"] as? String == "2019-01-25T20:00:16.179Z")
  #expect(object?["distance_m"] as? Double == 12.346)
  #expect(object?["dwell_s"] as? Double == 300.0)
  #expect(object?["visit_s"] is NSNull)
  #expect(object?["url"] as? String == "myapp://offer/7")
  #expect((object?["metadata"] as? [String: Any])?["n"] as? Int == 1)
  #expect(object?["processed_at"] == nil)
  #expect(object?["accuracy"] is NSNull)
  // The outbox payload is the same object without "id", and with processed_at.
  let payload = GeofenceEventEncoder.payload(e)
  #expect(#"{"id":"ev-1","# + payload.dropFirst() != line.dropLast() + "")
  #expect(
    GeofenceEventEncoder.object(e, processingTime: false)
      == #"{"id":"ev-1","# + GeofenceEventEncoder.payload(e, processingTime: false).dropFirst())
  var csv = GeofenceEventEncoder(format: .csv)
  #expect(
    csv.encode(e)
      == "ev-1,dwell,\"a\"\"b\",\"Zürich, \"\"Kreis 6\"\"\n\",\"{\"\"url\"\":\"\"myapp://offer/7\"\",\"\"n\"\":1}\",myapp://offer/7,d,,,2019-01-25T20:00:16.179Z,,47.1,8.5,,12.346,300.0,,false,,false,7,\n"
  )
}
