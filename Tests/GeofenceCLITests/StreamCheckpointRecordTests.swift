import Foundation
import GeofenceTestSupport
import Testing

/// `geofence stream --state-in / --state-out`: two runs, the second restored from the first's
/// checkpoint records, write exactly the events of one run over both parts of the input, on
/// real tracks cut in the middle of a visit.
@Suite(.waitsOnChildProcesses) struct StreamCheckpointRecordTests {
  static let regionArguments = [
    "--radius", "1500", "--regions", "data/places/geonames_cities15000.csv",
    "--radius", "3000", "--regions", "data/places/airports_geofences.csv",
  ]

  /// The posmo train (Neuchâtel → Lausanne) and the Garmin hike, two devices, in time order.
  static func fixes() throws -> [TrackFixes] {
    let all =
      try TrackFixes.read("data/tracks/csv/posmo_trajectory.csv")
      + TrackFixes.read("data/tracks/gpx/garmin_with_extensions.gpx")
    return all.enumerated().sorted {
      let (a, b) = (TrackFixes.instant($0.element.time), TrackFixes.instant($1.element.time))
      return a != b ? a < b : $0.offset < $1.offset
    }.map(\.element)
  }

  static func jsonl(_ fixes: some Sequence<TrackFixes>) -> Data {
    Data(fixes.map { $0.jsonLine + "\n" }.joined().utf8)
  }

  @Test func twoRunsWithRecordsWriteTheEventsOfOneRun() throws {
    let dir = try CLI.scratch("stream-records")
    defer { try? FileManager.default.removeItem(at: dir) }
    let fixes = try Self.fixes()
    let fullState = dir.appendingPathComponent("full.state.jsonl").path
    let full = try CLI.run(
      ["stream", "--quiet"] + Self.regionArguments + ["--state-out", fullState],
      input: Self.jsonl(fixes))
    #expect(full.status == 0, "\(full.stderr)")
    let events = CLI.objects(full.stdout)

    // Cut one second after the ENTER of the first visit that later dwells.
    let dwell = try #require(events.first { $0["type"] as? String == "dwell" })
    let enter = try #require(
      events.first {
        $0["type"] as? String == "enter"
          && $0["geofence_id"] as? String
            == dwell["geofence_id"] as? String
          && $0["device_id"] as? String
            == dwell["device_id"] as? String
      })
    let cut = TrackFixes.instant(try #require(enter["time"] as? String)) + 1
    let day1 = fixes.filter { TrackFixes.instant($0.time) <= cut }
    let day2 = fixes.filter { TrackFixes.instant($0.time) > cut }
    #expect(!day1.isEmpty && !day2.isEmpty)

    let state1 = dir.appendingPathComponent("day1.state.jsonl").path
    let state2 = dir.appendingPathComponent("day2.state.jsonl").path
    let first = try CLI.run(
      ["stream", "--quiet"] + Self.regionArguments + ["--state-out", state1],
      input: Self.jsonl(day1))
    #expect(first.status == 0, "\(first.stderr)")
    let second = try CLI.run(
      ["stream"] + Self.regionArguments + ["--state-in", state1, "--state-out", state2],
      input: Self.jsonl(day2))
    #expect(second.status == 0, "\(second.stderr)")
    #expect(second.stderr.contains("1 devices restored"), "\(second.stderr)")

    #expect(CLI.lines(first.stdout) + CLI.lines(second.stdout) == CLI.lines(full.stdout))
    // The visit runs across the cut: its DWELL comes on day 2, with no second ENTER.
    let secondEvents = CLI.objects(second.stdout)
    #expect(secondEvents.contains { $0["id"] as? String == dwell["id"] as? String })
    #expect(
      !secondEvents.contains {
        $0["type"] as? String == "enter"
          && $0["geofence_id"] as? String == dwell["geofence_id"] as? String
      })
    // The last state is the one run's, record for record.
    #expect(try String(contentsOfFile: state2) == String(contentsOfFile: fullState))
    let records = CLI.lines(try String(contentsOfFile: fullState))
    #expect(records.count == 2)
    #expect(records.allSatisfy { $0.hasPrefix(#"{"checkpoint":{"#) })

