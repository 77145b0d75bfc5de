import Foundation
import GeofenceDefinitions
import GeofenceGeometry
@testable import GeofenceSync
import GeofenceTestSupport
import Networking
import Testing

/// `n` geofences `g000`... on a line of latitude.
func sampleSet(_ n: Int, prefix: String = "g") -> [String: String] {
  var set: [String: String] = [:]
  for i in 0..<n {
    let id = prefix + String(format: "%03d", i)
    set[id] = FakeSyncServer.json(id, 21.0 + Double(i) * 0.01, -157.8, radius: 150, name: "n\(i)")
  }
  return set
}

@Suite("GeofenceSyncClient with a fake transport")
struct GeofenceSyncClientTests {
  @Test func fullSyncPagesThroughOneSnapshot() async throws {
    let server = FakeSyncServer()
    server.publish(sampleSet(25))
    let client = try makeClient(server, pageSize: 10)
    let report = try await client.sync()
    #expect(report.kind == .full)
    #expect(report.fullListingReason == "no stored version")
    #expect(report.pageCount == 3)
    #expect(report.version == "v1")
    #expect(report.diff.counts == GeofenceDiff.Counts(added: 25))
    #expect(report.geofenceCount == 25)
    let stored = try client.store.geofences()
    #expect(stored.map(\.id) == (0..<25).map { "g" + String(format: "%03d", $0) })
    #expect(stored[3].name == "n3")
    let state = try client.store.state()
    #expect(state.version == "v1")
    #expect(state.etag == "\"v1\"")
    #expect(state.staleReason == nil)
    // Pages: no cursor, then the cursors handed out; same limit; no If-None-Match.
    #expect(server.requests.map { $0.query("cursor") } == [nil, "1:10", "1:20"])
    #expect(server.requests.allSatisfy { $0.query("limit") == "10" })
    #expect(server.requests.allSatisfy { $0.headers["If-None-Match"] == nil })
  }

  @Test func pagesStayOnTheVersionOfTheFirstPage() async throws {
    let server = FakeSyncServer()
    server.publish(sampleSet(6))
    // When the second page is asked for, the set has changed on the server; the cursor pins v1.
    server.script(result: .failure(.timedOut)) { request in
      if request.query("cursor") == "1:3" && server.versionNumber == 1 {
        server.update(delete: ["g005"])
      }
      return false
    }
    let client = try makeClient(server, pageSize: 3)
    let report = try await client.sync()
    #expect(server.versionNumber == 2)
    #expect(report.version == "v1")
    #expect(report.geofenceCount == 6)
    let next = try await client.sync()
    #expect(next.kind == .incremental)
    #expect(next.diff.removed == ["g005"])
  }

  @Test func notModifiedKeepsTheSetAndFreshensTheSyncTime() async throws {
    let server = FakeSyncServer()
    server.publish(sampleSet(5))
    let clock = ManualClock(now: syncTestStart)
    let client = try makeClient(server, clock: clock)
    _ = try await client.sync()
    let before = try client.store.state()
    clock.advance(by: 600)
    // The conditional listing of a sync whose changes request the server can no longer
    // answer (410); a requested full sync asks unconditionally.
    server.script(
      result: .success(FakeSyncServer.error(410, "history_pruned")),
      matching: { $0.url.path == "/v1/geofences/changes" })
    let report = try await client.sync()
    #expect(report.kind == .notModified)
    #expect(report.diff.isEmpty)
    #expect(server.requests.last?.headers["If-None-Match"] == "\"v1\"")
    let after = try client.store.state()
    #expect(after.version == "v1")
    #expect(after.geofenceCount == 5)
    #expect(after.syncedAt == before.syncedAt.map { $0 + 600 })
  }

