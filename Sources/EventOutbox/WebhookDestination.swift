import Foundation
import Networking
import RetryTiming

/// Settings of a ``WebhookDestination``.
public struct WebhookConfiguration: Hashable, Sendable {
  /// The receiver's URL (`http` or `https`); each event is a `POST` to it.
  public var url: URL
  /// The shared secret the signature is computed with (its UTF-8 bytes); must not be empty.
  public var secret: String
  /// The total deadline of one request, seconds (> 0). Default 10, as the uploader's.
  public var timeoutSeconds: Double
  /// Attempts and backoff, as the uploader retries. Default ``RetryTiming/RetryPolicy/init()``'s
  /// (8 sends, 1 s doubling to 60 s, `Retry-After` up to 300 s).
  public var retry: RetryPolicy
  /// The largest request body sent, bytes (>= 1). Default 65,536: an event over it is
  /// dead-lettered for the webhook without a request (a receiver such as Stripe's or
  /// GitHub's caps deliveries in the same range; GitHub's cap is 25 MB, ours is the size
  /// of one event with generous metadata).
  public var maximumBodyBytes: Int
  /// The cursor's name. Default `"webhook"`; give each of several webhooks its own.
  public var name: String

  public init(
    url: URL, secret: String, timeoutSeconds: Double = 10, retry: RetryPolicy = RetryPolicy(),
    maximumBodyBytes: Int = 65_536, name: String = "webhook"
  ) {
    precondition(!secret.isEmpty, "a webhook needs a secret")
    precondition(timeoutSeconds > 0 && maximumBodyBytes >= 1)
    self.url = url
    self.secret = secret
    self.timeoutSeconds = timeoutSeconds
    self.retry = retry
    self.maximumBodyBytes = maximumBodyBytes
    self.name = name
  }
}

extension WebhookConfiguration {
  /// `url` as it may be shown or stored: without the user and password of its userinfo
  /// (`http://user:PASSWORD@host/h` is `http://host/h`), and with each query value replaced
  /// by `~` and the first 12 hex digits of its HMAC-SHA256 under a fixed key
  /// (`?token=SECRET` is `?token=~5c0d…`): a token in the query is as secret as a password,
  /// and the request still sends both. Two URLs that differ in a query value keep different
  /// names. A URL without userinfo or query values comes back as its `absoluteString`.
  /// - Complexity: O(n) in the URL's length.
  public static func redacted(_ url: URL) -> String {
    redacted(url.absoluteString)
  }

  /// ``redacted(_:)-(URL)`` of a URL's text; text that is not such a URL comes back unchanged.
  public static func redacted(_ text: String) -> String {
    guard var components = URLComponents(string: text) else { return text }
    let items = components.percentEncodedQueryItems ?? []
    // A value already in its hashed form is kept, so that a stored name redacts to itself.
    func needsHash(_ value: String?) -> Bool {
      guard let value, !value.isEmpty else { return false }
      let hashed =
        value.utf8.count == 13 && value.hasPrefix("~")
        && value.utf8.dropFirst().allSatisfy {
          (0x30...0x39).contains($0) || (0x61...0x66).contains($0)
        }
      return !hashed
    }
    let hasValues = items.contains { needsHash($0.value) }
    guard
      components.percentEncodedUser != nil || components.percentEncodedPassword != nil
        || hasValues
    else { return text }
    components.percentEncodedUser = nil
    components.percentEncodedPassword = nil
    if hasValues {
      components.percentEncodedQueryItems = items.map { item in
        guard let value = item.value, needsHash(value) else { return item }
        let digest = MessageSignature.hmacSHA256Hex(
          key: Array("geofence webhook query value".utf8), message: Array(value.utf8))
        return URLQueryItem(name: item.name, value: "~" + digest.prefix(12))
      }
    }
    return components.string ?? text
  }

  /// The cursor name the command-line tool gives the webhook at `url`: `webhook:` and the
  /// URL without its userinfo and with its query values hashed (``redacted(_:)-(URL)``), so
  /// that no password or token is printed in a summary or stored in the outbox. Two webhooks
  /// whose URLs differ only in their userinfo have one name.
  public static func cursorName(for url: URL) -> String { "webhook:" + redacted(url) }

