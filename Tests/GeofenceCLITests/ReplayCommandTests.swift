import Foundation
import GeofenceTestSupport
import Testing

private let headline = [
  "replay", "--radius", "1500", "--regions", "data/places/rg_cities1000_geofences.csv",
  "--radius", "3000", "--regions", "data/places/airports_geofences.csv",
  "data/tracks/csv/posmo_trajectory.csv",
]

private func temporaryDirectory() throws -> URL {
  let dir = TestScratch.root.appendingPathComponent(
    "geofence-cli-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
  return dir
}

/// The golden file was checked against tools/oracle/replay_oracle.py, an independent
/// re-implementation of the rules with GeographicLib geodesics on the same sphere.
@Test(.waitsOnChildProcesses) func headlineDemoMatchesTheGoldenFile() throws {
  let result = try CommandRunner.run(headline)
  #expect(result.status == 0, "\(result.stderr)")
  let golden = try String(
    contentsOf: TestPaths.data.appendingPathComponent(
      "expected/posmo_trajectory.towns1500.airports3000.jsonl"), encoding: .utf8)
  #expect(result.stdout == golden)
  #expect(result.stderr.contains("1327 fixes read, 1241 used; dropped: outlier 86"))
  #expect(result.stderr.contains("events: enter 26, exit 24, dwell 3"))
  #expect(result.stderr.contains("geofences: 172861 loaded, 0 rejected"))
}

@Test(.waitsOnChildProcesses) func headlineTownsAreEnteredOnceEachInRouteOrder() throws {
  let result = try CommandRunner.run(headline)
  let events = result.stdout.split(separator: "\n").compactMap {
    try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
  }
  let enters = events.filter {
    $0["type"] as? String == "enter" && ($0["geofence_id"] as? String ?? "").hasPrefix("rg")
  }.compactMap { $0["geofence_name"] as? String }
  #expect(Set(enters).count == enters.count, "a town was entered twice: \(enters)")
  #expect(enters.first == "Cornaux")
  #expect(enters.last == "Lausanne")
  let order = [
    "Neuchatel", "Bevaix", "Grandson", "Yverdon-les-Bains", "Bavois", "Cossonay",
    "Renens",
  ]
  let positions = order.compactMap { enters.firstIndex(of: $0) }
  #expect(positions.count == order.count)
  #expect(positions == positions.sorted())
}

@Test(.waitsOnChildProcesses) func presetsReproduceTheNaiveAndHysteresisCounts() throws {
  func townEvents(_ preset: String) throws -> Int {
    let r = try CommandRunner.run(
      [
        "replay", "--preset", preset, "--quiet", "--radius", "1500", "--regions",
        "data/places/rg_cities1000_geofences.csv", "data/tracks/csv/posmo_trajectory.csv",
      ])
    #expect(r.status == 0)
    return r.stdout.split(separator: "\n").filter { !$0.contains("\"dwell\"") }.count
  }
  // 83 is also what the naive d <= r scan of the data's README reports for 25 towns.
  #expect(try townEvents("naive") == 83)
  #expect(try townEvents("hysteresis-only") == 77)
  #expect(try townEvents("default") == 43)
}

@Test(.waitsOnChildProcesses) func usageErrorsExit64() throws {
  #expect(try CommandRunner.run([]).status == 64)
  #expect(try CommandRunner.run(["replay"]).status == 64)
  #expect(try CommandRunner.run(["frobnicate"]).status == 64)
  let trailingRadius = try CommandRunner.run(
    ["replay", "--regions", "data/places/airports_geofences.csv", "--radius", "3000", "t.csv"])
  #expect(trailingRadius.status == 64)
  #expect(trailingRadius.stderr.contains("--radius applies to the --regions files after it"))
  let badFormat = try CommandRunner.run(
    ["replay", "--format", "xml", "--radius", "1", "--regions", "a.csv", "t.csv"])
  #expect(badFormat.status == 64)
  #expect(try CommandRunner.run(["replay", "--help"]).status == 0)
  #expect(try CommandRunner.run(["--help"]).status == 0)
}

@Test(.waitsOnChildProcesses) func missingFileExits66AndBrokenTrackExits65WhileOthersStillReplay()
  throws
{
  let dir = try temporaryDirectory()
  defer { try? FileManager.default.removeItem(at: dir) }
  let regions = dir.appendingPathComponent("r.json")
  try #"[{"id":"A","latitude":46.0,"longitude":7.0,"radius":500}]"#.write(
    to: regions, atomically: true, encoding: .utf8)
  let broken = dir.appendingPathComponent("cut.gpx")
  try """
  <?xml version="1.0"?>
  <gpx version="1.1" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg>
  <trkpt lat="46.0" lon="7.0"><time>2020-01-01T00:00:00Z</time></trkpt>
  <trkpt lat="46.0
  """.write(to: broken, atomically: true, encoding: .utf8)
  let good = dir.appendingPathComponent("good.csv")
  try "latitude,longitude,time\n46.01,7.0,2020-01-01T00:00:00Z\n46.0,7.0,2020-01-01T00:01:00Z\n"
    .write(to: good, atomically: true, encoding: .utf8)

  let missing = try CommandRunner.run(
    ["replay", "--regions", regions.path, dir.appendingPathComponent("nope.csv").path])
  #expect(missing.status == 66)
  #expect(missing.stderr.contains("nope.csv"))

  let r = try CommandRunner.run(["replay", "--regions", regions.path, broken.path, good.path])
  #expect(r.status == 65)
  #expect(r.stderr.contains("cut.gpx"))
  #expect(r.stdout.contains(#""type":"enter","geofence_id":"A""#))
  #expect(r.stdout.contains(#""fix_index":1"#))
}

