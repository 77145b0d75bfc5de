import Foundation
import GeofenceDefinitions
import GeofenceTestSupport
import GeofenceTransitions
import Testing

@testable import GeofenceEngine

/// The checkpoint's JSON writer and reader against Foundation's `JSONEncoder` (sorted keys,
/// the `"inf"` / `"-inf"` / `"nan"` strategy) and `JSONDecoder` as the oracle, on seeded
/// random checkpoints: the same bytes out, the same value back either way.
@Suite struct CheckpointJSONTests {
  static func randomTime(_ g: inout SeededGenerator) -> Double {
    switch Int.random(in: 0..<8, using: &g) {
    case 0: return .infinity
    case 1: return -.infinity
    case 2: return .nan
    case 3: return Double(Int.random(in: 0...2_000_000_000, using: &g))
    case 4: return 0
    case 5: return Double.random(in: -1e300...1e300, using: &g)
    default: return 1.7e9 + Double.random(in: 0...1e6, using: &g)
    }
  }

  static func randomAnchor(_ g: inout SeededGenerator) -> DetectorCheckpoint.Anchor? {
    guard Bool.random(using: &g) else { return nil }
    return .init(
      latitude: Double.random(in: -90...90, using: &g),
      longitude: Double.random(in: -180...180, using: &g), time: randomTime(&g),
      accuracy: Bool.random(using: &g) ? 10 : Double.random(in: 0...500, using: &g))
  }

  static func randomID(_ g: inout SeededGenerator) -> String {
    let alphabet = Array("abcXYZ019-_ .é\"\\\u{1}\t€😀")
    let n = Int.random(in: 0...12, using: &g)
    return String((0..<n).map { _ in alphabet.randomElement(using: &g)! })
  }

  static func randomCheckpoint(_ g: inout SeededGenerator) -> DeviceCheckpoint {
    let visits = (0..<Int.random(in: 0...6, using: &g)).map { _ in
      DetectorCheckpoint.Visit(
        regionID: randomID(&g), enterTime: randomTime(&g), dwellEmitted: Bool.random(using: &g),
        exitCount: Int.random(in: 0...5, using: &g), exitSince: randomTime(&g))
    }
    let pending = (0..<Int.random(in: 0...3, using: &g)).map { _ in
      DetectorCheckpoint.PendingEnter(
        regionID: randomID(&g), count: Int.random(in: 0...9, using: &g), since: randomTime(&g))
    }
    let maybe: (inout SeededGenerator) -> Double? = { g in
      Bool.random(using: &g) ? randomTime(&g) : nil
    }
    return DeviceCheckpoint(
      gate: GateCheckpoint(
        hasMonitored: Bool.random(using: &g), gapStart: maybe(&g),
        gapCount: Int.random(in: 0...1_000, using: &g),
        notAuthorizedCount: Int.random(in: 0...(1 << 40), using: &g)),
      detector: DetectorCheckpoint(
        usesTime: Bool.random(using: &g), visits: visits, pendingEnters: pending,
        lastAccepted: randomAnchor(&g), speedReferenceTime: randomTime(&g),
        lastFilteredTime: randomTime(&g), candidate: randomAnchor(&g),
        candidateCount: Int.random(in: 0...3, using: &g),
        acceptedFixCount: Int.random(in: 0...1_000_000, using: &g), stayStart: randomAnchor(&g),
        dropCounts: (0..<DropReason.allCases.count).map { _ in Int.random(in: 0...99, using: &g) }
      ),
      lastSeenTime: maybe(&g), lastSeenLatitude: maybe(&g), lastSeenLongitude: maybe(&g))
  }

  /// NaN is not equal to itself: compare through the canonical text instead.
  static func same(_ a: DeviceCheckpoint, _ b: DeviceCheckpoint) -> Bool {
    a.jsonText == b.jsonText
  }

