import GeofenceGeometry
import GeofenceTestSupport
import GeofenceTransitions
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The detector with ``CrossingInference`` on, on hand-made segments along the equator:
/// 0.03° W to 0.03° E is 6,671.705 m, crossed in 200 s (33 m/s, under the filter's 70 m/s).
@Suite("Crossing inference between sparse fixes")
struct CrossingInferenceTests {
  static let length = 0.06 * metersPerDegree

  /// Default rules with inference on; `hysteresis: false` sets the exit hysteresis to 0.
  static func rules(hysteresis: Bool = true) -> TransitionConfiguration {
    var c = TransitionConfiguration()
    c.crossingInference = CrossingInference()
    if !hysteresis {
      c.hysteresisMinimumMeters = 0
      c.hysteresisRadiusFraction = 0
    }
    return c
  }

  /// The events of the two fixes (0, −0.03°) at t = 1000 and (0, 0.03°) at `1000 + seconds`.
  static func run(
    _ regions: RegionSet, _ configuration: TransitionConfiguration, seconds: Double = 200,
    accuracy: Double? = 10, from: (Double, Double) = (0, -0.03), to: (Double, Double) = (0, 0.03)
  ) -> [TransitionEvent] {
    var detector = TransitionDetector(regions: regions, configuration: configuration)
    var events: [TransitionEvent] = []
    detector.process(fix(from.0, from.1, t: 1000, accuracy: accuracy, index: 0), into: &events)
    detector.process(
      fix(to.0, to.1, t: 1000 + seconds, accuracy: accuracy, index: 1), into: &events)
    return events
  }

  /// A 1,000 m disc centred 0.005° (555.975 m) north of the path: the chord's half length is
  /// √(1000² − 555.975²) = 831.199 m (plane; the sphere differs by about 20 µm), so the ENTER
  /// is at 3335.853 − 831.199 = 2504.654 m, t = 1000 + 200 · 2504.654 / 6671.705 = 1075.083 s,
  /// and the EXIT at 4167.051 m, t = 1124.917 s; both at the larger accuracy of the two fixes.
  @Test func chordThroughACircle() throws {
    let regions = regionSet([("town", 0.005, 0, 1000)])
    let events = Self.run(regions, Self.rules())
    try #require(events.count == 2)
    let (enter, exit) = (events[0], events[1])
    #expect(enter.type == .enter && exit.type == .exit)
    #expect(enter.inferred && exit.inferred)
    let t0 = try #require(enter.fix.time)
    let t1 = try #require(exit.fix.time)
    #expect(abs(t0 - 1075.083) < 1e-3)
    #expect(abs(t1 - 1124.917) < 1e-3)
    #expect(abs(t0 - (1000 + 200 * (Self.length / 2 - 831.199) / Self.length)) < 1e-4)
    #expect(abs(enter.fix.coordinate.longitude - -831.199 / metersPerDegree) < 1e-8)
    #expect(abs(exit.fix.coordinate.longitude - 831.199 / metersPerDegree) < 1e-8)
    #expect(abs(enter.distanceMeters - 1000) < 1e-6)
    #expect(abs(try #require(exit.visitSeconds) - (t1 - t0)) < 1e-9)
    #expect(enter.fix.horizontalAccuracy == 10)
    #expect(enter.fix.sourceIndex == 1)
    #expect(enter.dwellSeconds == nil && enter.visitSeconds == nil)
  }

  @Test func optionOffGivesNoInferredEvent() {
    let regions = regionSet([("town", 0.005, 0, 1000)])
    #expect(Self.run(regions, TransitionConfiguration()).isEmpty)
  }

  /// Without hysteresis: a circle the path touches (closest distance exactly the radius, the
  /// centre placed at that angle north of the equator) is no crossing, and neither is one the
  /// path passes 1 mm outside; 1 mm inside is (a 2.8 m chord).
  @Test func touchingAndJustOutside() {
    let r = 1000.0
    func centre(_ meters: Double) -> Double { EarthModel.radians(fromMeters: meters) * 180 / .pi }
    let rules = Self.rules(hysteresis: false)
    #expect(Self.run(regionSet([("t", centre(r), 0, r)]), rules).isEmpty)
    #expect(Self.run(regionSet([("t", centre(r + 1e-3), 0, r)]), rules).isEmpty)
    let inside = Self.run(regionSet([("t", centre(r - 1e-3), 0, r)]), rules)
    #expect(inside.map(\.type) == [.enter, .exit])
    if inside.count == 2 {
      let chord = (inside[1].fix.time! - inside[0].fix.time!) / 200 * Self.length
      #expect(abs(chord - 2 * (2 * r * 1e-3).squareRoot()) < 1e-3)
    }
  }

