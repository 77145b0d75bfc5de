import Foundation
import GeofenceEngine
import Networking
import GeofenceGeometry
import GeofenceSync
import GeofenceTransitions
import Testing
import GeofenceTestSupport

/// A sync server double that serves only full listings of its current set (one page) and
/// answers `changes?since=` with `410`, so that every ``GeofenceEngine/sync(full:)`` lists
/// the whole set and the client computes the diff.
final class ListingServer: HTTPTransport, @unchecked Sendable {
  private let lock = NSLock()
  private var set: [String: String] = [:]
  private var version = 0

  /// Publishes a new version derived from the current one (id → geofence JSON text).
  func update(upsert: [String: String] = [:], delete: [String] = []) {
    lock.withLock {
      for (id, json) in upsert { set[id] = json }
      for id in delete { set[id] = nil }
      version += 1
    }
  }

  func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
    lock.withLock {
      guard request.url.path == "/v1/geofences" else {
        return HTTPResponse(
          statusCode: 410, headers: ["Content-Type": "application/json"],
          body: Data(#"{"error":{"code":"history_pruned","message":"full listings only"}}"#.utf8))
      }
      let items = set.keys.sorted().compactMap { set[$0] }
      let body =
        "{\"version\":\"v\(version)\",\"geofences\":[\(items.joined(separator: ","))],"
        + "\"next_cursor\":null}"
      return HTTPResponse(
        statusCode: 200, headers: ["ETag": "\"v\(version)\"", "Content-Type": "application/json"],
        body: Data(body.utf8))
    }
  }

  /// A geofence as the sync protocol lists it.
  static func json(
    _ id: String, _ latitude: Double, _ longitude: Double, radius: Double = 200,
    name: String? = nil
  ) -> String {
    var text =
      "{\"id\":\"\(id)\",\"latitude\":\(latitude),\"longitude\":\(longitude),\"radius\":\(radius)"
    if let name { text += ",\"name\":\"\(name)\"" }
    return text + ",\"updated_at\":\"2026-11-30T05:00:00.000Z\"}"
  }
}

/// The rules by which ``GeofenceEngine/sync(full:)`` applies a synced change to the live set
/// while devices are inside its geofences (formerly checked on `GeofenceMonitor`).
@Suite("Live apply of a synced change")
struct LiveSetTests {
  static let here = (lat: 21.30, lon: -157.85)
  static let t0 = 1_796_014_800.0

  func fix(_ t: Double, _ latitude: Double = here.lat, _ longitude: Double = here.lon)
    -> LocationFix
  {
    LocationFix(
      coordinate: Coordinate(uncheckedLatitude: latitude, longitude: longitude), time: Self.t0 + t,
      horizontalAccuracy: 5)
  }

  func engine(
    _ server: ListingServer, clock: TestClock, loiteringDelaySeconds: Double? = 300,
    removalExit: Bool = false
  ) throws -> GeofenceEngine {
    var rules = TransitionConfiguration()
    rules.loiteringDelaySeconds = loiteringDelaySeconds
    return try GeofenceEngine(
      configuration: .init(
        transitions: rules,
        sync: SyncConfiguration(baseURL: URL(string: "http://sync.test")!, apiKey: "k1"),
        emitsExitForRemovedGeofences: removalExit),
      storage: .inMemory, transport: server, clock: clock)
  }

  func summary(_ events: [GeofenceEvent]) -> [String] {
    events.map { "\($0.type.rawValue) \($0.geofenceID)\($0.isRemoval ? " (removed)" : "")" }
  }

  /// A, B, C contain the device's position (A at it, B 55.6 m north, C 51.8 m east: 0.0005°
  /// of longitude at 21.3° N); D is 11.1 km north.
  func initialServer() -> ListingServer {
    let server = ListingServer()
    server.update(upsert: [
      "A": ListingServer.json("A", Self.here.lat, Self.here.lon, name: "Alpha"),
      "B": ListingServer.json("B", Self.here.lat + 0.0005, Self.here.lon),
      "C": ListingServer.json("C", Self.here.lat, Self.here.lon + 0.0005),
      "D": ListingServer.json("D", Self.here.lat + 0.1, Self.here.lon),
    ])
    return server
  }

  @Test(arguments: [false, true])
  func syncedChangeKeepsInsideStateAndDwellTimers(removalExit: Bool) async throws {
    let server = initialServer()
    let clock = TestClock(Self.t0)
    let engine = try engine(server, clock: clock, removalExit: removalExit)
    let first = try await engine.sync()
    #expect(first.sync.diff.counts == .init(added: 4))
    #expect(
      summary(try engine.ingest(fix(0), device: "dev1")) == ["enter A", "enter B", "enter C"])
    #expect(try engine.ingest(fix(100), device: "dev1").isEmpty)

