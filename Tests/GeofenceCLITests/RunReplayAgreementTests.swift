import Foundation
import GeofenceTestSupport
import Testing

/// A GPX 1.1 track whose points have no `<time>`: `geofence run` (through the gate into the
/// outbox) and `geofence replay` must give the same events, and both the transitions worked
/// out on the line by hand.
@Suite(.waitsOnChildProcesses, .enabled(if: CLI.hasPython, "python3 reads the outbox"))
struct RunReplayAgreementTests {
  /// The walk east of ``CLI/equatorFixEast(_:)`` as GPX 1.1 track points without times.
  static func writeUntimedGPX(in dir: URL) throws -> String {
    var text = """
      <?xml version="1.0" encoding="UTF-8"?>
      <gpx version="1.1" creator="tests" xmlns="http://www.topografix.com/GPX/1/1">
      <trk><name>east</name><trkseg>

      """
    for s in 0..<100 {
      text += "<trkpt lat=\"0\" lon=\"\(CLI.equatorFixEast(s))\"><ele>12</ele></trkpt>\n"
    }
    text += "</trkseg></trk></gpx>\n"
    let url = dir.appendingPathComponent("untimed.gpx")
    try text.write(to: url, atomically: true, encoding: .utf8)
    return url.path
  }

  @Test func untimedGPXGivesTheSameEventsUnderRunAndReplay() throws {
    let dir = try CLI.scratch("run-replay")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeEquatorGeofences(in: dir)
    let track = try Self.writeUntimedGPX(in: dir)
    let store = dir.appendingPathComponent("store")

    let replay = try CLI.run(["replay", "--radius", "50", "--regions", regions, track])
    #expect(replay.status == 0, "\(replay.stderr)")
    #expect(replay.stderr.contains("no fix has a time"), "\(replay.stderr)")
    let run = try CLI.run([
      "run", "--no-upload", "--store", store.path, "--radius", "50", "--regions", regions, track,
    ])
    #expect(run.status == 0, "\(run.stderr)")

    let replayed = CLI.objects(replay.stdout)
    let queued = try CLI.outboxEvents(store: store)
    let expected = CLI.equatorTransitions()
    #expect(expected.count == 8)
    #expect(replayed.count == expected.count, "\(replay.stdout)")
    #expect(queued.count == expected.count)
    for (i, e) in expected.enumerated() where i < replayed.count && i < queued.count {
      let r = replayed[i]
      let (id, q) = queued[i]
      // Replay against the hand-worked transitions.
      #expect(r["type"] as? String == e.type && r["geofence_id"] as? String == e.id, "\(i): \(r)")
      #expect(r["fix_index"] as? Int == e.fix, "\(i): \(r)")
      #expect(abs((r["distance_m"] as? Double ?? -1) - e.distance) < 0.002, "\(i): \(r)")
      #expect(r["time"] is NSNull, "a track without times gives events without time")
      // As text: Foundation's JSON parser on Linux can miss the last bit of a double.
      let line = CLI.lines(replay.stdout)[i]
      #expect(line.contains("\"longitude\":\(CLI.equatorFixEast(e.fix)),"), "\(line)")
      // Run's outbox against replay.
      #expect(id == r["id"] as? String, "\(i)")
      for member in ["type", "geofence_id", "latitude", "longitude", "distance_m", "time"] {
        #expect(
          CLI.same(q[member], r[member]),
          "\(i) \(member): run \(q[member] ?? "nil"), replay \(r[member] ?? "nil")")
      }
    }
  }
}
