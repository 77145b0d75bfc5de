import Foundation
import GeofenceTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `stream --server --sync-interval` against the reference server: a change the server makes
/// while the input is idle is applied before the next fix, so that fix is checked against the
/// new set, not the one from before the pause.
@Suite(
  .waitsOnChildProcesses,
  .enabled(if: ReferenceServer.isAvailable, "python3 with fastapi and uvicorn"))
struct StreamLiveSyncTests {
  /// Standard output of a running process, collected as it comes.
  final class Collected: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func append(_ d: Data) { lock.withLock { data.append(d) } }
    var lines: [String] {
      lock.withLock { CLI.lines(String(decoding: data, as: UTF8.self)) }
    }
    /// Waits up to `seconds` for at least `count` lines.
    func waitFor(_ count: Int, seconds: Double) -> [String] {
      let end = Date().addingTimeInterval(seconds)
      while lines.count < count && Date() < end { Thread.sleep(forTimeInterval: 0.02) }
      return lines
    }
  }

  /// With `--exit-on-removal`, X's removal gives d1 an EXIT flagged as a removal. After the
  /// stream ends, the store's indexed snapshot is current (written for the synced set).
  @Test(arguments: [false, true])
  func aChangeMadeWhileTheInputIsIdleIsAppliedBeforeTheNextFix(exitOnRemoval: Bool)
    async throws
  {
    let key = "live-sync-key"
    let server = try await ReferenceServer.start(keys: [key])
    defer { server.stop() }
    try await server.replaceGeofences(
      key: key, [ReferenceServer.geofence("X", latitude: 0, longitude: 0, radius: 100)])
    let dir = try CLI.scratch("stream-live-sync")
    defer { try? FileManager.default.removeItem(at: dir) }
    let store = dir.appendingPathComponent("store").path
    let url = server.baseURL.absoluteString
    let sync = try CLI.run(["sync", "--server", url, "--key", key, "--store", store])
    #expect(sync.status == 0, "\(sync.stderr)")

    let process = Process()
    process.executableURL = CLI.executable
    process.arguments =
      [
        "stream", "--store", store, "--server", url, "--key", key, "--sync-interval", "1",
      ] + (exitOnRemoval ? ["--exit-on-removal"] : [])
    let input = Pipe()
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    let collected = Collected()
    output.fileHandleForReading.readabilityHandler = { handle in
      collected.append(handle.availableData)
    }
    try process.run()
    defer {
      if process.isRunning { kill(process.processIdentifier, SIGKILL) }
      process.waitUntilExit()
      output.fileHandleForReading.readabilityHandler = nil
    }
    func fix(_ t: Int) {
      input.fileHandleForWriting.write(
        Data(
          #"{"device_id":"d1","time":\#(1_796_014_800 + t),"latitude":0,"longitude":0}"#.utf8
            + [10]))
    }
    fix(0)
    #expect(collected.waitFor(1, seconds: 10).count == 1)
    // X is deleted and Q (800 m) added where d1 is; the input stays idle for 2.5 s.
    try await server.patchGeofences(
      key: key, upsert: [ReferenceServer.geofence("Q", latitude: 0, longitude: 0, radius: 800)],
      delete: ["X"])
    try await Task.sleep(nanoseconds: 2_500_000_000)
    fix(60)
    let lines = collected.waitFor(exitOnRemoval ? 3 : 2, seconds: 10)
    try input.fileHandleForWriting.close()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)
    let events = CLI.objects(lines.joined(separator: "\n")).map {
      "\($0["type"] ?? "") \($0["geofence_id"] ?? "")"
        + ($0["removal"] as? Bool == true ? " (removed)" : "")
    }
    let expected =
      ["enter X"] + (exitOnRemoval ? ["exit X (removed)"] : []) + ["enter Q"]
    #expect(events == expected, "\(lines)")
    let snapshot = try CLI.run(["snapshot", "--store", store, "--check"])
    #expect(snapshot.status == 0, "\(snapshot.stdout) \(snapshot.stderr)")
  }
}
