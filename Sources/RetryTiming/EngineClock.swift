import Foundation

/// The one source of time of the engine, its sync and its outbox, injected so that tests run
/// on a manual clock without sleeping.
///
/// Times are seconds since the Unix epoch (UTC) as `Double`.
public protocol EngineClock: Sendable {
  /// The current time.
  func now() -> Double
  /// Waits `seconds` (>= 0). A manual clock advances its time and returns at once.
  /// - Throws: `CancellationError` when the task is cancelled.
  func sleep(seconds: Double) async throws
}

/// The wall clock: `Date()` and `Task.sleep`.
public struct WallClock: EngineClock {
  public init() {}
  public func now() -> Double { Date().timeIntervalSince1970 }
  public func sleep(seconds: Double) async throws {
    if seconds > 0 { try await Task.sleep(nanoseconds: UInt64(seconds * 1e9)) }
  }
}
