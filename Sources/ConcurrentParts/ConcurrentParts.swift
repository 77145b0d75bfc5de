import Dispatch

/// Runs the parts of one large pass on threads of their own and waits for all of them: the
/// one way the index build (`BuildThreads`) and the CSV reader (`CSVReadThreads`) use more than
/// the calling thread. Each caller decides how many parts a pass has and what each owns; the
/// results never depend on the threads, since each part writes only what it owns and returns
/// a value the caller merges in part order.
public enum ConcurrentParts {
  /// `body(0) ... body(parts - 1)`, concurrently (`DispatchQueue.concurrentPerform`) when
  /// `parts` is 2 or more, on the calling thread when it is 1; the results in that order (none
  /// for 0 or fewer). `body` may read shared state and write only what its own part owns.
  /// - Complexity: the parts' work, plus starting the threads (tens of microseconds).
  @inlinable
  public static func perform<Result>(_ parts: Int, _ body: (Int) -> Result) -> [Result] {
    if parts <= 1 { return parts == 1 ? [body(0)] : [] }
    return [Result](unsafeUninitializedCapacity: parts) { buffer, initialized in
      withoutActuallyEscaping(body) { body in
        // Each iteration initializes only its own element; `concurrentPerform` returns after
        // all of them.
        nonisolated(unsafe) let body = body
        nonisolated(unsafe) let results = buffer
        DispatchQueue.concurrentPerform(iterations: parts) { p in
          results.initializeElement(at: p, to: body(p))
        }
      }
      initialized = parts
    }
  }
}