    // The same through one pipe: records first on standard input, records last on output.
    let piped = try CLI.run(
      ["stream", "--quiet"] + Self.regionArguments + ["--state-in", "-", "--state-out", "-"],
      input: Data(contentsOf: URL(fileURLWithPath: state1)) + Self.jsonl(day2))
    #expect(piped.status == 0, "\(piped.stderr)")
    #expect(piped.stdout == second.stdout + (try String(contentsOfFile: state2)))
  }

  @Test func badRecordsAreReportedAndSkipped() throws {
    let dir = try CLI.scratch("stream-bad-records")
    defer { try? FileManager.default.removeItem(at: dir) }
    let fixes = try Self.fixes().prefix(20)
    let state = dir.appendingPathComponent("state.jsonl").path
    let made = try CLI.run(
      ["stream", "--quiet"] + Self.regionArguments + ["--state-out", state],
      input: Self.jsonl(fixes))
    #expect(made.status == 0, "\(made.stderr)")
    let record = try #require(CLI.lines(try String(contentsOfFile: state)).first)

    let mixed = dir.appendingPathComponent("mixed.jsonl").path
    try [
      #"{"checkpoint":{"gate":{}},"device_id":"x"}"#, record, "", record,
    ].joined(separator: "\n").write(toFile: mixed, atomically: true, encoding: .utf8)
    let r = try CLI.run(
      ["stream"] + Self.regionArguments + ["--state-in", mixed], input: Data())
    #expect(r.status == 65, "\(r.stderr)")
    let rejected = r.stderr.split(separator: "\n").filter { $0.hasPrefix("rejected: ") }
    #expect(rejected.count == 2, "\(r.stderr)")
    #expect(rejected.first?.hasPrefix("rejected: \(mixed):1: ") == true, "\(r.stderr)")
    #expect(rejected.last?.hasPrefix("rejected: \(mixed):4: ") == true, "\(r.stderr)")
    #expect(rejected.last?.contains("already known") == true, "\(r.stderr)")
    // A device whose record is lost would be entered again with new ids: nothing is streamed.
    #expect(r.stdout.isEmpty && !r.stderr.contains(" lines, "), "\(r.stderr)")
    #expect(r.stderr.contains("nothing streamed"), "\(r.stderr)")

    // On standard input, a record after its device's first fix is refused; the stream goes on.
    let device = try #require(
      CLI.objects(record).first?["device_id"] as? String)
    let lateFix = try #require(fixes.first { $0.device == device })
    let late = try CLI.run(
      ["stream"] + Self.regionArguments + ["--state-in", "-"],
      input: Self.jsonl([lateFix]) + Data((record + "\n").utf8))
    #expect(late.status == 0, "\(late.stderr)")
    #expect(late.stderr.contains("<stdin>:2: not a fix"), "\(late.stderr)")
    #expect(late.stderr.contains("0 devices restored"), "\(late.stderr)")

    let usage = try CLI.run(
      ["stream"] + Self.regionArguments + ["--state", dir.path, "--state-out", state])
    #expect(usage.status == 64, "\(usage.stderr)")
  }

  /// A `--state` path that cannot be a directory is named with the reason, not a raw
  /// Foundation error, and nothing is streamed.
  @Test func unusableStatePathsAreNamed() throws {
    let dir = TestScratch.root.appendingPathComponent(
      "state-path-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let file = dir.appendingPathComponent("file").path
    try "x".write(toFile: file, atomically: true, encoding: .utf8)
    let input = Self.jsonl(try Self.fixes().prefix(5))
    // A state directory that cannot be made is named by its option, not as a "store"
    // (--store is another option), and exits 73 (EX_CANTCREAT).
    let unwritable = "/proc/no-such-state-\(UUID().uuidString)"
    for (path, message) in [
      (file, "geofence stream: --state \(file): exists and is not a directory\n"),
      (
        file + "/sub/state",
        "geofence stream: --state \(file)/sub/state: \(file) is not a directory\n"
      ),
      (
        unwritable,
        "geofence stream: --state \(unwritable): cannot be created: No such file or directory\n"
      ),
    ] {
      let r = try CLI.run(["stream"] + Self.regionArguments + ["--state", path], input: input)
      #expect(r.status == 73, "\(r.stderr)")
      #expect(r.stderr == message)
      #expect(!r.stderr.contains("store"), "\(r.stderr)")
      #expect(r.stdout.isEmpty)
    }
    // A missing parent that cannot be made is the one named.
    let deep = unwritable + "/a/state"
    let r = try CLI.run(["stream"] + Self.regionArguments + ["--state", deep], input: input)
    #expect(r.status == 73, "\(r.stderr)")
    #expect(
      r.stderr
        == "geofence stream: --state \(deep): cannot create \(unwritable): No such file or directory\n"
    )
    // Missing parents are made.
    let nested = dir.appendingPathComponent("a/b/state").path
    let ok = try CLI.run(
      ["stream", "--quiet"] + Self.regionArguments + ["--state", nested], input: input)
    #expect(ok.status == 0, "\(ok.stderr)")
    #expect(FileManager.default.fileExists(atPath: nested + "/state.sqlite"))
  }

  /// `--state-in -` takes records among JSON Lines fixes; CSV input cannot hold them, so it
  /// is a usage error (64) at its header instead of every device starting afresh silently.
  @Test func recordsOnStandardInputNeedJSONLines() throws {
    let input = Data("device_id,time,lat,lon\nd1,1796014800,46.5,6.6\n".utf8)
    let r = try CLI.run(
      ["stream", "--quiet"] + Self.regionArguments + ["--state-in", "-"], input: input)
    #expect(r.status == 64, "\(r.stderr)")
    #expect(r.stderr.contains("<stdin>:1: --state-in - needs JSON Lines input"), "\(r.stderr)")
    #expect(r.stdout.isEmpty)
  }
}