  @Test func incrementalSyncAppliesChangesAndReportsTheDiff() async throws {
    let server = FakeSyncServer()
    server.publish(sampleSet(5))
    let client = try makeClient(server)
    _ = try await client.sync()
    server.update(
      upsert: [
        "g000": FakeSyncServer.json("g000", 21.0, -157.8, radius: 150, name: "renamed"),
        "g002": FakeSyncServer.json("g002", 22.0, -157.8, radius: 150, name: "n2"),
        "new": FakeSyncServer.json("new", 20.0, -156.0, radius: 50),
      ], delete: ["g001", "never-had"])
    let report = try await client.sync()
    #expect(report.kind == .incremental)
    #expect(server.requests.last?.url.path == "/v1/geofences/changes")
    #expect(server.requests.last?.query("since") == "v1")
    #expect(report.version == "v2")
    #expect(
      report.diff.counts
        == GeofenceDiff.Counts(added: 1, removed: 1, geometryChanged: 1, metadataChanged: 1))
    #expect(report.diff.added.map(\.id) == ["new"])
    #expect(report.diff.removed == ["g001"])
    #expect(report.diff.geometryChanged.map(\.id) == ["g002"])
    #expect(report.diff.metadataChanged.map(\.name) == ["renamed"])
    #expect(try client.store.geofences().map(\.id) == ["g000", "g002", "g003", "g004", "new"])
    #expect(try client.store.state().version == "v2")
  }

  @Test(arguments: ["history_pruned", "unknown_version", "changes_too_large"])
  func goneFallsBackToAFullListing(code: String) async throws {
    let server = FakeSyncServer()
    server.publish(sampleSet(4))
    let client = try makeClient(server)
    _ = try await client.sync()
    server.update(delete: ["g000"])
    server.script(result: .success(FakeSyncServer.error(410, code))) {
      $0.url.path == "/v1/geofences/changes"
    }
    let report = try await client.sync()
    #expect(report.kind == .full)
    #expect(report.fullListingReason == "410 \(code)")
    #expect(report.diff.counts == GeofenceDiff.Counts(removed: 1))
    #expect(try client.store.state().version == "v2")
    // The listing after a 410 is still conditional: the stored set is readable.
    #expect(server.requests.last?.headers["If-None-Match"] == "\"v1\"")
  }

  @Test func expiredCursorRestartsTheListing() async throws {
    let server = FakeSyncServer()
    server.publish(sampleSet(6))
    server.script(result: .success(FakeSyncServer.error(410, "cursor_expired"))) {
      $0.query("cursor") == "1:3"
    }
    let client = try makeClient(server, pageSize: 3)
    let report = try await client.sync()
    #expect(report.geofenceCount == 6)
    #expect(server.requests.map { $0.query("cursor") } == [nil, "1:3", nil, "1:3"])
  }

  @Test func retriesWaitWithJitteredBackoffAndHonourRetryAfter() async throws {
    let server = FakeSyncServer()
    server.publish(sampleSet(3))
    let isListing: @Sendable (HTTPRequest) -> Bool = { $0.url.path == "/v1/geofences" }
    server.script(
      result: .success(FakeSyncServer.error(429, "rate_limited", retryAfter: 7)),
      matching: isListing)
    server.script(
      result: .success(FakeSyncServer.error(500, "internal_error")), matching: isListing)
    server.script(result: .failure(.timedOut), matching: isListing)
    let clock = ManualClock(now: syncTestStart)
    let client = try makeClient(server, clock: clock, seed: 7)
    let report = try await client.sync()
    #expect(report.geofenceCount == 3)
    #expect(report.requestCount == 4)
    // Expected waits: full jitter under 0.5 s · 2^(n-1) (one draw of the top 53 bits per
    // retry, Retry-After or not), Retry-After as a floor.
    var g = SeededGenerator(seed: 7)
    let u = (0..<3).map { _ in Double(g.next() >> 11) * 0x1p-53 }
    let expected = [max(7, u[0] * 0.5), u[1] * 1.0, u[2] * 2.0]
    #expect(clock.sleeps == expected)
    #expect(report.retryWaits == expected)
    #expect(clock.sleeps[0] == 7)
  }

  /// A `Retry-After` that is neither a finite number of seconds nor an HTTP date is ignored,
  /// and a negative one counts as 0: the backoff alone applies (`nan` used to fail the sync
  /// at once, as if it were beyond the limit). A date is read against the clock: the clock
  /// starts at Sun, 30 Nov 2025 05:00:00 GMT, so a date 2 s later is a 2 s wait.
  @Test(arguments: ["nan", "inf", "-5", "Sun, 30 Nov 2025 05:00:02 GMT", " 2 "])
  func retryAfterInOtherFormsIsIgnored(text: String) async throws {
    let server = FakeSyncServer()
    server.publish(sampleSet(3))
    server.script(
      result: .success(FakeSyncServer.error(503, "unavailable", retryAfterText: text))
    ) { $0.url.path == "/v1/geofences" }
    let clock = ManualClock(now: syncTestStart)
    let client = try makeClient(server, clock: clock, seed: 5)
    let report = try await client.sync()
    #expect(report.geofenceCount == 3 && report.requestCount == 2)
    var g = SeededGenerator(seed: 5)
    let backoff = Double(g.next() >> 11) * 0x1p-53 * 0.5
    let waitsTwo = ["Sun, 30 Nov 2025 05:00:02 GMT", " 2 "].contains(text)
    #expect(clock.sleeps == [waitsTwo ? 2 : backoff])
  }

  @Test func retryAfterBeyondTheLimitFailsAtOnce() async throws {
    let server = FakeSyncServer()
    server.publish(sampleSet(3))
    server.script(result: .success(FakeSyncServer.error(503, "unavailable", retryAfter: 3600))) {
      _ in true
    }
    let clock = ManualClock(now: syncTestStart)
    let client = try makeClient(server, clock: clock)
    let expected = SyncError.retryAfterTooLong(
      seconds: 3600, maximum: 120, lastFailure: "HTTP 503 unavailable: unavailable (fake)")
    await #expect(throws: expected) {
      try await client.sync()
    }
    #expect(clock.sleeps.isEmpty)
    // The stale reason says why the sync gave up at once, and when to come back.
    #expect(
      expected.description
        == "HTTP 503 unavailable: unavailable (fake); the server asks to retry after 3600 s "
        + "(Retry-After), longer than the 120 s a sync waits")
  }

  /// A 200 page that says it is HTML (a proxy's or captive portal's page) is named by its
  /// Content-Type, not by where the JSON parser stumbled; `+json` types and a missing
  /// Content-Type go to the parser.
  @Test func aPageThatIsNotJSONIsNamedByItsContentType() async throws {
    let server = FakeSyncServer()
    server.publish(sampleSet(3))
    let page = HTTPResponse(
      statusCode: 200, headers: ["Content-Type": "text/html; charset=utf-8"],
      body: Data("<html>log in</html>".utf8))
    server.script(count: 10, result: .success(page)) { _ in true }
    let client = try makeClient(server, clock: ManualClock(now: syncTestStart))
    await #expect(
      throws: SyncError.invalidBody("the answer is text/html; charset=utf-8, not application/json")
    ) {
      try await client.sync()
    }
    for (type, json) in [
      ("application/json", true), ("Application/JSON; charset=utf-8", true),
      ("application/problem+json", true), ("text/html", false), ("text/plain", false),
    ] {
      #expect(GeofenceSyncClient.isJSONMediaType(type) == json, "\(type)")
    }
  }

  /// A `Retry-After` date beyond the limit (an hour ahead of the clock) fails at once, as the
  /// same wait in seconds does.
  @Test func retryAfterDateBeyondTheLimitFailsAtOnce() async throws {
    let server = FakeSyncServer()
    server.publish(sampleSet(3))
    server.script(
      result: .success(
        FakeSyncServer.error(503, "unavailable", retryAfterText: "Sun, 30 Nov 2025 06:00:00 GMT"))
    ) { _ in true }
    let clock = ManualClock(now: syncTestStart)
    let client = try makeClient(server, clock: clock)
    await #expect(
      throws: SyncError.retryAfterTooLong(
        seconds: 3600, maximum: 120, lastFailure: "HTTP 503 unavailable: unavailable (fake)")
    ) {
      try await client.sync()
    }
    #expect(clock.sleeps.isEmpty && server.requestCount == 1)
  }

  /// A failure scenario: what to arm on the second sync, and what the stale reason must say.
  struct Failure: CustomTestStringConvertible, Sendable {
    var name: String
    var full: Bool
    var result: Result<HTTPResponse, TransportError>
    var count: Int
    var matches: @Sendable (HTTPRequest) -> Bool
    var reason: String
    var testDescription: String { name }
  }

  static let failures: [Failure] = [
    Failure(
      name: "network error", full: false, result: .failure(.connectionFailed("reset")), count: 99,
      matches: { _ in true }, reason: "network: connection failed: reset"),
    Failure(
      name: "500 on changes", full: false,
      result: .success(FakeSyncServer.error(500, "internal_error")),
      count: 99, matches: { _ in true }, reason: "HTTP 500 internal_error"),
    Failure(
      name: "401", full: false, result: .success(FakeSyncServer.error(401, "unauthorized")),
      count: 1, matches: { _ in true }, reason: "unauthorized (401)"),
    Failure(
      name: "truncated body", full: true,
      result: .success(
        HTTPResponse(statusCode: 200, body: Data("{\"version\":\"v2\",\"geofen".utf8))),
      count: 99, matches: { _ in true }, reason: "invalid response body: body is not valid JSON"),
    Failure(
      name: "body without version", full: true,
      result: .success(
        HTTPResponse(statusCode: 200, body: Data("{\"geofences\":[],\"next_cursor\":null}".utf8))),
      count: 99, matches: { _ in true }, reason: "invalid response body: listing has no \"version\""
    ),
    Failure(
      name: "500 mid-listing", full: true,
      result: .success(FakeSyncServer.error(500, "internal_error")),
      count: 99, matches: { $0.query("cursor") != nil }, reason: "HTTP 500 internal_error"),
    Failure(
      name: "timeout mid-listing", full: true, result: .failure(.timedOut),
      count: 99, matches: { $0.query("cursor") != nil }, reason: "network: request timed out"),
    Failure(
      name: "400", full: false, result: .success(FakeSyncServer.error(400, "invalid_parameter")),
      count: 1, matches: { _ in true }, reason: "HTTP 400 invalid_parameter"),
  ]

  @Test(arguments: failures)
  func aFailedSyncLeavesTheStoredSetAndMarksItStale(_ failure: Failure) async throws {
    let server = FakeSyncServer()
    server.publish(sampleSet(7))
    let clock = ManualClock(now: syncTestStart)
    let client = try makeClient(server, clock: clock, pageSize: 3)
    _ = try await client.sync()
    let before = try client.store.geofences()
    let stateBefore = try client.store.state()
    server.publish(sampleSet(9, prefix: "x"))
    server.script(count: failure.count, result: failure.result, matching: failure.matches)
    let requestsBefore = server.requestCount
    clock.advance(by: 60)
    await #expect(throws: SyncError.self) { try await client.sync(full: failure.full) }
    #expect(try client.store.geofences() == before)
    let state = try client.store.state()
    #expect(state.version == "v1")
    #expect(state.etag == stateBefore.etag)
    #expect(state.syncedAt == stateBefore.syncedAt)
    #expect(state.attemptedAt == clock.now())
    #expect(state.isStale)
    #expect(state.staleReason?.hasPrefix(failure.reason) == true, "\(state.staleReason ?? "nil")")
    #expect(client.store.isSetReadable())
    if failure.count == 1 { #expect(server.requestCount == requestsBefore + 1) }
    server.clearScripts()
    // The next good sync clears the stale mark.
    let report = try await client.sync()
    #expect(report.version == "v2")
    #expect(try client.store.state().staleReason == nil)
    #expect(try client.store.geofences().map(\.id).allSatisfy { $0.hasPrefix("x") })
  }

  @Test func aFailedFirstSyncLeavesAnEmptyStoreWithoutVersion() async throws {
    let server = FakeSyncServer()
    server.publish(sampleSet(3))
    server.script(count: 99, result: .failure(.connectionFailed("refused"))) { _ in true }
    let client = try makeClient(server)
    await #expect(throws: SyncError.transport(.connectionFailed("refused"))) {
      try await client.sync()
    }
    let state = try client.store.state()
    #expect(state.version == nil)
    #expect(state.staleReason == "network: connection failed: refused")
    #expect(client.configuration.retry.maximumAttempts == 4)  // the sync default
    #expect(server.requestCount == 4)
  }

  @Test func anEmptyListFromASuccessfulResponseIsAnEmptySet() async throws {
    let server = FakeSyncServer()
    server.publish(sampleSet(4))
    let client = try makeClient(server)
    _ = try await client.sync()
    server.publish([:])
    let report = try await client.sync(full: true)
    #expect(report.diff.counts == GeofenceDiff.Counts(removed: 4))
    #expect(try client.store.geofences().isEmpty)
    #expect(try client.store.state().version == "v2")
    #expect(try client.store.state().staleReason == nil)
  }

  @Test func unreadableStoreSendsNoValidatorAndListsEverything() async throws {
    let server = FakeSyncServer()
    server.publish(sampleSet(4))
    let client = try makeClient(server)
    _ = try await client.sync()
    try client.store.database.execute("DELETE FROM geofence WHERE id = 'g001'")
    #expect(!client.store.isSetReadable())
    let report = try await client.sync()
    #expect(report.kind == .full)
    #expect(report.fullListingReason == "stored set unreadable")
    #expect(server.requests.last?.headers["If-None-Match"] == nil)
    #expect(report.geofenceCount == 4)
    #expect(client.store.isSetReadable())
  }

  @Test func aNewKeyListsItsOwnSetWithoutValidator() async throws {
    let server = FakeSyncServer(key: "k1")
    server.publish(sampleSet(4))
    let store = try GeofenceStore.inMemory()
    _ = try await makeClient(server, store: store).sync()
    let other = FakeSyncServer(key: "k2")
    other.publish(sampleSet(2, prefix: "o"))
    let report = try await makeClient(other, store: store, key: "k2").sync()
    #expect(report.fullListingReason == "key changed")
    #expect(other.requests.map(\.url.path) == ["/v1/geofences"])
    #expect(other.requests[0].headers["If-None-Match"] == nil)
    #expect(try store.geofences().map(\.id) == ["o000", "o001"])
  }

  @Test func areaIsSentOnEveryPageAndAChangedAreaListsAgain() async throws {
    let server = FakeSyncServer()
    server.publish(sampleSet(5))
    let store = try GeofenceStore.inMemory()
    let area = SyncArea(
      center: try Coordinate(latitude: 21.3, longitude: -157.85), radiusMeters: 5000)
    _ = try await makeClient(server, store: store, pageSize: 2) { $0.area = area }.sync()
    #expect(
      server.requests.allSatisfy {
        $0.query("near") == "21.3,-157.85" && $0.query("radius_m") == "5000.0"
      })
    #expect(try store.state().area == area)
    let report = try await makeClient(server, store: store, pageSize: 2).sync()
    #expect(report.fullListingReason == "area changed")
    #expect(server.requests.last?.query("near") == nil)
  }
}

