import Foundation
import GeofenceTestSupport
import Testing

/// The Swiss polygons imported into the reference server, synced by `geofence sync`, then
/// monitored from the store by `run`, `stream` and listed by `regions`: the events equal
/// `replay` on the same GeoJSON file, and `run` uploads each of them once.
@Suite(
  .waitsOnChildProcesses, .serialized,
  .enabled(if: ReferenceServer.isAvailable, "python3 with fastapi and uvicorn"))
struct PolygonSyncCommandTests {
  static let polygons = "data/polygons/swiss_route_polygons.geojson"
  static let track = "data/tracks/csv/posmo_trajectory.csv"

  @Test func syncedPolygonsGiveReplaysEventsThroughRunStreamAndTheUpload() async throws {
    let server = try await ReferenceServer.start(
      keys: ["k"],
      arguments: ["--import", TestPaths.packageRoot.appendingPathComponent(Self.polygons).path])
    defer { server.stop() }
    let dir = try CLI.scratch("polygon-sync")
    defer { try? FileManager.default.removeItem(at: dir) }
    let store = dir.appendingPathComponent("store").path

    let sync = try CLI.run([
      "sync", "--server", server.baseURL.absoluteString, "--key", "k", "--store", store,
    ])
    #expect(sync.status == 0, "\(sync.stderr)")

    // regions: every polygon back as its geometry.
    let regions = try CLI.run(["regions", "--store", store, "--format", "jsonl", "--quiet"])
    #expect(regions.status == 0, "\(regions.stderr)")
    let listed = CLI.objects(regions.stdout)
    #expect(listed.count == 38)
    #expect(listed.allSatisfy { $0["geometry"] is [String: Any] && $0["radius"] == nil })

    // The oracle: replay on the file itself.
    let replay = try CLI.run(["replay", "--quiet", "--regions", Self.polygons, Self.track])
    #expect(replay.status == 0, "\(replay.stderr)")
    var expected = CLI.objects(replay.stdout)
    for i in expected.indices {
      expected[i]["fix_index"] = nil
      expected[i]["track"] = nil
    }
    #expect(expected.count == 63)

    // stream --store on the same fixes in time order: the same events, member for member.
    let input = try TrackFixes.read(Self.track).map { $0.jsonLine + "\n" }.joined()
    let fixes = dir.appendingPathComponent("fixes.jsonl")
    try input.write(to: fixes, atomically: true, encoding: .utf8)
    let stream = try CLI.run(["stream", "--store", store, fixes.path])
    #expect(stream.status == 0, "\(stream.stderr)")
    let streamed = CLI.objects(stream.stdout)
    #expect(streamed.count == expected.count)
    for (e, g) in zip(expected, streamed) {
      for (member, value) in e where !CLI.same(value, g[member]) {
        Issue.record("\(e["id"] ?? ""): \(member) replay \(value), stream \(g[member] ?? "nil")")
      }
    }

    // run --store: syncs (unchanged), replays into the outbox and uploads: the server holds
    // exactly replay's events, by id, type, geofence and time.
    let run = try CLI.run([
      "run", "--server", server.baseURL.absoluteString, "--key", "k", "--store", store,
      Self.track,
    ])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.stderr.contains("accepted 63, duplicates 0, dead-lettered 0"), "\(run.stderr)")
    let report = try await server.events(key: "k")
    let uploaded = (report["events"] as? [[String: Any]] ?? []).compactMap {
      $0["event"] as? [String: Any]
    }
    func key(_ e: [String: Any]) -> String {
      ["id", "type", "geofence_id", "geofence_name", "time"].map { "\(e[$0] ?? "nil")" }
        .joined(separator: " ")
    }
    #expect(Set(uploaded.map(key)) == Set(expected.map(key)))
    #expect(uploaded.count == 63)
  }
}
