import EventOutbox
import Foundation
import GeofenceEngine
import GeofenceSync
import GeofenceGeometry
import GeofenceTransitions
import SQLiteStore
import Testing
import GeofenceTestSupport

/// A fix whose time no RFC 3339 date can carry (years 0000-9999) is dropped as missingTime,
/// instead of trapping when its event is written, and it does not make the device's later
/// fixes stale.
@Test(arguments: [253_402_300_800.0, 1e300, -1e12, 1.548446441e12])
func aFixTimeBeyondTheYear9999IsDroppedNotATrap(time: Double) throws {
  let home = Geofence(
    id: "home",
    region: try CircularRegion(center: Coordinate(latitude: 47, longitude: 7), radiusMeters: 500))
  let engine = try GeofenceEngine(geofences: [home])
  let inside = try Coordinate(latitude: 47, longitude: 7)
  #expect(try engine.ingest(LocationFix(coordinate: inside, time: time), device: "a").isEmpty)
  #expect(engine.report.dropCounts[.missingTime] == 1)
  let later = try engine.ingest(LocationFix(coordinate: inside, time: 1.8e9), device: "a")
  #expect(later.map(\.type) == [.enter])
  #expect(later.first?.time == 1.8e9)
}

/// A fix dropped for its time gives no event: the transitions of the fix before it (here
/// another device's ENTER) are not handed out again under the dropped fix's device.
@Test(arguments: [Double.nan, .infinity, 1e300, 253_402_300_800.0])
func aFixDroppedForItsTimeRepeatsNoEarlierEvent(time: Double) throws {
  let cafe = Geofence(
    id: "cafe",
    region: try CircularRegion(center: Coordinate(latitude: 0, longitude: 0), radiusMeters: 100))
  let engine = try GeofenceEngine(geofences: [cafe])
  let first = try engine.ingest(
    LocationFix(coordinate: Coordinate(latitude: 0, longitude: 0), time: 1.8e9), device: "one")
  #expect(first.map(\.type) == [.enter])
  var events: [GeofenceEvent] = []
  let far = try Coordinate(latitude: 4.5, longitude: 0)
  let outcome = try engine.ingest(
    LocationFix(coordinate: far, time: time), device: "two", into: &events)
  #expect(outcome == .evaluated(.dropped(.missingTime)))
  #expect(events.isEmpty, "\(events.map { "\($0.type) \($0.deviceID)" })")
}

/// An API key with a line break would make URLSession drop the `Authorization` header and
/// send the request without it: the engine refuses the configuration before opening anything.
@Test func anAPIKeyWithALineBreakIsAnInvalidConfiguration() throws {
  let server = try #require(URL(string: "http://127.0.0.1:9"))
  let upload = GeofenceEngine.Configuration(
    outbox: .init(), upload: .init(server: server, apiKey: "abc\r\nX-Injected: 1"))
  let refused = #expect(throws: EngineError.self) { _ = try GeofenceEngine(configuration: upload) }
  #expect(
    refused?.description
      == "invalid configuration: upload: the API key holds a line break (CR or LF)")
  let sync = GeofenceEngine.Configuration(sync: SyncConfiguration(baseURL: server, apiKey: "\t"))
  let blank = #expect(throws: EngineError.self) { _ = try GeofenceEngine(configuration: sync) }
  #expect(blank?.description == "invalid configuration: sync: the API key holds only blanks")
}

