/// An order-independent digest of every (fix, region) containment pair of a run, so that
/// contenders can be checked for identical answers without comparing the pairs themselves.
///
/// For each pair of fix index `f` (0-based position of the fix in the workload's fixes file)
/// and region slot `s` (0-based position of the region in the regions file):
/// - `pairs` counts the pairs,
/// - `slotSum` adds `s`, modulo 2^64,
/// - `weightedSum` adds `f × s`, modulo 2^64.
///
/// Partial digests of disjoint fix ranges combine by addition (``merge(_:)``), so a run split
/// across threads gives the same digest as a single-threaded run.
public struct Checksum: Hashable, Sendable, CustomStringConvertible {
  public var pairs: UInt64 = 0
  public var slotSum: UInt64 = 0
  public var weightedSum: UInt64 = 0

  public init() {}

  public init(pairs: UInt64, slotSum: UInt64, weightedSum: UInt64) {
    self.pairs = pairs
    self.slotSum = slotSum
    self.weightedSum = weightedSum
  }

  /// Adds one pair.
  @inlinable
  public mutating func add(fixIndex: Int, slot: Int32) {
    let s = UInt64(UInt32(bitPattern: slot))
    pairs &+= 1
    slotSum &+= s
    weightedSum &+= UInt64(truncatingIfNeeded: fixIndex) &* s
  }

  /// Adds a partial digest computed over a disjoint set of fixes.
  @inlinable
  public mutating func merge(_ other: Checksum) {
    pairs &+= other.pairs
    slotSum &+= other.slotSum
    weightedSum &+= other.weightedSum
  }

  public var description: String { "pairs=\(pairs) slots=\(slotSum) weighted=\(weightedSum)" }
}
