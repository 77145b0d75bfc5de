import Foundation
import GeofenceEngine
import GeofenceGeometry
import GeofenceSync
import GeofenceTestSupport
import GeofenceTransitions
import Testing

/// ``GeofenceEngine/ingest(_:device:encoder:into:)`` against the oracle of the event path:
/// a second engine given the same fixes, whose returned events are encoded one by one.
@Suite struct EncodedIngestTests {
  static let t0 = 1_796_014_800.0

  /// Circles on a line of latitude 0.002° (about 222 m) apart, radius 150 m, with names,
  /// metadata and a URL that need escaping.
  static func geofences() throws -> [Geofence] {
    var out: [Geofence] = []
    for k in 0..<8 {
      let name: String? = k % 2 == 0 ? "Caf\u{E9} \"\(k)\"\n" : nil
      let metadata: String? = k % 3 == 0 ? "{\"url\":\"myapp://offer/\(k)\",\"tier\":[1,2]}" : nil
      let center = try Coordinate(latitude: 48.85, longitude: 2.35 + 0.002 * Double(k))
      let region = try CircularRegion(center: center, radiusMeters: 150)
      out.append(Geofence(id: "g\(k)", name: name, region: region, metadataJSON: metadata))
    }
    return out
  }

  /// Two devices walking east along the circles (10 m a second, one fix every 5 s, at times
  /// that are not whole milliseconds), interleaved, with accuracy on every other fix.
  static func fixes() -> [(device: String, fix: LocationFix)] {
    var out: [(String, LocationFix)] = []
    for i in 0..<400 {
      for (d, offset) in [("dev-a", 0.0), ("dev-\u{E9}", 0.0007)] {
        let lon = 2.3485 + offset + Double(i) * 0.00006
        out.append(
          (
            d,
            LocationFix(
              coordinate: Coordinate(uncheckedLatitude: 48.85, longitude: lon),
              time: t0 + Double(i) * 5 + 0.0004, horizontalAccuracy: i % 2 == 0 ? 8 : nil)
          ))
      }
    }
    return out
  }

  func engines(_ configuration: GeofenceEngine.Configuration) throws -> (
    GeofenceEngine, GeofenceEngine
  ) {
    let g = try Self.geofences()
    return (
      try GeofenceEngine(configuration: configuration, geofences: g, clock: TestClock(Self.t0)),
      try GeofenceEngine(configuration: configuration, geofences: g, clock: TestClock(Self.t0))
    )
  }

  @Test(arguments: [false, true], [false, true])
  func writesTheBytesOfTheEncodedEvents(processingTime: Bool, inference: Bool) throws {
    var configuration = GeofenceEngine.Configuration()
    configuration.transitions.loiteringDelaySeconds = 20
    if inference { configuration.transitions.crossingInference = CrossingInference() }
    let (oracle, encoded) = try engines(configuration)
    var encoder = GeofenceEventEncoder(format: .jsonl, includesProcessingTime: processingTime)
    var expected: [UInt8] = []
    var actual: [UInt8] = []
    var count = 0
    for (device, fix) in Self.fixes() {
      let events = try oracle.ingest(fix, device: device)
      for e in events { encoder.encode(e, into: &expected) }
      let written = try encoded.ingest(fix, device: device, encoder: &encoder, into: &actual)
      #expect(written.events == events.count)
      count += events.count
    }
    // Every kind of event occurs, so every member is compared.
    #expect(oracle.report.eventCounts[.enter] >= 16)
    #expect(oracle.report.eventCounts[.exit] >= 14)
    #expect(oracle.report.eventCounts[.dwell] >= 16)
    #expect(count == oracle.report.eventCounts.total)
    #expect(encoded.report.eventCounts == oracle.report.eventCounts)
    #expect(String(decoding: actual, as: UTF8.self) == String(decoding: expected, as: UTF8.self))
    let text = String(decoding: actual, as: UTF8.self)
    #expect(text.contains(#""geofence_name":"Café \"0\"\n""#))
    #expect(text.contains(#""url":"myapp://offer/3""#))
  }

