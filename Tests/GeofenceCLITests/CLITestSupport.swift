import Foundation
import GeofenceTestSupport

/// Helpers shared by the stream, regions, run and outbox CLI tests: a scratch folder, the
/// binary run with a given standard input, and JSON Lines parsing.
enum CLI {
  /// What a finished run wrote, and its exit status.
  struct Output {
    var status: Int32
    var stdout: String
    var stderr: String
  }

  /// The built `geofence` executable (see ``CommandRunner/executable``).
  static var executable: URL {
    CommandRunner.executable
      ?? TestPaths.packageRoot.appendingPathComponent(".build/debug/geofence")
  }

  /// A new empty folder under the temporary directory.
  static func scratch(_ label: String) throws -> URL {
    let url = TestScratch.root.appendingPathComponent(
      "geofence-\(label)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
  }

  /// Runs `geofence` in the package root with `input` as its standard input (nothing when nil)
  /// and waits for it (``CommandRunner/run(_:in:input:)``).
  static func run(
    _ arguments: [String], input: Data? = nil, environment: [String: String] = [:]
  ) throws -> Output {
    let r = try CommandRunner.run(arguments, input: input, environment: environment)
    return Output(status: r.status, stdout: r.stdout, stderr: r.stderr)
  }

  /// Non-empty lines of `text`.
  /// Runs the binary with standard output on `/dev/full` (every write fails: "No space left
  /// on device"), standard error captured.
  static func runWithFullStandardOutput(_ arguments: [String]) throws -> (
    status: Int32, stderr: String
  ) {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    guard let full = FileHandle(forWritingAtPath: "/dev/full") else {
      throw CocoaError(.fileNoSuchFile)
    }
    process.standardOutput = full
    let errors = Pipe()
    process.standardError = errors
    try process.run()
    let err = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, err)
  }

  static func lines(_ text: String) -> [String] {
    text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
  }

  /// Each line of `text` parsed as a JSON object (a line that is not one fails the caller's
  /// count checks, since it is left out).
  static func objects(_ text: String) -> [[String: Any]] {
    lines(text).compactMap {
      try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }
  }

  /// Whether two parsed JSON values are equal (objects regardless of key order): their texts
  /// with sorted keys are the same.
  static func same(_ a: Any?, _ b: Any?) -> Bool {
    func text(_ v: Any?) -> Data? {
      try? JSONSerialization.data(withJSONObject: [v ?? NSNull()], options: [.sortedKeys])
    }
    return text(a) != nil && text(a) == text(b)
  }

  /// Rows of `SELECT id, payload FROM events ORDER BY seq` in `outbox.sqlite`, read with
  /// Python's sqlite3 module (the CLI tests do not link the outbox).
  static func outboxEvents(store: URL) throws -> [(id: String, payload: [String: Any])] {
    let script = """
      import json, sqlite3, sys
      c = sqlite3.connect(sys.argv[1])
      print(json.dumps([[i, p] for i, p in c.execute(
          'SELECT id, payload FROM events ORDER BY seq')]))
      """
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [
      "python3", "-c", script, store.appendingPathComponent("outbox.sqlite").path,
    ]
    let out = Pipe()
    process.standardOutput = out
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let rows = try JSONSerialization.jsonObject(with: data) as? [[Any]] ?? []
    return rows.compactMap { row in
      guard let id = row.first as? String, let text = row.last as? String,
        let payload = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
      else { return nil }
      return (id, payload)
    }
  }

  /// Runs one SQL statement with `parameters` on the SQLite file at `path`, with Python's
  /// sqlite3 module (the CLI tests do not link SQLite): how a test writes what an older
  /// version, or a damaged file, would hold.
  /// - Returns: the rows it selected, as JSON text.
  @discardableResult
  static func sqlite(_ path: URL, _ sql: String, _ parameters: [String] = []) throws -> String {
    let script = """
      import json, sqlite3, sys
      c = sqlite3.connect(sys.argv[1])
      rows = c.execute(sys.argv[2], sys.argv[3:]).fetchall()
      c.commit()
      print(json.dumps(rows))
      """
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", "-c", script, path.path, sql] + parameters
    let out = Pipe()
    process.standardOutput = out
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
  }

