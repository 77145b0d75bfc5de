import Foundation
import GeofenceTestSupport
import Testing

/// A password in a webhook URL (`http://user:PASSWORD@host/...`) is sent, never shown or
/// stored: not in a summary, not in `outbox` (text or JSON), not in `outbox.sqlite`.
@Suite(.enabled(if: CLI.hasPython, "python3 with sqlite3"))
struct WebhookCredentialsTests {
  static let password = "SECRETPW"
  /// Nothing listens on port 9: each run leaves the events queued for the webhook (exit 75).
  static let hook = "http://user:\(password)@127.0.0.1:9/hook"
  static let name = "webhook:http://127.0.0.1:9/hook"

  static func run(_ store: URL, _ dir: URL) throws -> CLI.Output {
    try CLI.run([
      "run", "--store", store.path, "--destination", "webhook=\(hook)", "--webhook-secret", "s",
      "--max-attempts", "1", "--timeout", "2", "--regions", try CLI.writeEquatorGeofences(in: dir),
      try CLI.writeEquatorTrack(in: dir),
    ])
  }

  /// Every file of the store holding `password`'s bytes.
  static func filesHoldingThePassword(_ store: URL) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: store.path).filter {
      let data = (try? Data(contentsOf: store.appendingPathComponent($0))) ?? Data()
      return data.range(of: Data(password.utf8)) != nil
    }
  }

  @Test func thePasswordIsNeitherPrintedNorStored() throws {
    let dir = try CLI.scratch("webhook-password")
    defer { try? FileManager.default.removeItem(at: dir) }
    let store = dir.appendingPathComponent("store")
    let run = try Self.run(store, dir)
    #expect(run.status == 75, "\(run.stderr)")
    #expect(!run.stderr.contains(Self.password), "\(run.stderr)")
    #expect(run.stderr.contains("outbox \(Self.name): pending 8"), "\(run.stderr)")
    let text = try CLI.run(["outbox", "--store", store.path])
    #expect(CLI.lines(text.stdout).last?.hasPrefix("destination \(Self.name): pending 8") == true)
    let json = try CLI.run(["outbox", "--store", store.path, "--json"])
    let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
    #expect((object?["destinations"] as? [String: Any])?.keys.sorted() == [Self.name])
    #expect(try Self.filesHoldingThePassword(store) == [])
    let usage = try CLI.run([
      "run", "--store", store.path, "--destination", "webhook=http://u:\(Self.password)@h:0/x",
      "--webhook-secret", "s", "--regions", "r", "t",
    ])
    #expect(usage.status == 64)
    #expect(
      usage.stderr.hasPrefix("geofence run: --destination webhook=http://h:0/x: port 0 is out"),
      "\(usage.stderr)")
  }

  /// A cursor an earlier version named with the password is renamed by the next run, which
  /// continues it from its place; the old name's bytes leave the file.
  @Test func aCursorNamedWithThePasswordIsRenamedAndKeepsItsPlace() throws {
    let dir = try CLI.scratch("webhook-legacy")
    defer { try? FileManager.default.removeItem(at: dir) }
    let store = dir.appendingPathComponent("store")
    #expect(try Self.run(store, dir).status == 75)
    // As an earlier version named it: the URL as given, password and all.
    let outbox = store.appendingPathComponent("outbox.sqlite")
    try CLI.sqlite(
      outbox, "UPDATE cursors SET destination = ? WHERE destination = ?",
      ["webhook:\(Self.hook)", Self.name])
    #expect(try Self.filesHoldingThePassword(store) == ["outbox.sqlite"])
    // Shown without the password before the migration, and forgettable by that name.
    let listed = try CLI.run(["outbox", "--store", store.path, "--json"])
    #expect(!listed.stdout.contains(Self.password), "\(listed.stdout)")
    #expect(listed.stdout.contains(#""webhook:http:\/\/127.0.0.1:9\/hook""#), "\(listed.stdout)")

    let again = try Self.run(store, dir)
    #expect(again.status == 75, "\(again.stderr)")
    #expect(!again.stderr.contains(Self.password), "\(again.stderr)")
    // The same 8 events, not 16: the renamed cursor continued, no second one was started.
    #expect(again.stderr.contains("outbox \(Self.name): pending 8"), "\(again.stderr)")
    #expect(!again.stderr.contains("warning: destination"), "\(again.stderr)")
    #expect(
      try CLI.sqlite(outbox, "SELECT destination FROM cursors") == "[[\"\(Self.name)\"]]\n")
    #expect(try Self.filesHoldingThePassword(store) == [])
  }
}
