import CGEOS
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The time budget of ``Geometry/validity(timeBudgetSeconds:)``, kept through GEOS's one
/// process-wide interruption hook (GEOS 3.11 has no per-context one).
///
/// GEOS calls the registered callback at each interruption check of a long operation (the
/// noder behind `GEOSisValid_r` checks once a monotone chain); the callback asks for an
/// interruption when the budget's owner thread has passed its deadline, and GEOS then ends the
/// operation with an exception, which the C API turns into a failed call. Budgeted validations
/// take turns (``lock``), so the one interruption flag never ends another thread's call; a
/// callback registered before the first budget is kept and called first.
enum ValidationBudget {
  /// Held for the whole of a budgeted call.
  static let lock = NSLock()
  /// `CLOCK_MONOTONIC` nanoseconds at which the owner's call is interrupted; 0 when no budget
  /// is running.
  nonisolated(unsafe) static var deadline: UInt64 = 0
  /// The thread running the budgeted call.
  nonisolated(unsafe) static var owner = pthread_self()
  /// Whether the running budget asked GEOS to interrupt.
  nonisolated(unsafe) static var fired = false
  /// The callback registered before ours, if any.
  nonisolated(unsafe) static var previous: GEOSInterruptCallback? = nil

  /// Installs the callback, once.
  static let installed: Void = {
    previous = GEOS_interruptRegisterCallback(interruptCheck)
  }()

  static func now() -> UInt64 {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return UInt64(t.tv_sec) &* 1_000_000_000 &+ UInt64(t.tv_nsec)
  }

  /// Runs `body` with a deadline `seconds` from now on this thread.
  /// - Returns: `body`'s result, and whether the deadline interrupted it.
  static func run<T>(seconds: Double, _ body: () -> T) -> (T, interrupted: Bool) {
    _ = installed
    lock.lock()
    defer { lock.unlock() }
    owner = pthread_self()
    fired = false
    deadline = now() &+ UInt64(max(0, min(seconds, 1e6)) * 1e9)
    let result = body()
    deadline = 0
    GEOS_interruptCancel()
    return (result, fired)
  }
}

/// GEOS's interruption callback (see ``ValidationBudget``).
private let interruptCheck: @convention(c) () -> Void = {
  ValidationBudget.previous?()
  let deadline = ValidationBudget.deadline
  guard deadline != 0, pthread_equal(pthread_self(), ValidationBudget.owner) != 0,
    ValidationBudget.now() > deadline
  else { return }
  ValidationBudget.fired = true
  GEOS_interruptRequest()
}
