import Foundation
import GeofenceTestSupport
import Testing

/// Text a server once sent, stored raw by an older version (a stale reason, a dead letter's
/// reason), is shown escaped: it cannot move the cursor, recolour the terminal or forge a line.
@Suite(.enabled(if: CLI.hasPython, "python3 with sqlite3"))
struct ServerTextDisplayTests {
  static let raw = "nope\u{1B}[2J\u{1B}]0;pwned\u{07}\nforged: line"
  static let shown = #"nope\u{1B}[2J\u{1B}]0;pwned\u{07}\nforged: line"#

  @Test func regionsShowsAStoredStaleReasonEscaped() throws {
    let store = try CLI.scratch("stale-text")
    defer { try? FileManager.default.removeItem(at: store) }
    // Nothing listens on port 9: the sync fails and leaves a store marked stale.
    let sync = try CLI.run([
      "sync", "--server", "http://127.0.0.1:9", "--key", "k", "--store", store.path,
      "--attempts", "1", "--quiet",
    ])
    #expect(sync.status == 69, "\(sync.stderr)")
    try CLI.sqlite(
      store.appendingPathComponent("geofences.sqlite"),
      "UPDATE sync_state SET stale_reason = ?", [Self.raw])
    let regions = try CLI.run(["regions", "--store", store.path])
    #expect(regions.status == 0, "\(regions.stderr)")
    #expect(
      regions.stderr
        == "version: none; geofences: 0; synced: never; stale: \(Self.shown)\n")
  }

  @Test func outboxShowsAStoredDeadLetterReasonEscaped() throws {
    let dir = try CLI.scratch("dead-letter-text")
    defer { try? FileManager.default.removeItem(at: dir) }
    let store = dir.appendingPathComponent("store")
    let run = try CLI.run([
      "run", "--store", store.path, "--no-upload", "--quiet", "--regions",
      try CLI.writeEquatorGeofences(in: dir), try CLI.writeEquatorTrack(in: dir),
    ])
    #expect(run.status == 0, "\(run.stderr)")
    try CLI.sqlite(
      store.appendingPathComponent("outbox.sqlite"),
      "INSERT INTO dead_letters (destination, seq, id, payload, reason, dead_at, attempts) "
        + "VALUES ('server', 1000, 'ev-x', '{}', ?, 0, 1)", [Self.raw])
    let text = try CLI.run(["outbox", "--store", store.path, "--dead-letters"])
    #expect(text.status == 0, "\(text.stderr)")
    #expect(CLI.lines(text.stdout).last == "dead letter ev-x (server): \(Self.shown): {}")
    let json = try CLI.run(["outbox", "--store", store.path, "--dead-letters", "--json"])
    let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
    let dead = object?["dead_letter_events"] as? [[String: Any]]
    #expect(dead?.first?["reason"] as? String == Self.shown)
  }
}