/// A fix whose outbox write fails is not taken: the device is as before it, so the same fix
/// taken again once the outbox is writable gives its ENTER (with the id an engine that never
/// failed gives it), instead of being dropped as a duplicate while the device counts as
/// inside.
@Test func aFixWhoseOutboxWriteFailsIsNotTakenAndCanBeTakenAgain() throws {
  let directory = TestScratch.root.appendingPathComponent(
    "engine-rollback-\(UUID().uuidString)")
  defer { try? FileManager.default.removeItem(at: directory) }
  let zone = Geofence(
    id: "zone",
    region: try CircularRegion(center: Coordinate(latitude: 0, longitude: 0), radiusMeters: 100))
  let engine = try GeofenceEngine(
    configuration: .init(outbox: .init()), storage: .directory(directory.path), geofences: [zone])
  let fix = LocationFix(coordinate: try Coordinate(latitude: 0, longitude: 0), time: 1000)
  // Another connection takes the events table away: the enqueue fails.
  let other = try Database(path: directory.appendingPathComponent("outbox.sqlite").path)
  try other.execute("ALTER TABLE events RENAME TO events_away")
  #expect(throws: EngineError.self) { try engine.ingest(fix, device: "d") }
  #expect(try engine.deviceState("d")?.insideGeofenceIDs ?? [] == [])
  #expect(engine.report.fixes == 0)
  try other.execute("ALTER TABLE events_away RENAME TO events")
  let again = try engine.ingest(fix, device: "d")
  let reference = try GeofenceEngine(geofences: [zone]).ingest(fix, device: "d")
  #expect(again.map(\.type) == [.enter])
  #expect(again.map(\.id) == reference.map(\.id))
  #expect(engine.report.enqueued == 1)
  let rows = try other.prepare("SELECT id FROM events")
  #expect(try rows.step() && rows.string(at: 0) == again.first?.id)
}

/// What the definition readers refuse is refused in geofences made in code too, before
/// anything is opened: an empty or reserved id, an id of more than 256 characters or with a
/// control character, an id given twice, metadata that is not a JSON
/// object (events carry it verbatim); and an empty device id, store path or API key.
@Test func geofencesMadeInCodeAreCheckedAsFilesAre() throws {
  let circle = try CircularRegion(
    center: Coordinate(latitude: 46, longitude: 7), radiusMeters: 100)
  func refusal(_ geofences: [Geofence]) -> String? {
    do {
      _ = try GeofenceEngine(geofences: geofences)
      return nil
    } catch { return error.description }
  }
  #expect(
    refusal([Geofence(id: "", region: circle)])
      == #"invalid configuration: geofence "": the id is empty"#)
  #expect(
    refusal([Geofence(id: "geofence.refresh", region: circle)])
      == #"invalid configuration: geofence "geofence.refresh": "#
      + "the id is reserved (the region budget planner's refresh circle)")
  #expect(
    refusal([Geofence(id: "a", region: circle), Geofence(id: "a", region: circle)])
      == #"invalid configuration: geofence id "a" is given twice"#)
  #expect(
    refusal([Geofence(id: "bad", region: circle, metadataJSON: "[1]")])
      == #"invalid configuration: geofence "bad": the metadata is not a JSON object"#)
  #expect(
    refusal([Geofence(id: "bad", region: circle, metadataJSON: "{not json")])?.hasPrefix(
      #"invalid configuration: geofence "bad": the metadata is not JSON: "#) == true)
  #expect(refusal([Geofence(id: "ok", region: circle, metadataJSON: #"{"u":1}"#)]) == nil)
  #expect(
    refusal([Geofence(id: "x\n\u{1B}[31m", region: circle)])
      == #"invalid configuration: geofence "x\n\u001b[31m": "#
      + "the id holds a control character (U+0000-U+001F or U+007F)")
  let long = String(repeating: "é", count: 257)
  #expect(
    refusal([Geofence(id: long, region: circle)])
      == "invalid configuration: geofence \"\(long)\": "
      + "the id is 257 characters long; at most 256 are allowed")
  #expect(refusal([Geofence(id: String(repeating: "é", count: 256), region: circle)]) == nil)

  let engine = try GeofenceEngine(geofences: [Geofence(id: "a", region: circle)])
  let fix = LocationFix(coordinate: try Coordinate(latitude: 46, longitude: 7), time: 1000)
  #expect(throws: EngineError.self) { try engine.ingest(fix, device: "") }
  #expect(engine.report.fixes == 0)
  #expect(throws: EngineError.self) {
    _ = try GeofenceEngine(storage: .directory(""), geofences: [])
  }
  let server = try #require(URL(string: "http://127.0.0.1:9"))
  let empty = #expect(throws: EngineError.self) {
    _ = try GeofenceEngine(
      configuration: .init(outbox: .init(), upload: .init(server: server, apiKey: "")))
  }
  #expect(empty?.description == "invalid configuration: upload: the API key is empty")
}

