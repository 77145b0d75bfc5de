import Foundation
import GeofenceTestSupport
import Testing

/// `geofence stream` on the fixes of the bundled tracks, in time order, against `geofence
/// replay` of the same files: the two must write the same events, member for member.
///
/// The stream's input is made here from the track files themselves (a small CSV and GPX
/// reading below), not from replay's output, so the test checks that the live path and the
/// replay path agree on real data with the headline place sets.
@Suite(.waitsOnChildProcesses) struct StreamReplayAgreementTests {
  /// The headline command's place sets and radii (README).
  static let regionArguments = [
    "--radius", "1500", "--regions", "data/places/rg_cities1000_geofences.csv",
    "--radius", "3000", "--regions", "data/places/airports_geofences.csv",
  ]

  /// Every bundled track whose fixes carry times. Left out: Mojstrovka.gpx (times of 1901,
  /// outside the accepted range, so replay takes it as a track without times), and the files
  /// without any time (replayed in file order, which the live path does not do).
  static let tracks: [String] = {
    let untimed: Set<String> = [
      "Mojstrovka.gpx", "ExampleTrack_NoTime.gpx", "ecology-trail-and-lovers-lane-loop.gpx",
      "route.gpx",
    ]
    let gpx =
      (try? FileManager.default.contentsOfDirectory(
        atPath: TestPaths.data.appendingPathComponent("tracks/gpx").path)) ?? []
    return ["data/tracks/csv/posmo_trajectory.csv", "data/tracks/csv/google_trajectory.csv"]
      + gpx.filter { $0.hasSuffix(".gpx") && !untimed.contains($0) }.sorted().map {
        "data/tracks/gpx/\($0)"
      }
  }()

  @Test func streamWritesReplaysEventsForEveryTimedTrack() throws {
    #expect(Self.tracks.count >= 18, "\(Self.tracks)")
    let dir = try CLI.scratch("stream-replay")
    defer { try? FileManager.default.removeItem(at: dir) }

    var input = ""
    var fixCount = 0
    for track in Self.tracks {
      let fixes = try TrackFixes.read(track)
      #expect(!fixes.isEmpty, "\(track): no timed fix read")
      fixCount += fixes.count
      for fix in fixes { input += fix.jsonLine + "\n" }
    }
    let inputFile = dir.appendingPathComponent("fixes.jsonl")
    try input.write(to: inputFile, atomically: true, encoding: .utf8)

    let replay = try CLI.run(["replay", "--quiet"] + Self.regionArguments + Self.tracks)
    #expect(replay.status == 0, "\(replay.stderr)")
    let stream = try CLI.run(["stream"] + Self.regionArguments + [inputFile.path])
    #expect(stream.status == 0, "\(stream.stderr)")
    #expect(
      stream.stderr.contains("stream: \(fixCount) lines, \(fixCount) fixes, 0 bad lines"),
      "\(stream.stderr)")

    var expected = CLI.objects(replay.stdout)
    #expect(expected.count == CLI.lines(replay.stdout).count)
    for i in expected.indices {
      #expect(expected[i]["fix_index"] != nil && expected[i]["track"] != nil)
      expected[i]["fix_index"] = nil
      expected[i]["track"] = nil
    }
    let actual = CLI.objects(stream.stdout)
    #expect(actual.count == CLI.lines(stream.stdout).count)
    // Replay groups events by device; the stream writes them as they happen. Per device,
    // both are in fix order.
    func byDevice(_ events: [[String: Any]]) -> [String: [[String: Any]]] {
      Dictionary(grouping: events) { $0["device_id"] as? String ?? "?" }
    }
    let expectedByDevice = byDevice(expected)
    let actualByDevice = byDevice(actual)
    #expect(Set(actualByDevice.keys) == Set(expectedByDevice.keys))
    for (device, events) in expectedByDevice {
      let got = actualByDevice[device] ?? []
      #expect(got.count == events.count, "\(device): \(got.count) events, replay \(events.count)")
      for (e, g) in zip(events, got) {
        #expect(Set(e.keys) == Set(g.keys), "\(device) \(e["id"] ?? "")")
        for (member, value) in e where !CLI.same(value, g[member]) {
          Issue.record(
            "\(device) \(e["id"] ?? ""): \(member) replay \(value), stream \(g[member] ?? "nil")")
        }
      }
    }
    // The data give real work: events of several tracks, with dwells.
    #expect(expected.count > 100, "\(expected.count) events")
    #expect(expectedByDevice.count >= 6, "\(expectedByDevice.keys.sorted())")
    #expect(expected.contains { $0["type"] as? String == "dwell" })
    print(
      "stream = replay: \(Self.tracks.count) tracks, \(fixCount) fixes, \(expected.count) events "
        + "on \(expectedByDevice.count) devices")
  }
}

