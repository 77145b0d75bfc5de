import EventOutbox
import Foundation
import GeofenceEngine
import GeofenceGeometry
import GeofenceTestSupport
import GeofenceTransitions
import LocationAuthorization
import Testing

import RetryTiming
import TrackFormats

/// A manual engine clock: time moves only when a test moves it.
final class TestClock: EngineClock, @unchecked Sendable {
  var time: Double
  init(_ time: Double = 1_796_014_800) { self.time = time }
  func now() -> Double { time }
  func sleep(seconds: Double) async throws { time += max(0, seconds) }
}

/// Metres per degree on the equator of the mean sphere.
private let metersPerDegree = Double.pi / 180 * EarthModel.meanRadiusMeters

/// A fix `eastMeters` east of (0, 0) at time `t` (seconds after `t0`).
private func fix(_ eastMeters: Double, _ t: Double, device: String? = nil) -> LocationFix {
  LocationFix(
    coordinate: Coordinate(uncheckedLatitude: 0, longitude: eastMeters / metersPerDegree),
    time: t0 + t, deviceID: device)
}

private let t0 = 1_796_014_800.0

/// Regions of radius 100 m on the equator: A at 0 m, B at 1,000 m, C at 2,000 m east.
private func regions() throws -> [Geofence] {
  try ["A", "B", "C"].enumerated().map { i, id in
    Geofence(
      id: id, name: "Region \(id)",
      region: try CircularRegion(
        center: Coordinate(uncheckedLatitude: 0, longitude: Double(i) * 1_000 / metersPerDegree),
        radiusMeters: 100))
  }
}

/// Simple rules: no dwell, no outlier filter.
private let rules: TransitionConfiguration = {
  var c = TransitionConfiguration()
  c.loiteringDelaySeconds = nil
  c.outlierFilter = nil
  return c
}()

private let granted = AuthorizationTimeline.granted
private var whenInUseBackground: AuthorizationState {
  var s = granted
  s.status = .authorizedWhenInUse
  return s
}
private var consentOff: AuthorizationState {
  var s = granted
  s.trackingConsent = false
  return s
}

private struct Fixture {
  let clock = TestClock()
  let directory = TestScratch.root.appendingPathComponent(
    "monitoring-\(UUID().uuidString)")
  let pipeline: Pipeline
  var outbox: Outbox { pipeline.engine.outbox! }

  init(state: AuthorizationState = granted) throws {
    pipeline = try Pipeline(directory: directory, state: state, clock: clock)
  }

  /// The queued events' payloads, decoded.
  func queued() throws -> [[String: Any]] {
    try outbox.queuedEvents().map {
      try JSONSerialization.jsonObject(with: Data($0.payload.utf8)) as? [String: Any] ?? [:]
    }
  }

  func summary() throws -> [String] {
    try queued().map { e in
      let time = RFC3339Seconds(e["time"] as? String ?? "")
      var s =
        "\(e["type"] as? String ?? "?") \(e["geofence_id"] as? String ?? "?") @\(Int(time - t0))"
      if e["after_gap"] as? Bool == true, let g = e["gap_start"] as? String {
        s += " gap@\(Int(RFC3339Seconds(g) - t0))"
      }
      return s
    }
  }
}

/// Seconds of an RFC 3339 UTC time with milliseconds (`...Z`), via Foundation.
private func RFC3339Seconds(_ text: String) -> Double {
  let f = ISO8601DateFormatter()
  f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
  return f.date(from: text)?.timeIntervalSince1970 ?? .nan
}

/// The engine over a store with an outbox and a persisted identity, fed like a replay: fixes
/// in time order, each authorization change applied before the first fix at or after it.
private final class Pipeline {
  let engine: GeofenceEngine

  init(
    directory: URL, state: AuthorizationState, clock: TestClock,
    rules: TransitionConfiguration = rules
  ) throws {
    engine = try GeofenceEngine(
      configuration: .init(
        transitions: rules, initialAuthorization: state, outbox: OutboxConfiguration(),
        identity: .persisted, checkpoints: .manual),
      storage: .directory(directory.path), geofences: try regions(), clock: clock)
  }

  var report: EngineReport { engine.report }

  @discardableResult
  func process(_ fix: LocationFix) throws -> [GeofenceEvent] {
    try engine.ingest(fix, device: fix.deviceID ?? "dev")
  }

  @discardableResult
  func replay(_ fixes: [LocationFix], timeline: AuthorizationTimeline = .init(changes: []))
    throws -> EngineReport
  {
    let ordered = fixes.enumerated().sorted {
      ($0.element.time ?? 0, $0.offset) < ($1.element.time ?? 0, $1.offset)
    }.map(\.element)
    var next = 0
    for fix in ordered {
      while next < timeline.changes.count, timeline.changes[next].time <= fix.time ?? 0 {
        try engine.updateAuthorization(
          timeline.changes[next].state, at: timeline.changes[next].time)
        next += 1
      }
      try process(fix)
    }
    return engine.report
  }
}

