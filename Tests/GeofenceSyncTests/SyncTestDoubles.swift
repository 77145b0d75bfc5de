import Foundation
import GeofenceGeometry
import GeofenceSync
import GeofenceTestSupport
import Networking

/// The sync tests' start time: 2025-11-30T05:00:00Z.
let syncTestStart: Double = 1_764_478_800

/// An in-memory sync server implementing `docs/sync-protocol.md` for one key: versioned
/// snapshots, paging with cursors that pin a version, `If-None-Match`, `changes?since=`, and
/// `410` past the history depth. Scripted answers (faults) take precedence.
final class FakeSyncServer: HTTPTransport, @unchecked Sendable {
  /// A scripted answer for the next request that `matches`.
  struct Script {
    var matches: @Sendable (HTTPRequest) -> Bool
    var result: Result<HTTPResponse, TransportError>
    var remaining: Int
  }

  private let lock = NSRecursiveLock()
  let key: String
  /// Snapshot per version number: id → geofence JSON text.
  private var snapshots: [[String: String]] = [[:]]
  var historyDepth = 100
  private var scripts: [Script] = []
  private(set) var requests: [HTTPRequest] = []

  init(key: String = "k1") { self.key = key }

  var versionNumber: Int { lock.withLock { snapshots.count - 1 } }
  var versionString: String { "v\(versionNumber)" }

  /// Publishes a new version with exactly `geofences` (id → JSON text).
  func publish(_ geofences: [String: String]) {
    lock.withLock { snapshots.append(geofences) }
  }

  /// Publishes a new version derived from the current one.
  func update(upsert: [String: String] = [:], delete: [String] = []) {
    lock.withLock {
      var next = snapshots[snapshots.count - 1]
      for (id, json) in upsert { next[id] = json }
      for id in delete { next[id] = nil }
      snapshots.append(next)
    }
  }

  /// Answers the next `count` requests matching `matches` with `result`.
  func script(
    count: Int = 1, result: Result<HTTPResponse, TransportError>,
    matching matches: @escaping @Sendable (HTTPRequest) -> Bool
  ) {
    lock.withLock { scripts.append(Script(matches: matches, result: result, remaining: count)) }
  }

  /// Disarms every scripted answer.
  func clearScripts() { lock.withLock { scripts.removeAll() } }

  var requestCount: Int { lock.withLock { requests.count } }

  func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
    try respond(request)
  }

  private func respond(_ request: HTTPRequest) throws(TransportError) -> HTTPResponse {
    lock.lock()
    defer { lock.unlock() }
    requests.append(request)
    if let i = scripts.firstIndex(where: { $0.remaining > 0 && $0.matches(request) }) {
      scripts[i].remaining -= 1
      return try scripts[i].result.get()
    }
    return answer(request)
  }

  // MARK: Protocol

  static func json(
    _ id: String, _ latitude: Double, _ longitude: Double, radius: Double = 100,
    name: String? = nil, metadata: String? = nil
  ) -> String {
    var text =
      "{\"id\":\"\(id)\",\"latitude\":\(latitude),\"longitude\":\(longitude),\"radius\":\(radius)"
    if let name { text += ",\"name\":\"\(name)\"" }
    if let metadata { text += ",\"metadata\":\(metadata)" }
    return text + ",\"updated_at\":\"2026-11-30T05:00:00.000Z\"}"
  }

  static func error(_ status: Int, _ code: String, retryAfter: Int? = nil) -> HTTPResponse {
    error(status, code, retryAfterText: retryAfter.map { "\($0)" })
  }

  /// An error answer whose `Retry-After` header is `retryAfterText` verbatim.
  static func error(_ status: Int, _ code: String, retryAfterText: String?) -> HTTPResponse {
    var headers = ["Content-Type": "application/json"]
    if let retryAfterText { headers["Retry-After"] = retryAfterText }
    return HTTPResponse(
      statusCode: status, headers: headers,
      body: Data("{\"error\":{\"code\":\"\(code)\",\"message\":\"\(code) (fake)\"}}".utf8))
  }

  private func answer(_ request: HTTPRequest) -> HTTPResponse {
    guard request.headers["Authorization"] == "Bearer \(key)" else {
      return Self.error(401, "unauthorized")
    }
    let components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)
    var query: [String: String] = [:]
    for item in components?.queryItems ?? [] { query[item.name] = item.value ?? "" }
    let current = snapshots.count - 1
    switch request.url.path {
    case "/v1/geofences":
      var version = current
      var offset = 0
      if let cursor = query["cursor"] {
        let parts = cursor.split(separator: ":")
        guard parts.count == 2, let v = Int(parts[0]), let o = Int(parts[1]) else {
          return Self.error(400, "invalid_cursor")
        }
        guard v >= current - historyDepth else { return Self.error(410, "cursor_expired") }
        version = v
        offset = o
      } else if request.headers["If-None-Match"] == "\"v\(current)\"" {
        return HTTPResponse(statusCode: 304, headers: ["ETag": "\"v\(current)\""])
      }
      let limit = Int(query["limit"] ?? "1000") ?? 1000
      let ids = snapshots[version].keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
      let end = min(ids.count, offset + limit)
      let items = ids[offset..<end].compactMap { snapshots[version][$0] }
      let next = end < ids.count ? "\"\(version):\(end)\"" : "null"
      let body =
        "{\"version\":\"v\(version)\",\"geofences\":[\(items.joined(separator: ","))],"
        + "\"next_cursor\":\(next)}"
      return HTTPResponse(
        statusCode: 200, headers: ["ETag": "\"v\(version)\""], body: Data(body.utf8))
    case "/v1/geofences/changes":
      guard let since = query["since"], since.hasPrefix("v"), let s = Int(since.dropFirst()) else {
        return Self.error(400, "invalid_parameter")
      }
      if s > current { return Self.error(410, "unknown_version") }
      if s < current - historyDepth { return Self.error(410, "history_pruned") }
      let old = snapshots[s]
      let new = snapshots[current]
      let upserted = new.keys.filter { old[$0] != new[$0] }
        .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.compactMap { new[$0] }
      let deleted = old.keys.filter { new[$0] == nil }.sorted {
        $0.utf8.lexicographicallyPrecedes($1.utf8)
      }.map { "\"\($0)\"" }
      let body =
        "{\"version\":\"v\(current)\",\"upserted\":[\(upserted.joined(separator: ","))],"
        + "\"deleted\":[\(deleted.joined(separator: ","))]}"
      return HTTPResponse(
        statusCode: 200, headers: ["ETag": "\"v\(current)\""], body: Data(body.utf8))
    default:
      return Self.error(404, "not_found")
    }
  }
}

extension HTTPRequest {
  /// The value of query parameter `name`, if present.
  func query(_ name: String) -> String? {
    URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?
      .first { $0.name == name }?.value
  }
}

/// Builds a client over `server` with a fresh in-memory store (or `store`), a manual clock and
/// a seeded jitter source.
func makeClient(
  _ server: FakeSyncServer, store: GeofenceStore? = nil,
  clock: ManualClock = ManualClock(now: syncTestStart),
  key: String = "k1", pageSize: Int = 1000, seed: UInt64 = 42,
  configure: (inout SyncConfiguration) -> Void = { _ in }
) throws -> GeofenceSyncClient {
  var configuration = SyncConfiguration(
    baseURL: URL(string: "http://sync.test")!, apiKey: key)
  configuration.pageSize = pageSize
  configure(&configuration)
  return GeofenceSyncClient(
    configuration: configuration, store: try store ?? GeofenceStore.inMemory(), transport: server,
    clock: clock, random: SeededGenerator(seed: seed))
}
