import GeofenceGeometry
import GeofenceTestSupport
import GeofenceTransitions
import Testing

// Hand-computed distances: points due north of a centre at latitude 46°, longitude 7°.
// One degree of latitude is π / 180 × 6,371,008.8 m = 111,195.080 m, so
//   0.0005° =  55.598 m     0.0008° =  88.956 m     0.00105° = 116.755 m
//   0.0012° = 133.434 m     0.0015° = 166.793 m     0.0098°  = 1089.712 m
//   0.0100° = 1111.951 m
// A region of radius 100 m has hysteresis max(20, 0.1 × 100) = 20 m: EXIT needs d - a > 120.
// A region of radius 1000 m has hysteresis max(20, 100) = 100 m: EXIT needs d - a > 1100.

private let home = regionSet([("home", 46.0, 7.0, 100)])
private let tolerance = 0.01  // metres

@Suite("TransitionDetector rules")
struct TransitionDetectorTests {
  @Test("ENTER at the first fix inside (d <= r); regions start outside")
  func enterAtFirstFixInside() {
    let run = runLive(
      [fix(46.0015, 7, t: 0), fix(46.0008, 7, t: 10), fix(46.0005, 7, t: 20)], home)
    #expect(summaries(run.events, home) == [Summary(type: .enter, id: "home", time: 10)])
    #expect(abs(run.events[0].distanceMeters - 88.956) < tolerance)
    #expect(run.events[0].dwellSeconds == nil)
    #expect(run.outcomes == [.accepted, .accepted, .accepted])

    // The first fix of the track inside enters at once.
    let first = runLive([fix(46.0005, 7, t: 0)], home)
    #expect(summaries(first.events, home) == [Summary(type: .enter, id: "home", time: 0)])
    #expect(abs(first.events[0].distanceMeters - 55.598) < tolerance)
  }

