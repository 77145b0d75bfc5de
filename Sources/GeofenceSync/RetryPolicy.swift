/// When and how long to wait before retrying a request.
///
/// Retried: transport failures (timeouts, broken connections, short bodies), bodies that cannot
/// be parsed, `429` and every `5xx`. Never retried: other statuses (`400`, `401`, `404`, `410`,
/// ...), which the caller handles. `Retry-After` is read as a number of seconds (the protocol's
/// form); any other form is ignored and the backoff alone applies.
///
/// The wait before retry `n` (1-based) is the exponential backoff
/// `b(n) = min(maximumDelaySeconds, baseDelaySeconds · 2^(n-1))` with "equal jitter":
/// `b(n) / 2 + u · b(n) / 2` for `u` uniform in [0, 1) from the injected generator. When the
/// answer carries `Retry-After: S` (seconds), the wait is `max(S, jittered backoff)`, so it is
/// never shorter than the server asked; a `Retry-After` above ``maximumRetryAfterSeconds``
/// ends the retries at once (the server is not expected back soon).
public struct RetryPolicy: Hashable, Sendable {
  /// Requests per operation including the first. Default 4; must be >= 1.
  public var maximumAttempts: Int = 4
  /// Backoff before the first retry, before jitter, in seconds. Default 0.5.
  public var baseDelaySeconds: Double = 0.5
  /// Largest backoff before jitter, in seconds. Default 30.
  public var maximumDelaySeconds: Double = 30
  /// Largest `Retry-After` the client waits for, in seconds. Default 120.
  public var maximumRetryAfterSeconds: Double = 120

  public init() {}

  public init(
    maximumAttempts: Int, baseDelaySeconds: Double = 0.5, maximumDelaySeconds: Double = 30,
    maximumRetryAfterSeconds: Double = 120
  ) {
    precondition(maximumAttempts >= 1, "at least one attempt")
    self.maximumAttempts = maximumAttempts
    self.baseDelaySeconds = baseDelaySeconds
    self.maximumDelaySeconds = maximumDelaySeconds
    self.maximumRetryAfterSeconds = maximumRetryAfterSeconds
  }

  /// Never retries.
  public static let none = RetryPolicy(maximumAttempts: 1)

  /// Whether an answer with this status is worth retrying.
  public static func isRetryable(status: Int) -> Bool {
    status == 429 || (500...599).contains(status)
  }

  /// The wait in seconds before retry `retry` (1 for the first retry).
  /// - Parameters:
  ///   - retry: 1-based retry number.
  ///   - retryAfterSeconds: the answer's `Retry-After`, if any.
  ///   - jitter: a uniform draw `u` in [0, 1) (the client draws `Double.random(in: 0..<1,
  ///     using:)` from its injected generator, once per retry).
  public func delaySeconds(
    beforeRetry retry: Int, retryAfterSeconds: Double?, jitter u: Double
  ) -> Double {
    let exponent = Double(max(0, retry - 1))
    let backoff = min(maximumDelaySeconds, baseDelaySeconds * pow2(exponent))
    let jittered = backoff / 2 + u * backoff / 2
    if let retryAfterSeconds { return max(retryAfterSeconds, jittered) }
    return jittered
  }

  private func pow2(_ x: Double) -> Double {
    var result = 1.0
    var n = Int(x)
    while n > 0 && result < 1e12 {
      result *= 2
      n -= 1
    }
    return result
  }
}
