import Foundation
import GeofenceEngine
import GeofenceGeometry
import GeofenceSync
import GeofenceTransitions
import Testing

/// A synced polygon whose geometry changes while a device is inside it: the live set treats
/// it as a moved geofence (re-evaluated at the next fix, state kept), as it does a circle.
@Suite("Live apply of a synced polygon change")
struct PolygonLiveSetTests {
  static let here = (lat: 46.50, lon: 6.60)
  static let t0 = 1_796_014_800.0

  /// A square of ±`outer`° around `here`, with a square hole of ±`hole`° when given.
  static func polygonJSON(_ id: String, outer: Double, hole: Double?, name: String) -> String {
    func ring(_ d: Double, clockwise: Bool) -> String {
      var corners = [(-d, -d), (d, -d), (d, d), (-d, d), (-d, -d)]
      if clockwise { corners.reverse() }
      return "["
        + corners.map { "[\(here.lon + $0.0),\(here.lat + $0.1)]" }.joined(separator: ",")
        + "]"
    }
    let rings = [ring(outer, clockwise: false)] + (hole.map { [ring($0, clockwise: true)] } ?? [])
    return
      "{\"id\":\"\(id)\",\"name\":\"\(name)\",\"geometry\":{\"type\":\"Polygon\","
      + "\"coordinates\":[\(rings.joined(separator: ","))]},"
      + "\"updated_at\":\"2026-11-30T05:00:00.000Z\"}"
  }

  func fix(_ t: Double) -> LocationFix {
    LocationFix(
      coordinate: Coordinate(uncheckedLatitude: Self.here.lat, longitude: Self.here.lon),
      time: Self.t0 + t, horizontalAccuracy: 5)
  }

  func summary(_ events: [GeofenceEvent]) -> [String] {
    events.map { "\($0.type.rawValue) \($0.geofenceID)" }
  }

  @Test func aHoleOpeningUnderTheDeviceExitsItAndClosingItEntersAgain() async throws {
    let server = ListingServer()
    server.update(upsert: [
      "C": ListingServer.json("C", Self.here.lat, Self.here.lon, radius: 200),
      "P": Self.polygonJSON("P", outer: 0.001, hole: nil, name: "Square"),
    ])
    let clock = TestClock(Self.t0)
    var rules = TransitionConfiguration()
    rules.loiteringDelaySeconds = nil
    let engine = try GeofenceEngine(
      configuration: .init(
        transitions: rules,
        sync: SyncConfiguration(baseURL: URL(string: "http://sync.test")!, apiKey: "k1")),
      storage: .inMemory, transport: server, clock: clock)
    #expect(try await engine.sync().sync.diff.counts == .init(added: 2))
    #expect(summary(try engine.ingest(fix(0), device: "d")) == ["enter C", "enter P"])

    // Renamed, same geometry: the visit goes on, no new ENTER.
    server.update(upsert: ["P": Self.polygonJSON("P", outer: 0.001, hole: nil, name: "Renamed")])
    clock.time = Self.t0 + 50
    #expect(try await engine.sync().sync.diff.counts == .init(metadataChanged: 1))
    #expect(try engine.ingest(fix(100), device: "d").isEmpty)

    // A hole of ±0.0006° opens around the device: the same bounding box, another geometry.
    // The device is 0.0006° of longitude (45.9 m at 46.5° N) from the hole's nearest edge,
    // beyond accuracy 5 m + h 20 m (h = max(20 m, 0.1 × the equivalent radius of 83 m)).
    server.update(upsert: ["P": Self.polygonJSON("P", outer: 0.001, hole: 0.0006, name: "Holed")])
    clock.time = Self.t0 + 120
    let holed = try await engine.sync()
    #expect(holed.sync.diff.counts == .init(geometryChanged: 1))
    #expect(holed.carriedVisits == 2)
    let exit = try engine.ingest(fix(150), device: "d")
    #expect(summary(exit) == ["exit P"])
    let metersPerDegree = EarthModel.meanRadiusMeters * Double.pi / 180
    let expected = 0.0006 * metersPerDegree * cos(Self.here.lat * Double.pi / 180)
    #expect(abs((exit.first?.distanceMeters ?? 0) - expected) < 0.01)
    #expect(exit.first?.geofenceName == "Holed")

    // The hole closes again: a new life of P, entered at the next fix.
    server.update(upsert: ["P": Self.polygonJSON("P", outer: 0.001, hole: nil, name: "Square")])
    clock.time = Self.t0 + 180
    #expect(try await engine.sync().sync.diff.counts == .init(geometryChanged: 1))
    let enter = try engine.ingest(fix(200), device: "d")
    #expect(summary(enter) == ["enter P"])

    // Removed while inside: silent by default, and C's visit is untouched throughout.
    server.update(delete: ["P"])
    clock.time = Self.t0 + 230
    let removed = try await engine.sync()
    #expect(removed.sync.diff.counts == .init(removed: 1))
    #expect(removed.droppedVisits == 1 && removed.events.isEmpty)
    #expect(try engine.ingest(fix(250), device: "d").isEmpty)
  }

  @Test func aRemovedPolygonsExitGivesTheDistanceToItsNearestEdge() async throws {
    let server = ListingServer()
    server.update(upsert: ["P": Self.polygonJSON("P", outer: 0.001, hole: nil, name: "Square")])
    let clock = TestClock(Self.t0)
    let engine = try GeofenceEngine(
      configuration: .init(
        sync: SyncConfiguration(baseURL: URL(string: "http://sync.test")!, apiKey: "k1"),
        emitsExitForRemovedGeofences: true),
      storage: .inMemory, transport: server, clock: clock)
    _ = try await engine.sync()
    #expect(summary(try engine.ingest(fix(0), device: "d")) == ["enter P"])
    server.update(delete: ["P"])
    clock.time = Self.t0 + 60
    let removed = try await engine.sync()
    #expect(summary(removed.events) == ["exit P"])
    #expect(removed.events.first?.isRemoval == true)
    // The nearest edge is 0.001° of longitude east or west: 76.5 m at 46.5° N (the edge
    // distance's local projection, as for every polygon event; not the 0 m to the box centre).
    let metersPerDegree = EarthModel.meanRadiusMeters * Double.pi / 180
    let expected = 0.001 * metersPerDegree * cos(Self.here.lat * Double.pi / 180)
    #expect(abs((removed.events.first?.distanceMeters ?? 0) - expected) < 0.01)
  }
}