/// Repair never moves a file aside under an engine that has the store open (it would go on
/// writing into the moved file): the engine holds `store.lock` shared, repair takes it
/// exclusive, and refuses while an engine lives; an engine cannot open a store being repaired.
@Test func repairWaitsForNoEngineAndRefusesAStoreInUse() throws {
  let directory = TestScratch.root.appendingPathComponent(
    "engine-lock-\(UUID().uuidString)")
  defer { try? FileManager.default.removeItem(at: directory) }
  var engine: GeofenceEngine? = try GeofenceEngine(
    configuration: .init(outbox: .init()), storage: .directory(directory.path), geofences: [])
  // An empty identity.json is damage (see StoreRepair).
  try Data().write(to: directory.appendingPathComponent("identity.json"))
  let lockPath = directory.appendingPathComponent("store.lock").path
  #expect(throws: DirectoryLock.Failure.held(path: lockPath)) {
    _ = try StoreRepair.repair(directory: directory.path, at: 0)
  }
  #expect(StoreRepair.check(directory: directory.path).count == 1)
  withExtendedLifetime(engine) {}
  engine = nil
  // While repair holds the lock, no engine opens the store.
  do {
    let repairing = try DirectoryLock(
      directory: directory.path, fileName: DirectoryLock.storeFileName, exclusive: true)
    let refused = #expect(throws: EngineError.self) {
      _ = try GeofenceEngine(storage: .directory(directory.path), geofences: [])
    }
    #expect(refused?.description.contains("is being repaired") == true)
    withExtendedLifetime(repairing) {}
  }
  #expect(try StoreRepair.repair(directory: directory.path, at: 0).count == 1)
  #expect(StoreRepair.check(directory: directory.path).isEmpty)
  #expect(try GeofenceEngine(storage: .directory(directory.path), geofences: []).geofenceCount == 0)
}

