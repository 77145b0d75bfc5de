import BinarySnapshot
import Foundation
import GeofenceGeometry
import GeofenceIndex
import GeofenceSync
import GeofenceTestSupport
import Testing

@testable import GeofenceEngine

/// The indexed snapshot: a set read back from its bytes answers exactly as the set that was
/// written (the same slots, geofences, event id hashes, lookups and index answers, checked
/// point by point), damage and another source are refused, and an engine on a directory
/// uses a current snapshot and rebuilds one that is stale or damaged.
@Suite struct SnapshotTests {
  static func geofences(seed: UInt64, count: Int) throws -> [Geofence] {
    var random = SeededGenerator(seed: seed)
    var result: [Geofence] = []
    for k in 0..<count {
      let lat = 46.0 + Double.random(in: 0..<0.5, using: &random)
      let lon = 7.0 + Double.random(in: 0..<0.5, using: &random)
      // Ids of 1 to 30 bytes (inline and heap-held strings), some with details.
      let id = String(repeating: "x", count: k % 30) + "\(k)"
      let name: String? = k % 4 == 0 ? "Place \(k)" : nil
      let metadata: String? = k % 7 == 0 ? #"{"url":"https://example.com/\#(k)"}"# : nil
      if k % 50 == 0 {
        let d = 0.002
        let ring = [
          SIMD2(lon, lat), SIMD2(lon + d, lat), SIMD2(lon + d / 2, lat + d / 3),
          SIMD2(lon + d, lat + d), SIMD2(lon, lat + d), SIMD2(lon, lat),
        ]
        result.append(
          Geofence(
            id: id, name: name, shape: .polygon(try PolygonRegion(polygons: [[ring]])),
            metadataJSON: metadata))
      } else {
        result.append(
          Geofence(
            id: id, name: name,
            region: try CircularRegion(
              center: try Coordinate(latitude: lat, longitude: lon),
              radiusMeters: Double.random(in: 20...800, using: &random)),
            metadataJSON: metadata))
      }
    }
    return result
  }

  static let identity = (instance: "0123456789abcdef0123456789abcdef", generation: Int64(7))

