import GeofenceGeometry
import GeofenceTransitions
import Testing

// Region "home": centre (46, 7), radius 100 m. 0.0005° north = 55.598 m (inside),
// 0.0015° north = 166.793 m (outside beyond the 20 m hysteresis).
private let home = regionSet([("home", 46.0, 7.0, 100)])
private let inside = 46.0005
private let outside = 46.0015

@Suite("TransitionDetector.replay")
struct TransitionReplayTests {
  @Test("stable sort by time; duplicates, conflicts (first in file order wins), missing times")
  func preparation() {
    let fixes = [
      fix(inside, 7, t: 20, index: 0),  // kept at t = 20 (first in file order)
      fix(outside, 7, t: 0, index: 1),
      fix(outside, 7, t: 10, index: 2),
      fix(outside, 7, t: 10, index: 3),  // same time and position as 2: duplicateFix
      fix(outside, 7, t: 20, index: 4),  // same time as 0, other position: conflictingTimestamp
      fix(inside, 7, t: nil, index: 5),  // missingTime
      fix(outside, 7, t: 30, accuracy: -5, index: 6),  // invalidAccuracy
      fix(outside, 7, t: 40, index: 7),  // EXIT
      fix(outside, 7, t: 30, accuracy: 500, index: 8),  // inaccurate
    ]
    let result = TransitionDetector.replay(fixes, regions: home)
    #expect(
      summaries(result.events, home) == [
        Summary(type: .enter, id: "home", time: 20), Summary(type: .exit, id: "home", time: 40),
      ])
    #expect(result.events.map(\.fix.sourceIndex) == [0, 7])
    var expected = DropCounts()
    expected[.duplicateFix] = 1
    expected[.conflictingTimestamp] = 1
    expected[.missingTime] = 1
    expected[.invalidAccuracy] = 1
    expected[.inaccurate] = 1
    #expect(result.dropCounts == expected)
    #expect(result.dropCounts.total == 5)
    #expect(result.deviceIDs == [nil])
    #expect(result.warnings.contains { $0.contains("without a valid time") })
    #expect(result.warnings.contains { $0.contains("out of time order") })
  }

  @Test("a track with no times at all: file order, a warning, no dwell")
  func untimedTrack() {
    var config = TransitionConfiguration()
    config.loiteringDelaySeconds = 0
    let fixes = [
      fix(outside, 7, t: nil), fix(inside, 7, t: nil), fix(inside, 7, t: nil),
      fix(46.0100, 7, t: nil),  // 1.1 km: no outlier filter without times
      fix(inside, 7, t: nil),
    ]
    let result = TransitionDetector.replay(fixes, regions: home, configuration: config)
    #expect(
      summaries(result.events, home) == [
        Summary(type: .enter, id: "home", time: nil), Summary(type: .exit, id: "home", time: nil),
        Summary(type: .enter, id: "home", time: nil),
      ])
    #expect(result.dropCounts.total == 0)
    #expect(result.warnings.count == 1)
    #expect(result.warnings.first?.contains("no fix has a time") == true)

    // With times the same track dwells at once (delay 0).
    var timed = fixes
    for i in timed.indices { timed[i].time = Double(i) * 100 }
    let withTimes = TransitionDetector.replay(timed, regions: home, configuration: config)
    #expect(withTimes.events.contains { $0.type == .dwell })
  }

  @Test("several devices: one detector each, events grouped by device in order of appearance")
  func multipleDevices() {
    let fixes = [
      fix(outside, 7, t: 0, device: "b"), fix(inside, 7, t: 0, device: "a"),
      fix(inside, 7, t: 10, device: "b"), fix(outside, 7, t: 10, device: "a"),
      fix(inside, 7, t: 10, device: "a"),  // conflicting only within device "a"
    ]
    let result = TransitionDetector.replay(fixes, regions: home)
    #expect(result.deviceIDs == ["b", "a"])
    #expect(result.events.map(\.fix.deviceID) == ["b", "a", "a"])
    #expect(
      summaries(result.events, home) == [
        Summary(type: .enter, id: "home", time: 10), Summary(type: .enter, id: "home", time: 0),
        Summary(type: .exit, id: "home", time: 10),
      ])
    #expect(result.dropCounts[.conflictingTimestamp] == 1)
    #expect(result.dropCounts.total == 1)
  }
}
