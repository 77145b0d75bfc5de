import GeofenceGeometry
import GeofenceSync
import GeofenceTestSupport
import Testing

@testable import GeofenceEngine

/// The live set keeps each geofence's parts once (ids and shapes in the region set, details
/// only where present, slots in a table of slot numbers). Checked against a plain dictionary
/// of geofences by id, through seeded rounds of additions, removals, moves and metadata edits.
@Suite struct LiveGeofenceSetTests {
  static func circle(_ id: String, _ lat: Double, _ lon: Double, _ r: Double, name: String?)
    throws -> Geofence
  {
    Geofence(
      id: id, name: name,
      region: try CircularRegion(
        center: try Coordinate(latitude: lat, longitude: lon), radiusMeters: r),
      metadataJSON: name.map { #"{"url":"https://example.com/\#($0)"}"# })
  }

  @Test(arguments: [1 as UInt64, 2, 3])
  func slotsAndDetailsMatchADictionaryOracle(seed: UInt64) throws {
    var random = SeededGenerator(seed: seed)
    var oracle: [String: Geofence] = [:]
    var initial: [Geofence] = []
    // Ids of 1 to 40 bytes: both inline and heap-held strings.
    func id(_ k: Int) -> String { String(repeating: "g", count: k % 40) + "\(k)" }
    for k in 0..<300 {
      let g = try Self.circle(
        id(k), Double(k % 50) * 0.01, Double(k / 50) * 0.01, 100 + Double(k),
        name: k % 3 == 0 ? "n\(k)" : nil)
      initial.append(g)
      oracle[g.id] = g
    }
    var live = LiveGeofenceSet(geofences: initial)
    var next = 300
    for round in 0..<40 {
      var diff = GeofenceDiff()
      var touched = Set<String>()
      let ids = oracle.keys.sorted()
      for _ in 0..<Int.random(in: 1...30, using: &random) {
        let pick = ids[Int.random(in: 0..<ids.count, using: &random)]
        guard touched.insert(pick).inserted else { continue }
        switch Int.random(in: 0..<3, using: &random) {
        case 0:
          diff.removed.append(pick)
          oracle[pick] = nil
        case 1:
          let g = try Self.circle(
            pick, Double.random(in: 0...1, using: &random), 0.5, 250, name: "moved\(round)")
          diff.geometryChanged.append(g)
          oracle[pick] = g
        default:
          let old = try #require(oracle[pick])
          let g = Geofence(
            id: pick, name: old.name == nil ? "named\(round)" : nil, shape: old.shape,
            metadataJSON: old.name == nil ? #"{"url":"myapp://x/\#(round)"}"# : nil)
          diff.metadataChanged.append(g)
          oracle[pick] = g
        }
      }
      for _ in 0..<Int.random(in: 0...10, using: &random) {
        let g = try Self.circle(id(next), 0.25, 0.25, 300, name: next % 2 == 0 ? "a" : nil)
        next += 1
        diff.added.append(g)
        oracle[g.id] = g
      }
      _ = live.apply(diff)
      #expect(live.count == oracle.count, "seed \(seed) round \(round)")
      for (gid, g) in oracle {
        let slot = try #require(live.slot(of: gid), "seed \(seed) round \(round) id \(gid)")
        #expect(live.geofence(at: Int(slot)) == g, "seed \(seed) round \(round) id \(gid)")
        #expect(
          live.details(at: Int(slot))?.url == LiveGeofenceSet.url(fromMetadata: g.metadataJSON))
      }
      for gid in touched where oracle[gid] == nil { #expect(live.slot(of: gid) == nil) }
      #expect(Set(live.geofences.map(\.id)) == Set(oracle.keys))
    }
  }
}
