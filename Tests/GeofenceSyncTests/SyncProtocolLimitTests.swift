import Foundation
import GeofenceGeometry
import GeofenceSync
import GeofenceTestSupport
import Networking
import Testing

/// A hostile or broken server, with the fake transport: every listing ends, within its limits
/// and deadline, and a failed sync leaves the stored set as it was.
@Suite("Sync limits and protocol checks")
struct SyncProtocolLimitTests {
  /// A client that has stored the 25 geofences of v1, then faces v2 (so that a listing is not
  /// answered `304`).
  func storedClient(
    pageSize: Int = 10, configure: (inout SyncConfiguration) -> Void = { _ in }
  ) async throws -> (FakeSyncServer, GeofenceSyncClient, [Geofence]) {
    let server = FakeSyncServer()
    server.publish(sampleSet(25))
    let client = try makeClient(server, pageSize: pageSize, configure: configure)
    _ = try await client.sync()
    server.publish(sampleSet(30))
    return (server, client, try client.store.geofences())
  }

  static func page(_ version: String, _ items: [String], next: String?, etag: String? = nil)
    -> HTTPResponse
  {
    let cursor = next.map { "\"\($0)\"" } ?? "null"
    let body =
      "{\"version\":\"\(version)\",\"geofences\":[\(items.joined(separator: ","))],"
      + "\"next_cursor\":\(cursor)}"
    return HTTPResponse(
      statusCode: 200, headers: ["ETag": etag ?? "\"\(version)\""], body: Data(body.utf8))
  }

  static let listing: @Sendable (HTTPRequest) -> Bool = { $0.url.path == "/v1/geofences" }

  func expectUnchanged(_ client: GeofenceSyncClient, _ before: [Geofence]) throws {
    #expect(try client.store.geofences() == before)
    let state = try client.store.state()
    #expect(state.version == "v1")
    #expect(state.staleReason != nil)
  }

