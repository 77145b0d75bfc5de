import Foundation
import RetryTiming

/// A clock that moves only when a test says so (habit 9: time is input).
///
/// `sleep(seconds:)` advances the time at once and records the wait, so code that backs off
/// runs without sleeping and a test can check each wait exactly. Thread-safe (a lock guards
/// the time and the record), so a clock can be shared with a transport or a task.
public final class ManualClock: EngineClock, @unchecked Sendable {
  private let lock = NSLock()
  private var time: Double
  private var recorded: [Double] = []

  /// - Parameter now: the start time, seconds since the Unix epoch. Default
  ///   2026-11-30T05:00:00Z.
  public init(now: Double = 1_796_014_800) { time = now }

  /// The current time, seconds since the Unix epoch.
  public func now() -> Double { lock.withLock { time } }

  /// Records the wait and advances the time by it (negative waits advance by 0); never waits.
  /// - Throws: `CancellationError` when the task is already cancelled (nothing is recorded).
  public func sleep(seconds: Double) async throws {
    try Task.checkCancellation()
    lock.withLock {
      recorded.append(seconds)
      time += max(0, seconds)
    }
  }

  /// Every wait asked of ``sleep(seconds:)``, in order.
  public var sleeps: [Double] { lock.withLock { recorded } }

  /// Advances the time by `seconds` without recording a wait.
  public func advance(by seconds: Double) { lock.withLock { time += seconds } }
}