  @Test("ENTER needs accuracy <= radius when the fix has an accuracy")
  func enterNeedsAccuracyWithinRadius() {
    let fixes = [
      fix(46.0005, 7, t: 0, accuracy: 150), fix(46.0005, 7, t: 10, accuracy: 100.5),
      fix(46.0005, 7, t: 20, accuracy: 100),
    ]
    let run = runLive(fixes, home)
    #expect(summaries(run.events, home) == [Summary(type: .enter, id: "home", time: 20)])
    #expect(run.outcomes == [.accepted, .accepted, .accepted])

    var off = TransitionConfiguration()
    off.requiresAccuracyWithinRadiusToEnter = false
    #expect(
      summaries(runLive(fixes, home, off).events, home) == [
        Summary(type: .enter, id: "home", time: 0)
      ])
  }

  @Test(
    "EXIT only when d - accuracy > r + h, h = max(20 m, 0.1 r); inside regions checked at every fix"
  )
  func exitWithHysteresis() {
    // r = 100, h = 20. None of the fixes after the first is in the disc, so the index query
    // never returns the region: the exit test runs on the inside list.
    let fixes = [
      fix(46.0005, 7, t: 0),  // 55.598 m: ENTER
      fix(46.00105, 7, t: 10),  // 116.755 m, no accuracy: 116.755 <= 120, stays inside
      fix(46.0012, 7, t: 20, accuracy: 20),  // 133.434 - 20 = 113.434 <= 120
      fix(46.0012, 7, t: 30, accuracy: 13),  // 133.434 - 13 = 120.434 > 120: EXIT
    ]
    let run = runLive(fixes, home)
    #expect(
      summaries(run.events, home) == [
        Summary(type: .enter, id: "home", time: 0), Summary(type: .exit, id: "home", time: 30),
      ])
    #expect(abs(run.events[1].distanceMeters - 133.434) < tolerance)

    // r = 1000: h = 0.1 r = 100 m.
    let town = regionSet([("town", 46.0, 7.0, 1000)])
    let big = runLive(
      [fix(46.0, 7, t: 0), fix(46.0098, 7, t: 100), fix(46.01, 7, t: 200)], town)
    #expect(
      summaries(big.events, town) == [
        Summary(type: .enter, id: "town", time: 0), Summary(type: .exit, id: "town", time: 200),
      ])
    #expect(abs(big.events[1].distanceMeters - 1111.951) < tolerance)

    // Without hysteresis the 116.755 m fix already exits.
    var noHysteresis = TransitionConfiguration()
    noHysteresis.hysteresisMinimumMeters = 0
    noHysteresis.hysteresisRadiusFraction = 0
    #expect(
      summaries(runLive(Array(fixes.prefix(2)), home, noHysteresis).events, home) == [
        Summary(type: .enter, id: "home", time: 0), Summary(type: .exit, id: "home", time: 10),
      ])
  }

  @Test("negative or NaN accuracy: dropped as invalidAccuracy, no state change")
  func invalidAccuracy() {
    let run = runLive(
      [
        fix(46.0005, 7, t: 0, accuracy: -1), fix(46.0005, 7, t: 5, accuracy: .nan),
        fix(46.0005, 7, t: 10, accuracy: 5),
      ], home)
    #expect(
      run.outcomes == [.dropped(.invalidAccuracy), .dropped(.invalidAccuracy), .accepted])
    #expect(summaries(run.events, home) == [Summary(type: .enter, id: "home", time: 10)])
    #expect(run.detector.dropCounts[.invalidAccuracy] == 2)
    #expect(run.detector.dropCounts.total == 2)
  }

  @Test("accuracy above maxAccuracy (200 m): dropped as inaccurate, changes no state")
  func inaccurateChangesNothing() {
    let run = runLive(
      [
        fix(46.0005, 7, t: 0, accuracy: 10),  // ENTER
        fix(46.01, 7, t: 10, accuracy: 250),  // would exit; dropped
        fix(46.0005, 7, t: 15, accuracy: 10),
        fix(46.01, 7, t: 100, accuracy: 200),  // 1111.951 - 200 > 120: EXIT (200 is allowed)
      ], home)
    #expect(run.outcomes == [.accepted, .dropped(.inaccurate), .accepted, .accepted])
    #expect(
      summaries(run.events, home) == [
        Summary(type: .enter, id: "home", time: 0), Summary(type: .exit, id: "home", time: 100),
      ])
    #expect(run.detector.dropCounts[.inaccurate] == 1)
  }

  @Test("initialTrigger off: regions the first accepted fix is inside are marked inside silently")
  func initialTriggerOff() {
    var config = TransitionConfiguration()
    config.initialTrigger = false
    let run = runLive(
      [
        fix(46.0005, 7, t: 0, accuracy: 300),  // inaccurate: not the first accepted fix
        fix(46.0005, 7, t: 1),  // silently inside
        fix(46.0015, 7, t: 10),  // 166.793 > 120: EXIT
        fix(46.0005, 7, t: 20),  // ENTER
      ], home, config)
    #expect(
      summaries(run.events, home) == [
        Summary(type: .exit, id: "home", time: 10), Summary(type: .enter, id: "home", time: 20),
      ])

    // The silent visit starts at the first accepted fix, for dwell.
    var detector = TransitionDetector(regions: home, configuration: config)
    var events: [TransitionEvent] = []
    detector.process(fix(46.0005, 7, t: 100), into: &events)
    #expect(events.isEmpty)
    #expect(detector.isInside(0))
    detector.process(fix(46.0005, 7, t: 400), into: &events)
    #expect(summaries(events, home) == [Summary(type: .dwell, id: "home", time: 400)])
    #expect(events.first?.dwellSeconds == 300)
  }

  @Test("DWELL once per visit at the first fix with time >= enter time + 300 s")
  func dwellOncePerVisit() {
    let run = runLive(
      [
        fix(46.0005, 7, t: 1000),  // ENTER
        fix(46.0008, 7, t: 1100), fix(46.0005, 7, t: 1299.5),
        fix(46.0008, 7, t: 1300.25),  // DWELL, 300.25 s
        fix(46.0005, 7, t: 1400),
        fix(46.0015, 7, t: 1500),  // EXIT
        fix(46.0005, 7, t: 1600),  // ENTER
        fix(46.0005, 7, t: 1900),  // DWELL, exactly 300 s
      ], home)
    #expect(
      summaries(run.events, home) == [
        Summary(type: .enter, id: "home", time: 1000),
        Summary(type: .dwell, id: "home", time: 1300.25),
        Summary(type: .exit, id: "home", time: 1500),
        Summary(type: .enter, id: "home", time: 1600),
        Summary(type: .dwell, id: "home", time: 1900),
      ])
    #expect(run.events.map(\.dwellSeconds) == [nil, 300.25, nil, nil, 300])
    #expect(abs(run.events[1].distanceMeters - 88.956) < tolerance)

    var noDwell = TransitionConfiguration()
    noDwell.loiteringDelaySeconds = nil
    #expect(
      !runLive([fix(46.0005, 7, t: 0), fix(46.0005, 7, t: 1000)], home, noDwell).events.contains {
        $0.type == .dwell
      })
  }

  @Test("one fix: every EXIT, then every ENTER, then every DWELL, each by UTF-8 byte order of id")
  func eventOrderAtOneFix() {
    // Along the equator, 0.001° of longitude = 111.195 m.
    // "x-é" (precomposed, C3 A9) and "x-e\u{301}" (decomposed, 65 CC 81) are equal Swift
    // Strings but differ in bytes: the decomposed one comes first. "E10" < "E2", "D" < "d".
    let regions = regionSet([
      ("x-\u{E9}", 0, 0, 100), ("x-e\u{301}", 0, 0, 100),
      ("E2", 0, 0.002, 100), ("E10", 0, 0.002, 100),
      ("d", 0, 0.001, 500), ("D", 0, 0.001, 500),
    ])
    let run = runLive([fix(0, 0, t: 0), fix(0, 0.002, t: 300)], regions)
    #expect(
      summaries(run.events, regions) == [
        Summary(type: .enter, id: "D", time: 0), Summary(type: .enter, id: "d", time: 0),
        Summary(type: .enter, id: "x-e\u{301}", time: 0),
        Summary(type: .enter, id: "x-\u{E9}", time: 0),
        Summary(type: .exit, id: "x-e\u{301}", time: 300),
        Summary(type: .exit, id: "x-\u{E9}", time: 300),
        Summary(type: .enter, id: "E10", time: 300), Summary(type: .enter, id: "E2", time: 300),
        Summary(type: .dwell, id: "D", time: 300), Summary(type: .dwell, id: "d", time: 300),
      ])
    // Slots, not just ids: byte order puts slot 1 before slot 0.
    #expect(run.events[2].slot == 1 && run.events[3].slot == 0)
    #expect(abs(run.events[4].distanceMeters - 222.390) < tolerance)
    #expect(abs(run.events[8].distanceMeters - 111.195) < tolerance)
    #expect(run.events[8].dwellSeconds == 300)
  }

  @Test("one fix entering, dwelling in and leaving hundreds of regions: each kind by id bytes")
  func eventOrderAtOneFixOfManyRegions() {
    // 300 co-located regions (more than the 32 the insertion sort takes), ids in a shuffled
    // order: the oracle is the ids sorted by their UTF-8 bytes.
    var rng = SeededGenerator(seed: 7)
    let ids = (0..<300).map { "r\($0)" }.shuffled(using: &rng)
    let regions = regionSet(ids.map { ($0, 0, 0, 100) })
    let run = runLive([fix(0, 0, t: 0), fix(0, 0, t: 400), fix(0, 0.01, t: 500)], regions)
    let sorted = ids.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    let got = summaries(run.events, regions)
    #expect(got.filter { $0.type == .enter }.map(\.id) == sorted)
    #expect(got.filter { $0.type == .dwell }.map(\.id) == sorted)
    #expect(got.filter { $0.type == .exit }.map(\.id) == sorted)
    #expect(
      got.map(\.time) == Array(repeating: 0, count: 300) + Array(repeating: 400, count: 300)
        + Array(repeating: 500, count: 300))
  }

  @Test("live API never reorders: stale, duplicate, conflicting and missing times are dropped")
  func liveTimeChecks() {
    let run = runLive(
      [
        fix(46.0015, 7, t: 0),
        fix(46.0005, 7, t: 10),  // ENTER
        fix(46.0015, 7, t: 5),  // older than 10: staleFix
        fix(46.0005, 7, t: 10),  // same time, same position: duplicateFix
        fix(46.0015, 7, t: 10),  // same time, other position: conflictingTimestamp
        fix(46.0015, 7, t: nil),  // missingTime
        fix(46.0015, 7, t: 20),  // EXIT
      ], home)
    #expect(
      run.outcomes == [
        .accepted, .accepted, .dropped(.staleFix), .dropped(.duplicateFix),
        .dropped(.conflictingTimestamp), .dropped(.missingTime), .accepted,
      ])
    #expect(
      summaries(run.events, home) == [
        Summary(type: .enter, id: "home", time: 10), Summary(type: .exit, id: "home", time: 20),
      ])
    let counts = run.detector.dropCounts
    #expect(counts[.staleFix] == 1 && counts[.duplicateFix] == 1)
    #expect(counts[.conflictingTimestamp] == 1 && counts[.missingTime] == 1)
    #expect(counts.total == 4)
    #expect(run.detector.acceptedFixCount == 3)
  }

  @Test("time confirmation by fix count: the condition must hold on k consecutive fixes")
  func confirmationByFixCount() {
    var config = TransitionConfiguration()
    config.confirmationFixCount = 3
    let run = runLive(
      [
        fix(46.0005, 7, t: 0), fix(46.0005, 7, t: 10),
        fix(46.0015, 7, t: 20),  // interrupts the pending ENTER
        fix(46.0005, 7, t: 30), fix(46.0005, 7, t: 40),
        fix(46.0005, 7, t: 50),  // third consecutive: ENTER
        fix(46.0015, 7, t: 60), fix(46.0015, 7, t: 70),
        fix(46.0008, 7, t: 80),  // interrupts the pending EXIT
        fix(46.0015, 7, t: 90), fix(46.0015, 7, t: 100),
        fix(46.0015, 7, t: 110),  // third consecutive: EXIT
      ], home, config)
    #expect(
      summaries(run.events, home) == [
        Summary(type: .enter, id: "home", time: 50), Summary(type: .exit, id: "home", time: 110),
      ])
  }

  @Test("time confirmation by seconds: the condition must hold for t seconds")
  func confirmationBySeconds() {
    var config = TransitionConfiguration()
    config.confirmationFixCount = .max
    config.confirmationSeconds = 30
    let run = runLive(
      [
        fix(46.0005, 7, t: 0), fix(46.0005, 7, t: 10), fix(46.0005, 7, t: 29.5),
        fix(46.0005, 7, t: 30),  // 30 s since the first fix inside: ENTER
        fix(46.0015, 7, t: 40), fix(46.0015, 7, t: 75),  // 35 s: EXIT
      ], home, config)
    #expect(
      summaries(run.events, home) == [
        Summary(type: .enter, id: "home", time: 30), Summary(type: .exit, id: "home", time: 75),
      ])
  }

  @Test("confirmation by time only on a track without times: the fix that satisfies the rule")
  func timeOnlyConfirmationWithoutTimes() {
    var config = TransitionConfiguration()
    config.confirmationFixCount = .max
    config.confirmationSeconds = 30
    var detector = TransitionDetector(regions: home, configuration: config, usesTime: false)
    var events: [TransitionEvent] = []
    let fixes = [
      fix(46.0015, 7, t: nil), fix(46.0005, 7, t: nil),  // ENTER at once
      fix(46.0005, 7, t: nil), fix(46.0015, 7, t: nil),  // EXIT at once
    ]
    var emittedAt: [Int] = []
    for (k, f) in fixes.enumerated() {
      let before = events.count
      _ = detector.process(f, into: &events)
      if events.count > before { emittedAt.append(k) }
    }
    #expect(events.map(\.type) == [.enter, .exit])
    #expect(emittedAt == [1, 3])
  }

  @Test("RegionSet orders slots by the UTF-8 bytes of their ids, then by slot")
  func regionSetOrder() {
    let regions = regionSet([
      ("b", 0, 0, 10), ("a", 0, 0, 10), ("B", 0, 0, 10), ("\u{E9}", 0, 0, 10), ("ab", 0, 0, 10),
      ("a", 0, 0, 10),
    ])
    // Byte order: "B" (42) < "a" (61, slot 1) < "a" (slot 5) < "ab" < "b" < "é" (C3 A9).
    let sorted = (0..<Int32(6)).sorted { regions.precedes($0, $1) }
    #expect(sorted == [2, 1, 5, 4, 0, 3])
    #expect(regions.count == 6)
    #expect(regions.id(at: 3) == "\u{E9}")
  }

  @Test("RegionSet id order equals lexicographic order of the UTF-8 bytes, random ids")
  func regionSetOrderMatchesByteOrder() {
    var rng = SeededGenerator(seed: 17)
    // Short (inline) and long (heap) strings, shared prefixes, multi-byte scalars.
    let pieces = ["a", "b", "ab", "Z", "0", "é", "ß", "日本", "🙂", "longer-id-", "x"]
    let ids = (0..<120).map { _ in
      (0..<Int.random(in: 0...6, using: &rng)).map { _ in
        pieces[Int.random(in: 0..<pieces.count, using: &rng)]
      }.joined()
    }
    let regions = regionSet(ids.map { ($0, 0, 0, 10) })
    for a in 0..<ids.count {
      for b in 0..<ids.count {
        let x = Array(ids[a].utf8)
        let y = Array(ids[b].utf8)
        let expected = x.lexicographicallyPrecedes(y) || (x == y && a < b)
        if regions.precedes(Int32(a), Int32(b)) != expected {
          Issue.record("\(ids[a]) (\(a)) before \(ids[b]) (\(b)): expected \(expected)")
        }
      }
    }
  }
}