/// Repair keeps every outbox row SQLite can still read, those after a damaged page included:
/// the oracle reads the damaged file row by row (`WHERE seq = ?`), and repair keeps exactly
/// the rows it reads.
@Test func repairKeepsTheReadableRowsAfterADamagedPage() throws {
  let directory = TestScratch.root.appendingPathComponent(
    "engine-salvage-\(UUID().uuidString)")
  defer { try? FileManager.default.removeItem(at: directory) }
  try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
  let path = directory.appendingPathComponent("outbox.sqlite").path
  do {
    let outbox = try Outbox(path: path)
    let padding = String(repeating: "x", count: 300)
    _ = try outbox.enqueue(
      contentsOf: (1...600).map {
        OutboxEvent(id: "ev-\($0)", payload: #"{"n":\#($0),"p":"\#(padding)"}"#, createdAt: 1)
      })
    try Database(path: path).execute("PRAGMA wal_checkpoint(TRUNCATE)")
  }
  // Damage 400 bytes in the middle of the file (a page or two of events).
  var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
  #expect(bytes.count > 160_000)
  for i in 150_000..<150_400 { bytes[i] ^= 0xA5 }
  try bytes.write(to: URL(fileURLWithPath: path))
  for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
  // The oracle: each row read alone.
  var readable: Set<Int64> = []
  do {
    let damaged = try Database(path: path, options: .init(readOnly: true))
    let one = try damaged.prepare("SELECT seq, id, payload FROM events WHERE seq = ?")
    for seq in Int64(1)...600 {
      one.reset()
      try one.bind(.integer(seq), at: 1)
      if (try? one.step()) == true { readable.insert(seq) }
    }
  }
  #expect(readable.count > 300 && readable.count < 600)
  #expect(readable.contains(600))
  let outcomes = try StoreRepair.repair(directory: directory.path, at: 0)
  #expect(outcomes.count == 1)
  #expect(outcomes.first?.kept.contains("\(readable.count) rows of events") == true)
  let repaired = try Database(path: path, options: .init(readOnly: true))
  let rows = try repaired.prepare("SELECT seq FROM events ORDER BY seq")
  var kept: Set<Int64> = []
  while try rows.step() { kept.insert(rows.int64(at: 0)) }
  #expect(kept == readable)
}

/// A checkpoint record whose times no event can carry (a visit entered in 1e300 s, a device
/// last seen then), or a visit entered after the device's last accepted fix, is refused as
/// inconsistent, not restored to write `visit_s: -1e300` or to drop every later fix as stale.
@Test func checkpointRecordsWithImpossibleTimesAreRefused() throws {
  let cafe = Geofence(
    id: "cafe",
    region: try CircularRegion(center: Coordinate(latitude: 0, longitude: 0), radiusMeters: 100))
  let engine = try GeofenceEngine(geofences: [cafe])
  let at = try Coordinate(latitude: 0, longitude: 0)
  for t in [1.8e9, 1.8e9 + 10] {
    try engine.ingest(LocationFix(coordinate: at, time: t), device: "p1")
  }
  let record = try #require(try engine.checkpointRecord(device: "p1"))
  #expect(record.contains(#""enterTime":1800000000"#), "\(record)")
  #expect(record.contains(#""lastSeenTime":1800000010"#), "\(record)")
  let edits = [
    (#""enterTime":1800000000"#, #""enterTime":1e300"#),
    (#""enterTime":1800000000"#, #""enterTime":1800000020"#),
    (#""lastSeenTime":1800000010"#, #""lastSeenTime":1e300"#),
  ]
  for (from, to) in edits {
    let other = try GeofenceEngine(geofences: [cafe])
    let edited = record.replacingOccurrences(of: from, with: to)
    #expect(edited != record)
    let refused = #expect(throws: EngineError.self) {
      try other.restoreDevice(fromCheckpointRecord: Array(edited.utf8))
    }
    #expect(refused?.description.contains("inconsistent checkpoint") == true, "\(to)")
  }
  // The record as written restores.
  let fresh = try GeofenceEngine(geofences: [cafe])
  #expect(try fresh.restoreDevice(fromCheckpointRecord: Array(record.utf8)) == "p1")
}

/// Two engines filling one directory store would each keep a state of the same device and
/// queue each visit twice under different ids: the first to take a device holds `state.lock`
/// and the second is refused at its first fix (the fix not taken), while an engine that only
/// delivers or reads opens the store beside it; once the first is gone, the second goes on
/// from the first's checkpoint, so the visit's ENTER is queued once.
@Test func oneEngineAtATimeFillsAStore() throws {
  let directory = TestScratch.root.appendingPathComponent("engine-fill-\(UUID().uuidString)")
  defer { try? FileManager.default.removeItem(at: directory) }
  let cafe = Geofence(
    id: "cafe",
    region: try CircularRegion(center: Coordinate(latitude: 0, longitude: 0), radiusMeters: 100))
  func engine() throws -> GeofenceEngine {
    try GeofenceEngine(
      configuration: .init(outbox: .init()), storage: .directory(directory.path),
      geofences: [cafe])
  }
  func fix(_ t: Double, east metres: Double) -> LocationFix {
    LocationFix(
      coordinate: Coordinate(uncheckedLatitude: 0, longitude: metres / 111_195.08),
      time: 1.8e9 + t, horizontalAccuracy: 5)
  }
  var first: GeofenceEngine? = try engine()
  let second = try engine()
  #expect(try first?.ingest(fix(0, east: 0), device: "phone").map(\.type) == [.enter])
  let refused = #expect(throws: EngineError.self) {
    try second.ingest(fix(10, east: 0), device: "phone")
  }
  #expect(refused?.description.contains("another engine fills") == true)
  #expect(refused?.description.contains("state.lock") == true)
  #expect(second.report.fixes == 0)
  // Claiming again while the first lives is refused too; a reader opens the store.
  #expect(throws: EngineError.self) { try second.claimState() }
  #expect(try engine().outbox?.counts().pending == 1)
  // Reading the device first (which restores it into memory) lets no fix through, and an
  // authorization change, which rewrites every device's checkpoint, is refused too.
  #expect(try second.deviceState("phone") != nil)
  #expect(throws: EngineError.self) { try second.ingest(fix(10, east: 0), device: "phone") }
  let third = try engine()
  #expect(throws: EngineError.self) {
    try third.updateAuthorization(AuthorizationTimeline.granted, at: 1.8e9 + 10)
  }
  #expect(throws: EngineError.self) { try third.ingest(fix(10, east: 0), device: "phone") }
  #expect(try engine().outbox?.counts().pending == 1)
  withExtendedLifetime(third) {}
  withExtendedLifetime(first) {}
  first = nil
  // The first's checkpoint says the device is inside: no second ENTER.
  #expect(try second.ingest(fix(20, east: 10), device: "phone").isEmpty)
  #expect(try second.ingest(fix(30, east: 500), device: "phone").map(\.type) == [.exit])
  #expect(try second.outbox?.counts().pending == 2)
  // In memory, or storing nothing of its devices, an engine takes no lock.
  let other = try GeofenceEngine(
    configuration: .init(checkpoints: .none), storage: .directory(directory.path),
    geofences: [cafe])
  #expect(try other.ingest(fix(0, east: 0), device: "phone").map(\.type) == [.enter])
}

/// An engine that only fills (`delivers` false) opens a store while another delivers from
/// it, registers the destinations' cursors and never delivers itself; the delivering engine
/// sends what it queued.
@Test func aFillingEngineRunsBesideTheDeliveringOne() async throws {
  let directory = TestScratch.root.appendingPathComponent("engine-fills-\(UUID().uuidString)")
  defer { try? FileManager.default.removeItem(at: directory) }
  let cafe = Geofence(
    id: "cafe",
    region: try CircularRegion(center: Coordinate(latitude: 0, longitude: 0), radiusMeters: 100))
  let events = directory.appendingPathComponent("events.jsonl").path
  var configuration = GeofenceEngine.Configuration(
    outbox: .init(), destinations: [.jsonLinesFile(.init(path: events))])
  let delivering = try GeofenceEngine(
    configuration: configuration, storage: .directory(directory.path), geofences: [cafe])
  configuration.delivers = false
  let filling = try GeofenceEngine(
    configuration: configuration, storage: .directory(directory.path), geofences: [cafe])
  let fix = LocationFix(
    coordinate: Coordinate(uncheckedLatitude: 0, longitude: 0), time: 1.8e9, horizontalAccuracy: 5)
  #expect(try filling.ingest(fix, device: "phone").map(\.type) == [.enter])
  let refused = await #expect(throws: EngineError.self) { try await filling.deliver() }
  #expect(refused?.description.contains("only fills the outbox") == true)
  #expect(try await delivering.deliver().destinations.map(\.report.delivered) == [1])
  #expect(try String(contentsOfFile: events, encoding: .utf8).contains("\"cafe\""))
}

/// A sync by an engine that does not fill the store, while another does, changes the set
/// only: it neither queues removal EXITs nor rewrites the filler's checkpoints. The filler's
/// next sync brings its devices to the stored set: one EXIT for the visit.
@Test func aSyncBesideTheFillingEngineLeavesItsDevicesToIt() async throws {
  let directory = TestScratch.root.appendingPathComponent("engine-sync-fill-\(UUID().uuidString)")
  defer { try? FileManager.default.removeItem(at: directory) }
  let server = ListingServer()
  server.update(upsert: [
    "cafe": ListingServer.json("cafe", 0, 0, radius: 100),
    "bar": ListingServer.json("bar", 0, 0.01, radius: 100),
  ])
  func engine() throws -> GeofenceEngine {
    try GeofenceEngine(
      configuration: .init(
        outbox: .init(),
        sync: SyncConfiguration(baseURL: URL(string: "http://sync.test")!, apiKey: "k1"),
        emitsExitForRemovedGeofences: true),
      storage: .directory(directory.path), transport: server, clock: TestClock(1.8e9))
  }
  let filler = try engine()
  #expect(try await filler.sync().sync.diff.counts.added == 2)
  let fix = LocationFix(
    coordinate: Coordinate(uncheckedLatitude: 0, longitude: 0), time: 1.8e9, horizontalAccuracy: 5)
  #expect(try filler.ingest(fix, device: "phone").map(\.geofenceID) == ["cafe"])
  let stateFile = directory.appendingPathComponent("state.sqlite").path
  /// The filler's stored checkpoint of the device, as text.
  func stored() throws -> String? {
    let statement = try Database(path: stateFile).prepare(
      "SELECT checkpoint FROM device_state WHERE device_id = 'phone'")
    return try statement.step() ? statement.string(at: 0) : nil
  }
  let before = try #require(try stored())

  server.update(delete: ["cafe"])
  let other = try engine()
  let applied = try await other.sync()
  #expect(applied.sync.diff.counts.removed == 1)
  #expect(applied.events.isEmpty)
  #expect(try other.outbox?.counts().pending == 1)
  #expect(try stored() == before)
  // The filler's own sync catches up with the stored set: the visit's one EXIT.
  let caughtUp = try await filler.sync()
  #expect(
    caughtUp.events.map { "\($0.type.rawValue) \($0.geofenceID) \($0.isRemoval)" } == [
      "exit cafe true"
    ])
  #expect(try filler.outbox?.counts().pending == 2)
  withExtendedLifetime(other) {}
}

