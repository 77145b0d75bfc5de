import Foundation
import GeofenceDefinitions
import GeofenceGeometry
import GeofenceTestSupport
import Networking
import SQLiteStore
import Testing

@testable import GeofenceSync

/// The Swiss route polygons (`data/polygons`) read by the file reader: the oracle for what a
/// sync of the same features must store.
enum SwissPolygons {
  static let url = TestPaths.data.appendingPathComponent("polygons/swiss_route_polygons.geojson")

  static func fromFile() throws -> [Geofence] {
    let result = try GeofenceFileReader.read(contentsOf: url, defaultRadiusMeters: nil)
    #expect(result.rejected.isEmpty)
    return result.geofences
  }

  /// The features as the admin routes take them: id, name, the other properties as metadata,
  /// and the geometry as written in the file.
  static func adminDefinitions() throws -> [[String: Any]] {
    let document = try #require(
      try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
    let features = try #require(document["features"] as? [[String: Any]])
    return try features.map { feature in
      var properties = try #require(feature["properties"] as? [String: Any])
      let name = properties.removeValue(forKey: "name")
      return [
        "id": try #require(feature["id"]), "name": name ?? NSNull(), "metadata": properties,
        "geometry": try #require(feature["geometry"]),
      ]
    }
  }
}

func byID(_ geofences: [Geofence]) -> [Geofence] {
  geofences.sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
}

