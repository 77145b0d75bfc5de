import Foundation
import GeofenceDefinitions
import GeofenceGeometry
import Networking
import RetryTiming
import SQLiteStore

/// Settings of a ``GeofenceSyncClient``.
public struct SyncConfiguration: Sendable {
  /// The server's base URL, e.g. `http://127.0.0.1:8765`; paths `/v1/...` are appended.
  public var baseURL: URL
  /// The API key, sent as `Authorization: Bearer <key>`. It selects the account.
  public var apiKey: String
  /// Page size asked for (`limit`), in [1, 10 000]. Default 1000.
  public var pageSize: Int = 1000
  /// Only geofences near this area (`near`, `radius_m`); `nil` (default) for all.
  public var area: SyncArea? = nil
  /// Seconds per request before it counts as a transport failure. Default 30.
  public var requestTimeoutSeconds: Double = 30
  /// Sends of one request and the waits between them: default 4 sends, backoff 0.5 s
  /// doubling to 30 s, `Retry-After` waited out up to 120 s (a sync runs while someone
  /// waits for it; the outbox's background uploads use ``RetryPolicy/init(maximumAttempts:baseDelaySeconds:maximumDelaySeconds:maximumRetryAfterSeconds:)``'s longer defaults).
  public var retry = RetryPolicy(
    maximumAttempts: 4, baseDelaySeconds: 0.5, maximumDelaySeconds: 30,
    maximumRetryAfterSeconds: 120)
  /// Listings restarted after `410 cursor_expired` before giving up. Default 2.
  public var maximumListingRestarts: Int = 2
  /// The bound on one whole ``GeofenceSyncClient/sync(full:)``, seconds (> 0): every page,
  /// retry and wait included. No request starts, and none is left running, past it (a request
  /// gets at most the time left as its own deadline); the sync then fails with
  /// ``SyncError/deadlinePassed(seconds:lastFailure:)``. Default 300: a full listing of
  /// 1,000,000 geofences is 1,000 pages of 1000, well under it on a working link.
  public var deadlineSeconds: Double = 300
  /// Most pages one listing may take (>= 1), restarts included; one more fails the sync with
  /// ``SyncError/protocolViolation(_:)``. Default 10,000 (10,000,000 geofences at the default
  /// page size): a server whose cursor never ends is stopped there, if the deadline has not
  /// stopped it first.
  public var maximumPages: Int = 10_000
  /// Most geofences one sync may receive (>= 1): the sum over a listing's pages, or one changes
  /// answer's `upserted` and `deleted`. More fails the sync with
  /// ``SyncError/protocolViolation(_:)``. Default 2,000,000, twice the largest set the engine
  /// is benchmarked with.
  public var maximumGeofences: Int = 2_000_000
  /// Whether the ``SyncReport/diff`` lists the changed geofences (needed to apply them to a
  /// live set, as the engine's sync does). Default true; false keeps memory bounded by one
  /// page however many geofences change.
  public var reportsChangedGeofences: Bool = true

  public init(baseURL: URL, apiKey: String) {
    self.baseURL = baseURL
    self.apiKey = apiKey
  }
}

/// What a successful sync did.
public struct SyncReport: Sendable {
  /// How the set was brought up to date.
  public enum Kind: String, Hashable, Sendable {
    /// A full listing replaced the set.
    case full
    /// Changes since the stored version were applied.
    case incremental
    /// The server confirmed the stored version (`304`).
    case notModified
  }

  public var kind: Kind
  /// The stored version before the sync (`nil` for none).
  public var previousVersion: String?
  /// The version stored now.
  public var version: String
  /// Why a full listing was made instead of asking for changes (e.g. `no stored version`,
  /// `410 history_pruned`); `nil` otherwise.
  public var fullListingReason: String?
  /// What changed in the stored set.
  public var diff: GeofenceDiff
  /// Definitions not taken, with where they were (`listing page N[index]` or
  /// `changes[index]`) and why. A rejected definition whose id is readable keeps the stored
  /// geofence of that id, if any.
  public var rejections: [GeofenceRejection]
  /// Ids listed more than once with different content. Each keeps the stored geofence (none
  /// when the id is new).
  public var conflictingIDs: [String]
  /// Geofences stored now.
  public var geofenceCount: Int
  /// Requests sent, including retries.
  public var requestCount: Int
  /// Pages of listing received (0 for changes or 304).
  public var pageCount: Int
  /// The waits before each retry, in seconds, in order.
  public var retryWaits: [Double]
}

