import Foundation
import GeofenceTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// SIGKILLs `geofence stream --state DIR` at seeded random moments, restarts it on the same
/// input with the same DIR until a run finishes, and checks the documented promise: the
/// outputs together hold exactly the events of an uninterrupted run; a repeated event is
/// byte-identical, with the same id.
@Suite(.waitsOnChildProcesses, .serialized) struct StreamRestartTests {
  /// 48 geofences of 150 m on a 1 km grid near 46° N 7° E.
  static func regions() -> [(id: String, latitude: Double, longitude: Double)] {
    let perDegreeEast = CLI.metersPerDegree * cos(46 * Double.pi / 180)
    var out: [(String, Double, Double)] = []
    for i in 0..<8 {
      for j in 0..<6 {
        out.append(
          (
            "g\(out.count < 10 ? "0" : "")\(out.count)",
            46 + Double(i) * 1_000 / CLI.metersPerDegree,
            7 + Double(j) * 1_000 / perDegreeEast
          ))
      }
    }
    return out
  }

  /// `devices` devices, each walking from geofence to geofence (2-12 m/s, a fix every 5 s)
  /// and stopping in some for 0, 100, 400 or 700 s (a fix every 10 s, jittered by 10 m), so
  /// that there are ENTERs, EXITs and DWELLs; all fixes interleaved by time. Even devices
  /// give RFC 3339 times, odd ones epoch seconds.
  static func input(seed: UInt64, devices: Int, fixesPerDevice: Int) -> String {
    var random = SeededGenerator(seed: seed)
    let targets = regions()
    let perDegreeEast = CLI.metersPerDegree * cos(46 * Double.pi / 180)
    var fixes: [(time: Int, device: Int, north: Double, east: Double, accuracy: Int)] = []
    for d in 0..<devices {
      var t = 1_796_014_800 + d * 7
      var north = Double.random(in: 0...7_000, using: &random)
      var east = Double.random(in: 0...5_000, using: &random)
      var n = 0
      while n < fixesPerDevice {
        let g = targets.randomElement(using: &random)!
        let goalNorth =
          (g.latitude - 46) * CLI.metersPerDegree
          + Double.random(in: -60...60, using: &random)
        let goalEast =
          (g.longitude - 7) * perDegreeEast
          + Double.random(in: -60...60, using: &random)
        let step = Double.random(in: 2...12, using: &random) * 5
        while n < fixesPerDevice {
          let (dn, de) = (goalNorth - north, goalEast - east)
          let distance = (dn * dn + de * de).squareRoot()
          if distance < step { break }
          north += dn / distance * step
          east += de / distance * step
          t += 5
          n += 1
          fixes.append((t, d, north, east, Int.random(in: 5...25, using: &random)))
        }
        let stay = [0, 100, 400, 700].randomElement(using: &random)!
        var k = 0
        while k * 10 < stay && n < fixesPerDevice {
          t += 10
          k += 1
          n += 1
          fixes.append(
            (
              t, d, north + Double.random(in: -10...10, using: &random),
              east + Double.random(in: -10...10, using: &random),
              Int.random(in: 5...25, using: &random)
            ))
        }
      }
    }
    fixes.sort { ($0.time, $0.device) < ($1.time, $1.device) }
    let formatter = ISO8601DateFormatter()
    var text = ""
    for f in fixes {
      let time =
        f.device % 2 == 0
        ? "\"" + formatter.string(from: Date(timeIntervalSince1970: Double(f.time))) + "\""
        : String(f.time)
      text +=
        "{\"device_id\":\"device-\(f.device)\",\"time\":\(time),\"latitude\":"
        + "\(46 + f.north / CLI.metersPerDegree),\"longitude\":\(7 + f.east / perDegreeEast),"
        + "\"accuracy\":\(f.accuracy)}\n"
    }
    return text
  }

  /// How a run gets its input.
  enum Feed: CaseIterable {
    /// The file as an argument.
    case argument
    /// The file as standard input.
    case stdinFile
    /// A pipe the test writes in chunks of random size, so batches end in other places.
    case stdinPipe
  }

  /// Output of one run: the complete lines, whether it was killed, and its standard error.
  struct Run {
    var lines: [String]
    var killed: Bool
    var stderr: String
  }

