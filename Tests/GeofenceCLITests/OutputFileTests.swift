import Foundation
import GeofenceTestSupport
import Testing

/// Output files named on the command line (`stream --state-out`, `replay --svg`): a symbolic
/// link is followed and stays a link, a FIFO or device is written through and never replaced,
/// and a full device is an I/O error (74), not a silent success.
@Suite(.waitsOnChildProcesses) struct OutputFileTests {
  static let fix = Data(#"{"device_id":"d1","time":1704067200,"latitude":0,"longitude":0}"#.utf8)

  static func fileType(_ path: String) -> FileAttributeType? {
    (try? FileManager.default.attributesOfItem(atPath: path))?[.type] as? FileAttributeType
  }

  @Test func stateOutFollowsALinkAndKeepsIt() throws {
    let dir = try CLI.scratch("output-link")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeOneRegion(in: dir)
    let target = dir.appendingPathComponent("state.jsonl").path
    try "old\n".write(toFile: target, atomically: true, encoding: .utf8)
    let link = dir.appendingPathComponent("link").path
    try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "state.jsonl")
    // A dangling link, relative, through a folder: its target is created.
    try FileManager.default.createDirectory(
      at: dir.appendingPathComponent("sub"), withIntermediateDirectories: true)
    let dangling = dir.appendingPathComponent("dangling").path
    try FileManager.default.createSymbolicLink(
      atPath: dangling, withDestinationPath: "sub/../new.jsonl")
    for path in [link, dangling] {
      let run = try CLI.run(
        ["stream", "--quiet", "--regions", regions, "--state-out", path], input: Self.fix)
      #expect(run.status == 0, "\(run.stderr)")
      #expect(Self.fileType(path) == .typeSymbolicLink)
    }
    for written in [target, dir.appendingPathComponent("new.jsonl").path] {
      let text = try String(contentsOfFile: written, encoding: .utf8)
      #expect(text.hasPrefix(#"{"checkpoint":"#), "\(written): \(text.prefix(40))")
      #expect(text.contains(#""device_id":"d1""#), "\(text.prefix(200))")
    }
  }

  /// An output that names an input (by any path: here through a link) would destroy it: a
  /// usage error (64) before anything is read or written, the input left as it was. The
  /// checkpoint file alone may be read and rewritten.
  @Test func anOutputThatNamesAnInputIsRefused() throws {
    let dir = try CLI.scratch("output-input")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeOneRegion(in: dir)
    let track = try CLI.writeEquatorTrack(in: dir)
    let alias = dir.appendingPathComponent("alias.csv").path
    try FileManager.default.createSymbolicLink(atPath: alias, withDestinationPath: track)
    let before = try Data(contentsOf: URL(fileURLWithPath: track))
    let regionsBefore = try Data(contentsOf: URL(fileURLWithPath: regions))
    let store = dir.appendingPathComponent("store").path
    let cases: [([String], String)] = [
      (
        ["replay", "--regions", regions, track, "--svg", alias],
        "--svg \(alias) is the input file \(track)"
      ),
      (
        ["replay", "--regions", regions, track, "--svg", regions],
        "--svg \(regions) is the input file \(regions)"
      ),
      (
        ["run", "--store", store, "--regions", regions, track, "--destination", "file=" + alias],
        "is the input file \(track): events would be appended to it"
      ),
      (
        ["stream", "--regions", regions, track, "--state-out", regions],
        "--state-out \(regions) is the input file \(regions)"
      ),
    ]
    for (arguments, message) in cases {
      let run = try CLI.run(arguments)
      #expect(run.status == 64, "\(arguments): \(run.stderr)")
      #expect(run.stderr.contains(message), "\(run.stderr)")
    }
    #expect(try Data(contentsOf: URL(fileURLWithPath: track)) == before)
    #expect(try Data(contentsOf: URL(fileURLWithPath: regions)) == regionsBefore)
    #expect(!FileManager.default.fileExists(atPath: store))
    // The checkpoint file is read, then rewritten.
    let state = dir.appendingPathComponent("state.jsonl").path
    let first = try CLI.run(
      ["stream", "--quiet", "--regions", regions, "--state-out", state], input: Self.fix)
    #expect(first.status == 0, "\(first.stderr)")
    let again = try CLI.run(
      ["stream", "--quiet", "--regions", regions, "--state-in", state, "--state-out", state],
      input: Data())
    #expect(again.status == 0, "\(again.stderr)")
    #expect(try String(contentsOfFile: state, encoding: .utf8).contains(#""device_id":"d1""#))
  }

