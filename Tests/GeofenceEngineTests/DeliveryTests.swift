import EventOutbox
import Foundation
import GeofenceEngine
import GeofenceGeometry
import GeofenceTestSupport
import LocationAuthorization
import Testing

/// A destination that records what it is handed (ids and payload objects).
final class RecordingDestination: EventDestination {
  let name: String
  let maxBatchEvents = 100
  var batches: [[String]] = []
  var objects: [[String: Any]] = []

  init(name: String = "recorder") { self.name = name }

  func deliver(_ events: [OutboxEvent], attempt: Int) async -> DestinationAnswer {
    batches.append(events.map(\.id))
    for e in events {
      let object = try? JSONSerialization.jsonObject(with: Data(e.jsonObject.utf8))
      objects.append(object as? [String: Any] ?? [:])
    }
    return DestinationAnswer(delivered: events.map(\.id))
  }

  var delivered: [String] { batches.flatMap { $0 } }
}

/// Flush triggers, identity rules and sessions, on a manual clock.
@Suite(.serialized) struct DeliveryTests {
  static let metersPerDegree = Double.pi / 180 * EarthModel.meanRadiusMeters
  static let geofence = Geofence(
    id: "A",
    region: try! CircularRegion(
      center: Coordinate(uncheckedLatitude: 0, longitude: 0), radiusMeters: 100))
  let clock = ManualClock()
  let directory = TestScratch.root.appendingPathComponent(
    "delivery-tests-\(UUID().uuidString)")

  func engine(
    policy: FlushPolicy = .manual, sessions: SessionConfiguration? = nil,
    identity: GeofenceEngine.IdentityMode = .persisted
  ) throws -> (GeofenceEngine, RecordingDestination) {
    let engine = try GeofenceEngine(
      configuration: .init(
        outbox: .init(), identity: identity, flushPolicy: policy, sessions: sessions),
      storage: .directory(directory.path), geofences: [Self.geofence], clock: clock)
    let recorder = RecordingDestination()
    try engine.add(destination: recorder)
    return (engine, recorder)
  }

  /// Fix `k` alternates inside (0 m) and outside (1 km east) the 100 m geofence, 60 s apart on
  /// the fix times: every fix makes one event (ENTER, EXIT, ENTER, ...).
  func fix(_ k: Int) -> LocationFix {
    let east = k % 2 == 0 ? 0.0 : 1_000
    return LocationFix(
      coordinate: Coordinate(uncheckedLatitude: 0, longitude: east / Self.metersPerDegree),
      time: 1_796_014_800 + Double(k) * 60, horizontalAccuracy: 5)
  }

  @Test func countTriggerDeliversAtTheCount() async throws {
    let (engine, recorder) = try engine(policy: FlushPolicy(count: 3, intervalSeconds: nil))
    for k in 0..<2 { try engine.ingest(fix(k), device: "d") }
    _ = try await engine.deliverDue()
    #expect(recorder.delivered.isEmpty)
    try engine.ingest(fix(2), device: "d")
    _ = try await engine.deliverDue()
    #expect(recorder.batches.map(\.count) == [3])
  }

  @Test func intervalTriggerDeliversOnceTheOldestWaited() async throws {
    let (engine, recorder) = try engine(policy: FlushPolicy(count: nil, intervalSeconds: 30))
    try engine.ingest(fix(0), device: "d")
    clock.advance(by: 20)
    try engine.ingest(fix(1), device: "d")
    #expect(try engine.nextFlushTime() == clock.now() - 20 + 30)
    clock.advance(by: 9.5)
    _ = try await engine.deliverDue()
    #expect(recorder.delivered.isEmpty)
    clock.advance(by: 0.5)
    _ = try await engine.deliverDue()
    #expect(recorder.batches.map(\.count) == [2])
  }

  @Test func debounceTriggerWaitsForTheBurstToSettle() async throws {
    let (engine, recorder) = try engine(
      policy: FlushPolicy(count: nil, intervalSeconds: nil, debounceSeconds: 2))
    for k in 0..<3 {
      try engine.ingest(fix(k), device: "d")
      clock.advance(by: 1.5)
      _ = try await engine.deliverDue()
      #expect(recorder.delivered.isEmpty, "event \(k) restarts the 2 s")
    }
    clock.advance(by: 0.5)
    _ = try await engine.deliverDue()
    #expect(recorder.batches.map(\.count) == [3])
  }

  @Test func immediateTriggerDeliversEachTransition() async throws {
    let (engine, recorder) = try engine(
      policy: FlushPolicy(count: nil, intervalSeconds: nil, immediateOnTransition: true))
    for k in 0..<3 {
      try engine.ingest(fix(k), device: "d")
      _ = try await engine.deliverDue()
    }
    #expect(recorder.batches.map(\.count) == [1, 1, 1])
  }

