import EventOutbox
import Foundation
import GeofenceEngine
import GeofenceGeometry
import GeofenceSync
import GeofenceTestSupport
import GeofenceTransitions
import LocationAuthorization
import RetryTiming
import Testing

/// The engine's public API end to end against the reference server on loopback: sync, two
/// interleaved devices, an authorization gap, a live sync while devices are inside regions,
/// upload, and a restart on the same directory.
///
/// Every geofence lies on the equator, so positions are metres east of (0, 0): one degree of
/// longitude is π/180 × 6,371,008.8 m = 111,195.08 m on the engine's sphere, and the
/// distance between two fixes on the equator is the difference of their eastings.
@Suite(
  "Engine against the reference server", .waitsOnChildProcesses, .serialized,
  .enabled(if: ReferenceServer.isAvailable, "python3 with the server's packages is needed"))
struct EngineServerTests {
  static let key = "engine-key"
  /// 2026-11-30T05:00:00Z.
  static let t0 = 1_796_014_800.0
  static let metersPerDegree = 111_195.08

  /// A geofence `east` metres east of (0, 0), in the admin routes' form.
  static func place(
    _ id: String, east: Double, radius: Double = 100, name: String? = nil,
    metadata: [String: Any]? = nil
  ) -> [String: Any] {
    var g = ReferenceServer.geofence(
      id, latitude: 0, longitude: east / metersPerDegree, radius: radius, name: name)
    if let metadata { g["metadata"] = metadata }
    return g
  }

  static var alphaMetadata: [String: Any] { ["url": "https://example.com/a"] }

  /// A (0 m, with a deep link) and M (50 m) overlap; B, C, D are 1, 2 and 3 km east.
  static var initialSet: [[String: Any]] {
    [
      place("A", east: 0, name: "Alpha", metadata: alphaMetadata),
      place("M", east: 50, name: "Mall"),
      place("B", east: 1_000),
      place("C", east: 2_000),
      place("D", east: 3_000),
    ]
  }

  static func fix(_ east: Double, _ t: Double) -> LocationFix {
    LocationFix(
      coordinate: Coordinate(uncheckedLatitude: 0, longitude: east / metersPerDegree),
      time: t0 + t, horizontalAccuracy: 5)
  }

  static var rules: TransitionConfiguration {
    var c = TransitionConfiguration()
    c.outlierFilter = nil
    c.loiteringDelaySeconds = 300
    return c
  }

  static func makeEngine(
    _ server: ReferenceServer, directory: URL, clock: TestClock, removalExit: Bool = false,
    checkpoints: GeofenceEngine.CheckpointPolicy = .manual
  ) throws -> GeofenceEngine {
    var sync = SyncConfiguration(baseURL: server.baseURL, apiKey: key)
    sync.requestTimeoutSeconds = 10
    return try GeofenceEngine(
      configuration: .init(
        transitions: rules, outbox: OutboxConfiguration(),
        upload: .init(
          server: server.baseURL, apiKey: key,
          retry: RetryPolicy(maximumAttempts: 3, baseDelaySeconds: 0.1, maximumDelaySeconds: 0.2)),
        sync: sync, emitsExitForRemovedGeofences: removalExit, checkpoints: checkpoints),
      storage: .directory(directory.path), clock: clock)
  }

  static func temporaryDirectory() -> URL {
    TestScratch.root.appendingPathComponent(
      "engine-server-\(UUID().uuidString)")
  }

  /// What the server stored for the account, by event id.
  static func received(_ server: ReferenceServer) async throws -> [String: [String: Any]] {
    let report = try await server.events(key: key)
    var byID: [String: [String: Any]] = [:]
    for entry in report["events"] as? [[String: Any]] ?? [] {
      if let id = entry["id"] as? String { byID[id] = entry["event"] as? [String: Any] ?? [:] }
    }
    return byID
  }

  /// Seconds of an RFC 3339 time, via Foundation (independent of the engine's formatter).
  static func seconds(_ text: Any?) -> Double? {
    guard let text = text as? String else { return nil }
    let f = ISO8601DateFormatter()
    f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    if let d = f.date(from: text) { return d.timeIntervalSince1970 }
    f.formatOptions = [.withInternetDateTime]
    return f.date(from: text)?.timeIntervalSince1970
  }

