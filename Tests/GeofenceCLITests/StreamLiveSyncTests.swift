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

    let stream = try RunningStream(
      [
        "stream", "--store", store, "--server", url, "--key", key, "--sync-interval", "1",
      ] + (exitOnRemoval ? ["--exit-on-removal"] : []))
    stream.fix(0)
    #expect(stream.collected.waitFor(1, seconds: 10).count == 1)
    // X is deleted and Q (800 m) added where d1 is; the input stays idle for 2.5 s.
    try await server.patchGeofences(
      key: key, upsert: [ReferenceServer.geofence("Q", latitude: 0, longitude: 0, radius: 800)],
      delete: ["X"])
    try await Task.sleep(nanoseconds: 2_500_000_000)
    stream.fix(60)
    let lines = stream.collected.waitFor(exitOnRemoval ? 3 : 2, seconds: 10)
    #expect(try stream.finish() == 0)
    let expected =
      ["enter X"] + (exitOnRemoval ? ["exit X (removed)"] : []) + ["enter Q"]
    #expect(RunningStream.summaries(lines) == expected, "\(lines)")
    let snapshot = try CLI.run(["snapshot", "--store", store, "--check"])
    #expect(snapshot.status == 0, "\(snapshot.stdout) \(snapshot.stderr)")
  }
}

/// `geofence stream` running with its input on a pipe and its output collected as it comes;
/// killed when released while still running.
final class RunningStream: @unchecked Sendable {
  let process = Process()
  let input = Pipe()
  private let output = Pipe()
  let collected = StreamLiveSyncTests.Collected()

  init(_ arguments: [String]) throws {
    process.executableURL = CLI.executable
    process.arguments = arguments
    process.standardInput = input
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    let collected = self.collected
    output.fileHandleForReading.readabilityHandler = { collected.append($0.availableData) }
    try process.run()
  }

  /// Writes a fix of device d1 at (0, 0), `t` seconds after 1,796,014,800.
  func fix(_ t: Int) {
    input.fileHandleForWriting.write(
      Data(
        #"{"device_id":"d1","time":\#(1_796_014_800 + t),"latitude":0,"longitude":0}"#.utf8
          + [10]))
  }

  /// Ends the input and waits for the process: its exit status.
  func finish() throws -> Int32 {
    try input.fileHandleForWriting.close()
    process.waitUntilExit()
    return process.terminationStatus
  }

  /// Each event line as "type geofence_id", with " (removed)" for a removal EXIT.
  static func summaries(_ lines: [String]) -> [String] {
    CLI.objects(lines.joined(separator: "\n")).map {
      "\($0["type"] ?? "") \($0["geofence_id"] ?? "")"
        + ($0["removal"] as? Bool == true ? " (removed)" : "")
    }
  }

  deinit {
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
    output.fileHandleForReading.readabilityHandler = nil
  }
}