  @Test func aCursorThatPointsBackIsALoop() async throws {
    let (server, client, before) = try await storedClient()
    let items = Array(sampleSet(3).values)
    server.script(
      count: 1, result: .success(Self.page("v2", items, next: "A")), matching: Self.listing)
    server.script(
      count: 100, result: .success(Self.page("v2", items, next: "B")), matching: Self.listing)
    await #expect(
      throws: SyncError.protocolViolation(
        "listing page 3 gives the cursor page 2 gave: the listing loops")
    ) { try await client.sync(full: true) }
    #expect(server.requestCount == 3 + 3)
    try expectUnchanged(client, before)
  }

  @Test func aCursorThatNeverEndsStopsAtThePageLimit() async throws {
    let (server, client, before) = try await storedClient { $0.maximumPages = 7 }
    let items = Array(sampleSet(2).values)
    for i in 0..<50 {
      server.script(
        count: 1, result: .success(Self.page("v2", items, next: "c\(i)")), matching: Self.listing)
    }
    await #expect(
      throws: SyncError.protocolViolation("the listing did not end within 7 pages")
    ) { try await client.sync(full: true) }
    #expect(server.requestCount == 3 + 7)
    try expectUnchanged(client, before)
  }

  @Test func aPageOverItsLimitIsRefused() async throws {
    let (server, client, before) = try await storedClient()
    server.script(
      result: .success(Self.page("v2", Array(sampleSet(11).values), next: nil)),
      matching: Self.listing)
    await #expect(
      throws: SyncError.protocolViolation("listing page 1 holds 11 geofences; 10 were asked for")
    ) { try await client.sync(full: true) }
    try expectUnchanged(client, before)
  }

  @Test func aListingOverTheGeofenceLimitIsRefused() async throws {
    let (_, client, before) = try await storedClient { $0.maximumGeofences = 25 }
    await #expect(
      throws: SyncError.protocolViolation("the listing passed 25 geofences at page 3")
    ) { try await client.sync(full: true) }
    try expectUnchanged(client, before)
  }

  /// The deadline bounds retries: a `Retry-After` of 20 s does not fit in a 10 s deadline, so
  /// the sync stops after one request instead of waiting. The request's own deadline was
  /// lowered to the 10 s left. The reason names the Retry-After that did not fit.
  @Test func theDeadlineStopsRetriesAndShortensRequests() async throws {
    let (server, client, before) = try await storedClient { $0.deadlineSeconds = 10 }
    server.script(
      count: 10, result: .success(FakeSyncServer.error(503, "unavailable", retryAfter: 20)),
      matching: Self.listing)
    let sent = server.requestCount
    await #expect(
      throws: SyncError.deadlinePassed(
        seconds: 10,
        lastFailure: "HTTP 503 unavailable: unavailable (fake); its Retry-After asked for 20 s")
    ) { try await client.sync(full: true) }
    #expect(server.requestCount == sent + 1)
    #expect(server.requests.last?.timeoutSeconds == 10)
    try expectUnchanged(client, before)
  }

  @Test func anETagThatIsNotTheVersionIsRefused() async throws {
    let (server, client, before) = try await storedClient { $0.retry.maximumAttempts = 1 }
    server.script(
      result: .success(Self.page("v9", [], next: nil, etag: "\"v2\"")), matching: Self.listing)
    await #expect(
      throws: SyncError.invalidBody(
        "listing page 1 has ETag \"v2\" but version \"v9\"; the ETag must be the version in "
          + "double quotes")
    ) { try await client.sync(full: true) }
    try expectUnchanged(client, before)
  }

  /// `{"version": "v2", ..., "version": "v9"}` would be read as v9; it is refused instead.
  @Test func aRepeatedKeyIsRefused() async throws {
    let (server, client, before) = try await storedClient { $0.retry.maximumAttempts = 1 }
    let body = #"{"version":"v2","geofences":[],"next_cursor":null,"vers\u0069on":"v9"}"#
    server.script(
      result: .success(
        HTTPResponse(statusCode: 200, headers: ["ETag": "\"v2\""], body: Data(body.utf8))),
      matching: Self.listing)
    await #expect(
      throws: SyncError.invalidBody("the body has the key \"version\" twice")
    ) { try await client.sync(full: true) }
    try expectUnchanged(client, before)
  }

  /// Keys repeated in different objects are not repeats. Keys equal under Unicode canonical
  /// equivalence ("e\u0301" and "é") are one key to the metadata's object, so that definition
  /// alone is rejected, with where.
  @Test func keysOfDifferentObjectsAreNotRepeats() async throws {
    let (server, client, _) = try await storedClient()
    let a = FakeSyncServer.json("a", 1, 2, metadata: #"{"id":1,"x":{"id":2}}"#)
    let b = FakeSyncServer.json("b", 1, 2)
    let c = FakeSyncServer.json("c", 1, 2, metadata: #"{"e\u0301":1,"é":2}"#)
    server.script(
      result: .success(Self.page("v2", [a, b, c], next: nil)), matching: Self.listing)
    let report = try await client.sync(full: true)
    #expect(report.geofenceCount == 2)
    #expect(report.rejections.map(\.id) == ["c"])
    #expect(report.rejections.first?.description.contains("appears twice") == true)
  }

  @Test func aNotModifiedWithAnotherETagIsRefused() async throws {
    let (server, client, before) = try await storedClient()
    server.script(
      result: .success(HTTPResponse(statusCode: 304, headers: ["ETag": "\"v7\""])),
      matching: Self.listing)
    // A changes request is answered with a listing's 304 here, so the listing is the
    // conditional one a sync asks after a 410.
    server.script(
      result: .success(HTTPResponse(statusCode: 410, body: Data(#"{"code":"gone"}"#.utf8))),
      matching: { $0.url.path == "/v1/geofences/changes" })
    await #expect(
      throws: SyncError.invalidBody("304 carries ETag \"v7\", not the \"v1\" it was asked about")
    ) { try await client.sync() }
    try expectUnchanged(client, before)
  }

  /// A requested full sync lists unconditionally (no `If-None-Match`) and replaces the set,
  /// so that a store whose set drifted from the server's under one version name (a server
  /// reset that reuses names) is put right; a 304 to it is a protocol break.
  @Test func aFullSyncAsksUnconditionally() async throws {
    let (server, client, _) = try await storedClient()
    let sent = server.requestCount
    _ = try await client.sync(full: true)
    let first = server.requests[sent]
    #expect(first.url.path == "/v1/geofences")
    #expect(first.headers["If-None-Match"] == nil)
    #expect(try client.store.geofences().count == 30)
    server.script(
      result: .success(HTTPResponse(statusCode: 304, headers: ["ETag": "\"v2\""])),
      matching: Self.listing)
    await #expect(throws: SyncError.invalidBody("unexpected 304 on listing page 1")) {
      try await client.sync(full: true)
    }
  }

  /// `since` equal to the current version gives two empty lists: changes under an unchanged
  /// version are a protocol break, and the stored set stays as it was.
  @Test func changesUnderTheSameVersionAreRefused() async throws {
    let (server, client, before) = try await storedClient { $0.retry.maximumAttempts = 1 }
    let body = #"{"version":"v1","upserted":[\#(FakeSyncServer.json("new", 1, 2))],"deleted":[]}"#
    server.script(
      result: .success(
        HTTPResponse(statusCode: 200, headers: ["ETag": "\"v1\""], body: Data(body.utf8))),
      matching: { $0.url.path == "/v1/geofences/changes" })
    await #expect(
      throws: SyncError.protocolViolation("the changes answer lists 1 changes but keeps version v1")
    ) { try await client.sync() }
    try expectUnchanged(client, before)
  }

  @Test func anOverlongVersionIsRefused() async throws {
    let (server, client, before) = try await storedClient { $0.retry.maximumAttempts = 1 }
    let version = String(repeating: "v", count: 257)
    server.script(result: .success(Self.page(version, [], next: nil)), matching: Self.listing)
    await #expect(
      throws: SyncError.invalidBody("\"version\" is 257 characters long; at most 256 are accepted")
    ) { try await client.sync(full: true) }
    try expectUnchanged(client, before)
  }

  /// The protocol's id is a string of 1 to 256 characters: a number (which a definition file
  /// may use) or a longer string costs only its own definition; the rest is applied.
  @Test func anIDThatBreaksTheProtocolCostsOnlyItself() async throws {
    let (server, client, _) = try await storedClient()
    let long = String(repeating: "x", count: 257)
    let items = [
      FakeSyncServer.json("ok", 1, 2), FakeSyncServer.json(long, 1, 2),
      #"{"id":7,"latitude":1,"longitude":2,"radius":100}"#,
      FakeSyncServer.json(String(repeating: "y", count: 256), 1, 2),
    ]
    server.script(result: .success(Self.page("v2", items, next: nil)), matching: Self.listing)
    let report = try await client.sync(full: true)
    #expect(try client.store.geofences().map(\.id) == ["ok", String(repeating: "y", count: 256)])
    #expect(
      report.rejections.map(\.description) == [
        "listing page 1[1]: id is 257 characters long; the protocol allows 256",
        "listing page 1[2] (id \"7\"): id must be a string (sync protocol), found number",
      ])
  }
}
