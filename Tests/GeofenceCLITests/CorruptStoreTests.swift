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

  /// A second `run` taking fixes into a store while another process does (it holds
  /// DIR/state.lock) is refused with 75 before it reads a track, and queues nothing; `outbox`
  /// and `upload`-style readers still open the store.
  @Test func aSecondRunIntoTheSameStoreIsRefused() throws {
    let (store, run) = try makeStore()
    let lockPath = store.appendingPathComponent("state.lock").path
    let holder = open(lockPath, O_RDWR | O_CREAT, 0o644)
    #expect(holder >= 0)
    #expect(flock(holder, LOCK_EX | LOCK_NB) == 0)
    let refused = try CLI.run(run)
    #expect(refused.status == 75, "\(refused.stderr)")
    #expect(refused.stderr.contains(lockPath), "\(refused.stderr)")
    #expect(try pending(store) == "pending       1")
    close(holder)
    let again = try CLI.run(run)
    #expect(again.status == 0, "\(again.stderr)")
    // The same fix again: dropped as a duplicate of the checkpointed one, nothing queued.
    #expect(try pending(store) == "pending       1")
    // `run --no-upload` only fills: it runs while another process delivers from the store.
    let delivering = open(
      store.appendingPathComponent("delivery.lock").path, O_RDWR | O_CREAT, 0o644)
    #expect(flock(delivering, LOCK_EX | LOCK_NB) == 0)
    let beside = try CLI.run(run)
    #expect(beside.status == 0, "\(beside.stderr)")
    close(delivering)
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

  /// Runs one SQL statement on the SQLite file at `path` with Python's sqlite3 module (the CLI
  /// tests do not link SQLite).
  func executeSQL(_ sql: String, on path: String) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [
      "python3", "-c",
      "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit()",
      path, sql,
    ]
    try process.run()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)
  }

  /// A device row of state.sqlite that cannot be decoded is named (not taken for "never
  /// seen", which would lose d1's pending EXIT), its device's fixes are held back while d2's
  /// EXIT goes out, the run exits 65; `repair` names the row and leaves it out.
  @Test func aDamagedCheckpointRowHoldsBackItsDeviceUntilRepaired() throws {
    let dir = try CLI.scratch("damaged-checkpoint")
    defer { try? FileManager.default.removeItem(at: dir) }
    let regions = dir.appendingPathComponent("r.csv")
    try "id,name,latitude,longitude,radius\nA,Alpha,46.0,7.0,1000\n".write(
      to: regions, atomically: true, encoding: .utf8)
    func fixes(_ time: String, longitude: Double) -> Data {
      Data(
        ["d1", "d2"].map {
          #"{"device_id":"\#($0)","time":"\#(time)","latitude":46.0,"longitude":\#(longitude)}"#
            + "\n"
        }.joined().utf8)
    }
    let state = dir.appendingPathComponent("state")
    let stream = ["stream", "--regions", regions.path, "--state", state.path]
    let first = try CLI.run(stream, input: fixes("2024-01-01T00:00:00Z", longitude: 7.0))
    #expect(first.status == 0, "\(first.stderr)")
    #expect(CLI.objects(first.stdout).map { $0["type"] as? String } == ["enter", "enter"])
    let stateFile = state.appendingPathComponent("state.sqlite").path
    try executeSQL(
      "UPDATE device_state SET checkpoint = '{bad' WHERE device_id = 'd1'", on: stateFile)

    let later = fixes("2024-01-01T00:30:00Z", longitude: 7.5)
    let damaged = try CLI.run(stream, input: later)
    #expect(damaged.status == 65, "\(damaged.stderr)")
    let events = CLI.objects(damaged.stdout)
    #expect(events.map { "\($0["type"] ?? "") \($0["device_id"] ?? "")" } == ["exit d2"])
    #expect(
      damaged.stderr.contains(#"state.sqlite: the checkpoint of device "d1" is damaged: "#),
      "\(damaged.stderr)")
    #expect(damaged.stderr.contains("1 devices with a damaged checkpoint (1 fixes held back)"))
    #expect(damaged.stderr.contains("run 'geofence repair --store \(state.path)'"))

    let check = try CLI.run(["repair", "--store", state.path, "--check"])
    #expect(check.status == 65)
    #expect(
      check.stderr.contains(#"1 device checkpoint(s) cannot be restored: device "d1": "#),
      "\(check.stderr)")
    let repair = try CLI.run(["repair", "--store", state.path])
    #expect(repair.status == 0)
    #expect(
      repair.stderr.contains("kept 1 rows of device_state (1 damaged checkpoint(s) left out)"),
      "\(repair.stderr)")
    #expect(try corruptCopies(state, "state.sqlite").count == 1)
    // d2's fix was checkpointed; d1 starts afresh, outside A.
    let after = try CLI.run(stream, input: later)
    #expect(after.status == 0, "\(after.stderr)")
    #expect(after.stdout.isEmpty)
    #expect(after.stderr.contains("1 already seen"), "\(after.stderr)")
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

  /// A store file emptied to 0 bytes (a failed restore, a full disk) is damage, not a new
  /// database: SQLite would open it as empty, and the queued event, the device's state or the
  /// synced set would be gone without a word. Reading commands refuse it (65) and leave it as
  /// it was; repair moves it aside and starts it afresh.
  @Test(arguments: ["outbox.sqlite", "state.sqlite", "geofences.sqlite"])
  func aStoreFileEmptiedToZeroBytesIsDamage(name: String) throws {
    let (store, run) = try makeStore()
    defer { try? FileManager.default.removeItem(at: store.deletingLastPathComponent()) }
    let file = store.appendingPathComponent(name)
    try Data().write(to: file)
    for suffix in ["-wal", "-shm"] {
      try? FileManager.default.removeItem(atPath: file.path + suffix)
    }
    // The commands that open the file: the outbox is read by `outbox` and written by `run`,
    // the device state by `run`, the synced set (none here: an empty file in its place) by
    // `regions`.
    let commands: [String: [[String]]] = [
      "outbox.sqlite": [["outbox", "--store", store.path], run],
      "state.sqlite": [run],
      "geofences.sqlite": [["regions", "--store", store.path]],
    ]
    for arguments in commands[name] ?? [] {
      let r = try CLI.run(arguments)
      #expect(r.status == 65, "\(arguments): \(r.stderr)")
      #expect(r.stderr.contains("\(file.path) is damaged: empty file (0 bytes)"), "\(r.stderr)")
      #expect(try Data(contentsOf: file).isEmpty)
    }
    let check = try CLI.run(["repair", "--store", store.path, "--check"])
    #expect(check.status == 65, "\(check.stderr)")
    #expect(try CLI.run(["repair", "--store", store.path]).status == 0)
    #expect(try corruptCopies(store, name).count == 1)
    #expect(try CLI.run(["repair", "--store", store.path, "--check"]).status == 0)
  }

  /// A damaged page of the outbox that opening does not read, met when the upload reads the
  /// queued events, is named with the repair to run (65), not a bare SQL error (1).
  @Test func aDamagedOutboxPageReadAtUploadIsNamed() throws {
    let (store, _) = try makeStore()
    defer { try? FileManager.default.removeItem(at: store.deletingLastPathComponent()) }
    let outbox = try FileHandle(
      forUpdating: store.appendingPathComponent("outbox.sqlite"))
    try outbox.seek(toOffset: 4096)
    try outbox.write(contentsOf: Data(repeating: 0xFF, count: 16))
    try outbox.close()
    let upload = try CLI.run(
      ["upload", "--server", "http://127.0.0.1:9", "--key", "k", "--store", store.path])
    #expect(upload.status == 65, "\(upload.stderr)")
    #expect(upload.stderr.contains("outbox.sqlite"), "\(upload.stderr)")
    #expect(upload.stderr.contains("geofence repair --store"), "\(upload.stderr)")
    // Found by the check before anything is read for sending (a batch sent first would be
    // counted by the server, then its bookkeeping would fail on the damaged page).
    #expect(
      CLI.lines(upload.stderr).first?.hasPrefix(
        "geofence upload: \(store.path)/outbox.sqlite is damaged")
        == true, "\(upload.stderr)")
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

  /// Synced geofence rows that SQLite reads but that are no valid geofence (latitude 200; a
  /// latitude stored as text, which SQLite would read as 0; metadata that is not a JSON object,
  /// which would be copied into every event as it is) are
  /// named by every command that reads the rows (exit 65, not a bare store error); `repair`
  /// finds it, keeps the other rows, and the next sync lists the set in full, so the row comes
  /// back as the server holds it.
  @Test(.enabled(if: ReferenceServer.isAvailable, "python3 with fastapi and uvicorn"))
  func anInvalidGeofenceRowIsNamedAndLeftOutByRepair() async throws {
    let server = try await ReferenceServer.start(keys: ["corrupt-key"])
    defer { server.stop() }
    try await server.replaceGeofences(key: "corrupt-key", CLI.equatorGeofences)
    let dir = try CLI.scratch("invalid-geofence-row")
    defer { try? FileManager.default.removeItem(at: dir) }
    let store = dir.appendingPathComponent("store")
    let sync = [
      "sync", "--server", server.baseURL.absoluteString, "--key", "corrupt-key", "--store",
      store.path,
    ]
    let first = try CLI.run(sync)
    #expect(first.status == 0, "\(first.stderr)")
    let ids = CLI.equatorGeofences.compactMap { $0["id"] as? String }.sorted()
    func listed() throws -> (status: Int32, ids: [String], stderr: String) {
      let r = try CLI.run(["regions", "--store", store.path, "--format", "jsonl"])
      return (r.status, CLI.objects(r.stdout).compactMap { $0["id"] as? String }, r.stderr)
    }
    #expect(try listed().ids == ids)

    let file = store.appendingPathComponent("geofences.sqlite").path
    try executeSQL("UPDATE geofence SET latitude = 200 WHERE id = 'offer-1'", on: file)
    try executeSQL("UPDATE geofence SET latitude = 'abc' WHERE id = 'plain'", on: file)
    try executeSQL(
      #"UPDATE geofence SET metadata = '1,"injected":true' WHERE id = 'bad-url'"#, on: file)
    // The snapshot sync wrote names the set's generation, which the update left alone: an
    // engine would still open it, but the listing checks the rows themselves.
    let damaged = try listed()
    #expect(damaged.status == 65, "\(damaged.stderr)")
    #expect(damaged.stderr.contains("stored geofence offer-1"), "\(damaged.stderr)")
    #expect(damaged.stderr.contains("geofence repair --store"), "\(damaged.stderr)")

    let check = try CLI.run(["repair", "--store", store.path, "--check"])
    #expect(check.status == 65, "\(check.stderr)")
    #expect(check.stderr.contains("3 stored geofence(s) cannot be read"), "\(check.stderr)")
    for reason in [
      "stored geofence bad-url: its metadata is not the text of a JSON object",
      "stored geofence offer-1: not a valid region",
      "stored geofence plain: its latitude, longitude or radius is not a number",
    ] {
      #expect(check.stderr.contains(reason), "\(check.stderr)")
    }
    let repair = try CLI.run(["repair", "--store", store.path])
    #expect(repair.status == 0, "\(repair.stderr)")
    #expect(
      repair.stderr.contains(
        "\(ids.count - 3) rows of geofence (3 invalid geofence row(s) left out)"),
      "\(repair.stderr)")
    #expect(try corruptCopies(store, "geofences.sqlite").count == 1)
    let repaired = try listed()
    #expect(repaired.ids == ["app-link"])
    // The smaller set says why until the next sync.
    #expect(
      repaired.stderr.contains("stale: geofence repair left out 3 invalid stored geofence(s)"),
      "\(repaired.stderr)")

    let again = try CLI.run(sync)
    #expect(again.status == 0, "\(again.stderr)")
    let synced = try listed()
    #expect(synced.ids == ids)
    #expect(synced.stderr.contains("stale: no"), "\(synced.stderr)")
  }
}
