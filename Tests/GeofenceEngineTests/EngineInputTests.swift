import GeofenceEngine
import GeofenceGeometry
import GeofenceTransitions
import Testing

/// A fix whose time no RFC 3339 date can carry (years 0000-9999) is dropped as missingTime,
/// instead of trapping when its event is written, and it does not make the device's later
/// fixes stale.
@Test(arguments: [253_402_300_800.0, 1e300, -1e12, 1.548446441e12])
func aFixTimeBeyondTheYear9999IsDroppedNotATrap(time: Double) throws {
  let home = Geofence(
    id: "home",
    region: try CircularRegion(center: Coordinate(latitude: 47, longitude: 7), radiusMeters: 500))
  let engine = try GeofenceEngine(geofences: [home])
  let inside = try Coordinate(latitude: 47, longitude: 7)
  #expect(try engine.ingest(LocationFix(coordinate: inside, time: time), device: "a").isEmpty)
  #expect(engine.report.dropCounts[.missingTime] == 1)
  let later = try engine.ingest(LocationFix(coordinate: inside, time: 1.8e9), device: "a")
  #expect(later.map(\.type) == [.enter])
  #expect(later.first?.time == 1.8e9)
}
