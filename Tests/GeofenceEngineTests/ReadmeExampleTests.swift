import Foundation
import GeofenceEngine
import GeofenceGeometry
import GeofenceTransitions
import Testing
import GeofenceTestSupport

/// The README's "Embedding the engine" example, compiled and run: a geofence of 100 m at
/// (0, 0), a device walking east from -300 m to +300 m, 1 m/s.
@Test func theReadmeEmbeddingExampleRunsAsShown() async throws {
  let directory = TestScratch.root
    .appendingPathComponent("readme-\(UUID().uuidString)").path
  // --- README example begins (server and sync omitted: a fixed set) ---
  let cafe = Geofence(
    id: "cafe-42", name: "Café",
    region: try CircularRegion(center: Coordinate(latitude: 0, longitude: 0), radiusMeters: 100),
    metadataJSON: #"{"url":"myapp://offers/42"}"#)
  let engine = try GeofenceEngine(
    configuration: .init(outbox: .init(), identity: .persisted),
    storage: .directory(directory), geofences: [cafe])
  try engine.identify(user: "user-7")
  var seen: [String] = []
  for second in 0...600 {
    let east = Double(second) - 300  // metres
    let fix = LocationFix(
      coordinate: try Coordinate(latitude: 0, longitude: east / 111_195.08),
      time: 1.8e9 + Double(second),
      horizontalAccuracy: 5)
    for event in try engine.ingest(fix, device: "phone-1") {
      seen.append("\(event.type.rawValue) \(event.geofenceID) \(event.url ?? "-")")
    }
  }
  // --- README example ends ---
  // ENTER at 100 m west of the centre (second 200: d <= r, accuracy 5 <= r); EXIT once
  // d - a > r + h, that is d > 5 + 100 + 20 = 125 m east (second 426, 126 m), 226 s after the
  // ENTER: before the 300 s dwell is due, so no DWELL.
  #expect(
    seen == ["enter cafe-42 myapp://offers/42", "exit cafe-42 myapp://offers/42"])
  #expect(try engine.outbox?.counts().pending == 2)
  #expect(engine.userID == "user-7")
}
