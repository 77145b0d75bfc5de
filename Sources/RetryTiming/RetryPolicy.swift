import Foundation

/// How many times to send one request, how long to wait between sends, and when a server's
/// `Retry-After` is too long to wait out. Shared by the sync client and the event uploader;
/// which answers are worth retrying is theirs to decide.
///
/// The wait before retry `k` (k = 1 after the first failure) is
///
///     wait = max(retryAfter, backoff),  backoff = u · min(maximumDelay, baseDelay · 2^(k−1))
///
/// with `u` uniform in [0, 1) ("full jitter", M. Brooker, *Exponential Backoff and Jitter*,
/// AWS Architecture Blog, 2015), where `retryAfter` is the answer's `Retry-After` in seconds
/// (0 when absent): a wait is never shorter than the server asked. `u` is drawn with one
/// `next()` of the generator the caller injects, so a seeded generator makes every wait
/// exact. A `Retry-After` above ``maximumRetryAfterSeconds`` is not waited out
/// (``waitsOut(retryAfterSeconds:)`` is false): the caller stops and reports it.
///
/// The defaults (8 sends, 1 s doubling to 60 s, `Retry-After` up to 300 s) suit background
/// work such as event upload; the sync client's configuration sets shorter ones.
public struct RetryPolicy: Hashable, Sendable {
  /// Sends of one request including the first, >= 1. Default 8.
  public var maximumAttempts: Int
  /// The first backoff ceiling, seconds, > 0. Default 1.
  public var baseDelaySeconds: Double
  /// The largest backoff ceiling, seconds, >= ``baseDelaySeconds``. Default 60. A
  /// `Retry-After` may ask for longer, up to ``maximumRetryAfterSeconds``, and is honoured.
  public var maximumDelaySeconds: Double
  /// The longest `Retry-After`, seconds, that is waited out before sending again, >= 0.
  /// Default 300. A server asking for longer (a maintenance window, a quota reset) is not
  /// expected back soon: the caller stops instead of blocking for that long.
  public var maximumRetryAfterSeconds: Double

  /// A policy; the ranges are those of the properties.
  /// - Precondition: `maximumAttempts >= 1`, `0 < baseDelaySeconds <= maximumDelaySeconds`,
  ///   `maximumRetryAfterSeconds >= 0`. A violation is a programming error and traps.
  public init(
    maximumAttempts: Int = 8, baseDelaySeconds: Double = 1, maximumDelaySeconds: Double = 60,
    maximumRetryAfterSeconds: Double = 300
  ) {
    precondition(maximumAttempts >= 1, "at least one attempt")
    precondition(baseDelaySeconds > 0 && maximumDelaySeconds >= baseDelaySeconds)
    precondition(maximumRetryAfterSeconds >= 0)
    self.maximumAttempts = maximumAttempts
    self.baseDelaySeconds = baseDelaySeconds
    self.maximumDelaySeconds = maximumDelaySeconds
    self.maximumRetryAfterSeconds = maximumRetryAfterSeconds
  }

  /// One send, never a retry.
  public static let none = RetryPolicy(maximumAttempts: 1)

  /// The backoff ceiling before retry `retry` (1-based; below 1 counts as 1), seconds:
  /// `min(maximumDelay, baseDelay · 2^(retry−1))`. Exact for any `retry` (no overflow).
  public func ceiling(retry: Int) -> Double {
    let exponent = min(max(retry - 1, 0), 1_023)
    return min(
      maximumDelaySeconds,
      baseDelaySeconds * Double(sign: .plus, exponent: exponent, significand: 1))
  }

  /// The backoff before retry `retry` (1-based), seconds: uniform in `[0, ceiling(retry:))`,
  /// from one `next()` of `random` (its top 53 bits).
  public func backoff<R: RandomNumberGenerator>(retry: Int, using random: inout R) -> Double {
    let unit = Double(random.next() >> 11) * 0x1p-53
    return unit * ceiling(retry: retry)
  }

