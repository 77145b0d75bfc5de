import Foundation
import GeofenceTestSupport
import Testing

/// `geofence run` without --regions: geofences are synced from the server first, and a failed
/// sync goes on with the last good set.
@Suite(
  .waitsOnChildProcesses, .serialized,
  .enabled(if: ReferenceServer.isAvailable, "python3 with fastapi and uvicorn"))
struct RunSyncTests {
  @Test func runSyncsTheGeofencesUploadsOnceAndSurvivesAnOutage() async throws {
    let airports = TestPaths.data.appendingPathComponent("places/airports_geofences.csv").path
    let server = try await ReferenceServer.start(
      keys: ["k"], arguments: ["--import", airports, "--radius", "3000"])
    let store = TestScratch.root.appendingPathComponent(
      "geofence-run-sync-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: store) }
    let track = "data/tracks/csv/posmo_trajectory.csv"
    let arguments = [
      "run", "--server", server.baseURL.absoluteString, "--key", "k", "--store", store.path,
      track,
    ]

    let first = try CommandRunner.run(arguments)
    #expect(first.status == 0, "\(first.stderr)")
    #expect(first.stderr.contains("geofences: 28298 synced, version v1"))
    // The same 8 airport events as `geofence replay --radius 3000` (7 enter/exit + 1 dwell).
    #expect(first.stderr.contains("accepted 8, duplicates 0, dead-lettered 0"))
    // The run's sync leaves the synced set's indexed snapshot, as 'geofence sync' does.
    let check = try CommandRunner.run(["snapshot", "--store", store.path, "--check"])
    #expect(check.status == 0 && check.stdout == "snapshot: current\n", "\(check.stdout)")

    // Replaying the same track again makes the same event ids: nothing new is sent.
    let again = try CommandRunner.run(arguments)
    #expect(again.status == 0)
    #expect(again.stderr.contains("enqueued 0"))
    let (status, body) = try await server.request("GET", "/admin/events?key=k")
    #expect(status == 200)
    let stored = try JSONSerialization.jsonObject(with: body) as? [String: Any]
    #expect(stored?["event_count"] as? Int == 8)

    // Server gone: the stored set is used, marked stale.
    server.stop()
    let offline = try CommandRunner.run(arguments + ["--no-upload"])
    #expect(offline.status == 0, "\(offline.stderr)")
    #expect(
      offline.stderr.contains(
        "geofences: sync failed; using the 28298 stored at version v1 (stale: "))
  }

  @Test func runWithoutRegionsAndWithoutAnyStoredSetFailsWith69() throws {
    let store = TestScratch.root.appendingPathComponent(
      "geofence-run-nosync-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: store) }
    let r = try CommandRunner.run([
      "run", "--server", "http://127.0.0.1:9", "--key", "k", "--store", store.path,
      "--no-upload", "data/tracks/csv/posmo_trajectory.csv",
    ])
    #expect(r.status == 69)
    // The sync's own reason is named (nothing listens on port 9).
    #expect(r.stderr.contains("no earlier set is stored: sync failed: network:"), "\(r.stderr)")
  }
}
