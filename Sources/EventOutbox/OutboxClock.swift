import Foundation

/// The outbox's source of time, injected so that tests run on a manual clock without sleeping
/// (see `ManualClock` in the test support module).
///
/// Times are seconds since the Unix epoch (UTC) as `Double`.
public protocol OutboxClock: AnyObject {
  /// The current time.
  var now: Double { get }
  /// Waits `seconds` (>= 0). A manual clock advances its time by `seconds` and returns at once.
  func sleep(seconds: Double)
}

/// The wall clock: `Date()` and `Thread.sleep`.
public final class SystemClock: OutboxClock {
  public init() {}
  public var now: Double { Date().timeIntervalSince1970 }
  public func sleep(seconds: Double) {
    if seconds > 0 { Thread.sleep(forTimeInterval: seconds) }
  }
}