@Suite("A server's text in a failed sync")
struct SyncServerTextTests {
  /// A `401` whose message echoes the `Authorization` header, with terminal escapes and a
  /// newline that would forge a line of output.
  @Test func theErrorAndTheStaleReasonAreEscapedAndRedacted() async throws {
    let server = FakeSyncServer(key: "SECRETKEY123")
    let body = try JSONSerialization.data(
      withJSONObject: [
        "error": [
          "code": "unauthorized",
          "message": "key Bearer SECRETKEY123 is not valid\u{1B}[31m RED \u{1B}]0;pwned\u{07}"
            + "\nfake: line",
        ]
      ])
    server.script(count: 1, result: .success(HTTPResponse(statusCode: 401, body: body))) { _ in
      true
    }
    let client = try makeClient(server, key: "SECRETKEY123")
    let message =
      #"key Bearer [redacted] is not valid\u{1B}[31m RED \u{1B}]0;pwned\u{07}\nfake: line"#
    await #expect(throws: SyncError.unauthorized(message: message)) { try await client.sync() }
    #expect(try client.store.state().staleReason == "unauthorized (401): " + message)
  }

  @Test func anHTTPErrorsCodeAndMessageAreCutAndEscaped() async throws {
    let server = FakeSyncServer()
    let body = try JSONSerialization.data(
      withJSONObject: [
        "error": ["code": "bad\u{07}", "message": String(repeating: "x", count: 5_000)]
      ])
    server.script(count: 1, result: .success(HTTPResponse(statusCode: 400, body: body))) { _ in
      true
    }
    let client = try makeClient(server)
    let message = String(repeating: "x", count: 300) + "... (5000 characters)"
    await #expect(
      throws: SyncError.httpStatus(400, code: #"bad\u{07}"#, message: message)
    ) { try await client.sync() }
    #expect(try client.store.state().staleReason == #"HTTP 400 bad\u{07}: "# + message)
  }