  /// A file destination whose folder is missing cannot be created: 73, as for `--svg`, not
  /// a usage error.
  @Test func aFileDestinationInAMissingFolderIsCannotCreate() throws {
    let dir = try CLI.scratch("output-destination")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeOneRegion(in: dir)
    let track = try CLI.writeEquatorTrack(in: dir)
    let target = dir.appendingPathComponent("missing/events.jsonl").path
    let run = try CLI.run([
      "run", "--store", dir.appendingPathComponent("store").path, "--regions", regions, track,
      "--destination", "file=" + target,
    ])
    #expect(run.status == 73, "\(run.stderr)")
    #expect(run.stderr.contains("the directory \(dir.path)/missing does not exist"), "\(run.stderr)")
  }

  @Test func stateOutWritesThroughAFIFO() throws {
    let dir = try CLI.scratch("output-fifo")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeOneRegion(in: dir)
    let fifo = dir.appendingPathComponent("records").path
    #expect(mkfifo(fifo, 0o644) == 0)
    // A reader waiting on the FIFO, as a consumer would be.
    let reader = Process()
    reader.executableURL = URL(fileURLWithPath: "/bin/cat")
    reader.arguments = [fifo]
    let pipe = Pipe()
    reader.standardOutput = pipe
    try reader.run()
    let run = try CLI.run(
      ["stream", "--quiet", "--regions", regions, "--state-out", fifo], input: Self.fix)
    // A stream that never opened the FIFO leaves the reader waiting for a writer: it is
    // stopped, so that the test fails instead of hanging.
    let end = Date().addingTimeInterval(10)
    while reader.isRunning && Date() < end { Thread.sleep(forTimeInterval: 0.05) }
    if reader.isRunning { reader.terminate() }
    let received = String(
      decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    reader.waitUntilExit()
    #expect(run.status == 0, "\(run.stderr)")
    #expect(received.hasPrefix(#"{"checkpoint":"#), "\(received.prefix(40))")
    var info = stat()
    #expect(lstat(fifo, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "replaced")
  }

  @Test func aFullDeviceIsAnIOErrorAndStaysADevice() throws {
    guard Self.fileType("/dev/full") == .typeCharacterSpecial else { return }
    let dir = try CLI.scratch("output-full")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeOneRegion(in: dir)
    let run = try CLI.run(
      ["stream", "--quiet", "--regions", regions, "--state-out", "/dev/full"], input: Self.fix)
    #expect(run.status == 74, "\(run.stderr)")
    #expect(run.stderr.contains("--state-out /dev/full"))
    #expect(Self.fileType("/dev/full") == .typeCharacterSpecial)
  }

  @Test func replaySVGFollowsALink() throws {
    let dir = try CLI.scratch("output-svg")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeOneRegion(in: dir)
    let track = dir.appendingPathComponent("track.csv").path
    try "latitude,longitude,time\n0,0,2024-01-01T00:00:00Z\n0,0.02,2024-01-01T00:10:00Z\n"
      .write(toFile: track, atomically: true, encoding: .utf8)
    let link = dir.appendingPathComponent("map.svg").path
    try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "real.svg")
    let run = try CLI.run(["replay", "--quiet", "--regions", regions, track, "--svg", link])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(Self.fileType(link) == .typeSymbolicLink)
    let svg = try String(
      contentsOfFile: dir.appendingPathComponent("real.svg").path, encoding: .utf8)
    #expect(svg.hasPrefix("<svg") || svg.hasPrefix("<?xml"), "\(svg.prefix(40))")
  }

  /// An output that cannot be created is found before the stream and exits 73 (EX_CANTCREAT),
  /// as `replay --svg` does.
  @Test func stateOutInAMissingFolderExits73() throws {
    let dir = try CLI.scratch("output-missing")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeOneRegion(in: dir)
    let missing = dir.appendingPathComponent("none/state.jsonl").path
    let run = try CLI.run(
      ["stream", "--quiet", "--regions", regions, "--state-out", missing], input: Self.fix)
    #expect(run.status == 73, "\(run.stderr)")
    #expect(run.stderr.contains("--state-out \(missing): no such directory"), "\(run.stderr)")
    #expect(run.stdout.isEmpty)
    let svg = try CLI.run(
      ["replay", "--quiet", "--regions", regions, "--svg", missing, regions])
    #expect(svg.status == 73, "\(svg.stderr)")
  }
}