/// The timed fixes of one bundled track, read independently of the engine's readers, in
/// time order (stable), as JSON Lines for `geofence stream`. Coordinates and times keep their
/// text from the file, so that both paths parse the same characters.
struct TrackFixes {
  var device: String
  var time: String
  var latitude: String
  var longitude: String
  var accuracy: String?

  var jsonLine: String {
    var s = "{\"device_id\":\(Self.quoted(device)),\"time\":\(Self.quoted(time)),"
    s += "\"latitude\":\(latitude),\"longitude\":\(longitude)"
    if let accuracy { s += ",\"accuracy\":\(accuracy)" }
    return s + "}"
  }

  static func quoted(_ s: String) -> String {
    let data = try? JSONSerialization.data(withJSONObject: [s], options: [.withoutEscapingSlashes])
    return String(decoding: data ?? Data(), as: UTF8.self).dropFirst().dropLast().description
  }

  /// Reads `path` (relative to the package root): the bundled CSVs (`;`-separated, columns
  /// user_id, latitude, longitude, accuracy, tracked_at; a time without a zone is UTC, as
  /// replay reads it) or a GPX file (track and route points, else waypoints; points without
  /// `<time>` are left out: replay drops them as `missingTime`). A fix without a device
  /// column belongs to the device named by the file's name, as in replay.
  static func read(_ path: String) throws -> [TrackFixes] {
    let url = TestPaths.packageRoot.appendingPathComponent(path)
    let fileDevice = url.lastPathComponent
    let data = try Data(contentsOf: url)
    var fixes: [TrackFixes] = []
    if path.hasSuffix(".csv") {
      let text = String(decoding: data, as: UTF8.self)
      var rows = text.split(whereSeparator: \.isNewline).map {
        $0.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
      }
      let header = rows.removeFirst()
      func column(_ name: String) -> Int? { header.firstIndex(of: name) }
      guard let lat = column("latitude"), let lon = column("longitude"),
        let time = column("tracked_at")
      else { throw CocoaError(.fileReadCorruptFile) }
      let device = column("user_id")
      let accuracy = column("accuracy")
      for row in rows where row.count == header.count {
        var t = row[time]
        if !t.hasSuffix("Z") && !t.contains("+") {
          t = t.replacingOccurrences(of: " ", with: "T") + "Z"
        }
        fixes.append(
          TrackFixes(
            device: device.map { row[$0] } ?? fileDevice, time: t, latitude: row[lat],
            longitude: row[lon], accuracy: accuracy.map { row[$0] }))
      }
    } else {
      // Latin-1 decodes any bytes; the parts read here are ASCII.
      let text = String(data: data, encoding: .isoLatin1) ?? ""
      func points(_ tags: String) throws -> [(String, String)] {
        let regex = try NSRegularExpression(
          pattern: "<(\(tags))\\b([^>]*?)(?:/>|>(.*?)</\\1>)", options: [.dotMatchesLineSeparators])
        let ns = text as NSString
        return regex.matches(in: text, range: NSRange(location: 0, length: ns.length)).map {
          let body =
            $0.range(at: 3).location == NSNotFound ? "" : ns.substring(with: $0.range(at: 3))
          return (ns.substring(with: $0.range(at: 2)), body)
        }
      }
      var found = try points("trkpt|rtept")
      if found.isEmpty { found = try points("wpt") }
      let attribute = try NSRegularExpression(pattern: "\\b(lat|lon)\\s*=\\s*[\"']([^\"']*)[\"']")
      let timeElement = try NSRegularExpression(pattern: "<time>\\s*([^<]*?)\\s*</time>")
      for (attributes, body) in found {
        let a = attributes as NSString
        var values: [String: String] = [:]
        for m in attribute.matches(in: attributes, range: NSRange(location: 0, length: a.length)) {
          values[a.substring(with: m.range(at: 1))] = a.substring(with: m.range(at: 2))
        }
        let b = body as NSString
        guard let lat = values["lat"], let lon = values["lon"],
          let m = timeElement.firstMatch(in: body, range: NSRange(location: 0, length: b.length))
        else { continue }
        fixes.append(
          TrackFixes(
            device: fileDevice, time: b.substring(with: m.range(at: 1)), latitude: lat,
            longitude: lon, accuracy: nil))
      }
    }
    // Stable sort by instant, as replay does before it takes a device's fixes.
    return fixes.enumerated().sorted {
      let (a, b) = (instant($0.element.time), instant($1.element.time))
      return a != b ? a < b : $0.offset < $1.offset
    }.map(\.element)
  }