  /// Runs of one device's fixes (``GeofenceEngine/ingest(_:device:encoder:into:eventEnds:)``)
  /// against the fixes taken one by one: the same bytes for every fix, the same report and
  /// the same device state, with runs of random lengths (a seeded generator), fixes dropped
  /// as stale, duplicate or out of the representable times among them, with and without
  /// sessions (which take the events' path).
  @Test(arguments: [false, true])
  func runsGiveTheBytesOfSingleFixes(sessions: Bool) throws {
    var configuration = GeofenceEngine.Configuration()
    configuration.transitions.loiteringDelaySeconds = 20
    if sessions { configuration.sessions = SessionConfiguration() }
    for seed: UInt64 in 1...6 {
      var random = SeededGenerator(seed: seed)
      let (oracle, runs) = try engines(configuration)
      var encoder = GeofenceEventEncoder()
      var all = Self.fixes()
      // A stale fix, a duplicate, a conflicting one and one past year 9999, here and there.
      for k in stride(from: 37, to: all.count, by: 97) {
        var copy = all[k - 5]
        switch k % 4 {
        case 0: break
        case 1: copy = all[k - 2]
        case 2:
          copy.fix.coordinate = Coordinate(uncheckedLatitude: 48.86, longitude: 2.35)
        default: copy.fix.time = 3e11
        }
        all.insert(copy, at: k)
      }
      var expected: [UInt8] = []
      var expectedEnds: [Int] = []
      for (device, fix) in all {
        try oracle.ingest(fix, device: device, encoder: &encoder, into: &expected)
        expectedEnds.append(expected.count)
      }
      var actual: [UInt8] = []
      var ends: [Int] = []
      var k = 0
      while k < all.count {
        // A run: the next fixes of the same device, 1 to 40 of them.
        let device = all[k].device
        var run: [LocationFix] = []
        let limit = Int.random(in: 1...40, using: &random)
        while k < all.count, all[k].device == device, run.count < limit {
          run.append(all[k].fix)
          k += 1
        }
        try run.withUnsafeBufferPointer {
          try runs.ingest($0, device: device, encoder: &encoder, into: &actual, eventEnds: &ends)
        }
      }
      #expect(ends == expectedEnds, "seed \(seed)")
      #expect(actual == expected, "seed \(seed)")
      #expect(runs.report == oracle.report, "seed \(seed)")
      for device in ["dev-a", "dev-\u{E9}"] {
        #expect(try runs.deviceState(device) == oracle.deviceState(device), "seed \(seed)")
      }
    }
  }

  /// With sessions the events are made (and stamped) and then encoded: the same bytes.
  @Test func fallsBackToTheEventsWithSessions() throws {
    var configuration = GeofenceEngine.Configuration()
    configuration.sessions = SessionConfiguration()
    let (oracle, encoded) = try engines(configuration)
    var encoder = GeofenceEventEncoder()
    var expected: [UInt8] = []
    var actual: [UInt8] = []
    for (device, fix) in Self.fixes() {
      for e in try oracle.ingest(fix, device: device) { encoder.encode(e, into: &expected) }
      try encoded.ingest(fix, device: device, encoder: &encoder, into: &actual)
    }
    #expect(!actual.isEmpty)
    #expect(String(decoding: actual, as: UTF8.self) == String(decoding: expected, as: UTF8.self))
    #expect(String(decoding: actual, as: UTF8.self).contains(#""session_id":"#))
  }

  /// A sync that renames a geofence after its first event: later events carry the new name.
  @Test func aSyncedRenameReachesLaterEvents() async throws {
    let server = ListingServer()
    let here = (lat: 21.30, lon: -157.85)
    server.update(upsert: ["A": ListingServer.json("A", here.lat, here.lon, name: "Alpha")])
    let engine = try GeofenceEngine(
      configuration: .init(
        sync: SyncConfiguration(baseURL: URL(string: "http://sync.test")!, apiKey: "k1")),
      storage: .inMemory, transport: server, clock: TestClock(Self.t0))
    _ = try await engine.sync()
    var encoder = GeofenceEventEncoder()
    var out: [UInt8] = []
    func fix(_ t: Double, _ lat: Double) -> LocationFix {
      LocationFix(
        coordinate: Coordinate(uncheckedLatitude: lat, longitude: here.lon), time: Self.t0 + t,
        horizontalAccuracy: 5)
    }
    try engine.ingest(fix(0, here.lat), device: "d", encoder: &encoder, into: &out)
    #expect(String(decoding: out, as: UTF8.self).contains(#""geofence_name":"Alpha""#))
    server.update(upsert: ["A": ListingServer.json("A", here.lat, here.lon, name: "Alpha 2")])
    _ = try await engine.sync()
    out.removeAll()
    // 1.1 km north: the EXIT names the geofence as it is now.
    try engine.ingest(fix(60, here.lat + 0.01), device: "d", encoder: &encoder, into: &out)
    let text = String(decoding: out, as: UTF8.self)
    #expect(text.contains(#""type":"exit""#))
    #expect(text.contains(#""geofence_name":"Alpha 2""#))
  }
}
