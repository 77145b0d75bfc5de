import RetryTiming

/// Why a sync is due.
public enum SyncTrigger: String, Hashable, Sendable {
  /// No sync has been attempted since the scheduler started.
  case start
  /// The API key changed since the last attempt.
  case keyChanged
  /// ``SyncScheduler/intervalSeconds`` passed since the last success.
  case interval
  /// The last attempt failed and ``SyncScheduler/retryIntervalSeconds`` passed since it.
  case retry
  /// Someone asked for a sync (``SyncScheduler/requestSync()``).
  case demand
}

/// Decides when to sync: at start, when the key changes, on an interval, after a failure, and
/// on demand. Time is the caller's (an injected ``RetryTiming/EngineClock``); the scheduler never reads the
/// wall clock.
///
/// Precedence when several apply: start, key changed, demand, retry, interval.
public struct SyncScheduler: Sendable {
  /// Seconds between successful syncs. Default 900; must be > 0.
  public var intervalSeconds: Double
  /// Seconds after a failed attempt before the next one. Default 60; must be > 0. The
  /// client's own retries (``RetryPolicy``) happen inside one attempt.
  public var retryIntervalSeconds: Double

  public private(set) var lastAttemptTime: Double?
  public private(set) var lastSuccessTime: Double?
  public private(set) var lastAttemptFailed = false
  private var key: String?
  private var keyOfLastAttempt: String?
  private var demanded = false

  public init(intervalSeconds: Double = 900, retryIntervalSeconds: Double = 60) {
    precondition(intervalSeconds > 0 && retryIntervalSeconds > 0, "intervals must be > 0")
    self.intervalSeconds = intervalSeconds
    self.retryIntervalSeconds = retryIntervalSeconds
  }

  /// Sets the API key in use; a key different from the last attempt's makes a sync due.
  public mutating func setKey(_ key: String) { self.key = key }

  /// Makes a sync due at once.
  public mutating func requestSync() { demanded = true }

  /// The trigger of a sync due at `now`, or nil when none is.
  public func due(at now: Double) -> SyncTrigger? {
    guard let lastAttempt = lastAttemptTime else { return .start }
    if key != keyOfLastAttempt { return .keyChanged }
    if demanded { return .demand }
    if lastAttemptFailed { return now >= lastAttempt + retryIntervalSeconds ? .retry : nil }
    let since = lastSuccessTime ?? lastAttempt
    return now >= since + intervalSeconds ? .interval : nil
  }

  /// When the next time-based sync is due (seconds since 1970); now or earlier when one is due.
  public func nextDueTime(after now: Double) -> Double {
    if due(at: now) != nil { return now }
    guard let lastAttempt = lastAttemptTime else { return now }
    if lastAttemptFailed { return lastAttempt + retryIntervalSeconds }
    return (lastSuccessTime ?? lastAttempt) + intervalSeconds
  }

  /// Records an attempt made at `now`.
  public mutating func recordAttempt(at now: Double, succeeded: Bool) {
    lastAttemptTime = now
    keyOfLastAttempt = key
    demanded = false
    lastAttemptFailed = !succeeded
    if succeeded { lastSuccessTime = now }
  }

  /// Waits on `clock` until a sync is due, runs `sync`, and records the outcome.
  /// - Parameters:
  ///   - clock: the time source and sleeper.
  ///   - sync: performs one sync; returns whether it succeeded.
  /// - Returns: the trigger that ran.
  /// - Throws: `CancellationError` when cancelled while waiting.
  @discardableResult
  public mutating func runNext(
    clock: any EngineClock, sync: (SyncTrigger) async -> Bool
  ) async throws -> SyncTrigger {
    var now = clock.now()
    while due(at: now) == nil {
      try await clock.sleep(seconds: max(0, nextDueTime(after: now) - now))
      now = clock.now()
    }
    let trigger = due(at: now) ?? .demand
    let ok = await sync(trigger)
    recordAttempt(at: clock.now(), succeeded: ok)
    return trigger
  }
}
