import Foundation
import GeofenceTestSupport
import Testing

/// The detector's command-line options as a user combines them.
@Suite(.waitsOnChildProcesses) struct DetectorOptionsTests {
  /// `--confirm-seconds T` alone confirms by time only: with the default fix count of 1 it
  /// would never matter. A region of 1 km at (0, 0); fixes inside at 0, 30 and 61 s (one
  /// device), so the ENTER waits for the fix 60 s or more after the first one inside; with
  /// `--confirm-fixes 2` as well, the second fix inside confirms it (either rule).
  @Test func confirmSecondsAloneConfirmsByTime() throws {
    let dir = try CLI.scratch("confirm-seconds")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeOneRegion(in: dir)
    let input = Data(
      [0, 30, 61].map {
        #"{"device_id":"d","time":\#(1_704_067_200 + $0),"latitude":0,"longitude":0}"#
      }.joined(separator: "\n").utf8)
    func enterTime(_ options: [String]) throws -> String? {
      let run = try CLI.run(
        ["stream", "--quiet", "--regions", regions] + options, input: input)
      #expect(run.status == 0, "\(run.stderr)")
      let enters = CLI.objects(run.stdout).filter { $0["type"] as? String == "enter" }
      #expect(enters.count == 1, "\(run.stdout)")
      return enters.first?["time"] as? String
    }
    #expect(try enterTime([]) == "2024-01-01T00:00:00.000Z")
    #expect(try enterTime(["--confirm-seconds", "60"]) == "2024-01-01T00:01:01.000Z")
    #expect(
      try enterTime(["--confirm-seconds", "60", "--confirm-fixes", "2"])
        == "2024-01-01T00:00:30.000Z")
  }

  /// A file name taken as an option's value is named as a bad value, not as a missing TRACK;
  /// `--format` beside `--os-budget` (which writes its own table) is refused, not ignored.
  @Test func optionValuesAreCheckedBeforeTheTracks() throws {
    let format = try CLI.run(["replay", "--regions", "r.csv", "--format", "track.csv"])
    #expect(format.status == 64)
    #expect(format.stderr.contains("--format must be jsonl, csv or geojson, got 'track.csv'"))
    let budget = try CLI.run(
      ["replay", "--regions", "r.csv", "--format", "csv", "--os-budget", "20", "t.csv"])
    #expect(budget.status == 64)
    #expect(budget.stderr.contains("--os-budget writes its own table"), "\(budget.stderr)")
  }

  /// The same `--regions` file twice (by any spelling of its path) is a usage error, not a
  /// file whose every row is a duplicate id; a positive option names both bounds whichever
  /// is broken.
  @Test func regionsTwiceAndPositiveBoundsAreUsageErrors() throws {
    let dir = try CLI.scratch("options-twice")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeOneRegion(in: dir)
    let spelled = dir.path + "/./regions.csv"
    let twice = try CLI.run(["stream", "--regions", regions, "--regions", spelled])
    #expect(twice.status == 64)
    #expect(twice.stderr.contains("--regions \(spelled) is given twice"), "\(twice.stderr)")
    // Any other option given twice is refused, not overridden by the last, and a repeated
    // key is not echoed.
    let repeated: [[String]] = [
      [
        "run", "--server", "http://127.0.0.1:9", "--server", "http://127.0.0.1:8", "--key", "k",
        "--store", dir.path, "t.csv",
      ],
      [
        "run", "--server", "http://127.0.0.1:9", "--key", "secret-one", "--key", "secret-two",
        "--store", dir.path, "t.csv",
      ],
      ["stream", "--regions", regions, "--input-format", "csv", "--input-format", "jsonl"],
      [
        "replay", "--regions", regions, "--svg", dir.path + "/a.svg",
        "--svg=" + dir.path + "/b.svg", regions,
      ],
    ]
    for arguments in repeated {
      let r = try CLI.run(arguments)
      #expect(r.status == 64, "\(arguments): \(r.stderr)")
      #expect(r.stderr.contains("is given more than once; give it once"), "\(r.stderr)")
      #expect(!r.stderr.contains("secret-"), "\(r.stderr)")
    }
    for value in ["0", "-1", "2e6"] {
      let r = try CLI.run(["replay", "--regions", regions, "--max-speed", value, regions])
      #expect(r.status == 64)
      #expect(
        r.stderr.contains("--max-speed must be > 0 and at most 1000000.0, got"), "\(r.stderr)")
    }
  }
}
