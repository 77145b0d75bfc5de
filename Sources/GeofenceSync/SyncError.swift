import Networking

/// Why a sync failed. After any of these the stored set is unchanged and marked stale with
/// ``description`` as the reason.
public enum SyncError: Error, Hashable, Sendable, CustomStringConvertible {
  /// No complete answer (after the retries of ``RetryPolicy``).
  case transport(TransportError)
  /// The key was refused (`401`); never retried.
  case unauthorized(message: String?)
  /// An HTTP status the client cannot use, or a retryable one after the last retry. `code` and
  /// `message` come from the error body when it has one.
  case httpStatus(Int, code: String?, message: String?)
  /// A body that is not what the protocol defines (after the retries): cut short, not JSON,
  /// missing fields, or a page of another version than the listing's first page.
  case invalidBody(String)
  /// The whole sync took longer than ``SyncConfiguration/deadlineSeconds`` (`seconds`): no
  /// request was started, or left running, past it. `lastFailure` is the failure being
  /// retried when it passed, if any.
  case deadlinePassed(seconds: Double, lastFailure: String?)
  /// The server broke the protocol in a way that would never end or would exhaust the
  /// client: a listing cursor seen before (a loop), more pages or geofences than
  /// ``SyncConfiguration/maximumPages`` / ``SyncConfiguration/maximumGeofences``, or a page
  /// holding more geofences than its `limit` asked for. Not retried.
  case protocolViolation(String)
  /// The local store could not be read or written.
  case store(String)
  /// The task was cancelled while waiting to retry.
  case cancelled
  /// The server's `Retry-After` asked for `seconds` (RFC 9110 §10.2.3), longer than the
  /// `maximum` a sync waits out (``RetryTiming/RetryPolicy/maximumRetryAfterSeconds``): the
  /// sync stops at once instead of holding its caller; `lastFailure` is the answer that
  /// carried it (for example `HTTP 429`). Worth trying again after that time.
  case retryAfterTooLong(seconds: Double, maximum: Double, lastFailure: String)

  public var description: String {
    switch self {
    case .transport(let e): return "network: \(e)"
    case .unauthorized(let m): return "unauthorized (401)" + (m.map { ": \($0)" } ?? "")
    case .httpStatus(let status, let code, let message):
      var text = "HTTP \(status)"
      if let code { text += " \(code)" }
      if let message { text += ": \(message)" }
      return text
    case .invalidBody(let why): return "invalid response body: \(why)"
    case .deadlinePassed(let seconds, let last):
      return "the sync did not finish within its deadline of \(Self.secondsText(seconds)) s"
        + (last.map { " (last failure: \($0))" } ?? "")
    case .protocolViolation(let why): return "protocol violation: \(why)"
    case .store(let why): return "local store: \(why)"
    case .cancelled: return "cancelled"
    case .retryAfterTooLong(let seconds, let maximum, let last):
      return "\(last); the server asks to retry after \(Self.secondsText(seconds)) s "
        + "(Retry-After), longer than the \(Self.secondsText(maximum)) s a sync waits"
    }
  }

  /// `seconds` as a message shows it: whole numbers without a fraction (`120`, not `120.0`).
  static func secondsText(_ seconds: Double) -> String {
    seconds == seconds.rounded() && seconds < 1e15 ? "\(Int(seconds))" : "\(seconds)"
  }
}

extension SyncError {
  /// The error with every text that came from the server, or may quote it (a message, a
  /// code, a `version` or `ETag` in a protocol complaint, the failure being retried), passed
  /// through ``Networking/ServerText/displayable(_:redacting:limit:)``: no control character,
  /// at most ``Networking/ServerText/defaultLimit`` characters each, and `secrets` (the API
  /// key) redacted. What the client prints and stores as the stale reason.
  public func displayable(redacting secrets: [String]) -> SyncError {
    func shown(_ text: String) -> String { ServerText.displayable(text, redacting: secrets) }
    switch self {
    case .transport(.connectionFailed(let why)): return .transport(.connectionFailed(shown(why)))
    case .transport: return self
    case .unauthorized(let message): return .unauthorized(message: message.map(shown))
    case .httpStatus(let status, let code, let message):
      return .httpStatus(status, code: code.map(shown), message: message.map(shown))
    case .invalidBody(let why): return .invalidBody(shown(why))
    case .deadlinePassed(let seconds, let last):
      return .deadlinePassed(seconds: seconds, lastFailure: last.map(shown))
    case .protocolViolation(let why): return .protocolViolation(shown(why))
    case .store(let why): return .store(shown(why))
    case .cancelled: return self
    case .retryAfterTooLong(let seconds, let maximum, let last):
      return .retryAfterTooLong(seconds: seconds, maximum: maximum, lastFailure: shown(last))
    }
  }
}
