import Foundation
import GeofenceTestSupport
import Testing

/// `geofence sync` leaves an indexed snapshot beside the store; `geofence snapshot --check`
/// judges it without rebuilding it; a change of the set on the server makes it stale until the
/// next sync writes it again; the snapshot and the rows give the same listing.
@Suite(.waitsOnChildProcesses) struct SnapshotCommandTests {
  @Test func withoutAStoreExits66AndUsageErrorsExit64() throws {
    let dir = try CLI.scratch("snapshot-usage")
    defer { try? FileManager.default.removeItem(at: dir) }
    #expect(try CLI.run(["snapshot"]).status == 64)
    #expect(try CLI.run(["snapshot", "--store", dir.path, "--bogus"]).status == 64)
    let missing = try CLI.run(["snapshot", "--store", dir.appendingPathComponent("none").path])
    #expect(missing.status == 66, "\(missing.stderr)")
  }

  /// `--check` opens the snapshot as an engine would: a file cut short or with one byte
  /// changed fails its checksum and is reported damaged (exit 1), not "current".
  @Test func checkReportsATruncatedOrAlteredSnapshotAsDamaged() throws {
    let dir = try CLI.scratch("snapshot-damaged")
    defer { try? FileManager.default.removeItem(at: dir) }
    // A store with a (never synced, empty) set: a SQLite database without tables, which the
    // store gives its schema when it opens it. (An empty file would be damage: a truncated
    // store.)
    let store = dir.appendingPathComponent("store").path
    try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
    try CLI.sqlite(
      URL(fileURLWithPath: store).appendingPathComponent("geofences.sqlite"),
      "PRAGMA application_id = 1")
    let written = try CLI.run(["snapshot", "--store", store])
    #expect(written.status == 0, "\(written.stderr)")
    let current = try CLI.run(["snapshot", "--store", store, "--check"])
    #expect(current.status == 0 && current.stdout == "snapshot: current\n", "\(current.stdout)")

    let snapshot = URL(fileURLWithPath: store).appendingPathComponent("geofences.snapshot")
    let intact = try Data(contentsOf: snapshot)
    #expect(intact.count > 200)
    try intact.prefix(100).write(to: snapshot)
    let truncated = try CLI.run(["snapshot", "--store", store, "--check"])
    #expect(truncated.status == 1, "\(truncated.stdout)")
    #expect(
      truncated.stdout.hasPrefix("snapshot: damaged or unusable: the checksum does not match"),
      "\(truncated.stdout)")

    var altered = intact
    altered[intact.count / 2] ^= 0xFF
    try altered.write(to: snapshot)
    let flipped = try CLI.run(["snapshot", "--store", store, "--check"])
    #expect(flipped.status == 1, "\(flipped.stdout)")
    #expect(flipped.stdout.hasPrefix("snapshot: damaged or unusable: "), "\(flipped.stdout)")

    try intact.write(to: snapshot)
    #expect(try CLI.run(["snapshot", "--store", store, "--check"]).status == 0)
  }

  @Test(.enabled(if: ReferenceServer.isAvailable, "python3 with fastapi and uvicorn"))
  func syncWritesItAChangeMakesItStaleAndTheNextSyncWritesItAgain() async throws {
    let server = try await ReferenceServer.start(keys: ["snapshot-key"])
    defer { server.stop() }
    try await server.replaceGeofences(key: "snapshot-key", CLI.equatorGeofences)
    let dir = try CLI.scratch("snapshot")
    defer { try? FileManager.default.removeItem(at: dir) }
    let store = dir.appendingPathComponent("store").path
    let sync = [
      "sync", "--server", server.baseURL.absoluteString, "--key", "snapshot-key", "--store", store,
    ]
    let first = try CLI.run(sync)
    #expect(first.status == 0, "\(first.stderr)")
    #expect(first.stdout.contains("snapshot: "), "\(first.stdout)")
    let snapshotPath = URL(fileURLWithPath: store).appendingPathComponent("geofences.snapshot")
    #expect(FileManager.default.fileExists(atPath: snapshotPath.path))
    let current = try CLI.run(["snapshot", "--store", store, "--check"])
    #expect(current.status == 0 && current.stdout.contains("current"), "\(current.stdout)")
    let fromSnapshot = try CLI.run(["regions", "--store", store, "--format", "jsonl"])

    // The listing from the rows alone (no snapshot) is the same.
    try FileManager.default.removeItem(at: snapshotPath)
    let missing = try CLI.run(["snapshot", "--store", store, "--check"])
    #expect(missing.status == 1, "\(missing.stdout)")
    let fromRows = try CLI.run(["regions", "--store", store, "--format", "jsonl"])
    #expect(fromRows.status == 0 && fromRows.stdout == fromSnapshot.stdout)
    #expect(!fromRows.stdout.isEmpty)

    // A new version on the server: the sync that applies it writes the snapshot again.
    try await server.replaceGeofences(key: "snapshot-key", Array(CLI.equatorGeofences.prefix(2)))
    let written = try CLI.run(["snapshot", "--store", store])
    #expect(written.status == 0, "\(written.stderr)")
    #expect(try CLI.run(["snapshot", "--store", store, "--check"]).status == 0)
    let second = try CLI.run(sync)
    #expect(second.status == 0, "\(second.stderr)")
    #expect(second.stdout.contains("snapshot: "), "\(second.stdout)")
    let after = try CLI.run(["snapshot", "--store", store, "--check"])
    #expect(after.status == 0, "\(after.stdout)")
    let listing = try CLI.run(["regions", "--store", store, "--format", "jsonl"])
    #expect(listing.stdout.split(separator: "\n").count == 2, "\(listing.stdout)")
  }
}
