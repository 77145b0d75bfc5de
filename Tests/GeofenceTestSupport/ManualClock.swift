/// A clock that moves only when a test says so (habit 9: time is input).
///
/// `sleep(seconds:)` advances the time at once and records the wait, so code that backs off
/// runs without sleeping and a test can check each wait exactly. Conform it to a module's clock
/// protocol in that module's tests (`extension ManualClock: OutboxClock {}`).
public final class ManualClock: @unchecked Sendable {
  /// The current time, seconds since the Unix epoch.
  public var now: Double
  /// Every wait asked of ``sleep(seconds:)``, in order.
  public private(set) var sleeps: [Double] = []

  /// - Parameter now: the start time. Default 2026-11-30T05:00:00Z.
  public init(now: Double = 1_796_014_800) { self.now = now }

  /// Records the wait and advances the time by it.
  public func sleep(seconds: Double) {
    sleeps.append(seconds)
    now += max(0, seconds)
  }

  /// Advances the time by `seconds` without recording a wait.
  public func advance(by seconds: Double) { now += seconds }
}
