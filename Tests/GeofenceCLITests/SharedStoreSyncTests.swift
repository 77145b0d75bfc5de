import Foundation
import GeofenceTestSupport
import Testing

/// Several processes syncing one store directory, against the reference server.
@Suite(
  .waitsOnChildProcesses,
  .enabled(if: ReferenceServer.isAvailable, "python3 with fastapi and uvicorn"))
struct SharedStoreSyncTests {
  /// Two full listings of one store at once, in pages of 5: each waits for the other's
  /// `sync.lock`, so the store ends with the whole set of 60 (before, one process's commit
  /// took the other's staged pages away and the store kept a fraction, for good).
  @Test func twoSyncsAtOnceKeepTheWholeSet() async throws {
    let key = "shared-sync-key"
    let server = try await ReferenceServer.start(keys: [key])
    defer { server.stop() }
    try await server.replaceGeofences(
      key: key,
      (0..<60).map {
        ReferenceServer.geofence("g\($0)", latitude: 0, longitude: Double($0) * 0.01, radius: 100)
      })
    let dir = try CLI.scratch("shared-sync")
    defer { try? FileManager.default.removeItem(at: dir) }
    let store = dir.appendingPathComponent("store").path
    let arguments = [
      "sync", "--server", server.baseURL.absoluteString, "--key", key, "--store", store,
      "--page-size", "5",
    ]
    let processes = (0..<2).map { _ in
      let p = Process()
      p.executableURL = CLI.executable
      p.arguments = arguments
      p.standardOutput = FileHandle.nullDevice
      p.standardError = FileHandle.nullDevice
      return p
    }
    for p in processes { try p.run() }
    for p in processes {
      p.waitUntilExit()
      #expect(p.terminationStatus == 0)
    }
    let regions = try CLI.run(["regions", "--store", store, "--format", "jsonl"])
    #expect(regions.status == 0, "\(regions.stderr)")
    #expect(CLI.objects(regions.stdout).count == 60, "\(regions.stderr)")
  }

  /// A `geofence sync` of the stream's store by another process, between two of the stream's
  /// own syncs: the stream's next sync finds the store's set newer than its own and applies
  /// the difference first, so X's removal (with its EXIT) and Q's addition reach it, as when
  /// the stream syncs the change itself.
  @Test func aStreamFollowsAChangeAnotherProcessSynced() async throws {
    let key = "shared-stream-key"
    let server = try await ReferenceServer.start(keys: [key])
    defer { server.stop() }
    try await server.replaceGeofences(
      key: key, [ReferenceServer.geofence("X", latitude: 0, longitude: 0, radius: 100)])
    let dir = try CLI.scratch("shared-stream")
    defer { try? FileManager.default.removeItem(at: dir) }
    let store = dir.appendingPathComponent("store").path
    let url = server.baseURL.absoluteString
    let sync = ["sync", "--server", url, "--key", key, "--store", store]
    #expect(try CLI.run(sync).status == 0)

    let stream = try RunningStream([
      "stream", "--store", store, "--server", url, "--key", key, "--sync-interval", "2",
      "--exit-on-removal",
    ])
    stream.fix(0)
    #expect(stream.collected.waitFor(1, seconds: 10).count == 1)
    try await server.patchGeofences(
      key: key, upsert: [ReferenceServer.geofence("Q", latitude: 0, longitude: 0, radius: 800)],
      delete: ["X"])
    #expect(try CLI.run(sync).status == 0)
    // The stream's own sync (every 2 s) runs before the next fix.
    try await Task.sleep(nanoseconds: 3_000_000_000)
    stream.fix(60)
    let lines = stream.collected.waitFor(3, seconds: 10)
    #expect(try stream.finish() == 0)
    #expect(
      RunningStream.summaries(lines) == ["enter X", "exit X (removed)", "enter Q"], "\(lines)")
  }
}