@Suite("Polygons in the geofence store")
struct PolygonStoreTests {
  @Test func polygonsAndCirclesRoundTripExactlyThroughAFileStore() throws {
    let polygons = try SwissPolygons.fromFile()
    #expect(polygons.count == 38)
    let circles = [
      try geofence("circle-a", 46.5, 6.6, radius: 1500, name: "A", metadata: #"{"k":1}"#),
      try geofence("circle-b", -33.9, 151.2, radius: 0.25),
    ]
    let all = byID(polygons + circles)
    let path = TestScratch.root
      .appendingPathComponent("polygon-store-\(UUID().uuidString).sqlite").path
    defer { try? FileManager.default.removeItem(atPath: path) }
    do {
      let store = try GeofenceStore(path: path)
      try store.beginListing()
      try store.stage(all)
      let diff = try store.commitListing(
        version: "v1", etag: nil, account: nil, area: nil, at: 0, details: true)
      #expect(diff.counts == .init(added: 40))
      #expect(diff.added == all)
    }
    // Reopened: every geofence equal to the one written (PolygonRegion compares every vertex,
    // ring and part), polygons as polygons.
    let reopened = try GeofenceStore(path: path)
    let loaded = try reopened.geofences()
    #expect(loaded == all)
    #expect(loaded.filter { $0.polygon != nil }.count == 38)
    for (a, b) in zip(loaded, all) {
      #expect(a.polygon?.longitudes == b.polygon?.longitudes, "\(a.id)")
      #expect(a.polygon?.latitudes == b.polygon?.latitudes, "\(a.id)")
      #expect(a.region == b.region, "\(a.id)")
    }

    // The same listing again changes nothing; a reshaped polygon is a geometry change even
    // with its bounding box unchanged (a vertex moved inside it).
    let yverdon = try #require(polygons.first { $0.id == "commune-5938" }?.polygon)
    var rings = yverdon.polygons
    // A vertex added half way along an edge: the same outline and box, another geometry.
    rings[0][0].insert((rings[0][0][1] + rings[0][0][2]) / 2, at: 2)
    let reshaped = try PolygonRegion(polygons: rings)
    #expect(reshaped.boundingCap == yverdon.boundingCap)
    #expect(reshaped != yverdon)
    let edited = all.map {
      $0.id == "commune-5938"
        ? Geofence(
          id: $0.id, name: $0.name, shape: .polygon(reshaped), metadataJSON: $0.metadataJSON)
        : $0
    }
    try reopened.beginListing()
    try reopened.stage(edited)
    let second = try reopened.commitListing(
      version: "v2", etag: nil, account: nil, area: nil, at: 1, details: true)
    #expect(second.counts == .init(geometryChanged: 1))
    #expect(second.geometryChanged.map(\.id) == ["commune-5938"])
    #expect(try reopened.geofence(id: "commune-5938")?.polygon == reshaped)

    // Incremental: back to the original outline, and a circle becomes a polygon.
    let circleToPolygon = Geofence(
      id: "circle-b", name: nil, shape: .polygon(yverdon), metadataJSON: nil)
    let third = try reopened.applyChanges(
      version: "v3", etag: nil,
      upserted: [all.first { $0.id == "commune-5938" }!, circleToPolygon], deleted: ["circle-a"],
      at: 2)
    #expect(third.counts == .init(removed: 1, geometryChanged: 2))
    #expect(try reopened.geofence(id: "circle-b") == circleToPolygon)
    #expect(try reopened.geofence(id: "commune-5938") == all.first { $0.id == "commune-5938" })
  }

  @Test func aStoreWrittenBeforePolygonsIsMigratedWithItsCirclesIntact() throws {
    let path = TestScratch.root
      .appendingPathComponent("polygon-migrate-\(UUID().uuidString).sqlite").path
    defer { try? FileManager.default.removeItem(atPath: path) }
    do {
      let old = try Database(path: path)
      try old.migrate(Array(GeofenceStore.migrations.prefix(1)))
      try old.execute(
        "INSERT INTO geofence VALUES ('c', 46.5, 6.6, 1500, 'Circle', NULL)")
      try old.execute("UPDATE sync_state SET version = 'v7', geofence_count = 1")
    }
    let store = try GeofenceStore(path: path)
    #expect(try store.database.userVersion() == GeofenceStore.migrations.count)
    let before = try store.setIdentity()
    #expect(before.instance.count == 32 && before.generation == 0)
    #expect(try store.geofences() == [try geofence("c", 46.5, 6.6, radius: 1500, name: "Circle")])
    #expect(store.isSetReadable())
    let polygon = try #require(try SwissPolygons.fromFile().first)
    _ = try store.applyChanges(version: "v8", etag: nil, upserted: [polygon], deleted: [], at: 1)
    #expect(try store.geofence(id: polygon.id) == polygon)
    // The change moved the set's generation on, in the same store file.
    let after = try store.setIdentity()
    #expect(after.instance == before.instance && after.generation == 1)
    // An answer that changes nothing (the same geofence again, an unknown id deleted) keeps
    // the generation, so a snapshot of the set stays current; its version is still stored.
    _ = try store.applyChanges(
      version: "v9", etag: nil, upserted: [polygon], deleted: ["unknown"], at: 2)
    #expect(try store.setIdentity().generation == 1)
    #expect(try store.state().version == "v9")
    _ = try store.applyChanges(version: "v10", etag: nil, upserted: [], deleted: ["c"], at: 3)
    #expect(try store.setIdentity().generation == 2)
  }

  @Test func aDamagedGeometryBlobIsReportedAsCorrupt() throws {
    let polygon = try #require(try SwissPolygons.fromFile().first { $0.id == "canton-24" })
    let bytes = StoredPolygon.encode(try #require(polygon.polygon))
    // 4 + 4 + 4 (one polygon of one ring) + 4 (its count) + 16 per position.
    #expect(bytes.count == 16 + 16 * 124)
    #expect(StoredPolygon.decode(bytes) == .success(polygon.polygon!))
    #expect(StoredPolygon.decode(bytes.dropLast()) == .failure(.truncated))
    #expect(StoredPolygon.decode(bytes + Data([0])) == .failure(.trailingBytes))
    #expect(StoredPolygon.decode(Data(bytes.prefix(6))) == .failure(.truncated))
    var otherFormat = bytes
    otherFormat[otherFormat.startIndex] = 2
    #expect(StoredPolygon.decode(otherFormat) == .failure(.unknownFormat(2)))
    var open = bytes
    // The closing position's latitude changed: the ring is no longer closed.
    let latitude = withUnsafeBytes(of: (47.5).bitPattern.littleEndian) { Data($0) }
    open.replaceSubrange((open.count - 8)..<open.count, with: latitude)
    if case .failure(.invalid(.ringNotClosed(polygon: 0, ring: 0))) = StoredPolygon.decode(open) {
    } else {
      Issue.record("an open ring must be refused: \(StoredPolygon.decode(open))")
    }

    let store = try GeofenceStore.inMemory()
    _ = try store.applyChanges(version: "v1", etag: nil, upserted: [polygon], deleted: [], at: 0)
    try store.database.execute(
      "UPDATE geofence SET geometry = ? WHERE id = 'canton-24'", [.blob(bytes.dropLast(16))])
    #expect(throws: SQLiteError.self) { try store.geofences() }
  }
}

@Suite(
  "Polygons synced from the reference server", .waitsOnChildProcesses, .serialized,
  .enabled(if: ReferenceServer.isAvailable, "python3 with the server's packages is needed"))
struct PolygonReferenceServerSyncTests {
  static let key = "poly-key"
  /// Crosses itself at (5, 5): the server's structural checks pass it, GEOS does not.
  static var bowtie: [String: Any] {
    [
      "id": "bowtie", "name": "Bow",
      "geometry": [
        "type": "Polygon", "coordinates": [[[0, 0], [10, 10], [10, 0], [0, 10], [0, 0]]],
      ],
    ]
  }

  func client(_ server: ReferenceServer, store: GeofenceStore) -> GeofenceSyncClient {
    var configuration = SyncConfiguration(baseURL: server.baseURL, apiKey: Self.key)
    configuration.pageSize = 10
    configuration.requestTimeoutSeconds = 10
    return GeofenceSyncClient(
      configuration: configuration, store: store, transport: URLSessionTransport(),
      clock: ManualClock(now: syncTestStart), random: SeededGenerator(seed: 1))
  }

  @Test func circlesAndValidPolygonsAreAppliedAndTheInvalidOneIsHeldBackWithGEOSReason()
    async throws
  {
    let server = try await ReferenceServer.start(keys: [Self.key])
    defer { server.stop() }
    let circles = [
      ReferenceServer.geofence("circle-lausanne", latitude: 46.52, longitude: 6.63, radius: 1500),
      ReferenceServer.geofence("circle-yverdon", latitude: 46.78, longitude: 6.64, radius: 900),
    ]
    try await server.replaceGeofences(
      key: Self.key, circles + (try SwissPolygons.adminDefinitions()) + [Self.bowtie])
    let store = try GeofenceStore.inMemory()
    let sync = client(server, store: store)

    let report = try await sync.sync()
    #expect(report.kind == .full)
    #expect(report.pageCount == 5)  // 41 geofences, 10 a page
    // Exactly the bowtie is rejected, by GEOS, with the place of the fault.
    #expect(report.rejections.count == 1)
    let rejection = try #require(report.rejections.first)
    #expect(rejection.id == "bowtie")
    #expect(rejection.reason == .invalidPolygon(.geos("Self-intersection[5 5]")))
    // Ids are listed in UTF-8 order: "bowtie" comes before "canton-", "circle-", "commune-".
    #expect(rejection.location.file == "listing page 1")
    #expect(rejection.location.position == .index(0))
    // Everything else is stored, equal to what the file reader makes of the same features.
    let expected = byID(
      (try SwissPolygons.fromFile())
        + [
          try geofence("circle-lausanne", 46.52, 6.63, radius: 1500),
          try geofence("circle-yverdon", 46.78, 6.64, radius: 900),
        ])
    #expect(try store.geofences() == expected)
    #expect(report.diff.counts == .init(added: 40))
    #expect(try store.geofence(id: "bowtie") == nil)

    // Fixed on the server, and one polygon reshaped (a vertex added on an edge) and one
    // circle removed: an incremental answer carries them.
    var yverdon = try #require(
      try SwissPolygons.adminDefinitions().first {
        $0["id"] as? String == "commune-5938"
      })
    var geometry = try #require(yverdon["geometry"] as? [String: Any])
    var rings = try #require(geometry["coordinates"] as? [[[Double]]])
    let (a, b) = (rings[0][1], rings[0][2])
    rings[0].insert([(a[0] + b[0]) / 2, (a[1] + b[1]) / 2], at: 2)
    geometry["coordinates"] = rings
    yverdon["geometry"] = geometry
    var fixed = Self.bowtie
    fixed["geometry"] = [
      "type": "Polygon", "coordinates": [[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]]],
    ]
    try await server.patchGeofences(
      key: Self.key, upsert: [yverdon, fixed], delete: ["circle-yverdon"])
    let changes = try await sync.sync()
    #expect(changes.kind == .incremental)
    #expect(changes.rejections.isEmpty)
    #expect(changes.diff.counts == .init(added: 1, removed: 1, geometryChanged: 1))
    #expect(changes.diff.geometryChanged.map(\.id) == ["commune-5938"])
    #expect(try store.geofence(id: "commune-5938")?.polygon?.vertexCount == 49)
    let square = try #require(try store.geofence(id: "bowtie")?.polygon)
    #expect(
      square.polygons == [[[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]].map(SIMD2.init)]])
    #expect(try store.state().etag == "\"\(changes.version)\"")

    // Nothing changed since: a full listing (unconditional) changes nothing.
    let again = try await sync.sync(full: true)
    #expect(again.kind == .full)
    #expect(again.diff.isEmpty)
  }
}
