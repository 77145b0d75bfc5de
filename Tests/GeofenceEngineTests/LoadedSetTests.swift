import Foundation
import GeofenceDefinitions
import GeofenceGeometry
import GeofenceTransitions
import Testing

@testable import GeofenceEngine

/// An engine given a load's columns (`GeofenceEngine(loaded:)`, the path of `replay`, `run`
/// and `stream`) holds the same set and gives the same events as one given the same geofences
/// as an array, and each slot's event-id hash is the documented one: the id and the lifetime
/// of its centre and radius (and geometry, for a polygon).
@Test func anEngineOnALoadEqualsOneOnTheSameGeofencesAsAnArray() throws {
  let csv = """
    id,name,latitude,longitude,radius,url
    a,Alpha,46.5000,6.6000,300,https://example.org/a
    b,,46.5010,6.6010,200,
    a,Again,0,0,10,
    c-with-an-id-longer-than-fifteen-bytes,Gamma,46.5020,6.6000,500,
    """
  let json = """
    [{"id": "p", "name": "Square", "geometry": {"type": "Polygon", "coordinates": [[[6.599, 46.499], [6.603, 46.499], [6.603, 46.503], [6.599, 46.503], [6.599, 46.499]]]}},
     {"id": "b", "latitude": 1, "longitude": 1, "radius": 5}]
    """
  let load = GeofenceLoadResult.merging([
    try GeofenceFileReader.read(
      data: Data(csv.utf8), format: .csv, fileName: "a.csv", defaultRadiusMeters: nil),
    try GeofenceFileReader.read(
      data: Data(json.utf8), format: .json, fileName: "p.json", defaultRadiusMeters: nil),
  ])
  #expect(load.rejected.count == 2)
  let geofences = load.geofences
  let onLoad = try GeofenceEngine(configuration: .init(checkpoints: .none), loaded: load)
  let onArray = try GeofenceEngine(configuration: .init(checkpoints: .none), geofences: geofences)
  #expect(onLoad.geofences == geofences)
  #expect(onArray.geofences == geofences)
  for g in geofences {
    #expect(onLoad.geofence(id: g.id) == g)
    let slot = try #require(onLoad.live.slot(of: g.id))
    let expected = LiveGeofenceSet.eventIDStart(id: g.id, lifetime: LiveGeofenceSet.lifetime(g))
    #expect(
      withUnsafeBytes(of: onLoad.live.eventIDStart(at: Int(slot))) { x in
        withUnsafeBytes(of: expected) { y in x.elementsEqual(y) }
      }, "\(g.id)")
  }
  #expect(onLoad.geofence(id: "missing") == nil)
  // A walk into all four and out again: the same events, ids and deep links on both.
  let t0 = 1_796_014_800.0
  let path: [(Double, Double)] = [
    (46.49, 6.59), (46.5005, 6.6005), (46.5012, 6.6008), (46.5015, 6.6010), (46.52, 6.62),
  ]
  for (k, (latitude, longitude)) in path.enumerated() {
    let fix = LocationFix(
      coordinate: Coordinate(uncheckedLatitude: latitude, longitude: longitude),
      time: t0 + Double(k) * 60, horizontalAccuracy: 5)
    // The processing time is the wall clock's, the rest must agree.
    func timeless(_ events: [GeofenceEvent]) -> [GeofenceEvent] {
      events.map {
        var e = $0
        e.processedAt = nil
        return e
      }
    }
    let a = timeless(try onLoad.ingest(fix, device: "d"))
    let b = timeless(try onArray.ingest(fix, device: "d"))
    #expect(a == b)
    if k == 1 { #expect(!a.isEmpty) }
  }
}

/// The validator refuses the id the planner gives its refresh circle; the two modules do not
/// import each other, so this keeps their constants equal.
@Test func theValidatorReservesThePlannersRefreshIdentifier() {
  #expect(GeofenceValidator.reservedIDs == [RegionBudgetPlanner.refreshIdentifier])
}
