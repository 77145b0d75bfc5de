import RetryTiming

extension HTTPResponse {
  /// The answer's `Retry-After` as seconds to wait from `now` (RFC 9110 §10.2.3), read by
  /// ``RetryTiming/RetryPolicy/retryAfterSeconds(_:now:)``: delta-seconds, or an HTTP-date
  /// minus `now`; `nil` when the header is absent or unreadable. Never negative.
  /// - Parameter now: the current time, seconds since the Unix epoch (the clock's `now()`).
  public func retryAfterSeconds(now: Double) -> Double? {
    header("retry-after").flatMap { RetryPolicy.retryAfterSeconds($0, now: now) }
  }
}