  /// Seconds since 1970 of `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` (for sorting only).
  static func instant(_ text: String) -> Double {
    let chars = Array(text.utf8)
    func int(_ from: Int, _ count: Int) -> Int {
      var v = 0
      for c in chars[from..<min(chars.count, from + count)] { v = v * 10 + Int(c) - 48 }
      return v
    }
    guard chars.count >= 19 else { return .nan }
    let (y, m, d) = (int(0, 4), int(5, 2), int(8, 2))
    // Days from 1970-01-01 (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms").
    let yy = m <= 2 ? y - 1 : y
    let era = (yy >= 0 ? yy : yy - 399) / 400
    let yoe = yy - era * 400
    let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    let days = era * 146_097 + doe - 719_468
    var seconds = Double(days * 86_400 + int(11, 2) * 3_600 + int(14, 2) * 60 + int(17, 2))
    var i = 19
    if i < chars.count, chars[i] == UInt8(ascii: ".") {
      var scale = 0.1
      i += 1
      while i < chars.count, (48...57).contains(chars[i]) {
        seconds += Double(Int(chars[i]) - 48) * scale
        scale /= 10
        i += 1
      }
    }
    if i + 5 < chars.count, chars[i] == UInt8(ascii: "+") || chars[i] == UInt8(ascii: "-") {
      let offset = Double(int(i + 1, 2) * 3_600 + int(i + 4, 2) * 60)
      seconds -= chars[i] == UInt8(ascii: "+") ? offset : -offset
    }
    return seconds
  }
}

/// The same agreement on polygons: the posmo track against the Swiss cantons, lakes and
/// communes (GeoJSON Polygon and MultiPolygon features).
@Test(.waitsOnChildProcesses) func streamWritesReplaysEventsOnPolygons() throws {
  let track = "data/tracks/csv/posmo_trajectory.csv"
  let regions = ["--regions", "data/polygons/swiss_route_polygons.geojson"]
  let dir = try CLI.scratch("stream-replay-polygons")
  defer { try? FileManager.default.removeItem(at: dir) }
  let input = try TrackFixes.read(track).map { $0.jsonLine + "\n" }.joined()
  let inputFile = dir.appendingPathComponent("fixes.jsonl")
  try input.write(to: inputFile, atomically: true, encoding: .utf8)
  let replay = try CLI.run(["replay", "--quiet"] + regions + [track])
  #expect(replay.status == 0, "\(replay.stderr)")
  let stream = try CLI.run(["stream"] + regions + [inputFile.path])
  #expect(stream.status == 0, "\(stream.stderr)")
  var expected = CLI.objects(replay.stdout)
  for i in expected.indices {
    expected[i]["fix_index"] = nil
    expected[i]["track"] = nil
  }
  let actual = CLI.objects(stream.stdout)
  #expect(actual.count == expected.count)
  for (e, g) in zip(expected, actual) {
    #expect(Set(e.keys) == Set(g.keys))
    for (member, value) in e where !CLI.same(value, g[member]) {
      Issue.record("\(e["id"] ?? ""): \(member) replay \(value), stream \(g[member] ?? "nil")")
    }
  }
  // Both cantons, and the route's last commune, Lausanne.
  let entered = Set(
    expected.filter { $0["type"] as? String == "enter" }.compactMap {
      $0["geofence_id"] as? String
    })
  #expect(entered.isSuperset(of: ["canton-24", "canton-22", "commune-5586"]))
  #expect(expected.count == 63, "\(expected.count) events")
}