@Test(.waitsOnChildProcesses) func badGeofenceRowsAreReportedWithTheirLineAndTheRestLoad() throws {
  let dir = try temporaryDirectory()
  defer { try? FileManager.default.removeItem(at: dir) }
  let regions = dir.appendingPathComponent("places.csv")
  try
    "id,name,latitude,longitude,radius\nA,Alpha,46.0,7.0,500\nB,Beta,95,7.0,500\nC,Gamma,46.0,7.0,-3\n"
    .write(to: regions, atomically: true, encoding: .utf8)
  let track = dir.appendingPathComponent("t.csv")
  try "lat,lon,timestamp\n46.0,7.0,1577836800\n".write(
    to: track, atomically: true, encoding: .utf8)
  let r = try CommandRunner.run(["replay", "--regions", regions.path, track.path])
  #expect(r.status == 0)
  #expect(r.stderr.contains("places.csv:3"))
  #expect(r.stderr.contains("places.csv:4"))
  #expect(r.stderr.contains("geofences: 1 loaded, 2 rejected"))
  #expect(r.stdout.contains(#""geofence_id":"A""#))
  #expect(r.stdout.contains(#""time":"2020-01-01T00:00:00.000Z""#))
}

@Test(.waitsOnChildProcesses) func csvAndGeoJSONOutputsAndTheSVGMap() throws {
  let dir = try temporaryDirectory()
  defer { try? FileManager.default.removeItem(at: dir) }
  let svg = dir.appendingPathComponent("map.svg")
  let csv = try CommandRunner.run(
    [
      "replay", "--format", "csv", "--quiet", "--svg", svg.path, "--radius", "3000", "--regions",
      "data/places/airports_geofences.csv", "data/tracks/csv/posmo_trajectory.csv",
    ])
  #expect(csv.status == 0)
  let lines = csv.stdout.split(separator: "\n")
  #expect(
    lines.first
      == "id,type,geofence_id,geofence_name,metadata,url,device_id,user_id,anonymous_id,time,processed_at,latitude,longitude,accuracy,distance_m,dwell_s,visit_s,after_gap,gap_start,removal,fix_index,track"
  )
  #expect(lines.count == 1 + 7 + 1)  // header, 7 enter/exit, 1 dwell (LSGL)
  let map = try String(contentsOf: svg, encoding: .utf8)
  #expect(map.hasPrefix("<svg"))
  #expect(map.contains("ENTER Neuchatel Airport"))

  let geojson = try CommandRunner.run(
    [
      "replay", "--format", "geojson", "--quiet", "--radius", "3000", "--regions",
      "data/places/airports_geofences.csv", "data/tracks/csv/posmo_trajectory.csv",
    ])
  let object = try JSONSerialization.jsonObject(with: Data(geojson.stdout.utf8)) as? [String: Any]
  #expect(object?["type"] as? String == "FeatureCollection")
  #expect((object?["features"] as? [Any])?.count == 8)
}