  @Test(arguments: 0..<400 as Range<UInt64>)
  func writesFoundationsBytesAndReadsThemBack(seed: UInt64) throws {
    var g = SeededGenerator(seed: seed)
    let c = Self.randomCheckpoint(&g)
    let ours = c.jsonText
    let foundation = String(
      decoding: try DeviceCheckpoint.makeEncoder().encode(c), as: UTF8.self)
    // JSONEncoder writes `/` as `\/`; the ids here hold no `/`, so the bytes are equal.
    #expect(ours == foundation)
    let back = try DeviceCheckpoint(json: Array(ours.utf8))
    #expect(Self.same(back, c))
    // Text without escapes takes the one-pass reader; the general one (any member order,
    // escapes) agrees with it.
    let fast = Array(ours.utf8).withUnsafeBufferPointer { b in
      var r = CheckpointFastReader(bytes: b)
      return r.checkpoint()
    }
    let hasEscape = ours.contains("\\")
    #expect((fast == nil) == hasEscape)
    if let fast { #expect(Self.same(fast, c)) }
    let general = try DeviceCheckpoint(jsonValue: JSONDocument.parse(Array(ours.utf8)))
    #expect(Self.same(general, c))
    let byFoundation = try DeviceCheckpoint.makeDecoder().decode(
      DeviceCheckpoint.self, from: Data(ours.utf8))
    #expect(Self.same(byFoundation, c))
    // Exact values, NaN aside: the reader loses no bit of any number.
    #expect(back.detector.visits.map(\.regionID) == c.detector.visits.map(\.regionID))
    #expect(back.detector.acceptedFixCount == c.detector.acceptedFixCount)
    #expect(back.gate.notAuthorizedCount == c.gate.notAuthorizedCount)
    #expect(
      back.detector.lastAccepted.map { ($0.latitude.bitPattern, $0.longitude.bitPattern) }
        .map { "\($0)" }
        == c.detector.lastAccepted.map { ($0.latitude.bitPattern, $0.longitude.bitPattern) }
        .map { "\($0)" })
  }

  @Test func readsEscapedSlashesAndAnyMemberOrder() throws {
    let text = """
      {"lastSeenTime":5,"gate":{"notAuthorizedCount":0,"hasMonitored":true,"gapCount":2,\
      "gapStart":"-inf"},"unknown":[1,{"x":null}],"detector":{"visits":[{"regionID":"a\\/b",\
      "exitSince":"nan","exitCount":1,"enterTime":1.5,"dwellEmitted":true}],"usesTime":true,\
      "speedReferenceTime":"inf","pendingEnters":[],"lastFilteredTime":-1e300,\
      "dropCounts":[0,0,0,0,0,0,7],"candidateCount":0,"acceptedFixCount":3}}
      """
    let c = try DeviceCheckpoint(json: Array(text.utf8))
    #expect(c.detector.visits.first?.regionID == "a/b")
    #expect(c.detector.visits.first?.exitSince.isNaN == true)
    #expect(c.detector.visits.first?.enterTime == 1.5)
    #expect(c.detector.speedReferenceTime == .infinity)
    #expect(c.detector.lastFilteredTime == -1e300)
    #expect(c.detector.dropCounts.last == 7)
    #expect(c.gate.gapStart == -.infinity)
    #expect(c.gate.gapCount == 2)
    #expect(c.lastSeenTime == 5)
    #expect(c.lastSeenLatitude == nil)
    #expect(c.detector.lastAccepted == nil)
    let foundation = try DeviceCheckpoint.makeDecoder().decode(
      DeviceCheckpoint.self, from: Data(text.utf8))
    #expect(Self.same(c, foundation))
  }

  @Test(arguments: [
    (#"{"gate":{"gapCount":0,"hasMonitored":true,"notAuthorizedCount":0}}"#, "detector"),
    (
      #"{"detector":{},"gate":{"gapCount":1.5,"hasMonitored":true,"notAuthorizedCount":0}}"#,
      "gapCount"
    ),
    (
      #"{"detector":{},"gate":{"gapCount":0,"hasMonitored":"yes","notAuthorizedCount":0}}"#,
      "hasMonitored"
    ),
    (#"[1]"#, "checkpoint"),
    (#"{"detector":"#, ""),
  ])
  func rejectsWhatFoundationRejects(text: String, names: String) {
    #expect(throws: CheckpointJSONError.self) { try DeviceCheckpoint(json: Array(text.utf8)) }
    #expect(throws: (any Error).self) {
      try DeviceCheckpoint.makeDecoder().decode(DeviceCheckpoint.self, from: Data(text.utf8))
    }
    if !names.isEmpty {
      do {
        _ = try DeviceCheckpoint(json: Array(text.utf8))
      } catch {
        #expect(error.message.contains(names))
      }
    }
  }
}