    // A renamed, B removed, C moved 11.1 km south, D moved onto the device (51.8 m west).
    server.update(
      upsert: [
        "A": ListingServer.json("A", Self.here.lat, Self.here.lon, name: "Alpha 2"),
        "C": ListingServer.json("C", Self.here.lat - 0.1, Self.here.lon),
        "D": ListingServer.json("D", Self.here.lat, Self.here.lon - 0.0005),
      ], delete: ["B"])
    clock.time = Self.t0 + 150
    let applied = try await engine.sync()
    #expect(
      applied.sync.diff.counts == .init(removed: 1, geometryChanged: 2, metadataChanged: 1))
    #expect(!applied.rebuiltIndex)
    #expect(applied.droppedVisits == 1)
    #expect(applied.carriedVisits == 2)
    if removalExit {
      #expect(summary(applied.events) == ["exit B (removed)"])
      let exit = try #require(applied.events.first)
      #expect(exit.time == Self.t0 + 150)
      #expect(exit.deviceID == "dev1")
      // At the last accepted fix (t = 100), 0.0005° south of B's centre: 55.6 m.
      #expect(exit.latitude == Self.here.lat && exit.longitude == Self.here.lon)
      #expect(abs(exit.distanceMeters - 55.6) < 0.1)
      #expect(exit.visitSeconds == 150)
      #expect(engine.report.removalEvents == 1)
    } else {
      #expect(applied.events.isEmpty)
      #expect(engine.report.removalEvents == 0)
    }
    #expect(engine.geofence(id: "A")?.name == "Alpha 2")
    #expect(engine.geofence(id: "B") == nil)
    #expect(engine.geofenceCount == 3)
    #expect(try engine.deviceState("dev1")?.insideGeofenceIDs == ["A", "C"])

