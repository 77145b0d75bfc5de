import Foundation
import GeofenceTestSupport
import Testing

/// The outbox belongs to the account of the key its events were queued with: another key is
/// refused with exit status 77 and sends nothing; the right key delivers.
@Suite(
  .waitsOnChildProcesses, .serialized,
  .enabled(if: ReferenceServer.isAvailable && CLI.hasPython, "python3 with fastapi"))
struct OutboxAccountTests {
  /// The fingerprint `upload` documents, computed by Python's hashlib (an independent
  /// PBKDF2): `pbkdf2-sha256:` and the first 16 bytes of PBKDF2-HMAC-SHA256 of the key, salt
  /// `geofence/api-key-fingerprint/v1`, 100,000 iterations, in hex.
  static func fingerprint(_ key: String) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [
      "python3", "-c",
      "import hashlib, sys; print('pbkdf2-sha256:' + hashlib.pbkdf2_hmac('sha256', "
        + "sys.argv[1].encode(), b'geofence/api-key-fingerprint/v1', 100000, 16).hex())", key,
    ]
    let out = Pipe()
    process.standardOutput = out
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .newlines)
  }

  /// FNV-1a 64 of the key's UTF-8 bytes, 16 hex digits: the fingerprint earlier versions
  /// stored.
  static func legacyFingerprint(_ key: String) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in key.utf8 {
      hash ^= UInt64(byte)
      hash = hash &* 0x0000_0100_0000_01b3
    }
    let hex = String(hash, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
  }

  /// A store in `dir` whose outbox holds the 8 events of the walk east over the equator
  /// geofences, queued by `run --no-upload` with `key` (nothing is sent).
  static func queueEvents(server: ReferenceServer, key: String, in dir: URL) throws -> URL {
    let store = dir.appendingPathComponent("store")
    let run = try CLI.run([
      "run", "--no-upload", "--server", server.baseURL.absoluteString, "--key", key,
      "--store", store.path, "--regions", try CLI.writeEquatorGeofences(in: dir),
      try CLI.writeEquatorTrack(in: dir),
    ])
    #expect(run.status == 0, "\(run.stderr)")
    return store
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
    #expect(
      refused.stderr.contains(
        "(key fingerprint \(try Self.fingerprint(owner))); this key's fingerprint is "
          + (try Self.fingerprint(other))), "\(refused.stderr)")
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

  /// A store whose outbox account an earlier version recorded as FNV-1a 64 of the key: the
  /// owner's key is recognised and the fingerprint replaced by the current one; another key
  /// is refused (77) without the old fingerprint in the message.
  @Test func anEarlierVersionsFingerprintIsRecognisedAndReplaced() async throws {
    let server = try await ReferenceServer.start(keys: ["account-a", "account-b"])
    defer { server.stop() }
    let dir = try CLI.scratch("outbox-account-legacy")
    defer { try? FileManager.default.removeItem(at: dir) }
    let store = try Self.queueEvents(server: server, key: "account-a", in: dir)
    // The record is kept with the events, in the outbox's own file.
    let outbox = store.appendingPathComponent("outbox.sqlite")
    let read = "SELECT fingerprint FROM account"
    #expect(try CLI.sqlite(outbox, read) == "[[\"\(try Self.fingerprint("account-a"))\"]]\n")
    // An earlier version kept it in state.sqlite only, as FNV-1a 64 of the key.
    let state = store.appendingPathComponent("state.sqlite")
    let legacy = Self.legacyFingerprint("account-a")
    try CLI.sqlite(outbox, "DELETE FROM account")
    try CLI.sqlite(
      state,
      "INSERT INTO engine_state (key, value) VALUES ('outbox_account', ?) "
        + "ON CONFLICT (key) DO UPDATE SET value = excluded.value", ["\"\(legacy)\""])

    let upload = ["upload", "--server", server.baseURL.absoluteString, "--store", store.path]
    let refused = try CLI.run(upload + ["--key", "account-b"])
    #expect(refused.status == 77, "\(refused.stderr)")
    #expect(
      refused.stderr.contains(
        "(its key's fingerprint, recorded by an earlier version, is not shown); this key's "
          + "fingerprint is \(try Self.fingerprint("account-b"))"), "\(refused.stderr)")
    #expect(!refused.stderr.contains(legacy))
    let delivered = try CLI.run(upload + ["--key", "account-a"])
    #expect(delivered.status == 0, "\(delivered.stderr)")
    #expect(try await server.events(key: "account-a")["event_count"] as? Int == 8)
    #expect(try CLI.sqlite(outbox, read) == "[[\"\(try Self.fingerprint("account-a"))\"]]\n")
  }

  /// The account is kept with the events: a `state.sqlite` repaired to nothing, or holding a
  /// garbled record, does not free the queued events for another key.
  @Test func aRepairedOrGarbledStateKeepsTheOutboxBound() async throws {
    let server = try await ReferenceServer.start(keys: ["account-a", "account-b"])
    defer { server.stop() }
    let dir = try CLI.scratch("outbox-account-repair")
    defer { try? FileManager.default.removeItem(at: dir) }
    let store = try Self.queueEvents(server: server, key: "account-a", in: dir)
    let state = store.appendingPathComponent("state.sqlite")
    try CLI.sqlite(
      state,
      "INSERT INTO engine_state (key, value) VALUES ('outbox_account', '{') "
        + "ON CONFLICT (key) DO UPDATE SET value = excluded.value")
    let upload = ["upload", "--server", server.baseURL.absoluteString, "--store", store.path]
    #expect(try CLI.run(upload + ["--key", "account-b"]).status == 77)
    // state.sqlite cut short: repair starts it afresh; the events keep their account.
    let handle = try FileHandle(forUpdating: state)
    try handle.truncate(atOffset: 1000)
    try handle.close()
    let repair = try CLI.run(["repair", "--store", store.path])
    #expect(repair.status == 0, "\(repair.stderr)")
    try await Self.checkAccount(
      server: server, store: store, owner: "account-a", other: "account-b")
  }

  @Test func eventsQueuedWithNoUploadGoOnlyToTheirAccount() async throws {
    let server = try await ReferenceServer.start(keys: ["account-a", "account-b"])
    defer { server.stop() }
    let dir = try CLI.scratch("outbox-account-no-upload")
    defer { try? FileManager.default.removeItem(at: dir) }
    let store = try Self.queueEvents(server: server, key: "account-a", in: dir)
    #expect(try await server.events(key: "account-a")["event_count"] as? Int == 0)
    try await Self.checkAccount(
      server: server, store: store, owner: "account-a", other: "account-b")
  }

  /// Events queued with a mistyped key are refused to the right key (77) until
  /// `--rebind-account` gives them to its account; then they are delivered there once.
  @Test func rebindAccountGivesMistypedEventsToTheRightKey() async throws {
    let server = try await ReferenceServer.start(keys: ["account-a", "account-b"])
    defer { server.stop() }
    let dir = try CLI.scratch("outbox-account-rebind")
    defer { try? FileManager.default.removeItem(at: dir) }
    let store = try Self.queueEvents(server: server, key: "acount-a", in: dir)
    let upload = [
      "upload", "--server", server.baseURL.absoluteString, "--store", store.path, "--key",
      "account-a",
    ]
    #expect(try CLI.run(upload).status == 77)
    let rebound = try CLI.run(upload + ["--rebind-account"])
    #expect(rebound.status == 0, "\(rebound.stderr)")
    #expect(
      rebound.stderr.contains(
        "the queued events now belong to this key's account (they belonged to key "
          + "fingerprint \(try Self.fingerprint("acount-a")))"), "\(rebound.stderr)")
    #expect(try await server.events(key: "account-a")["event_count"] as? Int == 8)
    #expect(try CLI.run(["upload", "--rebind-account", "--store", store.path]).status == 64)
  }
}
