import Foundation
import GeofenceEngine
import GeofenceGeometry
import GeofenceTransitions
import Testing

/// Inferred crossings through the engine: the flag reaches ``GeofenceEvent``, the encoder
/// writes `inferred` only when true, and the id of an inferred event is stable and differs
/// from that of an event at a fix with the same time.
@Suite("Engine: inferred crossings")
struct InferredEventTests {
  static func engine() throws -> GeofenceEngine {
    var rules = TransitionConfiguration()
    rules.crossingInference = CrossingInference()
    let town = Geofence(
      id: "town",
      region: try CircularRegion(
        center: Coordinate(latitude: 0.005, longitude: 0), radiusMeters: 1000))
    return try GeofenceEngine(configuration: .init(transitions: rules), geofences: [town])
  }

  static func pass(_ engine: GeofenceEngine) throws -> [GeofenceEvent] {
    let a = LocationFix(
      coordinate: try Coordinate(latitude: 0, longitude: -0.03), time: 1000,
      horizontalAccuracy: 10)
    let b = LocationFix(
      coordinate: try Coordinate(latitude: 0, longitude: 0.03), time: 1200,
      horizontalAccuracy: 10)
    return try engine.ingest(a, device: "d") + engine.ingest(b, device: "d")
  }

  @Test func flagIdsAndEncoding() throws {
    let events = try Self.pass(Self.engine())
    try #require(events.count == 2)
    #expect(events.map(\.type) == [.enter, .exit])
    #expect(events.allSatisfy { $0.inferred })
    // Computed again by a fresh engine: the same ids.
    #expect(try Self.pass(Self.engine()).map(\.id) == events.map(\.id))

    // A real ENTER at the same millisecond (a fix 1 m inside, at the inferred time) gets
    // another id.
    let enter = events[0]
    let real = try Self.engine()
    let outside = LocationFix(
      coordinate: try Coordinate(latitude: 0, longitude: -0.03), time: 1000,
      horizontalAccuracy: 10)
    _ = try real.ingest(outside, device: "d")
    let inside = LocationFix(
      coordinate: try Coordinate(latitude: 0, longitude: enter.longitude + 1e-5),
      time: enter.time, horizontalAccuracy: 10)
    let fixEvents = try real.ingest(inside, device: "d")
    try #require(fixEvents.map(\.type) == [.enter])
    #expect(!fixEvents[0].inferred)
    #expect(fixEvents[0].time == enter.time)
    #expect(fixEvents[0].id != enter.id)

    // JSON: the member only when true, last; the rest of the object unchanged.
    let flagged = GeofenceEventEncoder.object(enter, processingTime: false)
    var plain = enter
    plain.inferred = false
    let unflagged = GeofenceEventEncoder.object(plain, processingTime: false)
    #expect(!unflagged.contains("inferred"))
    #expect(flagged == unflagged.dropLast() + #","inferred":true}"#)
    #expect(GeofenceEventEncoder.payload(enter).hasSuffix(#","inferred":true}"#))

    // CSV: the column only with includesInferredColumn.
    var csv = GeofenceEventEncoder(format: .csv)
    #expect(csv.header().hasSuffix(",track\n"))
    let line = csv.encode(plain)
    csv.includesInferredColumn = true
    #expect(csv.header().hasSuffix(",track,inferred\n"))
    #expect(csv.encode(enter) == line.dropLast() + ",true\n")
    #expect(csv.encode(plain) == line.dropLast() + ",\n")
  }

  /// Across a monitoring gap nothing is inferred: the segment spans the time the device was
  /// not monitored. The same fixes without the gap infer the pair.
  @Test func noInferenceAcrossAMonitoringGap() throws {
    var rules = TransitionConfiguration()
    rules.crossingInference = CrossingInference()
    let regions = RegionSet(geofences: [
      Geofence(
        id: "town",
        region: try CircularRegion(
          center: Coordinate(latitude: 0.005, longitude: 0), radiusMeters: 1000))
    ])
    func run(gap: Bool) throws -> [GatedEvent] {
      var gate = MonitoringGate(
        detector: TransitionDetector(regions: regions, configuration: rules),
        state: AuthorizationTimeline.granted)
      var events: [GatedEvent] = []
      gate.process(
        LocationFix(
          coordinate: try Coordinate(latitude: 0, longitude: -0.03), time: 1000,
          horizontalAccuracy: 10), into: &events)
      if gap {
        var denied = AuthorizationTimeline.granted
        denied.status = .denied
        gate.update(denied, at: 1050)
        gate.update(AuthorizationTimeline.granted, at: 1100)
      }
      gate.process(
        LocationFix(
          coordinate: try Coordinate(latitude: 0, longitude: 0.03), time: 1200,
          horizontalAccuracy: 10), into: &events)
      return events
    }
    #expect(try run(gap: false).map(\.transition.type) == [.enter, .exit])
    #expect(try run(gap: true).isEmpty)
  }
}