/// An outbox another process holds locked for writing past SQLite's busy wait makes a
/// delivery fail as a temporary condition (`storeInUse`: the CLI's 75), not a store error;
/// the events stay queued and the next delivery sends them.
@Test func aDeliveryFindingTheOutboxLockedIsATemporaryFailure() async throws {
  let directory = TestScratch.root.appendingPathComponent("engine-busy-\(UUID().uuidString)")
  defer { try? FileManager.default.removeItem(at: directory) }
  let events = directory.appendingPathComponent("events.jsonl").path
  let engine = try GeofenceEngine(
    configuration: .init(outbox: .init(), destinations: [.jsonLinesFile(.init(path: events))]),
    storage: .directory(directory.path),
    geofences: [
      Geofence(
        id: "cafe",
        region: try CircularRegion(
          center: Coordinate(latitude: 0, longitude: 0), radiusMeters: 100))
    ])
  let fix = LocationFix(
    coordinate: Coordinate(uncheckedLatitude: 0, longitude: 0), time: 1.8e9, horizontalAccuracy: 5)
  #expect(try engine.ingest(fix, device: "phone").count == 1)
  do {
    // Another writer: its write transaction outlasts the engine's busy wait (5 s).
    let other = try Database(
      path: directory.appendingPathComponent("outbox.sqlite").path,
      options: .init(busyTimeoutMilliseconds: 0))
    try other.execute("BEGIN IMMEDIATE")
    let refused = await #expect(throws: EngineError.self) { try await engine.deliver() }
    #expect(refused?.description.hasPrefix("store in use: outbox: another process") == true)
    try other.execute("ROLLBACK")
  }
  #expect(try await engine.deliver().destinations.map(\.report.delivered) == [1])
}
