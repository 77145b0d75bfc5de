import Foundation
import GeofenceTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `geofence stream` on input with bad lines: each is reported with its line number and
/// skipped, the good fixes still give their events, and the exit status stays 0.
@Suite(.waitsOnChildProcesses) struct StreamCommandTests {
  /// ENTER offer-1 at 05:00:40, EXIT offer-1 and ENTER app-link at 05:05:00 (fix 1 at 411 m
  /// from offer-1's centre, fix 2 at 56 m from it, fix 3 at 389 m from it and 56 m from
  /// app-link's, 167 m from bad-url's).
  static let expected = [
    "enter offer-1 2026-11-30T05:00:40.000Z", "exit offer-1 2026-11-30T05:05:00.000Z",
    "enter app-link 2026-11-30T05:05:00.000Z",
  ]

  static func summary(_ events: [[String: Any]]) -> [String] {
    events.map { "\($0["type"] ?? "") \($0["geofence_id"] ?? "") \($0["time"] ?? "")" }
  }

  @Test func badJSONLinesAreReportedWithTheirLineAndSkipped() throws {
    let dir = try CLI.scratch("stream-bad")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeEquatorGeofences(in: dir)
    let lines = [
      #"{"device_id":"a","time":"2026-11-30T05:00:00Z","latitude":0,"longitude":-0.0027}"#,
      #"this is not json"#,
      #"{"time":"2026-11-30T05:00:10Z","latitude":0,"longitude":0.0}"#,
      #"{"device_id":"a","time":"2026-11-30T05:00:20Z","latitude":95,"longitude":0.0}"#,
      #"{"device_id":"a","time":"2026-11-30T05:00:30","latitude":0,"longitude":0.0}"#,
      #"{"device_id":"a","time":"2026-11-30T05:00:40Z","latitude":0,"longitude":0.0015}"#,
      #"{"device_id":"a","time":"2026-11-30T05:02:00Z","latitude":"x","longitude":0.0045}"#,
      #"{"device_id":"a","time":"2026-11-30T05:03:00Z","latitude":0}"#,
      #"{"device_id":"a","time":1796015100,"latitude":0,"longitude":0.0045}"#,
      #"{"device_id":"a","time":"yesterday","latitude":0,"longitude":0.0045}"#,
      #"{"device_id":"a","time":"2026-11-30T05:06:00Z","latitude":0,"longitude":181}"#,
      #"{"device_id":"a","time":"2026-11-30T05:07:00Z","latitude":0,"longitude":0.0045"#,
    ]
    let bad = [2, 3, 4, 5, 7, 8, 10, 11, 12]
    let input = dir.appendingPathComponent("mixed.jsonl")
    try (lines.joined(separator: "\n") + "\n").write(to: input, atomically: true, encoding: .utf8)
    let r = try CLI.run(["stream", "--regions", regions, input.path])
    #expect(r.status == 0, "\(r.stderr)")
    #expect(Self.summary(CLI.objects(r.stdout)) == Self.expected, "\(r.stdout)")
    let rejected = r.stderr.split(separator: "\n").filter { $0.hasPrefix("rejected: ") }
    #expect(rejected.count == bad.count, "\(r.stderr)")
    for (line, n) in zip(rejected, bad) {
      #expect(line.hasPrefix("rejected: \(input.path):\(n): "), "\(line)")
      #expect(line.hasSuffix("; line skipped"), "\(line)")
    }
    #expect(rejected.first?.contains("not a JSON object") == true)
    #expect(rejected.dropFirst().first?.contains("device_id") == true)
    #expect(rejected.dropFirst(2).first?.contains("latitude") == true)
    #expect(rejected.dropFirst(3).first?.contains("zone") == true)
    #expect(r.stderr.contains("stream: 12 lines, 3 fixes, 9 bad lines skipped"), "\(r.stderr)")

    // The good lines alone give the same bytes.
    let good = lines.enumerated().filter { !bad.contains($0.offset + 1) }.map(\.element)
    let clean = try CLI.run(
      ["stream", "--quiet", "--regions", regions],
      input: Data((good.joined(separator: "\n") + "\n").utf8))
    #expect(clean.stdout == r.stdout)
  }

