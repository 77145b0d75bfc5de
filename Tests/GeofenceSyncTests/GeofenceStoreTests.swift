import Foundation
import GeofenceDefinitions
import GeofenceGeometry
import GeofenceSync
import GeofenceTestSupport
import Networking
import Testing

func page(_ items: [String], version: String = "v2", next: String? = nil) -> HTTPResponse {
  let cursor = next.map { "\"\($0)\"" } ?? "null"
  return HTTPResponse(
    statusCode: 200, headers: ["ETag": "\"\(version)\""],
    body: Data(
      "{\"version\":\"\(version)\",\"geofences\":[\(items.joined(separator: ","))],\"next_cursor\":\(cursor)}"
        .utf8))
}

func geofence(
  _ id: String, _ lat: Double, _ lon: Double, radius: Double = 100, name: String? = nil,
  metadata: String? = nil
) throws -> Geofence {
  Geofence(
    id: id, name: name,
    region: try CircularRegion(
      center: try Coordinate(latitude: lat, longitude: lon), radiusMeters: radius),
    metadataJSON: metadata)
}

@Suite("Validation, duplicates, diff and the store")
struct GeofenceStoreTests {
  @Test func duplicateIDsCountOnceWhenIdenticalAndKeepTheStoredOneWhenConflicting() async throws {
    let server = FakeSyncServer()
    server.publish([
      "b": FakeSyncServer.json("b", 10, 10, name: "stored b"),
      "keep": FakeSyncServer.json("keep", 11, 11),
    ])
    let client = try makeClient(server)
    _ = try await client.sync()
    let storedB = try #require(try client.store.geofence(id: "b"))
    let a = FakeSyncServer.json("a", 1, 1)
    // Page 1: a twice (identical), b twice (different), c once; page 2: c again, different.
    server.script(
      result: .success(
        page(
          [
            a, a, FakeSyncServer.json("b", 2, 2), FakeSyncServer.json("b", 3, 3),
            FakeSyncServer.json("c", 4, 4),
          ], next: "p2"))
    ) {
      $0.query("cursor") == nil && $0.url.path == "/v1/geofences"
    }
    server.script(
      result: .success(page([FakeSyncServer.json("c", 5, 5), FakeSyncServer.json("d", 6, 6)]))
    ) {
      $0.query("cursor") == "p2"
    }
    let report = try await client.sync(full: true)
    #expect(report.conflictingIDs == ["b", "c"])
    #expect(report.rejections.isEmpty)
    #expect(try client.store.geofences().map(\.id) == ["a", "b", "d"])
    #expect(try client.store.geofence(id: "b") == storedB)
    #expect(report.diff.counts == GeofenceDiff.Counts(added: 2, removed: 1))
    #expect(report.diff.removed == ["keep"])
  }