  /// With the default hysteresis (150 m for a 1,500 m town) the path must pass more than
  /// 150 m inside: 1,400 m from the centre is not enough, 1,300 m is.
  @Test func hysteresisDepth() {
    let rules = Self.rules()
    #expect(Self.run(regionSet([("t", 1400 / metersPerDegree, 0, 1500)]), rules).isEmpty)
    #expect(
      Self.run(regionSet([("t", 1300 / metersPerDegree, 0, 1500)]), rules).map(\.type)
        == [.enter, .exit])
  }

  /// 179.99° E to 179.99° W at 10° N (1,095 m) through a 300 m disc on the antimeridian:
  /// crossed symmetrically about longitude 180, at the midpoint time.
  @Test func acrossTheAntimeridian() throws {
    let regions = regionSet([("dateline", 10, 180, 300)])
    let events = Self.run(
      regions, Self.rules(), seconds: 60, from: (10, 179.99), to: (10, -179.99))
    try #require(events.count == 2)
    let mid = (try #require(events[0].fix.time) + (try #require(events[1].fix.time))) / 2
    #expect(abs(mid - 1030) < 1e-6)
    #expect(events[0].fix.coordinate.longitude > 179.99)
    #expect(events[1].fix.coordinate.longitude < -179.99)
    // The chord is the disc's diameter, up to the 1.7 cm bulge of the great circle.
    let chord =
      (events[1].fix.time! - events[0].fix.time!) / 60 * 0.02 * metersPerDegree
      * cos(10 * Double.pi / 180)
    #expect(abs(chord - 600) < 0.01)
  }

  /// Each guard alone suppresses the pair.
  @Test func guardsSuppressInference() {
    let regions = regionSet([("town", 0.005, 0, 1000)])
    // 400 s: more than maxGapSeconds (300).
    #expect(Self.run(regions, Self.rules(), seconds: 400).isEmpty)
    // 6.7 km: more than a 5 km maxGapMeters.
    var short = Self.rules()
    short.crossingInference?.maxGapMeters = 5000
    #expect(Self.run(regions, short).isEmpty)
    // Accuracy 150 m: more than maxAccuracyMeters (100).
    #expect(Self.run(regions, Self.rules(), accuracy: 150).isEmpty)
    // Accuracy 90 m against a 80 m disc (centre 10 m off the path): more than its radius.
    let small = regionSet([("small", 10 / metersPerDegree, 0, 80)])
    #expect(Self.run(small, Self.rules(), accuracy: 90).isEmpty)
    #expect(Self.run(small, Self.rules(), accuracy: 5).count == 2)
    // 60 s: 111 m/s, faster than the outlier filter's 70 m/s (the second fix is then an
    // outlier and dropped; with the filter off it is accepted and inferred from).
    #expect(Self.run(regions, Self.rules(), seconds: 60).isEmpty)
    var noFilter = Self.rules()
    noFilter.outlierFilter = nil
    #expect(Self.run(regions, noFilter, seconds: 60).count == 2)
  }

  /// Two towns crossed and a third that the later fix is inside: the inferred pairs come
  /// first, in time order (ENTER a, ENTER b, EXIT a, EXIT b), then the ENTER of the fix.
  @Test func orderOfEvents() {
    let regions = regionSet([
      ("c-last", 0, 0.03, 500), ("b", 0.002, 0.003, 1000), ("a", -0.002, -0.003, 1000),
    ])
    let events = Self.run(regions, Self.rules(), accuracy: 10)
    let summary = events.map { "\($0.type.rawValue) \(regions.id(at: $0.slot)) \($0.inferred)" }
    #expect(
      summary == [
        "enter a true", "enter b true", "exit a true", "exit b true", "enter c-last false",
      ])
    let times = events.prefix(4).map { $0.fix.time! }
    #expect(times == times.sorted())
    #expect(events[4].fix.time == 1200)
  }

  /// A position re-reported for 200 s (a cached network fix), then a fix 6.7 km away 10 s
  /// later: too fast from the last report, but not from the first. The device is taken to
  /// leave as late as the filter's 70 m/s allows: t0 = 1210 − (6671.705 − 20) / 70 = 1114.98 s.
  @Test func staleReportsStartTheSegmentEarlier() throws {
    let regions = regionSet([("town", 0.005, 0, 1000)])
    var detector = TransitionDetector(regions: regions, configuration: Self.rules())
    var events: [TransitionEvent] = []
    for t in stride(from: 1000.0, through: 1200, by: 20) {
      #expect(detector.process(fix(0, -0.03, t: t, accuracy: 10), into: &events) == .accepted)
    }
    #expect(detector.process(fix(0, 0.03, t: 1210, accuracy: 10), into: &events) == .accepted)
    try #require(events.count == 2)
    let t0 = 1210 - (Self.length - 20) / 70
    let expected = t0 + (1210 - t0) * (Self.length / 2 - 831.199) / Self.length
    #expect(abs(try #require(events[0].fix.time) - expected) < 1e-3)
    // Reports that moved (111 m apart) give no earlier start. The jump is then accepted only
    // by the filter's recovery (three consistent fixes at the new place), and a segment from
    // 1200 s to 1212 s would need 550 m/s: nothing is inferred.
    var moving = TransitionDetector(regions: regions, configuration: Self.rules())
    var none: [TransitionEvent] = []
    for (k, t) in stride(from: 1000.0, through: 1200, by: 20).enumerated() {
      moving.process(fix(0, -0.04 + Double(k) * 0.001, t: t, accuracy: 10), into: &none)
    }
    #expect(moving.process(fix(0, 0.03, t: 1210, accuracy: 10), into: &none) == .dropped(.outlier))
    #expect(
      moving.process(fix(0, 0.0301, t: 1211, accuracy: 10), into: &none) == .dropped(.outlier))
    #expect(moving.process(fix(0, 0.0302, t: 1212, accuracy: 10), into: &none) == .accepted)
    #expect(none.isEmpty)
  }

  /// The stay start survives a checkpoint: a restored detector infers the same pair.
  @Test func checkpointKeepsTheStayStart() throws {
    let regions = regionSet([("town", 0.005, 0, 1000)])
    var detector = TransitionDetector(regions: regions, configuration: Self.rules())
    var events: [TransitionEvent] = []
    for t in stride(from: 1000.0, through: 1200, by: 20) {
      detector.process(fix(0, -0.03, t: t, accuracy: 10), into: &events)
    }
    var restored = try #require(
      TransitionDetector(
        regions: regions, configuration: Self.rules(), checkpoint: detector.checkpoint,
        slotOfID: { $0 == "town" ? 0 : nil }))
    var a: [TransitionEvent] = []
    var b: [TransitionEvent] = []
    detector.process(fix(0, 0.03, t: 1210, accuracy: 10), into: &a)
    restored.process(fix(0, 0.03, t: 1210, accuracy: 10), into: &b)
    #expect(a.count == 2)
    #expect(a == b)
  }

  /// The posmo train track (docs/engine.md): the segment between the last good fixes at
  /// Bevaix and the next, 15 km on, passes through Gorgier and Saint-Aubin-Sauges, which the
  /// train did pass; Orbe, 3 km off the line, is not entered. Nothing else is inferred.
  @Test func posmoTrainTrack() throws {
    let data = try PosmoFixture.load()
    var rules = TransitionConfiguration()
    rules.crossingInference = CrossingInference()
    let result = TransitionDetector.replay(data.fixes, regions: data.regions, configuration: rules)
    let inferred = result.events.filter(\.inferred)
    let names = inferred.map { "\($0.type.rawValue) \(data.towns[Int($0.slot)].name)" }
    #expect(
      names == [
        "enter Gorgier", "enter Saint-Aubin-Sauges", "exit Gorgier", "exit Saint-Aubin-Sauges",
      ])
    let entered = Set(
      result.events.filter { $0.type == .enter }.map { data.towns[Int($0.slot)].name })
    #expect(!entered.contains("Orbe"))
    #expect(data.towns.contains { $0.name == "Orbe" })
    // Between the last stale Bevaix report (20:20:46) minus the travel and the fix at
    // 20:20:56 (index 408): 2019-01-25T20:17:22Z is 1548447442.
    for e in inferred {
      #expect(e.fix.sourceIndex == 408)
      let t = try #require(e.fix.time)
      #expect(t > 1_548_447_442 && t < 1_548_447_656)
    }
    // Without the option the same events, minus the inferred ones.
    let plain = TransitionDetector.replay(data.fixes, regions: data.regions)
    #expect(plain.events == result.events.filter { !$0.inferred })
  }
}
