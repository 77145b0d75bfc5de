import Foundation
import GeofenceTestSupport
import Testing

/// `geofence bench` on bad input: the exit status and the message, before anything is measured.
@Suite(.waitsOnChildProcesses) struct BenchCommandTests {
  let directory: URL

  init() throws {
    directory = TestScratch.root.appendingPathComponent(
      "geofence-bench-cli-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
  }

  /// Writes `text` to `name` in the test's folder.
  func write(_ name: String, _ text: String) throws {
    try text.write(
      to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
  }

  func bench(_ arguments: [String]) throws -> CommandRunner.Output {
    try CommandRunner.run(
      ["bench", "--quiet", "--min-pass", "0", "--repetitions", "1"] + arguments)
  }

  static let regions = "id,latitude,longitude,radius_m\n0,48.8,2.3,100\n"
  static let fixes = "track,t,latitude,longitude\n0,0,48.8,2.3\n0,1,48.9,2.3\n"

  @Test(arguments: [
    (["--sizes", "10000001"], "more than the 10000000 allowed"),
    (["--sizes", "0"], "--sizes needs positive integers"),
    (["--workload", "metro,"], "--workload needs names separated by single commas"),
    (["--workload", ""], "--workload needs names separated by single commas"),
    // Modes that measure other things are not combined (one would be dropped silently).
    (["--plan", "20", "--polygons"], "--plan and --polygons (--workload polygons) measure"),
    (["--plan", "20", "--load", "x.csv"], "--plan and --load/--load-tracks measure"),
    (["--polygons", "--workload", "metro"], "--workload polygons is measured alone"),
    (["--workload", "metro,polygons"], "--workload polygons is measured alone"),
    (["--from", ".", "--workload", "polygons"], "--from reads circle workloads"),
  ])
  func usageErrorsExit64(arguments: [String], message: String) throws {
    let r = try bench(arguments)
    #expect(r.status == 64)
    #expect(r.stderr.contains(message), "\(r.stderr)")
  }

  /// Each bad file names its line and why, exits 65 and prints no table.
  @Test(arguments: [
    (regions, "track,t,latitude,longitude\n", "metro-1-fixes.csv:2: no fixes after the header"),
    (
      regions, "track,t,latitude,longitude\n0,0,48.8,2.3\n0,nan,48.8,2.3\n",
      "metro-1-fixes.csv:3: time nan is not a finite number"
    ),
    (
      regions, "track,t,latitude,longitude\n0,inf,48.8,2.3\n",
      "metro-1-fixes.csv:2: time inf is not a finite number"
    ),
    (
      "id,latitude,longitude,radius_m\n", fixes,
      "metro-1-regions.csv:2: no regions after the header"
    ),
    (
      "id,latitude,longitude,radius_m\n0,48.8,x,100\n", fixes,
      "metro-1-regions.csv:2: field 3 (longitude) is not a number"
    ),
    (
      "id,latitude,longitude,radius_m\n0,48.8,2.3,100,5\n", fixes,
      "metro-1-regions.csv:2: more than 4 fields"
    ),
    ("id,latitude,longitude,radius_m\n7,48.8,2.3,100\n", fixes, "id 7 is not the slot 0"),
  ])
  func badWorkloadFilesExit65(regions: String, fixes: String, message: String) throws {
    try write("metro-1-regions.csv", regions)
    try write("metro-1-fixes.csv", fixes)
    let r = try bench(["--from", directory.path, "--svg", directory.path + "/chart.svg"])
    #expect(r.status == 65)
    #expect(r.stderr.contains(message), "\(r.stderr)")
    #expect(r.stdout.isEmpty)
    #expect(!FileManager.default.fileExists(atPath: directory.path + "/chart.svg"))
  }

  @Test func unpairedFilesAreNamedAndTheRestMeasured() throws {
    try write("metro-1-regions.csv", Self.regions)
    try write("metro-1-fixes.csv", Self.fixes)
    try write("metro-2-regions.csv", Self.regions)
    try write("metro-3-fixes.csv", Self.fixes)
    let json = directory.appendingPathComponent("out.json")
    let r = try bench(["--from", directory.path + "/", "--no-detector", "--json", json.path])
    #expect(r.status == 0, "\(r.stderr)")
    #expect(r.stderr.contains("/metro-2-regions.csv has no metro-2-fixes.csv; skipped"))
    #expect(r.stderr.contains("/metro-3-fixes.csv has no metro-3-regions.csv; skipped"))
    #expect(!r.stderr.contains("//"))
    // One result, the pair: the fix at the centre is in the region, the other 11 km away is not.
    let object = try JSONSerialization.jsonObject(with: Data(contentsOf: json)) as? [String: Any]
    let results = object?["results"] as? [[String: Any]] ?? []
    #expect(results.count == 1)
    #expect(results.first?["regions"] as? Int == 1 && results.first?["fixes"] as? Int == 2)
    #expect(results.first?["pairs"] as? Int == 1)
  }

  @Test func withoutTheDetectorItsFiguresAreNull() throws {
    try write("metro-1-regions.csv", Self.regions)
    try write("metro-1-fixes.csv", Self.fixes)
    let json = directory.appendingPathComponent("out.json")
    let r = try bench(["--from", directory.path, "--no-detector", "--json", json.path])
    #expect(r.status == 0, "\(r.stderr)")
    let object = try JSONSerialization.jsonObject(with: Data(contentsOf: json)) as? [String: Any]
    let result = (object?["results"] as? [[String: Any]])?.first ?? [:]
    #expect(result["pairs"] as? Int == 1)
    for key in [
      "detector_fixes_per_second_1_thread", "detector_enters", "detector_rounds",
      "detector_dropped_fixes",
    ] {
      #expect(result[key] is NSNull, "\(key): \(result[key] ?? "absent")")
    }
  }

  /// `--load` and `--load-tracks` report each file's kept and rejected rows (counted by hand:
  /// the second geofence has latitude 91, the track's third row no longitude) and a positive
  /// rate; a missing file exits 66.
  @Test func loadingReportsRowsRejectionsAndRates() throws {
    try write(
      "places.csv", "id,latitude,longitude,radius_m\na,48.8,2.3,100\nb,91,2.3,100\nc,-33.9,151.2,\n"
    )
    try write(
      "track.csv",
      "time,latitude,longitude\n2024-05-01T10:00:00Z,48.8,2.3\n2024-05-01T10:00:01Z,48.81,2.3\n"
        + "2024-05-01T10:00:02Z,48.82,\n")
    let json = directory.appendingPathComponent("loading.json")
    let r = try bench([
      "--load", directory.path + "/places.csv", "--radius", "250", "--load-tracks",
      directory.path + "/track.csv", "--json", json.path,
    ])
    #expect(r.status == 0, "\(r.stderr)")
    #expect(r.stdout.contains("places.csv: 0.0 MB, 2 rows (1 rejected)"), "\(r.stdout)")
    // What the figures leave out is said, with the first reason.
    #expect(
      r.stderr.contains("places.csv: 1 definition(s) rejected, the first: ")
        && r.stderr.contains("latitude 91.0 is not a finite value in [-90, 90]"), "\(r.stderr)")
    #expect(r.stderr.contains("track.csv: 1 row(s) skipped, the first: "), "\(r.stderr)")
    let object = try JSONSerialization.jsonObject(with: Data(contentsOf: json)) as? [String: Any]
    let rows = object?["loading"] as? [[String: Any]] ?? []
    #expect(rows.count == 2)
    #expect(rows.first?["kind"] as? String == "geofences")
    #expect(rows.first?["rows"] as? Int == 2)
    #expect(rows.first?["rejected"] as? Int == 1)
    #expect(rows.last?["kind"] as? String == "track")
    #expect(rows.last?["rows"] as? Int == 2)
    #expect(rows.last?["rejected"] as? Int == 1)
    for row in rows { #expect((row["megabytes_per_second"] as? Double ?? 0) > 0, "\(row)") }
    let missing = try bench(["--load", directory.path + "/absent.csv"])
    #expect(missing.status == 66, "\(missing.stderr)")
    #expect(missing.stderr.contains("absent.csv"))
  }

  /// Outputs that cannot be created are refused before the (long) measurement: exit 73.
  @Test func unwritableOutputsExit73BeforeMeasuring() throws {
    let file = directory.appendingPathComponent("a-file")
    try write("a-file", "x")
    for arguments in [
      ["--json", directory.path + "/missing/out.json"],
      ["--svg", directory.path],
      ["--write-workloads", file.path],
      // A folder that refuses new files whatever its mode says.
      ["--svg", "/proc/geofence-bench.svg"],
    ] {
      let r = try bench(["--workload", "metro", "--sizes", "10", "--fixes", "10"] + arguments)
      #expect(r.status == 73, "\(arguments): \(r.stderr)")
      #expect(r.stdout.isEmpty, "\(arguments)")
    }
    // A --data folder without the real workload's files is named before metro is measured.
    let data = try bench([
      "--workload", "metro,real", "--sizes", "10", "--fixes", "10", "--data",
      directory.path + "/no-data",
    ])
    #expect(data.status == 66, "\(data.stderr)")
    #expect(data.stderr.contains("no-data/places/rg_cities1000_geofences.csv"), "\(data.stderr)")
    #expect(!data.stderr.contains("metro N=10: generating"), "\(data.stderr)")
  }
}