  @Test func backgroundTriggerDeliversWhenTheAppLeavesTheForeground() async throws {
    let (engine, recorder) = try engine(
      policy: FlushPolicy(count: nil, intervalSeconds: nil, onBackground: true))
    var state = AuthorizationTimeline.granted
    state.appState = .foreground
    try engine.updateAuthorization(state, at: 1_796_014_700)
    try engine.ingest(fix(0), device: "d")
    _ = try await engine.deliverDue()
    #expect(recorder.delivered.isEmpty)
    state.appState = .background
    try engine.updateAuthorization(state, at: 1_796_014_900)
    _ = try await engine.deliverDue()
    #expect(recorder.batches.map(\.count) == [1])
  }

  @Test func explicitDeliverSendsEverythingWhateverThePolicy() async throws {
    let (engine, recorder) = try engine(policy: .manual)
    for k in 0..<4 { try engine.ingest(fix(k), device: "d") }
    _ = try await engine.deliverDue()
    #expect(recorder.delivered.isEmpty)
    let report = try await engine.deliver()
    #expect(report.destinations.map(\.report.delivered) == [4])
    #expect(try engine.destinationCounts("recorder").pending == 0)
  }

  @Test func userIDsAreTrimmedAndEmptyOrLongOnesRefused() throws {
    let (engine, _) = try engine()
    try engine.identify(user: "  user-7\n")
    #expect(engine.userID == "user-7")
    for bad in ["", "   ", "\n\t"] {
      #expect(throws: EngineError.self) { try engine.identify(user: bad) }
    }
    #expect(engine.userID == "user-7")
    let long = String(repeating: "é", count: 129)
    do {
      try engine.identify(user: long)
      Issue.record("a 129-character id was accepted")
    } catch {
      #expect("\(error)".contains("at most 128 characters; this one has 129"), "\(error)")
    }
    try engine.identify(user: String(repeating: "é", count: 128))
    #expect(engine.userID?.count == 128)
  }

