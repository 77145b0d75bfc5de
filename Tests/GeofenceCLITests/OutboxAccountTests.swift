import Foundation
import GeofenceTestSupport
import Testing

/// The outbox belongs to the account of the key its events were queued with: another key is
/// refused with exit status 77 and sends nothing; the right key delivers.
@Suite(
  .waitsOnChildProcesses, .serialized,
  .enabled(if: ReferenceServer.isAvailable && CLI.hasPython, "python3 with fastapi"))
struct OutboxAccountTests {
  /// FNV-1a 64 of the key's UTF-8 bytes, 16 hex digits: the fingerprint `upload` documents.
  static func fingerprint(_ key: String) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in key.utf8 {
      hash ^= UInt64(byte)
      hash = hash &* 0x0000_0100_0000_01b3
    }
    let hex = String(hash, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
  }

  /// Checks that `upload --key other` is refused and sends nothing, then that `upload --key
  /// owner` delivers every queued event once.
  static func checkAccount(
    server: ReferenceServer, store: URL, owner: String, other: String
  ) async throws {
    let queued = try CLI.outboxEvents(store: store).map(\.id)
    #expect(queued.count == 8)
    let upload = ["upload", "--server", server.baseURL.absoluteString, "--store", store.path]
    let refused = try CLI.run(upload + ["--key", other])
    #expect(refused.status == 77, "\(refused.stderr)")
    #expect(refused.stderr.contains(Self.fingerprint(owner)), "\(refused.stderr)")
    #expect(refused.stderr.contains(Self.fingerprint(other)), "\(refused.stderr)")
    #expect(try await server.events(key: other)["event_count"] as? Int == 0)
    #expect(
      try CLI.outboxEvents(store: store).map(\.id) == queued, "the refusal changed the outbox")

    let delivered = try CLI.run(upload + ["--key", owner])
    #expect(delivered.status == 0, "\(delivered.stderr)")
    let report = try await server.events(key: owner)
    let ids = (report["events"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    #expect(ids.sorted() == queued.sorted())
    #expect(try await server.events(key: other)["event_count"] as? Int == 0)
  }

  @Test func eventsQueuedWhileTheServerIsDownGoOnlyToTheirAccount() async throws {
    let dir = try CLI.scratch("outbox-account")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeEquatorGeofences(in: dir)
    let track = try CLI.writeEquatorTrack(in: dir)
    let store = dir.appendingPathComponent("store")
    // Port 9 (discard) on loopback: nothing listens; the events stay queued.
    let run = try CLI.run([
      "run", "--server", "http://127.0.0.1:9", "--key", "account-a", "--store", store.path,
      "--max-attempts", "1", "--timeout", "2", "--regions", regions, track,
    ])
    #expect(run.status == 75, "\(run.stderr)")
    let server = try await ReferenceServer.start(keys: ["account-a", "account-b"])
    defer { server.stop() }
    try await Self.checkAccount(
      server: server, store: store, owner: "account-a", other: "account-b")
  }

  @Test func eventsQueuedWithNoUploadGoOnlyToTheirAccount() async throws {
    let server = try await ReferenceServer.start(keys: ["account-a", "account-b"])
    defer { server.stop() }
    let dir = try CLI.scratch("outbox-account-no-upload")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = try CLI.writeEquatorGeofences(in: dir)
    let track = try CLI.writeEquatorTrack(in: dir)
    let store = dir.appendingPathComponent("store")
    let run = try CLI.run([
      "run", "--no-upload", "--server", server.baseURL.absoluteString, "--key", "account-a",
      "--store", store.path, "--regions", regions, track,
    ])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(try await server.events(key: "account-a")["event_count"] as? Int == 0)
    try await Self.checkAccount(
      server: server, store: store, owner: "account-a", other: "account-b")
  }
}
