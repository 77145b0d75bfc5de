import Foundation
import GeofenceSync
import GeofenceTestSupport
import Networking
import Testing

/// Passes requests to a real transport and runs a hook before each one (to arm a server fault
/// between two pages of one listing).
final class HookedTransport: HTTPTransport, @unchecked Sendable {
  let base = URLSessionTransport()
  let hook: @Sendable (Int, HTTPRequest) async -> Void
  private let lock = NSLock()
  private var count = 0

  init(hook: @escaping @Sendable (Int, HTTPRequest) async -> Void = { _, _ in }) {
    self.hook = hook
  }

  func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
    let n = lock.withLock { () -> Int in
      count += 1
      return count
    }
    await hook(n, request)
    return try await base.send(request)
  }
}

@Suite(
  "Sync against the reference server", .waitsOnChildProcesses, .serialized,
  .enabled(if: ReferenceServer.isAvailable, "python3 with the server's packages is needed"))
struct ReferenceServerSyncTests {
  static let key = "it-key"

  static func places(_ n: Int) -> [[String: Any]] {
    (0..<n).map { i in
      ReferenceServer.geofence(
        String(format: "p%04d", i), latitude: 19 + Double(i) * 0.01, longitude: -155.5,
        radius: 500, name: "place \(i)")
    }
  }

  func client(
    _ server: ReferenceServer, store: GeofenceStore,
    clock: ManualClock = ManualClock(now: syncTestStart),
    transport: any HTTPTransport = URLSessionTransport(), pageSize: Int = 100
  ) -> GeofenceSyncClient {
    var configuration = SyncConfiguration(baseURL: server.baseURL, apiKey: Self.key)
    configuration.pageSize = pageSize
    configuration.requestTimeoutSeconds = 10
    return GeofenceSyncClient(
      configuration: configuration, store: store, transport: transport, clock: clock,
      random: SeededGenerator(seed: 1))
  }