  /// Starts `stream`, kills it with SIGKILL `delay` seconds after it started (never when
  /// nil), or, with `prefix`, `delay` seconds after the pipe took the first `prefix` bytes of
  /// the input and the process wrote its first output (or 0.5 s passed without any: a prefix
  /// whose fixes were all seen before makes none), so that on a loaded machine, where a
  /// process may take longer than the delay to reach its output, the kill still lands while
  /// it writes; returns what it wrote, a last line without its newline dropped.
  static func stream(
    _ arguments: [String], input: URL, feed: Feed, prefix: Int? = nil, killAfter delay: Double?,
    random: inout SeededGenerator
  ) throws -> Run {
    let process = Process()
    process.executableURL = CLI.executable
    process.arguments = arguments + (feed == .argument ? [input.path] : [])
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    let inPipe = Pipe()
    switch feed {
    case .argument: process.standardInput = FileHandle.nullDevice
    case .stdinFile: process.standardInput = try FileHandle(forReadingFrom: input)
    case .stdinPipe: process.standardInput = inPipe
    }
    try process.run()
    let group = DispatchGroup()
    nonisolated(unsafe) var outData = Data()
    nonisolated(unsafe) var errData = Data()
    let wroteOutput = DispatchSemaphore(value: 0)
    group.enter()
    DispatchQueue.global().async {
      var signalled = false
      while true {
        let chunk = out.fileHandleForReading.availableData
        if chunk.isEmpty { break }
        outData.append(chunk)
        if !signalled {
          signalled = true
          wroteOutput.signal()
        }
      }
      group.leave()
    }
    group.enter()
    DispatchQueue.global().async {
      errData = err.fileHandleForReading.readDataToEndOfFile()
      group.leave()
    }
    let prefixWritten = DispatchSemaphore(value: 0)
    if feed == .stdinPipe {
      let data = try Data(contentsOf: input)
      let end = min(prefix ?? data.count, data.count)
      var chunks: [Int] = []
      var total = 0
      while total < end {
        let n = min(end - total, Int.random(in: 1_000...70_000, using: &random))
        chunks.append(n)
        total += n
      }
      let writer = inPipe.fileHandleForWriting
      let sizes = chunks
      let holdOpen = prefix != nil
      group.enter()
      DispatchQueue.global().async {
        var offset = 0
        for n in sizes {
          // Fails with EPIPE once the process is killed (SIGPIPE is ignored).
          guard (try? writer.write(contentsOf: data[offset..<(offset + n)])) != nil else { break }
          offset += n
        }
        prefixWritten.signal()
        if !holdOpen { try? writer.close() }
        group.leave()
      }
    }
    var killed = false
    if let delay {
      if prefix != nil {
        prefixWritten.wait()
        _ = wroteOutput.wait(timeout: .now() + 0.5)
      }
      usleep(useconds_t(delay * 1_000_000))
      if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        killed = true
      }
    }
    process.waitUntilExit()
    if prefix != nil { try? inPipe.fileHandleForWriting.close() }
    group.wait()
    if killed { killed = process.terminationReason == .uncaughtSignal }
    var text = String(decoding: outData, as: UTF8.self)
    if !text.isEmpty && !text.hasSuffix("\n"), let last = text.lastIndex(of: "\n") {
      text = String(text[...last])
    } else if !text.contains("\n") {
      text = ""
    }
    return Run(
      lines: CLI.lines(text), killed: killed, stderr: String(decoding: errData, as: UTF8.self))
  }

  /// The number after `label` in a summary line such as `stream: 9 lines, 9 fixes, ...`.
  static func count(_ label: String, in summary: String) -> Int? {
    guard let line = summary.split(separator: "\n").first(where: { $0.hasPrefix("stream: ") })
    else { return nil }
    for part in line.dropFirst("stream: ".count).split(separator: ",") {
      let words = part.split(separator: " ")
      if words.count >= 2, words.dropFirst().joined(separator: " ") == label {
        return Int(words[0])
      }
    }
    return nil
  }

  @Test func killedAndRestartedStreamWritesTheUninterruptedRunsEvents() throws {
    signal(SIGPIPE, SIG_IGN)
    let seed: UInt64 = 20_261_201
    var random = SeededGenerator(seed: seed)
    let dir = try CLI.scratch("stream-restart")
    defer { try? FileManager.default.removeItem(at: dir) }
    var regionsJSON: [String] = []
    for g in Self.regions() {
      regionsJSON.append(
        "{\"id\":\"\(g.id)\",\"latitude\":\(g.latitude),\"longitude\":\(g.longitude),\"radius\":150}"
      )
    }
    let regions = dir.appendingPathComponent("regions.json")
    try ("[" + regionsJSON.joined(separator: ",\n") + "]").write(
      to: regions, atomically: true, encoding: .utf8)
    let input = dir.appendingPathComponent("fixes.jsonl")
    let devices = 8
    try Self.input(seed: seed, devices: devices, fixesPerDevice: 6_000).write(
      to: input, atomically: true, encoding: .utf8)
    let totalFixes = devices * 6_000

    // The reference: one uninterrupted run with its own state folder, and one without state.
    let referenceArguments = [
      "stream", "--state", dir.appendingPathComponent("reference").path, "--regions",
      regions.path,
    ]
    let started = Date()
    let reference = try Self.stream(
      referenceArguments, input: input, feed: .argument, killAfter: nil, random: &random)
    let referenceSeconds = Date().timeIntervalSince(started)
    #expect(!reference.killed)
    #expect(Self.count("fixes", in: reference.stderr) == totalFixes, "\(reference.stderr)")
    let stateless = try CLI.run(["stream", "--quiet", "--regions", regions.path, input.path])
    #expect(CLI.lines(stateless.stdout) == reference.lines, "--state changed the events")

    var referenceLine: [String: String] = [:]
    var referenceIDs: [String] = []
    for line in reference.lines {
      let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
      let id = try #require(object?["id"] as? String)
      #expect(referenceLine[id] == nil, "the reference repeats \(id)")
      referenceLine[id] = line
      referenceIDs.append(id)
    }
    let dwells = reference.lines.filter { $0.contains("\"type\":\"dwell\"") }.count
    #expect(reference.lines.count > 500 && dwells > 50, "\(reference.lines.count) events")

    // Kill and restart, 24 times, then one run to the end; all on one state folder. Every
    // third run reads the file (as an argument or as standard input) and is killed after a
    // seeded delay, log-uniform from 3 ms to half the uninterrupted run. The others read a
    // pipe that the test fills up to a seeded point (moving through the input from run to
    // run, so that kills land all along it) and are killed 0-40 ms after that point and their
    // first output.
    let state = dir.appendingPathComponent("state").path
    let arguments = ["stream", "--state", state, "--regions", regions.path]
    let size = try Data(contentsOf: input).count
    var union: [String] = []
    var killedRuns = 0
    var killedWithEvents = 0
    var feeds: [Feed: Int] = [:]
    let longest = max(0.05, 0.5 * referenceSeconds)
    for round in 0..<24 {
      let run: Run
      let feed: Feed
      if round % 3 == 0 {
        feed = Bool.random(using: &random) ? .argument : .stdinFile
        let delay = 0.003 * pow(longest / 0.003, Double.random(in: 0...1, using: &random))
        run = try Self.stream(
          arguments, input: input, feed: feed, killAfter: delay, random: &random)
      } else {
        feed = .stdinPipe
        let prefix = Int(
          Double(size) * (Double(round) + Double.random(in: 0..<1, using: &random)) / 24)
        run = try Self.stream(
          arguments, input: input, feed: feed, prefix: prefix,
          killAfter: Double.random(in: 0...0.04, using: &random), random: &random)
      }
      union += run.lines
      if run.killed {
        killedRuns += 1
        feeds[feed, default: 0] += 1
        if !run.lines.isEmpty { killedWithEvents += 1 }
      } else {
        #expect(run.stderr.contains("stream: "), "\(run.stderr)")
      }
    }
    let last = try Self.stream(
      arguments, input: input, feed: .stdinPipe, killAfter: nil, random: &random)
    union += last.lines
    #expect(!last.killed)
    let alreadySeen = Self.count("already seen", in: last.stderr) ?? 0
    #expect(Self.count("lines", in: last.stderr) == totalFixes, "\(last.stderr)")

    // Every line written is a reference line, byte for byte, under its id.
    var firstSeen: [String] = []
    var seen = Set<String>()
    for line in union {
      let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
      guard let id = object?["id"] as? String else {
        Issue.record("not an event line: \(line.prefix(200))")
        continue
      }
      #expect(referenceLine[id] == line, "\(id) differs from the reference: \(line)")
      if seen.insert(id).inserted { firstSeen.append(id) }
    }
    #expect(
      seen == Set(referenceIDs), "\(seen.count) distinct ids, reference \(referenceIDs.count)")
    // After removing repeats, the same events in the same order, overall and per device.
    #expect(firstSeen == referenceIDs)
    func perDevice(_ ids: [String]) -> [String: [String]] {
      var out: [String: [String]] = [:]
      for id in ids {
        let line = referenceLine[id] ?? ""
        let device =
          line.range(of: "\"device_id\":\"device-").map {
            String(line[$0.upperBound...].prefix { $0 != "\"" })
          } ?? "?"
        out[device, default: []].append(id)
      }
      return out
    }
    #expect(perDevice(firstSeen) == perDevice(referenceIDs))
    #expect(perDevice(referenceIDs).count == devices)

    // The kills landed: runs died mid-output, and the last run skipped what was checkpointed.
    // (How many kills land mid-output depends on the machine's load; a few always do, since the
    // pipe-fed runs are killed while their input is still open.)
    #expect(killedRuns >= 16, "only \(killedRuns) of 24 runs were killed before they ended")
    #expect(killedWithEvents >= 2, "only \(killedWithEvents) killed runs had written events")
    #expect(alreadySeen > 0, "the last run skipped nothing: \(last.stderr)")
    print(
      "stream restart (seed \(seed)): reference \(referenceIDs.count) events (\(dwells) dwells) "
        + String(format: "in %.2f s", referenceSeconds) + "; \(killedRuns) of 24 runs killed "
        + "(\(killedWithEvents) after writing events; by feed \(feeds.map { "\($0.key) \($0.value)" }.sorted())), \(union.count) lines "
        + "written in all, \(union.count - referenceIDs.count) repeated; last run: "
        + "\(alreadySeen) fixes already seen")
  }
}