  /// Gives every cursor of `outbox` named `webhook:URL` with userinfo or query values in the URL
  /// (the name an earlier version gave a webhook) the name ``cursorName(for:)`` gives it now, keeping its
  /// place, marks, dead letters and counts (``Outbox/renameDestination(_:to:)``).
  /// - Returns: the renamed cursors, old name to new, sorted by old name.
  /// - Throws: ``SQLiteStore/SQLiteError``.
  @discardableResult
  public static func migrateCursorNames(in outbox: Outbox) throws -> [(from: String, to: String)] {
    var renamed: [(from: String, to: String)] = []
    for name in try outbox.destinations() where name.hasPrefix("webhook:") {
      let shown = displayName(name)
      guard shown != name else { continue }
      try outbox.renameDestination(name, to: shown)
      renamed.append((name, shown))
    }
    return renamed
  }

  /// A cursor's name as it may be shown: a `webhook:URL` name without the URL's userinfo and
  /// with its query values hashed; any other name unchanged.
  public static func displayName(_ name: String) -> String {
    guard name.hasPrefix("webhook:") else { return name }
    return "webhook:" + redacted(String(name.dropFirst("webhook:".count)))
  }
}

/// Delivers each event as its own signed JSON `POST` (an ``EventDestination``).
///
/// ## Request
/// `POST url` with the body ``OutboxEvent/jsonObject`` (`{"id":...,...}`, the members of
/// `docs/openapi.yaml` `Event`) and the headers
/// - `Content-Type: application/json`;
/// - `Idempotency-Key`: the event id (receivers deduplicate by it);
/// - `X-Attempt`: 1 for a first send, continued across restarts;
/// - `X-Geofence-Timestamp`: the send time, whole seconds since the Unix epoch on the clock;
/// - `X-Geofence-Signature`: `sha256=` and the lowercase hex HMAC-SHA256, under the secret, of
///   the timestamp, a `.`, and the body bytes (the scheme of Stripe's `Stripe-Signature`, so
///   a receiver can refuse an old request replayed: the reference server accepts 300 s of
///   skew). A receiver recomputes it and compares in constant time.
///
/// ## Answers
/// - `2xx`: delivered.
/// - Retried through the one `Networking.RetryingSender`, as the uploader retries: timeouts,
///   connection failures, `408`, `429`, `5xx` (backoff with full jitter, `Retry-After`
///   honoured up to ``RetryTiming/RetryPolicy/maximumRetryAfterSeconds``). When the retries
///   run out or the deadline passes, the call stops and the event stays pending, first in
///   line for the next call.
/// - `400`, `404`, `409`, `410`, `413`, `415`, `422`: the receiver refuses this event for
///   good: dead-lettered for the webhook with the status.
/// - `401`, `403` and any other status: the receiver refuses the sender (a wrong secret, a
///   wrong URL): the call stops, the event pending, nothing dead-lettered.
/// - A 307 or 308 within the URL's origin is followed, the post sent again whole; one to
///   another origin (scheme, host or port) is not (`HTTPRequest.followsCrossOriginRedirects`):
///   the signed body is for the configured receiver alone. Nor is a 301, 302 or 303, which
///   would turn the post into a `GET` without its body. Such a 3xx stops the call as a refusal
///   does.
///
/// Every request has a total deadline (``WebhookConfiguration/timeoutSeconds``, cut to the
/// time left before ``deadline``) and the transport's response size cap.
///
/// **Threads.** Not `Sendable`; one delivery call at a time.
public final class WebhookDestination: EventDestination {
  public let configuration: WebhookConfiguration
  public var name: String { configuration.name }
  /// One event per request.
  public let maxBatchEvents = 1
  private var sender: RetryingSender
  private let clock: any EngineClock
  private let secret: [UInt8]

  /// The time on the clock after which no request starts and no retry wait begins; `nil`
  /// for none (see `Networking.RetryingSender/deadline`).
  public var deadline: Double? {
    get { sender.deadline }
    set { sender.deadline = newValue }
  }

