import Foundation
import GeofenceDefinitions
import GeofenceGeometry
import GeofenceSync
import Testing

/// One bad value in a sync answer rejects that definition only; the rest is applied, and the
/// stored geofence of a rejected id stays as it was.
@Suite struct BadDefinitionSyncTests {
  static let deepMetadata =
    String(repeating: "{\"a\":", count: 600) + "1" + String(repeating: "}", count: 600)

  func field(_ problem: DefinitionProblem) -> DefinitionField? {
    if case .invalidJSON(let field, _) = problem { return field }
    return nil
  }

  @Test func listingRejectsTheBadDefinitionsAndAppliesTheRest() async throws {
    let server = FakeSyncServer()
    server.publish(sampleSet(5))
    let client = try makeClient(server, pageSize: 3)
    _ = try await client.sync()
    // v2: g001's radius is 1e400, g002's latitude NaN, g003 has moved, g005 is new.
    server.update(upsert: [
      "g001": #"{"id":"g001","latitude":21.01,"longitude":-157.8,"radius":1e400}"#,
      "g002": #"{"id":"g002","latitude":NaN,"longitude":-157.8,"radius":150}"#,
      "g003": FakeSyncServer.json("g003", 22.5, -157.8, radius: 300, name: "moved"),
      "g005": FakeSyncServer.json("g005", 23, -157.8, radius: 50),
    ])
    let report = try await client.sync(full: true)
    #expect(report.kind == .full)
    #expect(report.version == "v2")
    #expect(report.rejections.map(\.id) == ["g001", "g002"])
    #expect(
      report.rejections.map(\.description) == [
        "listing page 1[1] (id \"g001\"): radius: number 1e400 is out of range (beyond ±1.8e308)"
          + " (line 1, column 204)",
        "listing page 1[2] (id \"g002\"): latitude: NaN is not a JSON value (NaN, Infinity and"
          + " hex are not JSON) (line 1, column 235)",
      ])
    #expect(report.rejections.map { field($0.reason) } == [.radius, .latitude])
    let stored = try client.store.geofences()
    #expect(stored.map(\.id) == ["g000", "g001", "g002", "g003", "g004", "g005"])
    // The rejected ids keep their v1 geofences.
    #expect(stored[1].region.radiusMeters == 150)
    #expect(stored[2].region.center.latitude == 21.02)
    #expect(stored[3].region.center.latitude == 22.5)
    #expect(stored[3].name == "moved")
    #expect(stored[5].region.radiusMeters == 50)
  }

  @Test func changesRejectTheBadDefinitionAndApplyTheRest() async throws {
    let server = FakeSyncServer()
    server.publish(sampleSet(3))
    let client = try makeClient(server)
    _ = try await client.sync()
    server.update(
      upsert: [
        "g000": FakeSyncServer.json("g000", 21, -157.8, radius: 150, metadata: Self.deepMetadata),
        "g001": FakeSyncServer.json("g001", 21.5, -157.8, radius: 400),
      ], delete: ["g002"])
    let report = try await client.sync()
    #expect(report.kind == .incremental)
    #expect(report.rejections.map(\.id) == ["g000"])
    #expect(report.rejections.map { field($0.reason) } == [.metadata])
    #expect(report.rejections.first?.location.position == .index(0))
    let stored = try client.store.geofences()
    #expect(stored.map(\.id) == ["g000", "g001"])
    #expect(stored[0].metadataJSON == nil)
    #expect(stored[1].region.radiusMeters == 400)
  }

  @Test func aDefinitionWithoutReadableIDChangesNothing() async throws {
    let server = FakeSyncServer()
    server.publish(sampleSet(2))
    let client = try makeClient(server)
    _ = try await client.sync()
    server.update(upsert: ["g009": #"{"id":1e999,"latitude":1,"longitude":1,"radius":1}"#])
    let report = try await client.sync(full: true)
    #expect(report.rejections.count == 1)
    #expect(report.rejections.first?.id == nil)
    #expect(report.rejections.first.map { field($0.reason) } == .id)
    #expect(try client.store.geofences().map(\.id) == ["g000", "g001"])
  }

  @Test func duplicateTopLevelKeysFailTheAnswer() async throws {
    let server = FakeSyncServer()
    server.script(
      count: 10,
      result: .success(
        .init(
          statusCode: 200, headers: [:],
          body: Data(#"{"version":"v9","version":"v2","geofences":[],"next_cursor":null}"#.utf8)))
    ) { _ in true }
    let client = try makeClient(server)
    await #expect(throws: SyncError.self) { try await client.sync() }
    #expect(try client.store.state().version == nil)
  }
}