  @Test func identityIsStampedWhenTheEventIsCreated() async throws {
    let (engine, recorder) = try engine()
    let anonymous = try #require(engine.anonymousID)
    try engine.ingest(fix(0), device: "d")
    try engine.identify(user: "u1")
    try engine.ingest(fix(1), device: "d")
    try engine.reset()
    let second = try #require(engine.anonymousID)
    #expect(second != anonymous && second.hasPrefix("anon-"))
    try engine.ingest(fix(2), device: "d")
    _ = try await engine.deliver()
    #expect(recorder.objects.map { $0["user_id"] as? String } == [nil, "u1", nil])
    #expect(
      recorder.objects.map { $0["anonymous_id"] as? String } == [anonymous, nil, second])
  }

  @Test func sessionsTimeOutAfter30MinutesResetAndSurviveARestart() async throws {
    var (engine, recorder) = try engine(sessions: SessionConfiguration())
    let t0 = clock.now()
    try engine.ingest(fix(0), device: "d")  // session 1, event 1
    clock.advance(by: 1_800)  // exactly 30 min: still the same session
    try engine.ingest(fix(1), device: "d")  // session 1, event 2
    clock.advance(by: 1_800.001)
    try engine.ingest(fix(2), device: "d")  // session 2 (more than 30 min), event 1
    _ = try await engine.deliver()
    var seen = recorder.objects.map {
      [
        $0["session_id"] as? String ?? "", "\($0["session_index"] ?? "")",
        "\($0["event_index"] ?? "")",
      ]
    }
    let s1 = String(Int64(t0 * 1000))
    let s2 = String(Int64((t0 + 3_600.001) * 1000))
    #expect(seen == [[s1, "1", "1"], [s1, "1", "2"], [s2, "2", "1"]])
    // Restart: the session continues.
    recorder.batches = []
    recorder.objects = []
    engine = try GeofenceEngine(configuration: .init(), storage: .inMemory)  // release the store
    (engine, recorder) = try self.engine(sessions: SessionConfiguration())
    clock.advance(by: 60)
    try engine.ingest(fix(3), device: "d")  // session 2, event 2
    try engine.reset()
    try engine.ingest(fix(4), device: "d")  // session 3, event 1
    _ = try await engine.deliver()
    seen = recorder.objects.map {
      [
        $0["session_id"] as? String ?? "", "\($0["session_index"] ?? "")",
        "\($0["event_index"] ?? "")",
      ]
    }
    let s3 = String(Int64((t0 + 3_660.001) * 1000))
    #expect(seen == [[s2, "2", "2"], [s3, "3", "1"]])
  }

  /// Events made again after a crash (their fixes taken again: the device's checkpoint was
  /// not written, its events were queued) are not queued twice and do not count in the
  /// session: `event_index` runs 1...5 over the five events queued.
  @Test func eventsMadeAgainAfterACrashDoNotSkipEventIndexes() async throws {
    func open() throws -> (GeofenceEngine, RecordingDestination) {
      let engine = try GeofenceEngine(
        configuration: .init(
          outbox: .init(), identity: .persisted, checkpoints: .manual,
          sessions: SessionConfiguration()),
        storage: .directory(directory.path), geofences: [Self.geofence], clock: clock)
      let recorder = RecordingDestination()
      try engine.add(destination: recorder)
      return (engine, recorder)
    }
    var (engine, recorder) = try open()
    for k in 0..<3 {
      try engine.ingest(fix(k), device: "d")
      clock.advance(by: 60)
    }
    // The crash: no checkpoint was written, so the next process takes fixes 0-2 again.
    engine = try GeofenceEngine(configuration: .init(), storage: .inMemory)
    (engine, recorder) = try open()
    for k in 0..<5 {
      try engine.ingest(fix(k), device: "d")
      clock.advance(by: 60)
    }
    _ = try await engine.deliver()
    #expect(recorder.objects.map { $0["event_index"] as? Int } == [1, 2, 3, 4, 5])
    #expect(Set(recorder.objects.compactMap { $0["session_index"] as? Int }) == [1])
    #expect(Set(recorder.delivered).count == 5)
  }

  /// Stages of one destination: only ENTERs, positions to 2 decimals (hand-rounded below);
  /// the other destination gets every event as stored.
  @Test func shippedStagesFilterTypesAndCoarsenPositionsForOneDestination() async throws {
    let center = Coordinate(uncheckedLatitude: 46.991234, longitude: 6.938765)
    let engine = try GeofenceEngine(
      configuration: .init(outbox: .init()), storage: .directory(directory.path),
      geofences: [
        Geofence(id: "N", region: try CircularRegion(center: center, radiusMeters: 100))
      ], clock: clock)
    let coarse = RecordingDestination(name: "coarse")
    let full = RecordingDestination(name: "full")
    try engine.add(
      destination: coarse,
      stages: DeliveryStages(
        before: [EventTypeFilter(keeping: [.enter])],
        enrichment: [CoordinateRedaction(decimals: 2)]))
    try engine.add(destination: full)
    try engine.ingest(LocationFix(coordinate: center, time: 1_796_014_800), device: "d")
    let away = Coordinate(uncheckedLatitude: 46.9, longitude: 6.938765)
    try engine.ingest(LocationFix(coordinate: away, time: 1_796_015_800), device: "d")
    let report = try await engine.deliver()
    #expect(report.destinations.map(\.report.filtered) == [1, 0])
    #expect(coarse.objects.map { $0["type"] as? String } == ["enter"])
    #expect(coarse.objects[0]["latitude"] as? Double == 46.99)
    #expect(coarse.objects[0]["longitude"] as? Double == 6.94)
    #expect(full.objects.map { $0["type"] as? String } == ["enter", "exit"])
    #expect(full.objects[0]["latitude"] as? Double == 46.991234)
    #expect(try engine.destinationCounts("coarse").filtered == 1)
    #expect(
      CoordinateRedaction(decimals: nil).process(
        OutboxEvent(id: "x", payload: #"{"type":"enter","latitude":1.5,"longitude":2.5,"n":1}"#))?
        .payload == #"{"type":"enter","n":1}"#)
  }

  @Test func withoutSessionsEventsCarryNoSessionMembers() async throws {
    let (engine, recorder) = try engine()
    try engine.ingest(fix(0), device: "d")
    _ = try await engine.deliver()
    #expect(recorder.objects.count == 1 && recorder.objects[0]["session_id"] == nil)
  }

  @Test func aSecondConfigureOnTheSameStoreIsAnError() throws {
    let (first, _) = try engine()
    do {
      _ = try GeofenceEngine(
        configuration: .init(outbox: .init(), destinations: [.standardOutput]),
        storage: .directory(directory.path), geofences: [Self.geofence], clock: clock)
      Issue.record("a second engine on the same store was configured")
    } catch {
      #expect("\(error)".contains("already configured"), "\(error)")
    }
    // An engine that only reads the store (no destination) may open it beside the first.
    _ = try GeofenceEngine(
      configuration: .init(outbox: .init()), storage: .directory(directory.path),
      geofences: [Self.geofence], clock: clock)
    _ = first
  }
}
