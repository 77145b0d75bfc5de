import Foundation
import GeofenceTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `geofence plan` and `geofence replay --os-budget`, through the built binary.
@Suite(.waitsOnChildProcesses) struct PlanCommandTests {
  /// Circles of 100 m whose centres are 1, 2 and 3 km north of (0, 0) on the mean sphere.
  static func regions(in dir: URL) throws -> String {
    let degreesPerMeter = 180 / (Double.pi * 6_371_008.8)
    let items = (1...3).map {
      #"{"id":"r\#($0)","latitude":\#(Double($0) * 1_000 * degreesPerMeter),"longitude":0,"radius":100}"#
    }
    let url = dir.appendingPathComponent("regions.json")
    try ("[" + items.joined(separator: ",") + "]").write(to: url, atomically: true, encoding: .utf8)
    return url.path
  }

  @Test func plansTheNearestEdgeAndADiffAgainstTheRegistration() throws {
    let dir = try CLI.scratch("plan")
    defer { try? FileManager.default.removeItem(at: dir) }
    let r = try CLI.run([
      "plan", "--regions", try Self.regions(in: dir), "--at", "0,0", "--budget", "2",
      "--accuracy", "40", "--registered", "r3", "--registered", "geofence.refresh",
    ])
    #expect(r.status == 0, "\(r.stderr)")
    // r1's edge is 1,000 − 100 m away; r2's 1,900 m, less the 50 m margin and 40 m accuracy.
    #expect(
      r.stdout.trimmingCharacters(in: .newlines)
        == #"{"refresh":{"id":"geofence.refresh","latitude":0,"longitude":0,"radius_m":1810,"#
        + #""guaranteed":true},"geofences":[{"id":"r1","edge_distance_m":900}],"#
        + #""next_edge_distance_m":1900,"remove":["r3"],"add":["r1"]}"#)
  }

  @Test(arguments: [
    ["plan", "--regions", "x.json", "--budget", "2"],
    ["plan", "--regions", "x.json", "--at", "91,0", "--budget", "2"],
    // Numbers as everywhere else (RFC 8259): no hex, no plus sign.
    ["plan", "--regions", "x.json", "--at", "0x10,0", "--budget", "2"],
    ["plan", "--regions", "x.json", "--at", "1,+2", "--budget", "2"],
    ["plan", "--regions", "x.json", "--at", "0,0", "--budget", "0"],
    ["plan", "--at", "0,0", "--budget", "2"],
    [
      "plan", "--regions", "x.json", "--at", "0,0", "--budget", "2", "--min-refresh", "900",
      "--max-refresh", "800",
    ],
    ["replay", "--os-budget", "0", "--regions", "x.json", "t.csv"],
  ])
  func usageErrorsExit64(arguments: [String]) throws {
    let r = try CLI.run(arguments)
    #expect(r.status == 64, "\(arguments): \(r.stderr)")
  }

  /// The headline track against the towns and airports: at a budget of 20 the OS misses
  /// none of the engine's 50 ENTER/EXIT transitions (checked by hand against the golden
  /// events: 53 events, 3 of them DWELL).
  @Test func theHeadlineTrackMissesNothingAtTwenty() throws {
    let data = TestPaths.data.path
    let r = try CLI.run([
      "replay", "--quiet", "--os-budget", "20", "--radius", "1500", "--regions",
      data + "/places/rg_cities1000_geofences.csv", "--radius", "3000", "--regions",
      data + "/places/airports_geofences.csv", data + "/tracks/csv/posmo_trajectory.csv",
    ])
    #expect(r.status == 0, "\(r.stderr)")
    let lines = CLI.lines(r.stdout)
    #expect(lines.first?.hasPrefix("track\tbudget\tengine_transitions") == true)
    let row = lines.dropFirst().first?.split(separator: "\t").map(String.init) ?? []
    #expect(row.count == 9)
    #expect(row.dropFirst().prefix(2) == ["20", "50"], "\(row)")
    #expect(row[4] == "0", "missed: \(row)")
    // The registration never exceeds the budget.
    #expect(Int(row[8]).map { $0 <= 20 } == true)
    #expect(lines.last?.hasPrefix("os-budget 20: missed 0 of 50 transitions over 1 track") == true)
  }

  /// A track file whose name holds a tab and a CR LF stays one field of one row: `\t`, `\r`,
  /// `\n` as written by PostgreSQL's text format.
  @Test func aTrackNameWithATabStaysOneField() throws {
    let dir = try CLI.scratch("os-budget-name")
    defer { try? FileManager.default.removeItem(at: dir) }
    let track = dir.appendingPathComponent("a\tb\r\nc.csv")
    try "time,lat,lon\n2024-01-01T00:00:00Z,0,0\n".write(
      to: track, atomically: true, encoding: .utf8)
    let r = try CLI.run([
      "replay", "--quiet", "--os-budget", "5", "--regions", try CLI.writeEquatorGeofences(in: dir),
      track.path,
    ])
    #expect(r.status == 0, "\(r.stderr)")
    let lines = CLI.lines(r.stdout)
    #expect(lines.count == 3, "\(r.stdout)")
    let row = lines.dropFirst().first?.split(separator: "\t").map(String.init) ?? []
    #expect(row.count == 9 && row.first?.hasSuffix(#"a\tb\r\nc.csv"#) == true, "\(row)")
  }

  /// The plan is the output: when standard output cannot take it (a full disk here), the
  /// command says so and exits 74 instead of 0.
  @Test func aPlanThatCannotBeWrittenExits74() throws {
    let dir = try CLI.scratch("plan-full")
    defer { try? FileManager.default.removeItem(at: dir) }
    let (status, err) = try CLI.runWithFullStandardOutput([
      "plan", "--regions", try Self.regions(in: dir), "--at", "0,0", "--budget", "2",
    ])
    #expect(status == 74, "\(err)")
    #expect(err.contains("cannot write to standard output"), "\(err)")
  }

  /// `--registered-file` may be a pipe (a FIFO, a process substitution): it is read to its
  /// end, not by its size (which a pipe reports as 0).
  @Test func theRegisteredIdsMayComeThroughAPipe() throws {
    let dir = try CLI.scratch("plan-fifo")
    defer { try? FileManager.default.removeItem(at: dir) }
    let fifo = dir.appendingPathComponent("registered").path
    #expect(mkfifo(fifo, 0o600) == 0)
    Thread.detachNewThread {
      guard let handle = FileHandle(forWritingAtPath: fifo) else { return }
      handle.write(Data("r3\n".utf8))
      try? handle.close()
    }
    let r = try CLI.run([
      "plan", "--regions", try Self.regions(in: dir), "--at", "0,0", "--budget", "2",
      "--registered-file", fifo,
    ])
    #expect(r.status == 0, "\(r.stderr)")
    #expect(r.stdout.contains(#""remove":["r3"]"#), "\(r.stdout)")
    // Binary data is bad data (65); a missing file is no input (66).
    let regions = try Self.regions(in: dir)
    for (file, status) in [("/dev/zero", Int32(65)), (dir.path + "/absent", 66)] {
      let bad = try CLI.run([
        "plan", "--regions", regions, "--at", "0,0", "--budget", "2", "--registered-file", file,
      ])
      #expect(bad.status == status, "\(file): \(bad.stderr)")
    }
  }
}
