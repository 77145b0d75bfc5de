import Foundation

/// The one source of time for the engine's I/O: the outbox stamps events with it, and the sync
/// client, the sync scheduler and the retrying HTTP sender wait on it.
///
/// Time is input (house habit 9): code that backs off or schedules never reads the wall clock
/// or sleeps by itself, so tests drive a manual clock and never wait.
public protocol EngineClock: Sendable {
  /// The current time, seconds since 1970-01-01T00:00:00Z (the Unix epoch, UTC).
  /// - Complexity: O(1).
  func now() -> Double
  /// Waits `seconds` of this clock's time; `seconds <= 0` (or NaN) returns at once.
  ///
  /// A manual clock advances its time by `seconds` and returns without waiting.
  /// - Throws: `CancellationError` when the calling task is cancelled, before or while waiting.
  func sleep(seconds: Double) async throws
}

/// The wall clock (`Date()`) and `Task.sleep`.
public struct SystemClock: EngineClock {
  public init() {}

  public func now() -> Double { Date().timeIntervalSince1970 }

  /// Sleeps with `Task.sleep`; waits longer than about 584 years are cut to that.
  /// - Throws: `CancellationError` when the task is cancelled.
  public func sleep(seconds: Double) async throws {
    try Task.checkCancellation()
    guard seconds > 0 else { return }
    let nanoseconds = min(seconds * 1e9, Double(UInt64.max / 2))
    try await Task.sleep(nanoseconds: UInt64(nanoseconds))
  }
}