/// Brings a ``GeofenceStore`` up to date with a sync server (`docs/sync-protocol.md`).
///
/// One ``sync(full:)`` call:
/// 1. With a stored version that is readable (``GeofenceStore/isSetReadable()``) and listed
///    for the same key and area, asks `GET /v1/geofences/changes?since=VERSION`; a `410`
///    (any code) falls back to a full listing.
/// 2. Otherwise, or when `full` is set, lists `GET /v1/geofences` page by page. The first page
///    carries `If-None-Match` with the stored version when the stored set is readable and was
///    listed for the same key and area, unless `full` is set; a `304` only freshens the sync
///    time. Pages are
///    staged in the store; the set is replaced at the last page, in one transaction.
/// 3. Every definition is validated with ``GeofenceDefinitions/GeofenceValidator`` (the rules of
///    the file readers). Rejected ones are reported with a reason; copies of one id that
///    differ are reported as conflicts. Either way the id keeps its stored geofence, if any.
///
/// **A failed sync never changes the stored set.** Transport failures, `5xx`, `429`, `401`,
/// bodies that are cut short or invalid, and a listing that fails at any page leave the set,
/// its version and ETag as they were, and record the reason (``StoredSyncState/staleReason``).
/// A successful answer with an empty list is an empty set.
///
/// Each request goes through one ``Networking/RetryingSender``: it is sent up to
/// ``SyncConfiguration/retry``'s `maximumAttempts` times, waiting its full-jitter backoff (or a
/// longer `Retry-After`, as delta-seconds or an HTTP-date read against the injected clock)
/// with the injected clock and random source. Retried: transport failures (timeouts, broken
/// connections, short bodies; not an answer over the transport's size cap), bodies that cannot
/// be parsed, `429` and every `5xx`; a `Retry-After` beyond the policy's
/// `maximumRetryAfterSeconds` fails the request at once.
///
/// **Bounds.** A whole sync ends within ``SyncConfiguration/deadlineSeconds``. A listing takes
/// at most ``SyncConfiguration/maximumPages`` pages and ``SyncConfiguration/maximumGeofences``
/// geofences, each page at most the `limit` it asked for, and a `next_cursor` seen earlier in
/// the listing is a loop: each fails the sync with ``SyncError/protocolViolation(_:)``, the
/// stored set unchanged. The transport caps each answer's bytes.
///
/// **Protocol checks** (`docs/sync-protocol.md`; a failure is ``SyncError/invalidBody(_:)``;
/// a body that breaks them is retried like any unusable body, a header is not): an `ETag` must
/// be the answer's `version` in double quotes,
/// and a `304`'s the version asked about; a body may not repeat a key within one object;
/// `version` and `next_cursor` are strings of at most ``SyncWire/maximumVersionLength`` and
/// ``SyncWire/maximumCursorLength`` characters. A definition whose `id` is not a string of 1 to
/// 256 characters is rejected on its own, like any invalid definition.
///
/// Not `Sendable`: use from one task at a time, like its store.
public final class GeofenceSyncClient {
  public let configuration: SyncConfiguration
  public let store: GeofenceStore
  private let clock: any EngineClock
  private var sender: RetryingSender

  /// - Parameters:
  ///   - configuration: server, key and options.
  ///   - store: the persisted set.
  ///   - transport: the HTTP seam (``URLSessionTransport`` for real use).
  ///   - clock: time and waits (``SystemClock`` for real use).
  ///   - random: jitter source (`SystemRandomNumberGenerator` for real use; a seeded one in
  ///     tests).
  public init(
    configuration: SyncConfiguration, store: GeofenceStore, transport: any HTTPTransport,
    clock: any EngineClock = SystemClock(),
    random: any RandomNumberGenerator = SystemRandomNumberGenerator()
  ) {
    self.configuration = configuration
    self.store = store
    self.clock = clock
    sender = RetryingSender(
      transport: transport, policy: configuration.retry, clock: clock, random: random)
  }

  /// The fingerprint of an API key as stored (``Networking/KeyFingerprint/of(_:)``:
  /// `pbkdf2-sha256:` and 32 hex digits).
  public static func fingerprint(ofKey key: String) -> String { KeyFingerprint.of(key) }

  private var requestCount = 0
  private var retryWaits: [Double] = []

  /// Brings the store up to date (see the type's discussion).
  /// - Parameter full: list everything instead of asking for changes (the listing is still
  ///   conditional, so an unchanged set costs one `304`).
  /// - Returns: what changed.
  /// - Throws: ``SyncError``, after marking the stored set stale with the reason. Its texts
  ///   are safe to print (``SyncError/displayable(redacting:)``, the API key redacted), and so
  ///   is the stale reason stored.
  public func sync(full: Bool = false) async throws(SyncError) -> SyncReport {
    requestCount = 0
    retryWaits = []
    sender.deadline = clock.now() + configuration.deadlineSeconds
    do {
      return try await runSync(full: full)
    } catch {
      let shown = error.displayable(redacting: [configuration.apiKey])
      try? store.markStale(reason: shown.description, at: clock.now())
      throw shown
    }
  }

