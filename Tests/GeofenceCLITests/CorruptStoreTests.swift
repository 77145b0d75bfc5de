import Foundation
import GeofenceTestSupport
import Testing

/// A damaged store file is named with its problem (exit 65), and `geofence repair` moves it
/// aside and keeps what SQLite can still read.
@Suite(.waitsOnChildProcesses) struct CorruptStoreTests {
  /// A store holding one pending event (an enter), made by `run --no-upload`.
  func makeStore() throws -> (store: URL, run: [String]) {
    let dir = try CLI.scratch("corrupt")
    let regions = dir.appendingPathComponent("r.csv")
    try "id,latitude,longitude,radius\na,46.5,6.6,100\n".write(
      to: regions, atomically: true, encoding: .utf8)
    let track = dir.appendingPathComponent("t.csv")
    try "time,lat,lon\n1764478800,46.5,6.6\n".write(to: track, atomically: true, encoding: .utf8)
    let store = dir.appendingPathComponent("store")
    let run = [
      "run", "--store", store.path, "--server", "http://127.0.0.1:9", "--key", "k",
      "--no-upload", "--regions", regions.path, track.path,
    ]
    let first = try CLI.run(run)
    #expect(first.status == 0, "\(first.stderr)")
    return (store, run)
  }

  func pending(_ store: URL) throws -> String? {
    let r = try CLI.run(["outbox", "--store", store.path])
    return CLI.lines(r.stdout).first
  }

  func corruptCopies(_ store: URL, _ name: String) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: store.path).filter {
      $0.hasPrefix(name + ".corrupt-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm")
    }
  }

  @Test func emptyIdentityIsNamedAndReplaced() throws {
    let (store, run) = try makeStore()
    let identity = store.appendingPathComponent("identity.json")
    try Data().write(to: identity)
    let outbox = try CLI.run(["outbox", "--store", store.path])
    #expect(outbox.status == 65)
    #expect(outbox.stderr.contains("\(identity.path) is damaged: empty file"))
    #expect(outbox.stderr.contains("run 'geofence repair --store \(store.path)'"))
    #expect(try CLI.run(run).status == 65)
    #expect(try CLI.run(["repair", "--store", store.path, "--check"]).status == 65)
    let repair = try CLI.run(["repair", "--store", store.path])
    #expect(repair.status == 0)
    #expect(try corruptCopies(store, "identity.json").count == 1)
    #expect(try pending(store) == "pending       1")
    #expect(try CLI.run(["repair", "--store", store.path, "--check"]).status == 0)
  }

  @Test func truncatedOutboxKeepsItsReadableEvents() throws {
    let (store, run) = try makeStore()
    let outbox = store.appendingPathComponent("outbox.sqlite")
    let bytes = try Data(contentsOf: outbox)
    try bytes.prefix(bytes.count / 2).write(to: outbox)
    for suffix in ["-wal", "-shm"] {
      try? FileManager.default.removeItem(atPath: outbox.path + suffix)
    }
    let failed = try CLI.run(run)
    #expect(failed.status == 65)
    #expect(failed.stderr.contains("\(outbox.path) is damaged: database disk image is malformed"))
    let repair = try CLI.run(["repair", "--store", store.path])
    #expect(repair.status == 0)
    #expect(repair.stderr.contains("kept 1 rows of events"))
    #expect(try corruptCopies(store, "outbox.sqlite").count == 1)
    // The event survived, and replaying the track does not queue it twice.
    #expect(try pending(store) == "pending       1")
    #expect(try CLI.run(run).status == 0)
    #expect(try pending(store) == "pending       1")
  }

  @Test func randomStateAndGeofenceFilesStartAfresh() throws {
    let (store, run) = try makeStore()
    var generator = SystemRandomNumberGenerator()
    for name in ["state.sqlite", "geofences.sqlite"] {
      let url = store.appendingPathComponent(name)
      let noise = (0..<8192).map { _ in UInt8.random(in: 0...255, using: &generator) }
      try Data(noise).write(to: url)
      for suffix in ["-wal", "-shm"] {
        try? FileManager.default.removeItem(atPath: url.path + suffix)
      }
    }
    let failed = try CLI.run(run)
    #expect(failed.status == 65)
    #expect(failed.stderr.contains("state.sqlite is damaged: file is not a database"))
    #expect(failed.stderr.contains("geofences.sqlite is damaged: file is not a database"))
    let repair = try CLI.run(["repair", "--store", store.path])
    #expect(repair.status == 0)
    #expect(
      repair.stderr.contains(
        "state.sqlite: file is not a database; moved to \(store.path)/state.sqlite.corrupt-"))
    #expect(try corruptCopies(store, "state.sqlite").count == 1)
    #expect(try corruptCopies(store, "geofences.sqlite").count == 1)
    #expect(try CLI.run(run).status == 0)
    #expect(try pending(store) == "pending       1")
  }
}