  /// Whether `python3` is on the `PATH` (for reading SQLite files).
  static let hasPython: Bool = {
    let probe = Process()
    probe.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    probe.arguments = ["python3", "-c", "import sqlite3"]
    probe.standardOutput = FileHandle.nullDevice
    probe.standardError = FileHandle.nullDevice
    guard (try? probe.run()) != nil else { return false }
    probe.waitUntilExit()
    return probe.terminationStatus == 0
  }()

  /// Metres per degree of latitude on the engine's sphere (IUGG mean radius 6,371,008.8 m).
  static let metersPerDegree = Double.pi / 180 * 6_371_008.8

  /// Four geofences of 100 m on the equator, 0.001° to 0.007° east, with metadata: an https
  /// url, an invalid one, a custom scheme, none.
  static var equatorGeofences: [[String: Any]] {
    [
      [
        "id": "offer-1", "name": "Offer one", "latitude": 0, "longitude": 0.001, "radius": 100,
        "metadata": [
          "url": "https://example.com/offer/1", "campaign": ["n": 7, "tags": ["a", "b"]],
        ],
      ],
      [
        "id": "bad-url", "latitude": 0, "longitude": 0.003, "radius": 100,
        "metadata": ["url": "not a url", "x": 1.5],
      ],
      [
        "id": "app-link", "name": "App", "latitude": 0, "longitude": 0.005, "radius": 100,
        "metadata": ["url": "myapp://x"],
      ],
      ["id": "plain", "latitude": 0, "longitude": 0.007, "radius": 100],
    ]
  }

  /// East along the equator: fix `s` (0..<100) at 10·s − 30 m east of 0°, 10·s s after
  /// 2026-11-30T05:00:00Z.
  static func equatorFixEast(_ s: Int) -> Double { (Double(s) * 10 - 30) / metersPerDegree }

  /// Writes `geofences.json` (``equatorGeofences``) and returns its path.
  static func writeEquatorGeofences(in dir: URL) throws -> String {
    let url = dir.appendingPathComponent("geofences.json")
    try JSONSerialization.data(withJSONObject: equatorGeofences, options: [.sortedKeys])
      .write(to: url)
    return url.path
  }

  /// Writes `regions.csv` in `dir`: one geofence "a" ("A") of 1 km at (0, 0); returns its
  /// path.
  static func writeOneRegion(in dir: URL) throws -> String {
    let path = dir.appendingPathComponent("regions.csv").path
    try "id,name,latitude,longitude,radius\na,A,0,0,1000\n".write(
      toFile: path, atomically: true, encoding: .utf8)
    return path
  }

  /// Writes the walk east as `track.csv` (time, latitude, longitude) and returns its path.
  static func writeEquatorTrack(in dir: URL) throws -> String {
    var text = "time,latitude,longitude\n"
    for s in 0..<100 { text += "\(1_796_014_800 + 10 * s),0,\(equatorFixEast(s))\n" }
    let url = dir.appendingPathComponent("track.csv")
    try text.write(to: url, atomically: true, encoding: .utf8)
    return url.path
  }

  /// The ENTER and EXIT fixes of the walk east, worked out on the line: ENTER at the first fix
  /// within `r` = 100 m of a centre, EXIT at the first later fix beyond r + h, h = max(20 m,
  /// 0.1 r) = 20 m (the fixes have no accuracy). Each with (type, geofence id, fix, distance).
  static func equatorTransitions() -> [(type: String, id: String, fix: Int, distance: Double)] {
    var out: [(String, String, Int, Double)] = []
    for g in equatorGeofences {
      let id = g["id"] as? String ?? ""
      let centre = (g["longitude"] as? Double ?? 0) * metersPerDegree
      let distances = (0..<100).map { abs(Double($0) * 10 - 30 - centre) }
      guard let enter = distances.firstIndex(where: { $0 <= 100 }) else { continue }
      out.append(("enter", id, enter, distances[enter]))
      if let exit = distances[enter...].firstIndex(where: { $0 > 120 }) {
        out.append(("exit", id, exit, distances[exit]))
      }
    }
    return out.sorted {
      ($0.2, $0.0 == "enter" ? 1 : 0, $0.1) < ($1.2, $1.0 == "enter" ? 1 : 0, $1.1)
    }
  }
}