    // Next fix: C (moved away) is re-evaluated and exits; D (moved onto the device) enters;
    // A neither enters again nor exits.
    let next = try engine.ingest(fix(200), device: "dev1")
    #expect(summary(next) == ["exit C", "enter D"])
    #expect(next.first?.visitSeconds == 200)
    #expect(try engine.deviceState("dev1")?.insideGeofenceIDs == ["A", "D"])
    // A dwells on the timer of its original ENTER (t = 0), not of the sync, under its new name.
    let dwell = try engine.ingest(fix(300), device: "dev1")
    #expect(summary(dwell) == ["dwell A"])
    #expect(dwell.first?.dwellSeconds == 300)
    #expect(dwell.first?.geofenceName == "Alpha 2")
    #expect(summary(try engine.ingest(fix(500), device: "dev1")) == ["dwell D"])
  }

  @Test func nameOnlyChangeDoesNotRebuildTheIndex() async throws {
    let server = ListingServer()
    server.update(upsert: [
      "A": ListingServer.json("A", Self.here.lat, Self.here.lon, name: "x"),
      "Z": ListingServer.json("Z", 0, 0),
    ])
    let engine = try engine(server, clock: TestClock(Self.t0), loiteringDelaySeconds: nil)
    _ = try await engine.sync()
    #expect(summary(try engine.ingest(fix(0), device: "dev1")) == ["enter A"])
    server.update(upsert: ["A": ListingServer.json("A", Self.here.lat, Self.here.lon, name: "y")])
    let report = try await engine.sync()
    #expect(report.sync.diff.counts == .init(metadataChanged: 1))
    #expect(!report.rebuiltIndex)
    #expect(report.carriedVisits == 1 && report.droppedVisits == 0)
    #expect(engine.geofence(id: "A")?.name == "y")
    #expect(try engine.deviceState("dev1")?.insideGeofenceIDs == ["A"])
    #expect(try engine.ingest(fix(20), device: "dev1").isEmpty)
    // The event ids of the geofence's one lifetime: an EXIT after the rename carries the new
    // name.
    let exit = try engine.ingest(fix(40, Self.here.lat + 0.01), device: "dev1")
    #expect(summary(exit) == ["exit A"])
    #expect(exit.first?.geofenceName == "y")
  }

  @Test func devicesKeepSeparateStatesAcrossAnApply() async throws {
    let server = ListingServer()
    server.update(upsert: [
      "A": ListingServer.json("A", Self.here.lat, Self.here.lon),
      "F": ListingServer.json("F", 10, 10),
    ])
    let engine = try engine(server, clock: TestClock(Self.t0), loiteringDelaySeconds: nil)
    _ = try await engine.sync()
    #expect(summary(try engine.ingest(fix(0), device: "in")) == ["enter A"])
    #expect(try engine.ingest(fix(0, 0, 0), device: "out").isEmpty)
    server.update(upsert: ["N": ListingServer.json("N", 0, 0, radius: 100)])
    let report = try await engine.sync()
    #expect(report.sync.diff.counts == .init(added: 1))
    #expect(report.carriedVisits == 1)
    #expect(try engine.deviceState("in")?.insideGeofenceIDs == ["A"])
    #expect(try engine.deviceState("out")?.insideGeofenceIDs == [])
    #expect(summary(try engine.ingest(fix(10, 0, 0), device: "out")) == ["enter N"])
    #expect(try engine.ingest(fix(10), device: "in").isEmpty)
  }

  /// A moved geofence that still contains the device, within the new disc plus its
  /// hysteresis, keeps the visit (no EXIT, no second ENTER); one moved just beyond it exits.
  @Test func aMovedGeofenceExitsOnlyBeyondTheNewDiscAndHysteresis() async throws {
    let server = ListingServer()
    // At 21.3° N one degree of latitude is 111,195.08 m on the engine's sphere.
    let metersPerDegree = Double.pi / 180 * EarthModel.meanRadiusMeters
    server.update(upsert: [
      "near": ListingServer.json("near", Self.here.lat, Self.here.lon, radius: 200),
      "far": ListingServer.json("far", Self.here.lat, Self.here.lon, radius: 200),
    ])
    let engine = try engine(server, clock: TestClock(Self.t0), loiteringDelaySeconds: nil)
    _ = try await engine.sync()
    #expect(summary(try engine.ingest(fix(0), device: "dev1")) == ["enter far", "enter near"])
    // Hysteresis max(20, 0.1 × 200) = 20 m; with accuracy 5 m an EXIT needs d − 5 > 220.
    // "near" moves 210 m north (d − 5 = 205: kept), "far" 230 m north (d − 5 = 225: EXIT).
    server.update(upsert: [
      "near": ListingServer.json(
        "near", Self.here.lat + 210 / metersPerDegree, Self.here.lon, radius: 200),
      "far": ListingServer.json(
        "far", Self.here.lat + 230 / metersPerDegree, Self.here.lon, radius: 200),
    ])
    let report = try await engine.sync()
    #expect(report.sync.diff.counts == .init(geometryChanged: 2))
    #expect(report.carriedVisits == 2)
    #expect(try engine.deviceState("dev1")?.insideGeofenceIDs == ["far", "near"])
    let events = try engine.ingest(fix(10), device: "dev1")
    #expect(summary(events) == ["exit far"])
    #expect(abs((events.first?.distanceMeters ?? 0) - 230) < 0.01)
    #expect(try engine.deviceState("dev1")?.insideGeofenceIDs == ["near"])
  }

  /// A device that is not in memory at the sync (evicted after its checkpoint) follows the
  /// removal as a device in memory does, whether it was dropped from memory or not: it is
  /// restored at the sync, drops the removed geofence's visit and gets its removal EXIT (as
  /// configured here), so that a geofence given the same id later is entered again.
  @Test func aDeviceRestoredAfterTheSyncDropsTheRemovedVisit() async throws {
    let directory = TestScratch.root.appendingPathComponent(
      "live-set-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let server = initialServer()
    var rules = TransitionConfiguration()
    rules.loiteringDelaySeconds = nil
    let engine = try GeofenceEngine(
      configuration: .init(
        transitions: rules,
        sync: SyncConfiguration(baseURL: URL(string: "http://sync.test")!, apiKey: "k1"),
        emitsExitForRemovedGeofences: true, checkpoints: .manual),
      storage: .directory(directory.path), transport: server, clock: TestClock(Self.t0))
    _ = try await engine.sync()
    #expect(
      summary(try engine.ingest(fix(0), device: "dev1")) == ["enter A", "enter B", "enter C"])
    try engine.checkpoint()
    #expect(engine.evictCleanDevices() == 1)
    server.update(delete: ["B"])
    let report = try await engine.sync()
    #expect(
      report.events.map { "\($0.type.rawValue) \($0.geofenceID) \($0.isRemoval)" } == [
        "exit B true"
      ])
    #expect(report.events.first?.deviceID == "dev1")
    #expect(try engine.deviceState("dev1")?.insideGeofenceIDs == ["A", "C"])
    // Leaving: A and C exit; B never does.
    #expect(
      summary(try engine.ingest(fix(100, Self.here.lat + 0.01), device: "dev1")) == [
        "exit A", "exit C",
      ])
  }
}