@Suite struct MonitoringGateTests {
  @Test func downgradeAndRegrantMidTrack() throws {
    let f = try Fixture()
    let track = [
      fix(-500, 0), fix(0, 10),  // enter A
      fix(500, 20), fix(1_000, 30), fix(1_010, 40),  // off: dropped (no EXIT A here)
      fix(1_000, 60),  // back on: EXIT A and ENTER B, flagged with the gap's start (15)
      fix(1_500, 70),  // EXIT B, not flagged
      fix(2_000, 80),  // ENTER C
    ]
    let timeline = AuthorizationTimeline(changes: [
      .init(time: t0 + 15, state: whenInUseBackground),
      .init(time: t0 + 50, state: granted),
    ])
    let report = try f.pipeline.replay(track, timeline: timeline)
    #expect(
      try f.summary() == [
        "enter A @10", "exit A @60 gap@15", "enter B @60 gap@15", "exit B @70", "enter C @80",
      ])
    #expect(report.notAuthorized == 3)
    #expect(report.blockedCounts == [MonitoringBlocker.insufficientForBackground: 3])
    #expect(report.gaps == 1 && report.afterGapEvents == 2)
    #expect(report.enqueued == 5 && report.deletedForConsent == 0)
  }

  @Test func noSyntheticExitAndNothingWhenTheStateDidNotChangeDuringTheGap() throws {
    let f = try Fixture()
    var denied = granted
    denied.status = .denied
    let timeline = AuthorizationTimeline(changes: [
      .init(time: t0 + 15, state: denied), .init(time: t0 + 25, state: granted),
    ])
    // Leave A and come back during the gap: nothing to report at the resume.
    try f.pipeline.replay(
      [fix(0, 10), fix(800, 20), fix(0, 30), fix(800, 40)], timeline: timeline)
    #expect(try f.summary() == ["enter A @10", "exit A @40"])
    #expect(f.pipeline.report.notAuthorized == 1)
  }

  @Test func aDowngradeKeepsEventsCollectedWithPermission() throws {
    let f = try Fixture()
    var reduced = granted
    reduced.accuracy = .reduced
    try f.pipeline.replay(
      [fix(0, 10), fix(800, 20)],
      timeline: AuthorizationTimeline(changes: [.init(time: t0 + 30, state: reduced)]))
    #expect(try f.outbox.counts().pending == 2)
    #expect(f.pipeline.report.deletedForConsent == 0)
  }

  @Test func consentOffDeletesQueuedEventsAndIgnoresNewOnes() throws {
    let f = try Fixture()
    let timeline = AuthorizationTimeline(changes: [
      .init(time: t0 + 25, state: consentOff), .init(time: t0 + 45, state: granted),
    ])
    let report = try f.pipeline.replay(
      [fix(0, 10), fix(800, 20), fix(1_000, 30), fix(1_500, 40), fix(2_000, 50)],
      timeline: timeline)
    // enter A, exit A deleted at 25; the fixes at 30 and 40 ignored; at 50 a fresh session
    // enters C (no gap flag: nothing reported before it survives).
    #expect(report.deletedForConsent == 2)
    #expect(report.notAuthorized == 2 && report.blockedCounts == [MonitoringBlocker.consentOff: 2])
    #expect(try f.summary() == ["enter C @50"])
    #expect(try f.outbox.counts().deleted == 2)
  }

  @Test func consentOffAtStartEmptiesTheOutbox() throws {
    let f = try Fixture()
    try f.pipeline.replay([fix(0, 10)])
    #expect(try f.outbox.counts().pending == 1)
    try f.pipeline.engine.setConsent(false, at: t0 + 50)
    #expect(f.pipeline.report.deletedForConsent == 1)
    try f.pipeline.replay([fix(0, 100)])
    #expect(try f.outbox.counts().queued == 0 && f.pipeline.report.notAuthorized == 1)
    // A new engine on the same store starts with consent off too (the state is kept).
    let again = try Pipeline(directory: f.directory, state: granted, clock: f.clock)
    #expect(again.engine.authorization.trackingConsent == false)
  }

  @Test func eventsCarryTheIdentityOfTheirCreation() throws {
    let f = try Fixture()
    let engine = f.pipeline.engine
    let anonymous = try #require(engine.anonymousID)
    try f.pipeline.process(fix(0, 10))
    try engine.identify(user: "u7")
    try f.pipeline.process(fix(800, 20))
    try engine.reset()
    try f.pipeline.process(fix(1_000, 30))
    let second = try #require(engine.anonymousID)
    #expect(try f.queued().map { $0["user_id"] as? String } == [nil, "u7", nil])
    #expect(try f.queued().map { $0["anonymous_id"] as? String } == [anonymous, nil, second])
    #expect(second != anonymous && second.hasPrefix("anon-"))
    // The identity survives a restart.
    let reloaded = try Pipeline(directory: f.directory, state: granted, clock: f.clock)
    #expect(reloaded.engine.anonymousID == second && reloaded.engine.userID == nil)
  }

  @Test func reprocessingTheSameFixesMakesNoSecondEvent() throws {
    let clock = TestClock()
    let directory = TestScratch.root.appendingPathComponent("monitoring-\(UUID().uuidString)")
    let track = [fix(0, 10), fix(800, 20), fix(1_000, 30)]
    let ids: [String]
    do {
      let first = try Pipeline(directory: directory, state: granted, clock: clock)
      try first.replay(track)
      ids = try first.engine.outbox!.queuedEvents().map(\.id)
    }
    // A new process (after a crash, before any checkpoint: the first one's locks gone with
    // it) replays the same fixes into the same outbox: the same ids, nothing added.
    let again = try Pipeline(directory: directory, state: granted, clock: clock)
    let report = try again.replay(track)
    #expect(report.eventCounts.total == 3 && report.enqueued == 0)
    #expect(try again.engine.outbox!.queuedEvents().map(\.id) == ids)
    #expect(Set(ids).count == 3)
  }

  /// Random tracks and random authorization timelines: per region and device, ENTER and EXIT
  /// alternate starting with ENTER; no event has a time at which monitoring was off; events
  /// flagged after a gap are exactly those of the first evaluated fix after a resume.
  @Test(arguments: 0..<40) func enterAndExitAlternateUnderRandomTimelines(seed: UInt64) throws {
    var g = SeededGenerator(seed: seed)
    let f = try Fixture()
    var track: [LocationFix] = []
    var position = -300.0
    for i in 0..<200 {
      position += Double.random(in: -150...250, using: &g)
      track.append(fix(position, Double(i) * 10, device: Bool.random(using: &g) ? "d1" : "d2"))
    }
    let states: [AuthorizationState] = [granted, whenInUseBackground, consentOff, granted]
    var changes: [AuthorizationTimeline.Change] = []
    var t = 0.0
    while t < 2_000 {
      let start = t + Double.random(in: 0...300, using: &g)
      let state = states[Int.random(in: 0..<states.count, using: &g)]
      changes.append(.init(time: t0 + start, state: state))
      t = start
    }
    try f.pipeline.replay(track, timeline: AuthorizationTimeline(changes: changes))
    // Alternation per (device, region).
    var inside: [String: Bool] = [:]
    for e in try f.queued() {
      let key = "\(e["device_id"] as? String ?? "")/\(e["geofence_id"] as? String ?? "")"
      let type = e["type"] as? String
      #expect((type == "enter") == !(inside[key] ?? false), "seed \(seed)")
      inside[key] = type == "enter"
      // No event at a time when monitoring was off.
      let time = RFC3339Seconds(e["time"] as? String ?? "")
      let stateAt = changes.last { $0.time <= time }?.state ?? granted
      #expect(AuthorizationPolicy.default.decide(stateAt).mayMonitor, "seed \(seed)")
      if e["after_gap"] as? Bool == true {
        let gap = RFC3339Seconds(e["gap_start"] as? String ?? "")
        #expect(gap < time, "seed \(seed)")
      }
    }
  }
}