  static func summary(_ events: [GeofenceEvent]) -> [String] {
    events.map { e in
      var s = "\(e.type.rawValue) \(e.geofenceID)"
      if e.afterGap, let g = e.gapStart { s += " gap@\(Int(g - t0))" }
      if e.isRemoval { s += " (removed)" }
      return s
    }
  }

  /// Checks that the server holds exactly `events`, member by member.
  static func expectServerHolds(_ events: [GeofenceEvent], _ server: ReferenceServer)
    async throws
  {
    let stored = try await received(server)
    #expect(Set(stored.keys) == Set(events.map(\.id)))
    #expect(Set(events.map(\.id)).count == events.count, "event ids are unique")
    for e in events {
      let s = try #require(stored[e.id], "\(e.id) not received")
      #expect(s["type"] as? String == e.type.rawValue)
      #expect(s["geofence_id"] as? String == e.geofenceID)
      #expect(s["device_id"] as? String == e.deviceID)
      #expect(s["geofence_name"] as? String == e.geofenceName)
      #expect(s["url"] as? String == e.url)
      #expect(seconds(s["time"]) == e.time)
      #expect(s["after_gap"] as? Bool == e.afterGap)
      #expect(seconds(s["gap_start"]) == e.gapStart)
      #expect(s["removal"] as? Bool == e.isRemoval)
      #expect((s["visit_s"] as? Double) == e.visitSeconds)
      #expect((s["dwell_s"] as? Double) == e.dwellSeconds)
      let metadata = s["metadata"] as? [String: Any]
      if e.geofenceID == "A" {
        #expect(metadata?["url"] as? String == "https://example.com/a")
        #expect(metadata?.count == 1)
      } else {
        #expect(metadata == nil)
      }
    }
  }

