import Foundation
import GeofenceEngine
import GeofenceSync
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

/// An API key with a line break would make URLSession drop the `Authorization` header and
/// send the request without it: the engine refuses the configuration before opening anything.
@Test func anAPIKeyWithALineBreakIsAnInvalidConfiguration() throws {
  let server = try #require(URL(string: "http://127.0.0.1:9"))
  let upload = GeofenceEngine.Configuration(
    outbox: .init(), upload: .init(server: server, apiKey: "abc\r\nX-Injected: 1"))
  let refused = #expect(throws: EngineError.self) { _ = try GeofenceEngine(configuration: upload) }
  #expect(
    refused?.description
      == "invalid configuration: upload: the API key holds a line break (CR or LF)")
  let sync = GeofenceEngine.Configuration(sync: SyncConfiguration(baseURL: server, apiKey: "\t"))
  let blank = #expect(throws: EngineError.self) { _ = try GeofenceEngine(configuration: sync) }
  #expect(blank?.description == "invalid configuration: sync: the API key holds only blanks")
}