  /// The wait before retry `retry`, seconds: `max(retryAfterSeconds ?? 0, backoff)`. Draws
  /// one number from `random` whether or not `Retry-After` wins, so the sequence of draws
  /// does not depend on the server's answers.
  public func wait<R: RandomNumberGenerator>(
    retry: Int, retryAfterSeconds: Double?, using random: inout R
  ) -> Double {
    max(retryAfterSeconds ?? 0, backoff(retry: retry, using: &random))
  }

  /// A `Retry-After` header value given in seconds: a finite number (surrounding spaces
  /// allowed), a negative one counting as 0; `nil` for any other form (`nan`, `inf`, text, an
  /// HTTP date, which ``retryAfterSeconds(_:now:)`` reads).
  public static func retryAfterSeconds(_ value: String) -> Double? {
    guard let seconds = Double(value.trimmingCharacters(in: .whitespaces)), seconds.isFinite
    else { return nil }
    return max(0, seconds)
  }

  /// A `Retry-After` header value (RFC 9110 §10.2.3) as seconds to wait from `now`: either
  /// form, delta-seconds (read by ``retryAfterSeconds(_:)``) or an HTTP-date (RFC 9110
  /// §5.6.7: the IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, and the obsolete RFC 850
  /// `Sunday, 06-Nov-94 08:49:37 GMT` and asctime `Sun Nov  6 08:49:37 1994` forms that a
  /// recipient must accept) minus `now`. A date in the past counts as 0.
  /// - Parameters:
  ///   - value: the header's value; surrounding spaces allowed.
  ///   - now: the current time on the caller's clock, seconds since the Unix epoch (UTC).
  /// - Returns: seconds >= 0, or `nil` for an unreadable value (the caller then waits its own
  ///   backoff).
  /// - Complexity: O(n) in the length of `value`.
  public static func retryAfterSeconds(_ value: String, now: Double) -> Double? {
    if let seconds = retryAfterSeconds(value) { return seconds }
    guard let date = httpDate(value.trimmingCharacters(in: .whitespaces)) else { return nil }
    return max(0, date - now)
  }

  /// An HTTP-date (any of the three forms of RFC 9110 §5.6.7) as seconds since the Unix
  /// epoch, or `nil`.
  static func httpDate(_ text: String) -> Double? {
    let formats = [
      "EEE, dd MMM yyyy HH:mm:ss 'GMT'",  // IMF-fixdate
      "EEEE, dd-MMM-yy HH:mm:ss 'GMT'",  // RFC 850 (obsolete)
      "EEE MMM d HH:mm:ss yyyy",  // asctime (obsolete); the day may be space-padded
    ]
    let collapsed = text.split(separator: " ", omittingEmptySubsequences: true).joined(
      separator: " ")
    for format in formats {
      let formatter = DateFormatter()
      formatter.locale = Locale(identifier: "en_US_POSIX")
      formatter.timeZone = TimeZone(identifier: "GMT")
      formatter.dateFormat = format
      formatter.isLenient = false
      if let date = formatter.date(from: collapsed) { return date.timeIntervalSince1970 }
    }
    return nil
  }

  /// Whether a `Retry-After` of `seconds` is waited out: `seconds <=`
  /// ``maximumRetryAfterSeconds``. An absent `Retry-After` (`nil`) always is.
  public func waitsOut(retryAfterSeconds seconds: Double?) -> Bool {
    guard let seconds else { return true }
    return seconds <= maximumRetryAfterSeconds
  }
}

/// A concrete generator over an existential one, so that a client holding `any
/// RandomNumberGenerator` (the injected jitter source) can pass it `inout` to generic code
/// such as ``RetryPolicy/wait(retry:retryAfterSeconds:using:)``.
public struct AnyRandomNumberGenerator: RandomNumberGenerator {
  public var base: any RandomNumberGenerator

  public init(base: any RandomNumberGenerator) { self.base = base }

  /// The wrapped generator's next value.
  public mutating func next() -> UInt64 { base.next() }
}