  private func runSync(full: Bool) async throws(SyncError) -> SyncReport {
    var state: StoredSyncState
    do { state = try store.state() } catch { throw .store(error.description) }
    let account = Self.fingerprint(ofKey: configuration.apiKey)
    // An earlier version's fingerprint of this key is the same account: replaced, once.
    if let stored = state.accountFingerprint, stored != account,
      stored == KeyFingerprint.legacy(configuration.apiKey)
    {
      do { try store.replaceAccount(stored, with: account) } catch {
        throw .store(error.description)
      }
      state.accountFingerprint = account
    }
    let readable = store.isSetReadable()
    var reason: String?
    if full {
      reason = "full sync requested"
    } else if state.version == nil {
      reason = "no stored version"
    } else if !readable {
      reason = "stored set unreadable"
    } else if state.accountFingerprint != account {
      reason = "key changed"
    } else if state.area != configuration.area {
      reason = "area changed"
    }
    if reason == nil, let since = state.version {
      switch try await changes(since: since, state: state) {
      case .done(let report): return report
      // The code is the server's text, and the reason is printed: made safe first.
      case .gone(let code): reason = "410 " + ServerText.displayable(code ?? "gone", limit: 80)
      }
    }
    // A requested full sync asks unconditionally: it is how a store whose set has drifted
    // from the server's under the same version (a server reset that reuses version names)
    // is put right, and a 304 would keep the drift.
    let conditional =
      !full && readable && state.accountFingerprint == account
        && state.area == configuration.area
      ? state.version : nil
    return try await listing(
      state: state, account: account, conditionalVersion: conditional,
      reason: reason ?? "full listing")
  }

  // MARK: Changes

  private enum ChangesOutcome {
    case done(SyncReport)
    case gone(String?)
  }

  private func changes(since: String, state: StoredSyncState) async throws(SyncError)
    -> ChangesOutcome
  {
    var items = [URLQueryItem(name: "since", value: since)]
    items += areaItems()
    let request = makeRequest(path: "/v1/geofences/changes", query: items, ifNoneMatch: nil)
    let answer = try await perform(request) { data in SyncWire.changes(data) }
    switch answer {
    case .gone(let code): return .gone(code)
    case .notModified:
      throw .invalidBody("304 to a changes request")
    case .ok(let changes, let response):
      let received = changes.upserted.count + changes.deleted.count
      guard received <= configuration.maximumGeofences else {
        throw .protocolViolation(
          "the changes answer lists \(received) geofences, more than the "
            + "\(configuration.maximumGeofences) one sync takes")
      }
      try SyncWire.checkETag(response, version: changes.version, what: "changes answer")
      // `since` equal to the current version gives two empty lists (docs/sync-protocol.md):
      // changes under an unchanged version would leave two different sets of one name.
      if changes.version == since && received > 0 {
        throw .protocolViolation(
          "the changes answer lists \(received) changes but keeps version \(since)")
      }
      var validated = SyncWire.validate(changes.upserted, source: "changes")
      let upsertedIDs = Set(validated.geofences.map(\.id))
      for id in changes.deleted where upsertedIDs.contains(id) || validated.heldBack.contains(id) {
        validated.heldBack.insert(id)
        if !validated.conflicts.contains(id) { validated.conflicts.append(id) }
      }
      let diff: GeofenceDiff
      do {
        diff = try store.applyChanges(
          version: changes.version, etag: response.header("etag") ?? "\"\(changes.version)\"",
          upserted: validated.geofences, deleted: changes.deleted, heldBack: validated.heldBack,
          at: clock.now(), details: configuration.reportsChangedGeofences)
      } catch { throw .store("\(error)") }
      return .done(
        SyncReport(
          kind: .incremental, previousVersion: since, version: changes.version,
          fullListingReason: nil, diff: diff, rejections: validated.rejections,
          conflictingIDs: validated.conflicts.sorted(), geofenceCount: storedCount(),
          requestCount: requestCount, pageCount: 0, retryWaits: retryWaits))
    }
  }

  // MARK: Listing