  @Test func fullSyncNotModifiedAndIncrementalAfterAnAdminPatch() async throws {
    let server = try await ReferenceServer.start(keys: [Self.key])
    defer { server.stop() }
    try await server.replaceGeofences(key: Self.key, Self.places(250))
    let store = try GeofenceStore.inMemory()
    let sync = client(server, store: store)

    let full = try await sync.sync()
    #expect(full.kind == .full)
    #expect(full.pageCount == 3)
    #expect(full.geofenceCount == 250)
    #expect(full.diff.counts == .init(added: 250))
    let version = full.version
    #expect(try store.state().etag == "\"\(version)\"")
    #expect(try store.geofence(id: "p0007")?.name == "place 7")

    // A requested full sync lists unconditionally: the same set again, nothing changed.
    let unchanged = try await sync.sync(full: true)
    #expect(unchanged.kind == .full)
    #expect(unchanged.requestCount == 3)
    #expect(unchanged.diff.isEmpty)
    #expect(unchanged.version == version)

    try await server.patchGeofences(
      key: Self.key,
      upsert: [
        ReferenceServer.geofence(
          "p0001", latitude: 19.01, longitude: -155.5, radius: 500, name: "renamed"),
        ReferenceServer.geofence(
          "p0002", latitude: 20.5, longitude: -155.5, radius: 500, name: "place 2"),
        ReferenceServer.geofence("zz", latitude: 21, longitude: -157, radius: 100),
      ], delete: ["p0003"])
    let changes = try await sync.sync()
    #expect(changes.kind == .incremental)
    #expect(changes.previousVersion == version)
    #expect(changes.version != version)
    #expect(
      changes.diff.counts == .init(added: 1, removed: 1, geometryChanged: 1, metadataChanged: 1))
    #expect(try store.geofences().count == 250)
    #expect(try store.geofence(id: "p0001")?.name == "renamed")
    #expect(try store.geofence(id: "p0003") == nil)
  }

  @Test func faultsLeaveTheStoreIntact() async throws {
    let server = try await ReferenceServer.start(keys: [Self.key])
    defer { server.stop() }
    try await server.replaceGeofences(key: Self.key, Self.places(250))
    let store = try GeofenceStore.inMemory()
    let clock = ManualClock(now: syncTestStart)
    _ = try await client(server, store: store, clock: clock).sync()
    let before = try store.geofences()
    let version = try store.state().version
    try await server.replaceGeofences(key: Self.key, Self.places(120))

    // 500 on every request after the first page of the listing.
    let armAfterFirstPage = HookedTransport { n, _ in
      if n == 2 {
        try? await server.armFault(["path": "/v1/geofences", "kind": "500", "count": 10])
      }
    }
    await #expect(throws: SyncError.self) {
      try await client(server, store: store, clock: clock, transport: armAfterFirstPage).sync(
        full: true)
    }
    #expect(try store.geofences() == before)
    #expect(try store.state().version == version)
    #expect(try store.state().staleReason?.hasPrefix("HTTP 500 internal_error") == true)
    try await server.clearFaults()

    // A body cut short (declared length, half sent), on every attempt.
    try await server.armFault([
      "path": "/v1/geofences", "kind": "truncate", "mode": "content_length", "count": 10,
    ])
    await #expect(throws: SyncError.self) {
      try await client(server, store: store, clock: clock).sync(full: true)
    }
    #expect(try store.geofences() == before)
    #expect(try store.state().staleReason?.hasPrefix("network:") == true)
    try await server.clearFaults()

    // Well-framed JSON cut in half, on every attempt.
    try await server.armFault([
      "path": "/v1/geofences", "kind": "truncate", "mode": "cut_json", "count": 10,
    ])
    await #expect(throws: SyncError.self) {
      try await client(server, store: store, clock: clock).sync(full: true)
    }
    #expect(try store.geofences() == before)
    #expect(try store.state().staleReason?.hasPrefix("invalid response body") == true)
    try await server.clearFaults()

    // Recovery: the next sync replaces the set and clears the stale mark.
    let report = try await client(server, store: store, clock: clock).sync(full: true)
    #expect(report.geofenceCount == 120)
    #expect(try store.state().staleReason == nil)
  }

  @Test func rateLimitIsRetriedAfterRetryAfter() async throws {
    let server = try await ReferenceServer.start(keys: [Self.key])
    defer { server.stop() }
    try await server.replaceGeofences(key: Self.key, Self.places(30))
    try await server.armFault([
      "path": "/v1/geofences", "kind": "429", "retry_after": 2, "count": 1,
    ])
    let clock = ManualClock(now: syncTestStart)
    let store = try GeofenceStore.inMemory()
    let report = try await client(server, store: store, clock: clock).sync()
    #expect(report.geofenceCount == 30)
    #expect(report.requestCount == 2)
    #expect(clock.sleeps == [2])

    // One cut body is retried and the sync succeeds.
    try await server.replaceGeofences(key: Self.key, Self.places(31))
    try await server.armFault([
      "path": "/v1/geofences", "kind": "truncate", "mode": "cut_json", "count": 1,
    ])
    let again = try await client(server, store: store, clock: clock).sync(full: true)
    #expect(again.geofenceCount == 31)
    #expect(again.retryWaits.count == 1)

    // An answer slower than the request timeout is a transport failure, and is retried.
    try await server.replaceGeofences(key: Self.key, Self.places(32))
    try await server.armFault(["path": "/v1/geofences", "kind": "slow", "delay_s": 3, "count": 1])
    var configuration = SyncConfiguration(baseURL: server.baseURL, apiKey: Self.key)
    configuration.requestTimeoutSeconds = 1.5
    // The reference server answers one request at a time: let it finish the slow one before
    // the retry goes out.
    let patientRetry = HookedTransport { n, _ in
      if n == 2 { try? await Task.sleep(nanoseconds: 2_000_000_000) }
    }
    let impatient = GeofenceSyncClient(
      configuration: configuration, store: store, transport: patientRetry, clock: clock,
      random: SeededGenerator(seed: 1))
    let slow = try await impatient.sync(full: true)
    #expect(slow.geofenceCount == 32)
    #expect(slow.requestCount == 2)
  }
}