  @Test func badCSVRowsAreReportedWithTheirLineAndSkipped() throws {
    let dir = try CLI.scratch("stream-bad-csv")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeEquatorGeofences(in: dir)
    let csv = """
      device,time,lat,lon
      b,2026-11-30T05:00:00Z,0,-0.0027
      b,2026-11-30T05:00:10Z,north,0
      b,2026-11-30T05:00:40Z,0,0.0015
      b,2026-11-30T05:01:00Z,0
      b,2026-11-30T05:05:00Z,0,0.0045

      """
    let r = try CLI.run(["stream", "--regions", regions], input: Data(csv.utf8))
    #expect(r.status == 0, "\(r.stderr)")
    #expect(Self.summary(CLI.objects(r.stdout)) == Self.expected, "\(r.stdout)")
    #expect(CLI.objects(r.stdout).allSatisfy { $0["device_id"] as? String == "b" })
    let rejected = r.stderr.split(separator: "\n").filter { $0.hasPrefix("rejected: ") }
    #expect(rejected.count == 2, "\(r.stderr)")
    #expect(rejected.first?.hasPrefix("rejected: <stdin>:3: ") == true, "\(r.stderr)")
    #expect(rejected.last?.hasPrefix("rejected: <stdin>:5: ") == true, "\(r.stderr)")
    #expect(r.stderr.contains("stream: 6 lines, 3 fixes, 2 bad lines skipped"), "\(r.stderr)")
  }