/// An --svg that cannot be written is refused before the replay: 73 with the reason.
@Test(.waitsOnChildProcesses) func unwritableSVGExits73BeforeTheReplay() throws {
  let dir = try temporaryDirectory()
  for (svg, reason) in [
    (dir.path + "/missing/map.svg", "no such directory \(dir.path)/missing"),
    (dir.path, "is a directory"),
  ] {
    let r = try CommandRunner.run(headline + ["--svg", svg])
    #expect(r.status == 73)
    #expect(r.stderr.contains("--svg \(svg): \(reason)"), "\(r.stderr)")
    #expect(r.stdout.isEmpty)
  }
}

/// A GPX file with invalid UTF-8 in its markup is reported with its line and column, and the
/// files around it still replay.
@Test(.waitsOnChildProcesses) func gpxWithInvalidUTF8IsReportedAndTheOtherFilesReplay() throws {
  let dir = try temporaryDirectory()
  defer { try? FileManager.default.removeItem(at: dir) }
  let regions = dir.appendingPathComponent("r.json")
  try #"[{"id":"A","latitude":46.0,"longitude":7.0,"radius":500}]"#.write(
    to: regions, atomically: true, encoding: .utf8)
  let bad = dir.appendingPathComponent("bad.gpx")
  try Data(Array("<gpx><a".utf8) + [0xEF] + Array("/></gpx>\n".utf8)).write(to: bad)
  let good = dir.appendingPathComponent("good.gpx")
  try """
  <?xml version="1.0"?>
  <gpx version="1.1" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg>
  <trkpt lat="46.01" lon="7.0"><time>2020-01-01T00:00:00Z</time></trkpt>
  <trkpt lat="46.0" lon="7.0"><time>2020-01-01T00:01:00Z</time></trkpt>
  </trkseg></trk></gpx>
  """.write(to: good, atomically: true, encoding: .utf8)

  let r = try CommandRunner.run(["replay", "--regions", regions.path, bad.path, good.path])
  #expect(r.status == 65)
  #expect(r.stderr.contains("bad.gpx:1: invalid UTF-8 at column 8: "))
  #expect(CLI.objects(r.stdout).count == 1)
  #expect(r.stdout.contains(#""type":"enter","geofence_id":"A""#))
  #expect(r.stdout.contains(#""fix_index":1"#))
}

/// A track without a device column is the device of its file's name, whatever path names it:
/// `track.csv`, `./track.csv` and the absolute path give the same events with the same ids.
/// Two files of one name in a run would be one device, and are refused.
@Test(.waitsOnChildProcesses) func aTrackIsTheDeviceOfItsFileNameWhateverPathNamesIt() throws {
  let dir = try temporaryDirectory()
  defer { try? FileManager.default.removeItem(at: dir) }
  let regions = try CLI.writeOneRegion(in: dir)
  let track = try CLI.writeEquatorTrack(in: dir)
  var outputs: [String] = []
  for spelling in ["track.csv", "./track.csv", track] {
    let r = try CommandRunner.run(["replay", "--quiet", "--regions", regions, spelling], in: dir)
    #expect(r.status == 0, "\(r.stderr)")
    outputs.append(r.stdout.replacingOccurrences(of: #""track":"\#(spelling)""#, with: ""))
  }
  #expect(outputs.allSatisfy { $0 == outputs[0] })
  let events = CLI.objects(outputs[0])
  #expect(events.count >= 2)
  #expect(events.allSatisfy { $0["device_id"] as? String == "track.csv" })

  let sub = dir.appendingPathComponent("sub")
  try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
  let other = try CLI.writeEquatorTrack(in: sub)
  let twice = try CommandRunner.run(["replay", "--regions", regions, track, other])
  #expect(twice.status == 64)
  #expect(twice.stderr.contains("two tracks are named track.csv"), "\(twice.stderr)")
}
