import ConcurrentParts

/// How a large build shares its passes over the regions between threads: a pass over `n`
/// items is cut into ``parts(count:)`` contiguous ranges, each run on its own thread
/// (`DispatchQueue.concurrentPerform`), and the calling thread waits for all of them. The
/// results never depend on the cut: each part writes only its own range of an output, or
/// returns a value that the caller merges in part order.
///
/// Two threads at most: the machines the build is measured on have two cores, and the band
/// step (``GridIndex/assemble``) holds one band's keys and entries a thread, so more threads
/// would raise the build's peak memory (about 24 MB a band at 10,000,000 regions).
internal enum BuildThreads {
  /// Items a part must have for a pass to be cut at all: 2^17. Below it a pass takes a few
  /// milliseconds, about what starting a thread costs, and runs on the calling thread.
  static let minimumPerPart = 1 << 17

  /// Most parts a pass is cut into: 2 (1 for a build on the calling thread alone, as tests
  /// compare: `BuildThreads.$maximumParts.withValue(1) { ... }`).
  @TaskLocal static var maximumParts = 2

  /// The number of parts a pass over `count` items is cut into: 1 to ``maximumParts``.
  static func parts(count: Int) -> Int {
    Swift.min(maximumParts, Swift.max(1, count / minimumPerPart))
  }

  /// Part `p` of `parts` over `0 ..< count`: contiguous, in order, covering every item once.
  static func range(_ p: Int, of parts: Int, count: Int) -> Range<Int> {
    (count * p / parts)..<(count * (p + 1) / parts)
  }

  /// `body` run on each part of `0 ..< count`, concurrently when there are several; the
  /// results in part order. `body` may read shared state and write only what its own range
  /// owns.
  static func map<Result>(count: Int, _ body: (Range<Int>) -> Result) -> [Result] {
    let parts = parts(count: count)
    if parts == 1 { return [body(0..<count)] }
    return perform(parts) { p in body(range(p, of: parts, count: count)) }
  }

  /// `body(0) ... body(parts - 1)`, concurrently; the results in that order
  /// (``ConcurrentParts/ConcurrentParts/perform(_:_:)``).
  static func perform<Result>(_ parts: Int, _ body: (Int) -> Result) -> [Result] {
    ConcurrentParts.perform(parts, body)
  }
}