  /// A device dropped from memory (its checkpoint saved) while inside X gets the same events
  /// through a sync that removes X and one that adds it back as a device kept in memory: the
  /// removal drops its visit (with the removal EXIT when asked for), so its next fix inside X
  /// enters it again, and a fix far away exits nothing.
  @Test(arguments: [false, true])
  func aDeviceDroppedFromMemoryFollowsARemovalAsOneInMemory(removalExit: Bool) async throws {
    let server = try await ReferenceServer.start(keys: [Self.key])
    defer { server.stop() }
    var outputs: [[String]] = []
    for evicts in [false, true] {
      try await server.replaceGeofences(key: Self.key, [Self.place("X", east: 0)])
      let directory = Self.temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: directory) }
      let clock = TestClock(Self.t0)
      let engine = try Self.makeEngine(
        server, directory: directory, clock: clock, removalExit: removalExit)
      _ = try await engine.sync()
      var seen: [String] = []
      func ingest(_ east: Double, _ t: Double, _ device: String) throws {
        seen += Self.summary(try engine.ingest(Self.fix(east, t), device: device))
          .map { "\(device) \($0)" }
      }
      try ingest(0, 0, "t1")
      try ingest(0, 0, "t2")
      try engine.checkpoint()
      if evicts { #expect(engine.evictCleanDevices(keepingAtMost: 0) == 2) }
      try await server.patchGeofences(key: Self.key, delete: ["X"])
      seen += Self.summary(try await engine.sync().events).map { "sync \($0)" }
      try await server.patchGeofences(key: Self.key, upsert: [Self.place("X", east: 0)])
      _ = try await engine.sync()
      try ingest(0, 100, "t1")
      try ingest(5_000, 200, "t2")
      outputs.append(seen)
    }
    let expected =
      ["t1 enter X", "t2 enter X"]
      + (removalExit ? ["sync exit X (removed)", "sync exit X (removed)"] : [])
      + ["t1 enter X"]
    #expect(outputs[0] == expected)
    #expect(outputs[1] == outputs[0])
  }

  @Test(arguments: [false, true])
  func liveSyncWhileDevicesAreInside(removalExit: Bool) async throws {
    let server = try await ReferenceServer.start(keys: [Self.key])
    defer { server.stop() }
    try await server.replaceGeofences(key: Self.key, Self.initialSet)
    let directory = Self.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let clock = TestClock(Self.t0)
    let engine = try Self.makeEngine(
      server, directory: directory, clock: clock, removalExit: removalExit)

    let first = try await engine.sync()
    #expect(first.sync.diff.counts == .init(added: 5))
    #expect(engine.geofenceCount == 5)
    #expect(engine.geofence(id: "A")?.metadataJSON == #"{"url":"https://example.com/a"}"#)

    var all: [GeofenceEvent] = []
    func ingest(_ east: Double, _ t: Double, _ device: String) throws -> [String] {
      let events = try engine.ingest(Self.fix(east, t), device: device)
      all += events
      return Self.summary(events)
    }
    // Two interleaved devices: d1 enters A and M, d2 goes through B into C.
    #expect(try ingest(-500, 0, "d1") == [])
    #expect(try ingest(1_500, 0, "d2") == [])
    #expect(try ingest(0, 10, "d1") == ["enter A", "enter M"])
    #expect(try ingest(1_000, 10, "d2") == ["enter B"])
    #expect(try ingest(2_000, 20, "d2") == ["exit B", "enter C"])
    let enterA = all[0]
    #expect(enterA.url == "https://example.com/a")
    #expect(enterA.geofenceName == "Alpha")
    #expect(enterA.distanceMeters == 0)
    #expect(all[1].url == nil && abs(all[1].distanceMeters - 50) < 0.01)
    #expect(all[3].visitSeconds == 10)

    // A downgrade to when-in-use in the background at 25 s opens a gap; the re-grant at 40 s
    // resumes. Fixes in between are dropped; the first accepted fix after it is flagged.
    var background = AuthorizationTimeline.granted
    background.status = .authorizedWhenInUse
    let decision = try engine.updateAuthorization(background, at: Self.t0 + 25)
    #expect(!decision.mayMonitor)
    #expect(try ingest(0, 30, "d1") == [])
    #expect(try ingest(2_500, 30, "d2") == [])
    #expect(engine.report.notAuthorized == 2)
    try engine.updateAuthorization(AuthorizationTimeline.granted, at: Self.t0 + 40)
    #expect(try engine.deviceState("d2")?.gapStart == Self.t0 + 25)
    #expect(try ingest(0, 50, "d1") == [])
    #expect(try ingest(3_000, 50, "d2") == ["exit C gap@25", "enter D gap@25"])
    #expect(all.last?.afterGap == true && all.last?.gapStart == Self.t0 + 25)
    #expect(all[all.count - 2].visitSeconds == 30)
    #expect(engine.report.gaps == 2 && engine.report.afterGapEvents == 2)

    // The live sync at 100 s: A renamed (metadata kept), D (d2 inside) removed, M (d1 inside)
    // moved 5 km east, N added on d1 (radius 50 m).
    try await server.patchGeofences(
      key: Self.key,
      upsert: [
        Self.place("A", east: 0, name: "Alpha 2", metadata: Self.alphaMetadata),
        Self.place("M", east: 5_000, name: "Mall"),
        Self.place("N", east: 0, radius: 50, name: "Kiosk"),
      ], delete: ["D"])
    clock.time = Self.t0 + 100
    let applied = try await engine.sync()
    #expect(
      applied.sync.diff.counts
        == .init(added: 1, removed: 1, geometryChanged: 1, metadataChanged: 1))
    #expect(applied.droppedVisits == 1)
    #expect(applied.carriedVisits == 2)
    all += applied.events
    if removalExit {
      #expect(Self.summary(applied.events) == ["exit D (removed)"])
      let exit = try #require(applied.events.first)
      #expect(exit.deviceID == "d2" && exit.time == Self.t0 + 100)
      #expect(exit.longitude == 3_000 / Self.metersPerDegree && exit.latitude == 0)
      #expect(exit.visitSeconds == 50)
      #expect(exit.distanceMeters < 0.01)
    } else {
      #expect(applied.events.isEmpty)
    }
    #expect(engine.geofence(id: "A")?.name == "Alpha 2")
    #expect(engine.geofence(id: "D") == nil)
    #expect(try engine.deviceState("d1")?.insideGeofenceIDs == ["A", "M"])
    #expect(try engine.deviceState("d2")?.insideGeofenceIDs == [])

    // Next fixes: M is re-evaluated (5 km away: EXIT), N entered; A kept. Nothing for d2.
    #expect(try ingest(0, 200, "d1") == ["exit M", "enter N"])
    let exitM = all[all.count - 2]
    #expect(exitM.visitSeconds == 190)
    #expect(abs(exitM.distanceMeters - 5_000) < 0.01)
    #expect(try ingest(3_000, 200, "d2") == [])
    // A's dwell timer is the original ENTER's (10 s): nothing at 305 s, DWELL at 310 s.
    #expect(try ingest(0, 305, "d1") == [])
    #expect(try ingest(0, 310, "d1") == ["dwell A"])
    let dwell = try #require(all.last)
    #expect(dwell.dwellSeconds == 300)
    #expect(dwell.geofenceName == "Alpha 2" && dwell.url == "https://example.com/a")

    let upload = try await engine.flush()
    #expect(upload.accepted == all.count)
    #expect(upload.stopped == nil)
    try await Self.expectServerHolds(all, server)
    #expect(all.count == (removalExit ? 11 : 10))
  }

  @Test(arguments: [GeofenceEngine.CheckpointPolicy.manual, .everyFix])
  func restartContinuesEachDevice(policy: GeofenceEngine.CheckpointPolicy) async throws {
    let server = try await ReferenceServer.start(keys: [Self.key])
    defer { server.stop() }
    try await server.replaceGeofences(key: Self.key, Self.initialSet)
    let directory = Self.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let clock = TestClock(Self.t0)
    var all: [GeofenceEvent] = []

    do {
      let engine = try Self.makeEngine(
        server, directory: directory, clock: clock, checkpoints: policy)
      _ = try await engine.sync()
      all += try engine.ingest(Self.fix(-500, 0), device: "d1")
      all += try engine.ingest(Self.fix(0, 10), device: "d1")
      all += try engine.ingest(Self.fix(1_000, 10), device: "d2")
      #expect(Self.summary(all) == ["enter A", "enter M", "enter B"])
      if policy == .manual { try engine.checkpoint() }
    }

    // A new engine on the same directory, without syncing: the set, the devices and the
    // queued events are restored.
    clock.time = Self.t0 + 60
    let engine = try Self.makeEngine(
      server, directory: directory, clock: clock, checkpoints: policy)
    #expect(engine.geofenceCount == 5)
    #expect(engine.geofence(id: "A")?.metadataJSON == #"{"url":"https://example.com/a"}"#)
    let d1 = try #require(try engine.deviceState("d1"))
    #expect(d1.insideGeofenceIDs == ["A", "M"])
    #expect(d1.lastFixTime == Self.t0 + 10)
    #expect(try engine.deviceState("d2")?.insideGeofenceIDs == ["B"])
    #expect(try engine.outbox?.counts().queued == 3)

    // An older fix is still stale for the restored device.
    #expect(try engine.ingest(Self.fix(0, 5), device: "d1").isEmpty)
    #expect(engine.report.dropCounts[.staleFix] == 1)
    // Inside again: no second ENTER. Outside: EXIT with the visit since the first engine's
    // ENTER (10 s → 30 s).
    #expect(try engine.ingest(Self.fix(0, 20), device: "d1").isEmpty)
    let exits = try engine.ingest(Self.fix(-500, 30), device: "d1")
    #expect(Self.summary(exits) == ["exit A", "exit M"])
    #expect(exits.map(\.visitSeconds) == [20, 20])
    all += exits
    let moved = try engine.ingest(Self.fix(2_000, 40), device: "d2")
    #expect(Self.summary(moved) == ["exit B", "enter C"])
    #expect(moved.first?.visitSeconds == 30)
    all += moved

    let upload = try await engine.flush()
    #expect(upload.accepted == all.count)
    try await Self.expectServerHolds(all, server)
  }
}