  @Test func aGoneCodeInTheFullListingReasonIsEscaped() async throws {
    let server = FakeSyncServer()
    server.publish(sampleSet(2))
    let client = try makeClient(server)
    _ = try await client.sync()
    server.update(delete: ["g000"])
    let body = try JSONSerialization.data(
      withJSONObject: ["error": ["code": "pruned\u{1B}[2J\nforged", "message": "m"]])
    server.script(result: .success(HTTPResponse(statusCode: 410, body: body))) {
      $0.url.path == "/v1/geofences/changes"
    }
    let report = try await client.sync()
    #expect(report.fullListingReason == #"410 pruned\u{1B}[2J\nforged"#)
  }

  @Test func aVersionInAProtocolComplaintIsEscaped() async throws {
    let server = FakeSyncServer()
    let body = #"{"version":"v1\u001b[2J\nforged","geofences":[],"next_cursor":null}"#
    server.script(
      count: 99,
      result: .success(
        HTTPResponse(statusCode: 200, headers: ["ETag": "\"v0\""], body: Data(body.utf8)))
    ) { _ in true }
    let client = try makeClient(server)
    await #expect(throws: SyncError.self) { try await client.sync() }
    let reason = try #require(try client.store.state().staleReason)
    #expect(
      reason
        == #"invalid response body: listing page 1 has ETag "v0" but version "v1\u{1B}[2J\nforged"; "#
        + "the ETag must be the version in double quotes"
    )
  }
}