  @Test func rejectedDefinitionsAreReportedWithReasons() async throws {
    let server = FakeSyncServer()
    server.publish(["r1": FakeSyncServer.json("r1", 10, 10, radius: 50)])
    let client = try makeClient(server)
    _ = try await client.sync()
    let items = [
      "{\"id\":\"r1\",\"latitude\":10,\"longitude\":10,\"radius\":-5}",
      "{\"id\":\"r2\",\"latitude\":100,\"longitude\":10,\"radius\":5}",
      "{\"latitude\":1,\"longitude\":10,\"radius\":5}",
      "{\"id\":\"r4\",\"latitude\":1,\"longitude\":10,\"radius\":\"5\"}",
      "42",
      "{\"id\":\"r6\",\"latitude\":1,\"longitude\":10,\"radius\":5,\"metadata\":[1]}",
      FakeSyncServer.json("ok", 1, 2, metadata: "{\"b\":1,\"a\":\"x\"}"),
    ]
    server.script(result: .success(page(items))) { $0.url.path == "/v1/geofences" }
    let report = try await client.sync(full: true)
    let reasons = report.rejections.map(\.description)
    #expect(
      reasons == [
        "listing page 1[0] (id \"r1\"): radius -5.0 m is not a finite value in (0, 20037509] (half the WGS84 equator)",
        "listing page 1[1] (id \"r2\"): latitude 100.0 is not a finite value in [-90, 90]",
        "listing page 1[2]: id is missing",
        "listing page 1[3] (id \"r4\"): radius must be a number, found string",
        "listing page 1[4]: definition must be an object, found number",
        "listing page 1[5] (id \"r6\"): metadata must be an object, found array",
      ])
    // r1 keeps its stored definition; the other rejected ids are new and left out.
    #expect(try client.store.geofences().map(\.id) == ["ok", "r1"])
    #expect(try client.store.geofence(id: "ok")?.metadataJSON == "{\"a\":\"x\",\"b\":1}")
    #expect(try client.store.geofence(id: "r1")?.region.radiusMeters == 50)
  }

  @Test func changesWithRejectedAndContradictoryEntriesKeepTheStoredOnes() async throws {
    let server = FakeSyncServer()
    server.publish(["a": FakeSyncServer.json("a", 1, 1), "b": FakeSyncServer.json("b", 2, 2)])
    let client = try makeClient(server)
    _ = try await client.sync()
    let body =
      "{\"version\":\"v9\",\"upserted\":[{\"id\":\"a\",\"latitude\":1,\"longitude\":1,\"radius\":0},"
      + FakeSyncServer.json("b", 3, 3) + "," + FakeSyncServer.json("c", 4, 4)
      + "],\"deleted\":[\"b\",\"zz\"]}"
    server.script(result: .success(HTTPResponse(statusCode: 200, body: Data(body.utf8)))) { _ in
      true
    }
    let report = try await client.sync()
    #expect(report.kind == .incremental)
    #expect(
      report.rejections.map(\.description) == [
        "changes[0] (id \"a\"): radius 0.0 m is not a finite value in (0, 20037509] (half the WGS84 equator)"
      ])
    #expect(report.conflictingIDs == ["b"])
    #expect(report.diff.counts == GeofenceDiff.Counts(added: 1))
    #expect(try client.store.geofences().map(\.id) == ["a", "b", "c"])
    #expect(try client.store.geofence(id: "b")?.region.center.latitude == 2)
    #expect(try client.store.state().version == "v9")
  }

  @Test func diffCategories() throws {
    let old = [
      try geofence("same", 1, 1), try geofence("renamed", 2, 2, name: "x"),
      try geofence("meta", 3, 3, metadata: "{\"a\":1}"), try geofence("moved", 4, 4),
      try geofence("resized", 5, 5, radius: 10), try geofence("gone", 6, 6),
    ]
    let new = [
      try geofence("same", 1, 1), try geofence("renamed", 2, 2, name: "y"),
      try geofence("meta", 3, 3, metadata: "{\"a\":2}"), try geofence("moved", 4, 4.0001),
      try geofence("resized", 5, 5, radius: 11), try geofence("added", 7, 7),
    ]
    let diff = GeofenceDiff(from: old, to: new)
    #expect(diff.added.map(\.id) == ["added"])
    #expect(diff.removed == ["gone"])
    #expect(diff.geometryChanged.map(\.id) == ["moved", "resized"])
    #expect(diff.metadataChanged.map(\.id) == ["meta", "renamed"])
    #expect(
      diff.counts
        == GeofenceDiff.Counts(added: 1, removed: 1, geometryChanged: 2, metadataChanged: 2))
  }

  /// The store's SQL diff equals the in-memory diff for random old and new sets.
  @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
  func storeDiffMatchesTheInMemoryOracle(seed: UInt64) throws {
    var g = SeededGenerator(seed: seed)
    func randomSet() throws -> [Geofence] {
      var set: [String: Geofence] = [:]
      for _ in 0..<150 {
        let id = "id\(Int.random(in: 0..<200, using: &g))"
        let lat = Double(Int.random(in: 0..<3, using: &g))
        let name: String? = Bool.random(using: &g) ? "n\(Int.random(in: 0..<2, using: &g))" : nil
        let metadata: String? =
          Bool.random(using: &g) ? "{\"k\":\(Int.random(in: 0..<2, using: &g))}" : nil
        set[id] = try geofence(
          id, lat, 0, radius: Double(Int.random(in: 1..<3, using: &g)), name: name,
          metadata: metadata)
      }
      return Array(set.values)
    }
    let old = try randomSet()
    let new = try randomSet()
    let store = try GeofenceStore.inMemory()
    try store.beginListing()
    try store.stage(old)
    _ = try store.commitListing(
      version: "v1", etag: nil, account: nil, area: nil, at: 0, details: true)
    try store.beginListing()
    try store.stage(Array(new.prefix(70)))
    try store.stage(Array(new.dropFirst(70)))
    let diff = try store.commitListing(
      version: "v2", etag: nil, account: nil, area: nil, at: 1, details: true)
    #expect(diff == GeofenceDiff(from: old, to: new), "seed \(seed)")
    #expect(
      try store.geofences() == new.sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) })
  }

  @Test func anInterruptedListingLeavesTheOldSetOnDisk() throws {
    let dir = TestScratch.root.appendingPathComponent(
      "sync-crash-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let path = dir.appendingPathComponent("geofences.sqlite").path
    do {
      let store = try GeofenceStore(path: path)
      try store.beginListing()
      try store.stage([try geofence("old", 1, 1)])
      _ = try store.commitListing(
        version: "v1", etag: "\"v1\"", account: nil, area: nil, at: 0, details: false)
      // A second listing is staged but never committed (the process dies here).
      try store.beginListing()
      try store.stage([try geofence("new", 2, 2)])
    }
    let reopened = try GeofenceStore(path: path)
    #expect(try reopened.geofences().map(\.id) == ["old"])
    #expect(try reopened.state().version == "v1")
    #expect(reopened.isSetReadable())
  }
}