  /// A CSV row is held to a JSON Lines fix's rules: an empty device cell, a control
  /// character in the device id and bytes that are not UTF-8 each skip their own line; a
  /// time without a zone is read as UTC with one warning naming its line, and an unreadable
  /// accuracy refuses its row, as a JSON Lines fix with a string accuracy is refused.
  @Test func csvRowsFollowTheDeviceAndZoneRulesOfJSONLines() throws {
    let dir = try CLI.scratch("stream-csv-rules")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeEquatorGeofences(in: dir)
    var input = Data(
      """
      device,time,lat,lon,accuracy
      b,2026-11-30T05:00:00Z,0,-0.0027,5
      ,2026-11-30T05:00:05Z,0,0,5
      b\u{0}x,2026-11-30T05:00:06Z,0,0,5

      """.utf8)
    input += Data([0x62, 0xFF]) + Data(",2026-11-30T05:00:07Z,0,0,5\n".utf8)
    input += Data(
      """
      b,2026-11-30 05:00:40,0,0.0015,5
      b,2026-11-30 05:00:50,0,0.0016,n/a
      b,2026-11-30T05:05:00Z,0,0.0045,5

      """.utf8)
    let r = try CLI.run(["stream", "--regions", regions], input: input)
    #expect(r.status == 0, "\(r.stderr)")
    #expect(Self.summary(CLI.objects(r.stdout)) == Self.expected, "\(r.stdout)")
    let stderr = r.stderr.split(separator: "\n").map(String.init)
    #expect(
      stderr.filter { $0.hasPrefix("rejected: ") } == [
        "rejected: <stdin>:3: empty device id; row skipped",
        "rejected: <stdin>:4: the device id holds a control character (U+0000-U+001F, U+007F); "
          + "row skipped",
        "rejected: <stdin>:5: not valid UTF-8; line skipped",
        #"rejected: <stdin>:7: accuracy "n/a" is not a finite number; row skipped"#,
      ], "\(r.stderr)")
    #expect(
      stderr.filter { $0.hasPrefix("warning: ") } == [
        "warning: <stdin>:6: a time without a zone is read as UTC (later ones are not reported)"
      ], "\(r.stderr)")
  }

  /// A negative zero (`-0`, `-0.0`) in a coordinate or the accuracy is written 0.0: the same
  /// value, without a sign that reads like a mistake.
  /// The stream widens the pipes it reads fixes from and writes events to (1 MiB, the
  /// default most for an unprivileged process), and its output is unchanged.
  @Test func theStreamWidensItsPipes() throws {
    let dir = try CLI.scratch("stream-pipes")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeOneRegion(in: dir)
    let executable = try #require(CommandRunner.executable)
    let input = Pipe()
    let output = Pipe()
    let process = Process()
    process.executableURL = executable
    process.arguments = ["stream", "--quiet", "--regions", regions]
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    let line = #"{"device_id":"d","time":1704067200,"latitude":0,"longitude":0}"# + "\n"
    input.fileHandleForWriting.write(Data(line.utf8))
    // F_GETPIPE_SZ = 1032 (<linux/fcntl.h>); the pipes are this process's too.
    let deadline = Date().addingTimeInterval(20)
    while fcntl(output.fileHandleForReading.fileDescriptor, 1032) < 1 << 20 && Date() < deadline {
      Thread.sleep(forTimeInterval: 0.02)
    }
    #expect(fcntl(input.fileHandleForWriting.fileDescriptor, 1032) == 1 << 20)
    #expect(fcntl(output.fileHandleForReading.fileDescriptor, 1032) == 1 << 20)
    try input.fileHandleForWriting.close()
    let events = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)
    #expect(String(decoding: events, as: UTF8.self).contains(#""type":"enter""#))
  }

  @Test func aNegativeZeroIsWrittenAsZero() throws {
    let dir = try CLI.scratch("stream-negative-zero")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeEquatorGeofences(in: dir)
    let r = try CLI.run(
      ["stream", "--quiet", "--regions", regions],
      input: Data(
        #"{"device_id":"z","time":1796014800,"latitude":-0.0,"longitude":0.001,"accuracy":-0}"#
          .utf8 + [0x0A]))
    #expect(r.status == 0, "\(r.stderr)")
    #expect(r.stdout.contains(#""latitude":0.0,"longitude":0.001,"accuracy":0.0,"#), "\(r.stdout)")
  }

  @Test func csvWithoutADeviceColumnIsDeviceDash() throws {
    let dir = try CLI.scratch("stream-csv-dash")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeEquatorGeofences(in: dir)
    let r = try CLI.run(
      ["stream", "--quiet", "--regions", regions],
      input: Data("time,latitude,longitude\n1796014800,0,-0.0027\n1796014840,0,0.0015\n".utf8))
    #expect(r.status == 0)
    let events = CLI.objects(r.stdout)
    #expect(Self.summary(events) == [Self.expected[0]])
    #expect(events.first?["device_id"] as? String == "-")
  }

  /// A second `stream --state DIR` while another process holds DIR is refused (75, naming the
  /// lock file) and writes nothing; once the holder lets go, a stream on DIR runs.
  @Test func aSecondStreamOnTheSameStateDirectoryIsRefused() throws {
    let dir = try CLI.scratch("stream-state-lock")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeEquatorGeofences(in: dir)
    let state = dir.appendingPathComponent("state")
    try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
    let lockPath = state.appendingPathComponent("state.lock").path
    // The other process's claim, as `stream` takes it.
    let holder = open(lockPath, O_RDWR | O_CREAT, 0o644)
    #expect(holder >= 0)
    #expect(flock(holder, LOCK_EX | LOCK_NB) == 0)
    let input = Data("time,latitude,longitude\n1796014800,0,-0.0027\n1796014840,0,0.0015\n".utf8)
    let refused = try CLI.run(
      ["stream", "--quiet", "--regions", regions, "--state", state.path], input: input)
    #expect(refused.status == 75, "\(refused.stderr)")
    #expect(refused.stdout.isEmpty)
    #expect(
      refused.stderr.contains("--state \(state.path) is in use by another process")
        && refused.stderr.contains(lockPath), "\(refused.stderr)")
    close(holder)

    let ran = try CLI.run(
      ["stream", "--quiet", "--regions", regions, "--state", state.path], input: input)
    #expect(ran.status == 0, "\(ran.stderr)")
    #expect(Self.summary(CLI.objects(ran.stdout)) == [Self.expected[0]])
    // The --regions set is not stored: the directory holds device state, no synced set.
    #expect(
      !FileManager.default.fileExists(
        atPath: state.appendingPathComponent("geofences.sqlite").path))
    #expect(
      FileManager.default.fileExists(atPath: state.appendingPathComponent("state.sqlite").path))
  }

  /// A producer that writes a fix and then waits sees the fix's events while its pipe is
  /// still open: a batch ends when the input pauses, not when it fills or ends. The ENTER of
  /// offer-1 (second fix, 56 m from its centre) must arrive before the third fix is written;
  /// the third fix's EXIT and ENTER after it, before the input is closed.
  @Test func eventsArriveWhileTheInputStaysOpen() throws {
    let dir = try CLI.scratch("stream-prompt")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeEquatorGeofences(in: dir)
    let process = Process()
    process.executableURL = CLI.executable
    process.arguments = ["stream", "--quiet", "--regions", regions]
    let input = Pipe()
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    defer { if process.isRunning { process.terminate() } }
    // Lines of standard output as they arrive, read on another thread.
    let received = DispatchSemaphore(value: 0)
    let lock = NSLock()
    nonisolated(unsafe) var lines: [String] = []
    DispatchQueue.global().async {
      var pending = Data()
      while true {
        let chunk = output.fileHandleForReading.availableData
        if chunk.isEmpty { break }
        pending.append(chunk)
        while let end = pending.firstIndex(of: 10) {
          let line = String(decoding: pending[pending.startIndex..<end], as: UTF8.self)
          pending.removeSubrange(pending.startIndex...end)
          lock.withLock { lines.append(line) }
          received.signal()
        }
      }
    }
    func send(_ line: String) throws {
      try input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }
    // Waits up to 30 s (a loaded machine) for `count` lines in all.
    func waitForLines(_ count: Int) -> [String] {
      let deadline = Date().addingTimeInterval(30)
      while lock.withLock({ lines.count }) < count {
        if received.wait(timeout: .now() + deadline.timeIntervalSinceNow) == .timedOut { break }
      }
      return lock.withLock { lines }
    }
    try send(#"{"device_id":"a","time":"2026-11-30T05:00:00Z","latitude":0,"longitude":-0.0027}"#)
    try send(#"{"device_id":"a","time":"2026-11-30T05:00:40Z","latitude":0,"longitude":0.0015}"#)
    let first = waitForLines(1)
    #expect(Self.summary(CLI.objects(first.joined(separator: "\n"))) == [Self.expected[0]])
    try send(#"{"device_id":"a","time":"2026-11-30T05:05:00Z","latitude":0,"longitude":0.0045}"#)
    let all = waitForLines(3)
    #expect(Self.summary(CLI.objects(all.joined(separator: "\n"))) == Self.expected)
    try input.fileHandleForWriting.close()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)
  }

  /// A line longer than 1 MiB (1,048,576 bytes) is reported with its number and skipped
  /// without being held; a line of exactly 1 MiB is still read. The three fixes of
  /// ``expected`` are lines 1, 3 and 5; line 2 is a fix padded to exactly 1 MiB (its device
  /// "pad" enters nothing: it is 300 m west of offer-1's edge), line 4 is one byte longer, and
  /// a last line of 3 MiB without a newline ends the input.
  @Test func linesOverOneMebibyteAreSkipped() throws {
    let dir = try CLI.scratch("stream-long")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeEquatorGeofences(in: dir)
    func padded(_ length: Int) -> String {
      let head =
        #"{"device_id":"pad","time":"2026-11-30T05:00:05Z","latitude":0,"#
        + #""longitude":-0.0027,"note":""#
      let tail = #""}"#
      return head + String(repeating: "x", count: length - head.utf8.count - tail.utf8.count)
        + tail
    }
    let lines = [
      #"{"device_id":"a","time":"2026-11-30T05:00:00Z","latitude":0,"longitude":-0.0027}"#,
      padded(1 << 20),
      #"{"device_id":"a","time":"2026-11-30T05:00:40Z","latitude":0,"longitude":0.0015}"#,
      padded((1 << 20) + 1),
      #"{"device_id":"a","time":"2026-11-30T05:05:00Z","latitude":0,"longitude":0.0045}"#,
      String(repeating: "y", count: 3 << 20),
    ]
    #expect(lines[1].utf8.count == 1 << 20)
    let r = try CLI.run(
      ["stream", "--regions", regions], input: Data(lines.joined(separator: "\n").utf8))
    #expect(r.status == 0, "\(r.stderr)")
    #expect(Self.summary(CLI.objects(r.stdout)) == Self.expected, "\(r.stdout)")
    let rejected = r.stderr.split(separator: "\n").filter { $0.hasPrefix("rejected: ") }
    #expect(
      rejected == [
        "rejected: <stdin>:4: longer than 1048576 bytes; line skipped",
        "rejected: <stdin>:6: longer than 1048576 bytes; line skipped",
      ], "\(r.stderr)")
    #expect(r.stderr.contains("stream: 6 lines, 4 fixes, 2 bad lines skipped"), "\(r.stderr)")
  }

  /// The same fixes as CSV rows and as JSON Lines give the same bytes: no `fix_index` from
  /// the CSV row, and so the same event ids. A carriage return before the first JSON line
  /// does not make it CSV.
  @Test func csvAndJSONLinesGiveTheSameEvents() throws {
    let dir = try CLI.scratch("stream-forms")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeEquatorGeofences(in: dir)
    let csv = """
      device,time,lat,lon
      a,2026-11-30T05:00:00Z,0,-0.0027
      a,2026-11-30T05:00:40Z,0,0.0015
      a,2026-11-30T05:05:00Z,0,0.0045

      """
    let jsonl = [
      #"{"device_id":"a","time":"2026-11-30T05:00:00Z","latitude":0,"longitude":-0.0027}"#,
      #"{"device_id":"a","time":"2026-11-30T05:00:40Z","latitude":0,"longitude":0.0015}"#,
      #"{"device_id":"a","time":"2026-11-30T05:05:00Z","latitude":0,"longitude":0.0045}"#,
    ].joined(separator: "\n")
    let fromCSV = try CLI.run(["stream", "--quiet", "--regions", regions], input: Data(csv.utf8))
    let fromJSON = try CLI.run(
      ["stream", "--quiet", "--regions", regions], input: Data(("\r" + jsonl).utf8))
    #expect(fromCSV.status == 0 && fromJSON.status == 0, "\(fromCSV.stderr)\(fromJSON.stderr)")
    #expect(Self.summary(CLI.objects(fromCSV.stdout)) == Self.expected, "\(fromCSV.stdout)")
    #expect(fromCSV.stdout == fromJSON.stdout)
    #expect(!fromCSV.stdout.contains("fix_index"))
  }

  /// A device id that is not valid UTF-8 is named as such.
  @Test func invalidUTF8DeviceIDIsNamed() throws {
    let dir = try CLI.scratch("stream-utf8")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeEquatorGeofences(in: dir)
    var input = Data(#"{"device_id":"a"#.utf8)
    input.append(contentsOf: [0xFF, 0xFE])
    input.append(contentsOf: #"","time":1796014800,"latitude":0,"longitude":0}"#.utf8)
    input.append(10)
    let r = try CLI.run(["stream", "--regions", regions], input: input)
    #expect(r.status == 0)
    #expect(r.stderr.contains("<stdin>:1: device_id must be valid UTF-8"), "\(r.stderr)")
  }

  /// Two spellings of a device id that `String` calls equal (é as one scalar, and e with a
  /// combining accent) are two devices, as the state store and the event ids keep them: the
  /// interleaved stream's events of each spelling, bytes as written, are exactly those of a
  /// stream of that spelling's lines alone.
  @Test func canonicallyEquivalentDeviceIDsAreTwoDevices() throws {
    let dir = try CLI.scratch("stream-spelling")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeEquatorGeofences(in: dir)
    let composed = "d\u{E9}"
    let decomposed = "de\u{301}"
    #expect(composed == decomposed)
    #expect(!composed.utf8.elementsEqual(decomposed.utf8))
    let spelling = { (s: Int) in s % 3 == 0 ? decomposed : composed }
    func line(_ s: Int) -> String {
      """
      {"device_id":"\(spelling(s))","time":\(1_796_014_800 + 10 * s),"latitude":0,\
      "longitude":\(CLI.equatorFixEast(s))}

      """
    }
    func stream(_ steps: [Int]) throws -> [String] {
      let r = try CLI.run(
        ["stream", "--regions", regions], input: Data(steps.map(line).joined().utf8))
      #expect(r.status == 0, "\(r.stderr)")
      return CLI.lines(r.stdout)
    }
    let all = try stream(Array(0..<100))
    #expect(all.count > 4)
    for name in [composed, decomposed] {
      let key = Array("\"device_id\":\"\(name)\"".utf8)
      func holds(_ line: String) -> Bool {
        let bytes = Array(line.utf8)
        return (0...(bytes.count - key.count)).contains {
          Array(bytes[$0..<($0 + key.count)]) == key
        }
      }
      let alone = try stream((0..<100).filter { spelling($0).utf8.elementsEqual(name.utf8) })
      #expect(!alone.isEmpty && alone.allSatisfy(holds))
      #expect(all.filter(holds) == alone, "\(name.unicodeScalars.map(\.value))")
    }
  }
}