  private func listing(
    state: StoredSyncState, account: String, conditionalVersion: String?, reason: String
  ) async throws(SyncError) -> SyncReport {
    var restarts = 0
    var totalPages = 0
    while true {
      do {
        try store.beginListing()
      } catch { throw .store(error.description) }
      var cursor: String?
      var listingVersion: String?
      var etag: String?
      var pages = 0
      var rejections: [GeofenceRejection] = []
      var conflicts: [String] = []
      var expired = false
      var cursorsSeen: [String: Int] = [:]
      var received = 0
      repeat {
        guard totalPages < configuration.maximumPages else {
          throw .protocolViolation(
            "the listing did not end within \(configuration.maximumPages) pages")
        }
        totalPages += 1
        var items: [URLQueryItem] = [
          URLQueryItem(name: "limit", value: "\(configuration.pageSize)")
        ]
        if let cursor { items.append(URLQueryItem(name: "cursor", value: cursor)) }
        items += areaItems()
        let request = makeRequest(
          path: "/v1/geofences", query: items,
          ifNoneMatch: (pages == 0 ? conditionalVersion : nil).map { "\"\($0)\"" })
        let answer = try await perform(request) { data in SyncWire.page(data) }
        switch answer {
        case .notModified(let response):
          guard pages == 0, let version = conditionalVersion else {
            throw .invalidBody("unexpected 304 on listing page \(pages + 1)")
          }
          if let etag = response.header("etag"), etag != "\"\(version)\"" {
            throw .invalidBody(
              "304 carries ETag \(ServerText.displayable(etag, limit: 60)), not the "
                + "\"\(version)\" it was asked about")
          }
          do { try store.markCurrent(at: clock.now()) } catch { throw .store(error.description) }
          return SyncReport(
            kind: .notModified, previousVersion: version, version: version,
            fullListingReason: reason, diff: GeofenceDiff(), rejections: [], conflictingIDs: [],
            geofenceCount: state.geofenceCount, requestCount: requestCount, pageCount: 0,
            retryWaits: retryWaits)
        case .gone(let code):
          guard restarts < configuration.maximumListingRestarts else {
            throw .httpStatus(410, code: code, message: "listing restarted \(restarts) times")
          }
          restarts += 1
          expired = true
        case .ok(let page, let response):
          if let listingVersion, page.version != listingVersion {
            throw .invalidBody(
              "listing page \(pages + 1) has version \(page.version), first page \(listingVersion)")
          }
          try SyncWire.checkETag(response, version: page.version, what: "listing page \(pages + 1)")
          if pages == 0 {
            listingVersion = page.version
            etag = response.header("etag") ?? "\"\(page.version)\""
          }
          pages += 1
          guard page.definitions.count <= configuration.pageSize else {
            throw .protocolViolation(
              "listing page \(pages) holds \(page.definitions.count) geofences; "
                + "\(configuration.pageSize) were asked for")
          }
          received += page.definitions.count
          guard received <= configuration.maximumGeofences else {
            throw .protocolViolation(
              "the listing passed \(configuration.maximumGeofences) geofences at page \(pages)")
          }
          if let next = page.nextCursor {
            if let earlier = cursorsSeen[next] {
              throw .protocolViolation(
                "listing page \(pages) gives the cursor page \(earlier) gave: the listing loops")
            }
            cursorsSeen[next] = pages
          }
          let validated = SyncWire.validate(page.definitions, source: "listing page \(pages)")
          rejections += validated.rejections
          do {
            let crossPage = try store.stage(
              validated.geofences, heldBack: validated.heldBack.sorted())
            conflicts += validated.conflicts
            conflicts += crossPage
          } catch { throw .store("\(error)") }
          cursor = page.nextCursor
        }
      } while cursor != nil && !expired
      if expired { continue }
      guard let version = listingVersion else { throw .invalidBody("listing without a page") }
      let diff: GeofenceDiff
      do {
        diff = try store.commitListing(
          version: version, etag: etag, account: account, area: configuration.area,
          at: clock.now(), details: configuration.reportsChangedGeofences)
      } catch { throw .store("\(error)") }
      return SyncReport(
        kind: .full, previousVersion: state.version, version: version,
        fullListingReason: reason, diff: diff, rejections: rejections,
        conflictingIDs: Array(Set(conflicts)).sorted(), geofenceCount: storedCount(),
        requestCount: requestCount, pageCount: pages, retryWaits: retryWaits)
    }
  }

  // MARK: Requests

  private enum Answer<T> {
    case ok(T, HTTPResponse)
    case notModified(HTTPResponse)
    case gone(code: String?)
  }

  private func storedCount() -> Int { (try? store.state().geofenceCount) ?? 0 }

