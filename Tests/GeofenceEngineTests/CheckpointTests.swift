import Foundation
import GeofenceEngine
import GeofenceGeometry
import GeofenceTestSupport
import GeofenceTransitions
import LocationAuthorization
import Testing

/// Checkpoint fidelity: the same fixes through one engine that runs uninterrupted and through
/// engines that are dropped and recreated on the same directory at random points give the
/// same events (ids and every field) and the same final device states.
@Suite struct CheckpointTests {
  static let t0 = 1_796_014_800.0
  static let metersPerDegree = Double.pi / 180 * EarthModel.meanRadiusMeters

  /// Overlapping regions on the equator, eastings in metres.
  static let geofences: [Geofence] = [
    ("A", 0.0, 100.0), ("B", 400, 300), ("C", 1_000, 150), ("D", 1_100, 80), ("E", 2_000, 500),
    ("F", 3_500, 50),
  ].map { id, east, radius in
    Geofence(
      id: id, name: "Region \(id)",
      region: try! CircularRegion(
        center: Coordinate(uncheckedLatitude: 0, longitude: east / metersPerDegree),
        radiusMeters: radius))
  }

  enum Step {
    case fix(LocationFix, device: String)
    case authorization(AuthorizationState, at: Double)
  }

  struct Scenario {
    var rules: TransitionConfiguration
    var policy: GeofenceEngine.CheckpointPolicy
    var steps: [Step]
    /// Step indices before which the interrupted engine is dropped and recreated.
    var restarts: Set<Int>
  }

  /// Random multi-device tracks: a random walk per device, with outlier jumps, inaccurate
  /// fixes, fixes without accuracy, duplicates, equal times at another position, stale fixes,
  /// and (in some seeds) authorization changes, among them consent withdrawn.
  static func scenario(seed: UInt64) -> Scenario {
    var g = SeededGenerator(seed: seed)
    var rules = TransitionConfiguration()
    if seed % 3 == 1 { rules.confirmationFixCount = 2 }
    rules.loiteringDelaySeconds = [nil, 60, 300][Int(seed % 3 == 1 ? (seed / 3) % 3 : seed % 3)]
    if seed % 5 == 4 { rules.outlierFilter = nil }
    if seed % 7 == 3 { rules.confirmationSeconds = 30 }
    let policy: GeofenceEngine.CheckpointPolicy = seed % 2 == 0 ? .manual : .everyFix
    let withAuthorization = seed % 4 != 0

    let devices = ["d1", "d2", "d3"]
    var position = [String: Double]()
    var time = [String: Double]()
    var last = [String: LocationFix]()
    for d in devices {
      position[d] = Double.random(in: -500...4_000, using: &g)
      time[d] = Double.random(in: 0...100, using: &g)
    }
    var steps: [Step] = []
    var latest = 0.0
    for _ in 0..<240 {
      if withAuthorization, Int.random(in: 0..<100, using: &g) < 3 {
        var state = AuthorizationTimeline.granted
        switch Int.random(in: 0..<5, using: &g) {
        case 0: state.status = .authorizedWhenInUse
        case 1: state.accuracy = .reduced
        case 2: state.trackingConsent = false
        default: break
        }
        steps.append(.authorization(state, at: t0 + latest + 0.5))
      }
      let d = devices[Int.random(in: 0..<devices.count, using: &g)]
      let r = Int.random(in: 0..<100, using: &g)
      var fix: LocationFix
      if r < 5, let previous = last[d] {
        fix = previous  // duplicate
      } else if r < 9, let previous = last[d] {
        fix = previous  // equal time, another position
        fix.coordinate = Coordinate(
          uncheckedLatitude: 0, longitude: previous.coordinate.longitude + 30 / metersPerDegree)
      } else if r < 12, let previous = last[d] {
        fix = previous  // stale
        fix.time = (previous.time ?? t0) - Double.random(in: 1...20, using: &g)
      } else {
        time[d, default: 0] += Double(Int.random(in: 1...40, using: &g))
        position[d, default: 0] += Double.random(in: -250...250, using: &g)
        var east = position[d, default: 0]
        if r < 18 { east += Bool.random(using: &g) ? 8_000 : -8_000 }  // outlier jump
        let accuracy: Double? =
          r < 25
          ? Double.random(in: 150...600, using: &g)
          : (r < 30 ? nil : Double.random(in: 3...30, using: &g))
        fix = LocationFix(
          coordinate: Coordinate(uncheckedLatitude: 0, longitude: east / metersPerDegree),
          time: t0 + time[d, default: 0], horizontalAccuracy: accuracy)
        // Times repeat across devices: round some to whole 10 s.
        if r % 10 == 0 { fix.time = ((fix.time ?? t0) / 10).rounded(.up) * 10 }
        last[d] = fix
      }
      latest = max(latest, (fix.time ?? t0) - t0)
      steps.append(.fix(fix, device: d))
    }
    var restarts = Set<Int>()
    for i in steps.indices where Int.random(in: 0..<100, using: &g) < 6 { restarts.insert(i) }
    return Scenario(rules: rules, policy: policy, steps: steps, restarts: restarts)
  }

