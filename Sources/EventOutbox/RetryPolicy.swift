/// When to retry a batch whose answer was lost or refused for a while.
///
/// Retried: timeouts, connection failures, `408`, `429`, every `5xx`, and `2xx` answers whose
/// body cannot be read. The wait before retry `k` (k = 1 after the first failure) is
///
///     wait = max(retryAfter, backoff),  backoff = uniform(0, min(maxDelay, baseDelay · 2^(k−1)))
///
/// ("full jitter", M. Brooker, *Exponential Backoff and Jitter*, AWS Architecture Blog, 2015),
/// where `retryAfter` is the answer's `Retry-After` in seconds (0 when absent). The random
/// number comes from the generator given to the uploader, so a seeded generator makes the
/// waits exact. A `Retry-After` above ``maxRetryAfterSeconds`` is not waited out: the call
/// stops with ``UploadStop/deferred(retryAfterSeconds:)`` and the events stay pending.
public struct RetryPolicy: Hashable, Sendable {
  /// The first backoff ceiling, seconds. Default 1; must be > 0.
  public var baseDelaySeconds: Double
  /// The largest backoff ceiling, seconds. Default 60; must be >= `baseDelaySeconds`.
  /// `Retry-After` may ask for longer and is honoured.
  public var maxDelaySeconds: Double
  /// Most sends of one batch within one ``OutboxUploader/flush()`` or
  /// ``OutboxUploader/sendDueBatches()`` call before the call gives up (the events stay
  /// pending). Default 8; must be >= 1.
  public var maxAttempts: Int
  /// The longest `Retry-After`, seconds, that one call waits out before sending again. A
  /// server asking for longer (a maintenance window, a quota reset) stops the call with
  /// ``UploadStop/deferred(retryAfterSeconds:)`` instead of blocking it for that long; the
  /// events stay pending for a later call. Default 300; must be >= 0.
  public var maxRetryAfterSeconds: Double

  public init(
    baseDelaySeconds: Double = 1, maxDelaySeconds: Double = 60, maxAttempts: Int = 8,
    maxRetryAfterSeconds: Double = 300
  ) {
    precondition(baseDelaySeconds > 0 && maxDelaySeconds >= baseDelaySeconds && maxAttempts >= 1)
    precondition(maxRetryAfterSeconds >= 0)
    self.baseDelaySeconds = baseDelaySeconds
    self.maxDelaySeconds = maxDelaySeconds
    self.maxAttempts = maxAttempts
    self.maxRetryAfterSeconds = maxRetryAfterSeconds
  }

  /// The backoff ceiling before retry `retry` (1-based): `min(maxDelay, baseDelay · 2^(retry−1))`.
  public func ceiling(retry: Int) -> Double {
    let exponent = Double(min(max(retry - 1, 0), 1_000))
    return min(maxDelaySeconds, baseDelaySeconds * Double.pow2(exponent))
  }

  /// The backoff before retry `retry` (1-based): uniform in `[0, ceiling(retry:))`, drawn
  /// with one `next()` of `random` (53 bits).
  public func backoff<R: RandomNumberGenerator>(retry: Int, using random: inout R) -> Double {
    let unit = Double(random.next() >> 11) * 0x1p-53
    return unit * ceiling(retry: retry)
  }

  /// The wait before retry `retry`: `max(retryAfterSeconds ?? 0, backoff)`.
  public func wait<R: RandomNumberGenerator>(
    retry: Int, retryAfterSeconds: Double?, using random: inout R
  ) -> Double {
    max(retryAfterSeconds ?? 0, backoff(retry: retry, using: &random))
  }
}

extension Double {
  fileprivate static func pow2(_ x: Double) -> Double {
    x >= 1024 ? .infinity : Double(sign: .plus, exponent: Int(x), significand: 1)
  }
}