  private func areaItems() -> [URLQueryItem] {
    guard let area = configuration.area else { return [] }
    return [
      URLQueryItem(name: "near", value: area.nearParameter),
      URLQueryItem(name: "radius_m", value: area.radiusParameter),
    ]
  }

  private func makeRequest(path: String, query: [URLQueryItem], ifNoneMatch: String?)
    -> HTTPRequest
  {
    var url = configuration.baseURL
    url.appendPathComponent(path)
    if var components = URLComponents(url: url, resolvingAgainstBaseURL: false) {
      components.queryItems = query
      // '+' is a space in a query string; encode it so opaque cursors pass verbatim.
      components.percentEncodedQuery = components.percentEncodedQuery?
        .replacingOccurrences(of: "+", with: "%2B")
      url = components.url ?? url
    }
    var headers = [
      "Authorization": "Bearer \(configuration.apiKey)", "Accept": "application/json",
    ]
    if let ifNoneMatch { headers["If-None-Match"] = ifNoneMatch }
    return HTTPRequest(
      url: url, method: "GET", headers: headers,
      timeoutSeconds: configuration.requestTimeoutSeconds)
  }

  /// Whether an answer with this status is worth sending again: `429` and every `5xx`.
  /// Other statuses (`400`, `401`, `404`, `410`, ...) are answers, handled by the caller.
  /// Whether a `Content-Type` value names JSON: `application/json` or a `+json` suffix
  /// (RFC 6839), parameters such as `charset` ignored, case-insensitively.
  static func isJSONMediaType(_ value: String) -> Bool {
    let media =
      value.split(separator: ";", maxSplits: 1).first.map {
        $0.trimmingCharacters(in: .whitespaces).lowercased()
      } ?? ""
    return media == "application/json" || media.hasSuffix("+json")
  }

  static func isRetryable(status: Int) -> Bool {
    status == 429 || (500...599).contains(status)
  }

  /// Sends `request` through the ``Networking/RetryingSender`` and parses a `200` body with
  /// `parse`. Retried: transport failures other than ``Networking/TransportError/responseTooLarge(limit:)``
  /// (which another send would meet again), unparsable `200` bodies, `429` and `5xx`.
  private func perform<T>(
    _ request: HTTPRequest, parse: (Data) -> Result<T, SyncError>
  ) async throws(SyncError) -> Answer<T> {
    let outcome = await sender.send(request: { _ in request }) {
      (result) -> RetryVerdict<Answer<T>, SyncError> in
      let response: HTTPResponse
      switch result {
      case .failure(.responseTooLarge(let limit)):
        return .fail(.transport(.responseTooLarge(limit: limit)))
      case .failure(let error): return .retry(.transport(error))
      case .success(let answer): response = answer
      }
      switch response.statusCode {
      case 200:
        // A page that says it is not JSON (an HTML error page of a proxy or captive portal)
        // is named as such, not by where the JSON parser first stumbled. No Content-Type, or
        // any JSON media type (`application/json`, `…+json`), goes to the parser.
        if let type = response.header("content-type"), !Self.isJSONMediaType(type) {
          return .retry(
            .invalidBody("the answer is \(ServerText.displayable(type)), not application/json"))
        }
        switch parse(response.body) {
        case .success(let value): return .success(.ok(value, response))
        case .failure(let error): return .retry(error)
        }
      case 304:
        return .success(.notModified(response))
      case 410:
        return .success(.gone(code: SyncWire.errorBody(response.body).code))
      case 401:
        return .fail(.unauthorized(message: SyncWire.errorBody(response.body).message))
      default:
        let body = SyncWire.errorBody(response.body)
        let error = SyncError.httpStatus(
          response.statusCode, code: body.code, message: body.message)
        return Self.isRetryable(status: response.statusCode) ? .retry(error) : .fail(error)
      }
    }
    requestCount += outcome.attempts
    retryWaits += outcome.waits
    switch outcome.ending {
    case .succeeded(let answer): return answer
    case .failed(let error), .attemptsExhausted(let error): throw error
    case .retryAfterTooLong(let seconds, let error):
      throw .retryAfterTooLong(
        seconds: seconds, maximum: configuration.retry.maximumRetryAfterSeconds,
        lastFailure: error.description)
    case .cancelled: throw .cancelled
    case .deadlinePassed(let last):
      // A Retry-After that reached past the deadline is why the sync stopped waiting: say so.
      let asked = outcome.lastRetryAfterSeconds.map {
        "; its Retry-After asked for \(SyncError.secondsText($0)) s"
      }
      throw .deadlinePassed(
        seconds: configuration.deadlineSeconds,
        lastFailure: last.map { $0.description + (asked ?? "") })
    }
  }
}