  static func makeEngine(
    _ scenario: Scenario, directory: URL, policy: GeofenceEngine.CheckpointPolicy,
    clock: TestClock
  ) throws -> GeofenceEngine {
    try GeofenceEngine(
      configuration: .init(transitions: scenario.rules, checkpoints: policy),
      storage: .directory(directory.path), geofences: geofences, clock: clock)
  }

  static func run(_ step: Step, _ engine: GeofenceEngine, into events: inout [GeofenceEvent])
    throws
  {
    switch step {
    case .fix(let fix, let device): try engine.ingest(fix, device: device, into: &events)
    case .authorization(let state, let time): try engine.updateAuthorization(state, at: time)
    }
  }

  static func states(_ engine: GeofenceEngine) throws -> [GeofenceEngine.DeviceSnapshot?] {
    try ["d1", "d2", "d3"].map { try engine.deviceState($0) }
  }

  @Test(arguments: 0..<48 as Range<UInt64>)
  func restartedEnginesGiveTheSameEvents(seed: UInt64) throws {
    let scenario = Self.scenario(seed: seed)
    let root = TestScratch.root.appendingPathComponent(
      "checkpoint-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: root) }
    let clock = TestClock(Self.t0)

    let reference = try Self.makeEngine(
      scenario, directory: root.appendingPathComponent("reference"), policy: scenario.policy,
      clock: clock)
    var expected: [GeofenceEvent] = []
    for step in scenario.steps { try Self.run(step, reference, into: &expected) }

    let directory = root.appendingPathComponent("restarted")
    var engine: GeofenceEngine? = try Self.makeEngine(
      scenario, directory: directory, policy: scenario.policy, clock: clock)
    var actual: [GeofenceEvent] = []
    for (i, step) in scenario.steps.enumerated() {
      if scenario.restarts.contains(i) {
        if scenario.policy == .manual { try engine?.checkpoint() }
        engine = nil
        engine = try Self.makeEngine(
          scenario, directory: directory, policy: scenario.policy, clock: clock)
      }
      try Self.run(step, try #require(engine), into: &actual)
    }

    #expect(!expected.isEmpty, "seed \(seed): the scenario makes events")
    #expect(actual.count == expected.count, "seed \(seed)")
    if let i = zip(actual.indices, expected.indices).first(where: { actual[$0.0] != expected[$0.1] }
    )?.0 {
      Issue.record(
        "seed \(seed): event \(i) differs:\n  restarted \(actual[i])\n  reference \(expected[i])")
    }
    #expect(try Self.states(try #require(engine)) == Self.states(reference), "seed \(seed)")
  }

  /// The scenarios exercise what they claim to: every drop reason the generator aims at, and
  /// events of every type, occur over the seeds.
  @Test func scenariosCoverTheirCases() throws {
    var drops = DropCounts()
    var counts = EventCounts()
    var gaps = 0
    for seed in 0..<48 as Range<UInt64> {
      let scenario = Self.scenario(seed: seed)
      let engine = try GeofenceEngine(
        configuration: .init(transitions: scenario.rules), geofences: Self.geofences,
        clock: TestClock(Self.t0))
      var events: [GeofenceEvent] = []
      for step in scenario.steps { try Self.run(step, engine, into: &events) }
      for reason in DropReason.allCases { drops[reason] += engine.report.dropCounts[reason] }
      counts += engine.report.eventCounts
      gaps += engine.report.afterGapEvents
    }
    for reason in [DropReason.duplicateFix, .conflictingTimestamp, .staleFix, .inaccurate] {
      #expect(drops[reason] > 0, "\(reason)")
    }
    #expect(drops[.outlier] > 0)
    for type in TransitionType.allCases { #expect(counts[type] > 0, "\(type)") }
    #expect(gaps > 0)
  }

  /// Eviction drops the least recently used clean devices first, never a device with unsaved
  /// changes, and an evicted device comes back from its checkpoint where it left off.
  @Test func evictionDropsTheLeastRecentlyUsedCleanDevices() throws {
    let directory = TestScratch.root.appendingPathComponent(
      "evict-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let engine = try GeofenceEngine(
      configuration: .init(checkpoints: .manual), storage: .directory(directory.path),
      geofences: Self.geofences, clock: TestClock(Self.t0))
    func fix(_ east: Double, _ t: Double) -> LocationFix {
      LocationFix(
        coordinate: Coordinate(uncheckedLatitude: 0, longitude: east / Self.metersPerDegree),
        time: Self.t0 + t, horizontalAccuracy: 5)
    }
    // Used in the order a, b, c, d, then a again: b is the least recently used.
    for (k, device) in ["a", "b", "c", "d"].enumerated() {
      try engine.ingest(fix(0, Double(k)), device: device)
    }
    try engine.ingest(fix(10, 10), device: "a")
    try engine.checkpoint()
    #expect(engine.evictCleanDevices(keepingAtMost: 3) == 1)
    #expect(engine.deviceIDs == ["a", "c", "d"])
    // d gets a fix that is not saved yet: only the clean a and c can go, c first.
    try engine.ingest(fix(20, 20), device: "d")
    #expect(engine.evictCleanDevices(keepingAtMost: 1) == 2)
    #expect(engine.deviceIDs == ["d"])
    #expect(engine.evictCleanDevices(keepingAtMost: 0) == 0)
    #expect(engine.inMemoryDeviceCount == 1)
    // b is restored from its checkpoint: inside A since its first fix, its last fix kept.
    let b = try engine.deviceState("b")
    #expect(b?.insideGeofenceIDs == ["A"])
    #expect(b?.lastFixTime == Self.t0 + 1)
    #expect(try engine.ingest(fix(-400, 30), device: "b").map(\.type) == [.exit])
  }
  /// Device ids are keys by their bytes: "café" with U+00E9 and with `e` + U+0301 (equal as
  /// Swift strings) are two devices in memory, in the state store and after a restart, each
  /// event carrying its own spelling.
  @Test func canonicallyEquivalentDeviceIDsAreTwoDevices() throws {
    let directory = TestScratch.root.appendingPathComponent("nfd-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let composed = "caf\u{E9}"
    let decomposed = "cafe\u{301}"
    #expect(composed == decomposed)  // the premise: `String` equality is canonical
    func fix(_ east: Double, _ t: Double) -> LocationFix {
      LocationFix(
        coordinate: Coordinate(uncheckedLatitude: 0, longitude: east / Self.metersPerDegree),
        time: Self.t0 + t, horizontalAccuracy: 5)
    }
    func engine() throws -> GeofenceEngine {
      try GeofenceEngine(
        configuration: .init(checkpoints: .manual), storage: .directory(directory.path),
        geofences: Self.geofences, clock: TestClock(Self.t0))
    }
    var first: GeofenceEngine? = try engine()
    let enter = try first?.ingest(fix(0, 0), device: composed) ?? []
    #expect(enter.map(\.type) == [.enter])
    #expect(enter.first.map { Array($0.deviceID.utf8) } == Array(composed.utf8))
    // The other spelling, 400 m away 60 s later: a new device, no EXIT for the first one.
    #expect(try first?.ingest(fix(-400, 60), device: decomposed).isEmpty == true)
    #expect(first?.inMemoryDeviceCount == 2)
    try first?.checkpoint()
    first = nil
    // After a restart each spelling comes back as itself: the first is still inside A.
    let second = try engine()
    #expect(try second.deviceState(composed)?.insideGeofenceIDs == ["A"])
    #expect(try second.deviceState(decomposed)?.insideGeofenceIDs == [])
    let exit = try second.ingest(fix(-400, 120), device: composed)
    #expect(exit.map(\.type) == [.exit])
    #expect(exit.first.map { Array($0.deviceID.utf8) } == Array(composed.utf8))
  }
}