  /// Every slot and lookup of `b` equals `a`'s, and the index answers the same at `points`.
  static func expectSame(_ a: LiveGeofenceSet, _ b: LiveGeofenceSet, points: [Coordinate]) {
    #expect(a.slotCount == b.slotCount)
    #expect(a.count == b.count)
    #expect(a.geofences == b.geofences)
    for slot in 0..<a.slotCount {
      #expect(a.geofence(at: slot) == b.geofence(at: slot), "slot \(slot)")
      #expect(a.regions.isRemoved(Int32(slot)) == b.regions.isRemoved(Int32(slot)))
      #expect(a.details(at: slot)?.url == b.details(at: slot)?.url)
      let id = a.regions.ids[slot]
      #expect(a.slot(of: id) == b.slot(of: id), "\(id)")
    }
    // The event id hashes, byte for byte.
    #expect(
      (0..<a.slotCount).allSatisfy { slot in
        withUnsafeBytes(of: a.eventIDStart(at: slot)) { p in
          withUnsafeBytes(of: b.eventIDStart(at: slot)) { q in p.elementsEqual(q) }
        }
      })
    var x: [Int32] = []
    var y: [Int32] = []
    for p in points {
      a.regions.index.query(p, into: &x)
      b.regions.index.query(p, into: &y)
      #expect(x.sorted() == y.sorted(), "\(p)")
    }
  }

  static func points(_ n: Int, seed: UInt64) throws -> [Coordinate] {
    var random = SeededGenerator(seed: seed)
    return try (0..<n).map { _ in
      try Coordinate(
        latitude: 46.0 + Double.random(in: -0.01..<0.51, using: &random),
        longitude: 7.0 + Double.random(in: -0.01..<0.51, using: &random))
    }
  }

  @Test(arguments: [1 as UInt64, 2])
  func aSetReadBackAnswersAsTheSetWritten(seed: UInt64) throws {
    let initial = try Self.geofences(seed: seed, count: 3_000)
    var live = LiveGeofenceSet(geofences: initial)
    let points = try Self.points(4_000, seed: seed + 100)
    let fresh = GeofenceEngine.snapshotBytes(of: live, identity: Self.identity)
    let read = try fresh.withUnsafeBytes {
      try GeofenceEngine.openSnapshot($0, identity: Self.identity)
    }
    Self.expectSame(live, read, points: points)

    // After a diff: retired slots, moved and added geofences, pending inserts.
    var diff = GeofenceDiff()
    for g in initial.prefix(40) { diff.removed.append(g.id) }
    let added = try Self.geofences(seed: seed + 9, count: 60).map {
      Geofence(id: "new-\($0.id)", name: $0.name, shape: $0.shape, metadataJSON: $0.metadataJSON)
    }
    diff.added = added
    _ = live.apply(diff)
    let changed = GeofenceEngine.snapshotBytes(of: live, identity: Self.identity)
    let readChanged = try changed.withUnsafeBytes {
      try GeofenceEngine.openSnapshot($0, identity: Self.identity)
    }
    Self.expectSame(live, readChanged, points: points)
  }

  @Test func damageAndAnotherSourceAreRefused() throws {
    let live = LiveGeofenceSet(geofences: try Self.geofences(seed: 3, count: 500))
    let bytes = GeofenceEngine.snapshotBytes(of: live, identity: Self.identity)
    func open(_ b: [UInt8], _ identity: (instance: String, generation: Int64) = Self.identity)
      -> SnapshotError?
    {
      do {
        _ = try b.withUnsafeBytes { try GeofenceEngine.openSnapshot($0, identity: identity) }
        return nil
      } catch let error as SnapshotError {
        return error
      } catch {
        return .layout("\(error)")
      }
    }
    #expect(open(bytes) == nil)
    #expect(open(bytes, (Self.identity.instance, 8)) == .stale)
    #expect(open(bytes, ("another", 7)) == .stale)
    var random = SeededGenerator(seed: 11)
    for _ in 0..<50 {
      var damaged = bytes
      let at = Int.random(in: 0..<damaged.count, using: &random)
      damaged[at] ^= UInt8.random(in: 1...255, using: &random)
      let error = open(damaged)
      #expect(
        error == .damaged || error == .notASnapshot, "byte \(at): \(String(describing: error))")
    }
    for cut in [0, 5, 12, 100, bytes.count / 2, bytes.count - 1] {
      let error = open(Array(bytes.prefix(cut)))
      #expect(error == .damaged || error == .notASnapshot, "cut at \(cut)")
    }
  }

  @Test func anEngineOpensACurrentSnapshotAndRebuildsAStaleOrDamagedOne() throws {
    let directory = TestScratch.root
      .appendingPathComponent("snapshot-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let set = try Self.geofences(seed: 5, count: 800)
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    func list(_ geofences: [Geofence], version: String) throws {
      let store = try GeofenceStore(
        path: URL(fileURLWithPath: directory).appendingPathComponent("geofences.sqlite").path)
      try store.beginListing()
      _ = try store.stage(geofences)
      _ = try store.commitListing(
        version: version, etag: nil, account: nil, area: nil, at: 0, details: false)
    }
    func engine() throws -> GeofenceEngine {
      try GeofenceEngine(configuration: .init(checkpoints: .none), storage: .directory(directory))
    }
    func events(_ engine: GeofenceEngine) throws -> [String] {
      var out: [String] = []
      for (k, p) in try Self.points(400, seed: 9).enumerated() {
        let fix = LocationFix(coordinate: p, time: 1_700_000_000 + Double(k) * 30)
        out += try engine.ingest(fix, device: "d\(k % 5)").map { "\($0.id) \($0.type)" }
      }
      return out
    }
    try list(set, version: "v1")
    let built: [String]
    do {
      let first = try engine()
      #expect(first.setSource == .store(reason: "no snapshot yet", wroteSnapshot: true))
      #expect(first.snapshotIsCurrent())
      built = try events(first)
    }
    do {
      let second = try engine()
      guard case .snapshot = second.setSource else {
        Issue.record("expected the snapshot, got \(second.setSource)")
        return
      }
      #expect(
        second.geofences
          == set.sorted { Array($0.id.utf8).lexicographicallyPrecedes(Array($1.id.utf8)) })
      #expect(try events(second) == built)
      #expect(!built.isEmpty)
    }
    // A new listing makes it stale.
    try list(Array(set.prefix(700)), version: "v2")
    do {
      let third = try engine()
      guard case .store(let reason, true) = third.setSource else {
        Issue.record("expected a rebuild, got \(third.setSource)")
        return
      }
      #expect(reason.contains("built from another version"), "\(reason)")
      #expect(third.geofenceCount == 700)
    }
    // A damaged file is rebuilt, never trusted.
    let path = URL(fileURLWithPath: directory).appendingPathComponent("geofences.snapshot").path
    var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
    bytes[bytes.count / 2] ^= 0x40
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    do {
      let fourth = try engine()
      guard case .store(let reason, true) = fourth.setSource else {
        Issue.record("expected a rebuild, got \(fourth.setSource)")
        return
      }
      #expect(reason.contains("checksum"), "\(reason)")
      #expect(fourth.geofenceCount == 700)
    }
    let fifth = try engine()
    guard case .snapshot = fifth.setSource else {
      Issue.record("expected the snapshot, got \(fifth.setSource)")
      return
    }
  }
}