  /// Statuses that refuse one event for good (dead-lettered).
  static let eventRefusals: Set<Int> = [400, 404, 409, 410, 413, 415, 422]

  /// - Parameters:
  ///   - configuration: URL, secret, deadline, retries, size cap.
  ///   - transport: the one HTTP seam.
  ///   - clock: timestamps and waits. Default the wall clock.
  ///   - random: the jitter source. Default the system generator.
  public init(
    configuration: WebhookConfiguration, transport: any HTTPTransport,
    clock: any EngineClock = SystemClock(),
    random: any RandomNumberGenerator = SystemRandomNumberGenerator()
  ) {
    self.configuration = configuration
    self.clock = clock
    secret = Array(configuration.secret.utf8)
    sender = RetryingSender(
      transport: transport, policy: configuration.retry, clock: clock, random: random)
  }

  /// The signature header's value for `body` sent at `timestamp` (whole seconds).
  public static func signature(secret: String, timestamp: Int64, body: [UInt8]) -> String {
    "sha256="
      + MessageSignature.hmacSHA256Hex(
        key: Array(secret.utf8), message: Array("\(timestamp).".utf8) + body)
  }

  public func deliver(_ events: [OutboxEvent], attempt: Int) async -> DestinationAnswer {
    var answer = DestinationAnswer()
    for event in events {
      let body = Array(event.jsonObject.utf8)
      guard body.count <= configuration.maximumBodyBytes else {
        answer.rejected[event.id] =
          "event of \(body.count) bytes over the webhook's cap of "
          + "\(configuration.maximumBodyBytes)"
        continue
      }
      enum Verdict { case delivered, refusedEvent(Int), refusedSender(Int) }
      let outcome: RetryOutcome<Verdict, String> = await sender.send(
        request: { n in
          let now = Int64(self.clock.now().rounded(.down))
          let signature =
            "sha256="
            + MessageSignature.hmacSHA256Hex(
              key: self.secret, message: Array("\(now).".utf8) + body)
          return HTTPRequest(
            url: configuration.url, method: "POST",
            headers: [
              "Content-Type": "application/json", "Idempotency-Key": event.id,
              "X-Attempt": String(attempt + n - 1), "X-Geofence-Timestamp": String(now),
              "X-Geofence-Signature": signature,
            ], body: Data(body), timeoutSeconds: configuration.timeoutSeconds,
            // The signed body is for the configured origin alone.
            followsCrossOriginRedirects: false)
        },
        classify: { result in
          switch result {
          case .failure(.timedOut): return .retry("timeout")
          case .failure(let error): return .retry("network error: \(error)")
          case .success(let response):
            let status = response.statusCode
            if (200..<300).contains(status) { return .success(.delivered) }
            if status == 408 || status == 429 || (500..<600).contains(status) {
              return .retry("HTTP \(status)")
            }
            if Self.eventRefusals.contains(status) { return .success(.refusedEvent(status)) }
            return .success(.refusedSender(status))
          }
        })
      switch outcome.ending {
      case .succeeded(.delivered): answer.delivered.append(event.id)
      case .succeeded(.refusedEvent(let status)):
        answer.rejected[event.id] = "webhook answered HTTP \(status)"
      case .succeeded(.refusedSender(let status)):
        answer.failure =
          (300..<400).contains(status)
          ? "webhook redirected the post (HTTP \(status)) to another origin or as a GET "
            + "without its body, which a signed post does not follow: give the URL it should "
            + "go to"
          : "webhook refused the request: HTTP \(status)"
        return answer
      case .failed(let f), .attemptsExhausted(let f):
        answer.failure = "webhook: gave up after repeated failures (last: \(f))"
        return answer
      case .retryAfterTooLong(let seconds, _):
        answer.failure = "webhook asked to retry in \(seconds) s (Retry-After)"
        return answer
      case .cancelled:
        answer.failure = "cancelled"
        return answer
      case .deadlinePassed(let f):
        answer.failure = "the delivery deadline passed" + (f.map { " (last failure: \($0))" } ?? "")
        return answer
      }
    }
    return answer
  }
}
