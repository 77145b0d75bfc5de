import Foundation
import GeofenceTestSupport
import Testing

/// `--infer-crossings` end to end: two fixes on the equator 0.03° W and 0.03° E, 200 s apart,
/// past a 1,000 m town 0.005° north of the path (the chord of
/// `CrossingInferenceTests.chordThroughACircle`: ENTER at 75.083 s, EXIT at 124.917 s after
/// the epoch start chosen here).
@Suite("geofence replay/stream --infer-crossings", .waitsOnChildProcesses)
struct InferCrossingsCommandTests {
  static func files() throws -> (dir: URL, regions: String, track: String) {
    let dir = try CLI.scratch("crossings")
    let regions = dir.appendingPathComponent("towns.csv")
    try "id,name,latitude,longitude,radius\ntown,Town,0.005,0,1000\n".write(
      to: regions, atomically: true, encoding: .utf8)
    let track = dir.appendingPathComponent("track.csv")
    try "lat,lon,timestamp,accuracy\n0,-0.03,1796000000,10\n0,0.03,1796000200,10\n".write(
      to: track, atomically: true, encoding: .utf8)
    return (dir, regions.path, track.path)
  }

  @Test func replayWritesTheFlaggedPairOnlyWithTheOption() throws {
    let (dir, regions, track) = try Self.files()
    defer { try? FileManager.default.removeItem(at: dir) }
    let off = try CLI.run(["replay", "--quiet", "--regions", regions, track])
    #expect(off.status == 0)
    #expect(off.stdout.isEmpty)

    let on = try CLI.run(["replay", "--quiet", "--infer-crossings", "--regions", regions, track])
    #expect(on.status == 0, "\(on.stderr)")
    let events = CLI.objects(on.stdout)
    try #require(events.count == 2)
    #expect(events.map { $0["type"] as? String } == ["enter", "exit"])
    #expect(events.allSatisfy { $0["inferred"] as? Bool == true })
    #expect(events[0]["time"] as? String == "2026-11-30T00:54:35.083Z")
    #expect(events[1]["time"] as? String == "2026-11-30T00:55:24.917Z")
    #expect(events[1]["visit_s"] as? Double == 49.834)
    #expect(events[0]["distance_m"] as? Double == 1000.0)
    #expect(events.allSatisfy { $0["fix_index"] as? Int == 1 })
    // The member comes last, after fix_index and track.
    #expect(CLI.lines(on.stdout).allSatisfy { $0.hasSuffix(#","inferred":true}"#) })
    // Stable, distinct ids: a second run gives the same.
    let again = try CLI.run(["replay", "--quiet", "--infer-crossings", "--regions", regions, track])
    #expect(again.stdout == on.stdout)
    let ids = events.compactMap { $0["id"] as? String }
    #expect(Set(ids).count == 2)

    // CSV: the inferred column is there only with the option.
    let csv = try CLI.run([
      "replay", "--quiet", "--format", "csv", "--infer-crossings", "--regions", regions, track,
    ])
    let rows = CLI.lines(csv.stdout)
    #expect(rows.count == 3)
    #expect(rows.first?.hasSuffix(",fix_index,track,inferred") == true)
    #expect(rows.dropFirst().allSatisfy { $0.hasSuffix(",true") })
    let plainCSV = try CLI.run([
      "replay", "--quiet", "--format", "csv", "--regions", regions, track,
    ])
    #expect(plainCSV.stdout.hasSuffix(",fix_index,track\n"))
  }

  @Test func streamTakesTheSameOption() throws {
    let (dir, regions, _) = try Self.files()
    defer { try? FileManager.default.removeItem(at: dir) }
    let input = """
      {"device_id":"a","time":1796000000,"latitude":0,"longitude":-0.03,"accuracy":10}
      {"device_id":"a","time":1796000200,"latitude":0,"longitude":0.03,"accuracy":10}

      """
    let r = try CLI.run(
      ["stream", "--quiet", "--infer-crossings", "--regions", regions], input: Data(input.utf8))
    #expect(r.status == 0, "\(r.stderr)")
    let events = CLI.objects(r.stdout)
    #expect(events.map { $0["type"] as? String } == ["enter", "exit"])
    #expect(events.allSatisfy { $0["inferred"] as? Bool == true })
    #expect(events.first?["time"] as? String == "2026-11-30T00:54:35.083Z")
  }
}
