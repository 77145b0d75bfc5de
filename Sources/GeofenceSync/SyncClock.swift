import Foundation

/// Time for the sync client and scheduler: the current time and a way to wait.
///
/// Injected so that tests drive time by hand and never sleep (``SystemClock`` is the real one).
public protocol SyncClock: Sendable {
  /// Seconds since 1970-01-01T00:00:00Z.
  func now() -> Double
  /// Waits `seconds` (>= 0).
  /// - Throws: `CancellationError` when the task is cancelled while waiting.
  func sleep(seconds: Double) async throws
}

/// The wall clock and `Task.sleep`.
public struct SystemClock: SyncClock {
  public init() {}

  public func now() -> Double { Date().timeIntervalSince1970 }

  public func sleep(seconds: Double) async throws {
    guard seconds > 0 else { return }
    try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
  }
}