@Suite("The account fingerprint of a synced set")
struct SyncAccountFingerprintTests {
  /// A set listed by an earlier version, whose account is FNV-1a 64 of the key: the same key
  /// is the same account (changes, not a new listing), and the fingerprint is replaced.
  @Test func anEarlierVersionsFingerprintOfTheKeyIsTheSameAccount() async throws {
    let server = FakeSyncServer(key: "k1")
    server.publish(sampleSet(4))
    let store = try GeofenceStore.inMemory()
    _ = try await makeClient(server, store: store).sync()
    #expect(
      try store.state().accountFingerprint == "pbkdf2-sha256:311463e2be31fe355814d0c801012f62")
    try store.replaceAccount(KeyFingerprint.of("k1"), with: KeyFingerprint.legacy("k1"))
    #expect(try store.state().accountFingerprint == KeyFingerprint.legacy("k1"))
    server.update(upsert: sampleSet(1, prefix: "n"))
    let report = try await makeClient(server, store: store).sync()
    #expect(report.kind == .incremental)
    #expect(report.diff.counts.added == 1)
    #expect(try store.state().accountFingerprint == KeyFingerprint.of("k1"))
    // Another key's old fingerprint is another account.
    try store.replaceAccount(KeyFingerprint.of("k1"), with: KeyFingerprint.legacy("k0"))
    let other = try await makeClient(server, store: store).sync()
    #expect(other.fullListingReason == "key changed")
  }
}