@Suite struct AuthorizationTimelineTests {
  @Test func readsJSONLines() throws {
    let text = """
      {"time": "2026-11-30T05:00:00Z", "status": "authorizedAlways", "consent": true}
      {"time": 1796014815, "status": "when_in_use", "app_state": "background"}

      {"time": "2026-11-30T05:00:50.5Z", "status": "always", "accuracy": "reduced", "consent": false}
      """
    let timeline = try AuthorizationTimeline.parse(text)
    #expect(timeline.changes.map(\.time) == [t0, t0 + 15, t0 + 50.5])
    #expect(timeline.changes[1].state.status == .authorizedWhenInUse)
    #expect(timeline.changes[1].state.trackingConsent)
    #expect(timeline.changes[2].state.accuracy == .reduced)
    #expect(!timeline.changes[2].state.trackingConsent)
  }

  @Test func readsCSV() throws {
    let text = """
      time,status,accuracy,app_state,consent,registered
      2026-11-30T05:00:10Z,authorizedAlways,,,,
      2026-11-30T05:00:30Z,denied,full,foreground,1,yes
      """
    let timeline = try AuthorizationTimeline.parse(text)
    #expect(timeline.changes.map(\.time) == [t0 + 10, t0 + 30])
    #expect(timeline.changes[1].state.status == .denied)
    #expect(timeline.changes[1].state.appState == .foreground)
  }

  @Test func namesTheBadLine() {
    #expect(throws: AuthorizationTimelineError(line: 3, message: "unknown status 'maybe'")) {
      try AuthorizationTimeline.parse("time,status\n1,always\n2,maybe\n")
    }
    #expect(throws: AuthorizationTimelineError.self) {
      try AuthorizationTimeline.parse("{\"time\": \"yesterday\"}")
    }
  }
}
