/// When queued events are delivered without an explicit flush. The triggers combine: a
/// destination's events are due as soon as any enabled trigger fires.
///
/// | trigger | default | source of the default |
/// |---|---|---|
/// | ``count``: this many events pending for the destination | 20 | Hightouch's `flushAt` (20) and Appy's batch size |
/// | ``intervalSeconds``: the oldest pending event waited this long | 30 s | Hightouch's `flushInterval` (30 s); Klaviyo uses 10 s on Wi-Fi, 30 s on cellular |
/// | ``debounceSeconds``: this long since the newest pending event | off (2 s when set to ``defaultDebounceSeconds``) | Appy's 2 s debounce |
/// | ``immediateOnTransition``: every new event | off | Klaviyo puts geofence events first and flushes at once |
/// | ``onBackground``: the app went to the background | on | Hightouch and Klaviyo flush when the app is backgrounded |
///
/// An explicit flush always delivers everything. The policy is a value: the engine evaluates
/// it against each destination's pending events and the clock (``isDue(pending:oldestCreatedAt:newestCreatedAt:now:)``).
public struct FlushPolicy: Hashable, Sendable {
  /// Due when at least this many events are pending (>= 1), or `nil` for no count trigger.
  /// Default 20.
  public var count: Int?
  /// Due when the oldest pending event was created at least this many seconds ago (>= 0), or
  /// `nil`. Default 30.
  public var intervalSeconds: Double?
  /// Due when the newest pending event was created at least this many seconds ago (>= 0):
  /// a burst of events goes out together once it settles. `nil` (the default) for none.
  public var debounceSeconds: Double?
  /// Due after every ingest that created an event. Default false.
  public var immediateOnTransition: Bool
  /// Due when the app state changes from foreground to background (the authorization and
  /// app-state timeline). Default true.
  public var onBackground: Bool

  /// Appy's debounce, seconds.
  public static let defaultDebounceSeconds = 2.0

  /// - Precondition: `count >= 1`, `intervalSeconds >= 0`, `debounceSeconds >= 0` when given.
  public init(
    count: Int? = 20, intervalSeconds: Double? = 30, debounceSeconds: Double? = nil,
    immediateOnTransition: Bool = false, onBackground: Bool = true
  ) {
    precondition(count.map { $0 >= 1 } ?? true, "count must be >= 1")
    precondition(intervalSeconds.map { $0 >= 0 } ?? true, "intervalSeconds must be >= 0")
    precondition(debounceSeconds.map { $0 >= 0 } ?? true, "debounceSeconds must be >= 0")
    self.count = count
    self.intervalSeconds = intervalSeconds
    self.debounceSeconds = debounceSeconds
    self.immediateOnTransition = immediateOnTransition
    self.onBackground = onBackground
  }

  /// Only explicit flushes (and the two event triggers when enabled).
  public static let manual = FlushPolicy(count: nil, intervalSeconds: nil, onBackground: false)

  /// The earliest time on the clock at which the count, interval or debounce trigger fires
  /// for a destination, given its pending events: `-infinity` when the count is reached,
  /// `nil` when nothing is pending or no time trigger is enabled.
  /// - Parameters:
  ///   - pending: events pending for the destination.
  ///   - oldestCreatedAt, newestCreatedAt: their first and last creation times (seconds since
  ///     the Unix epoch), `nil` when none is pending.
  public func nextDueTime(pending: Int, oldestCreatedAt: Double?, newestCreatedAt: Double?)
    -> Double?
  {
    guard pending > 0 else { return nil }
    if let count, pending >= count { return -.infinity }
    var due: Double?
    if let intervalSeconds, let oldestCreatedAt { due = oldestCreatedAt + intervalSeconds }
    if let debounceSeconds, let newestCreatedAt {
      due = min(due ?? .infinity, newestCreatedAt + debounceSeconds)
    }
    return due
  }

  /// Whether the count, interval or debounce trigger has fired at `now` (see
  /// ``nextDueTime(pending:oldestCreatedAt:newestCreatedAt:)``; a time at or before `now`
  /// counts).
  public func isDue(pending: Int, oldestCreatedAt: Double?, newestCreatedAt: Double?, now: Double)
    -> Bool
  {
    guard
      let due = nextDueTime(
        pending: pending, oldestCreatedAt: oldestCreatedAt, newestCreatedAt: newestCreatedAt)
    else { return false }
    return due <= now
  }
}
