/// Why a fix was dropped. Raw values are the names used in summaries.
public enum DropReason: String, CaseIterable, Hashable, Sendable {
  /// Negative (or NaN) horizontal accuracy: the source marked the fix invalid.
  case invalidAccuracy
  /// Horizontal accuracy above ``TransitionConfiguration/maxAccuracyMeters``.
  case inaccurate
  /// Live API: the fix is older than the last accepted fix.
  case staleFix
  /// Same time and same position as the fix kept before it.
  case duplicateFix
  /// Same time as the fix kept before it but a different position; the earlier one wins.
  case conflictingTimestamp
  /// No valid (finite) time in a track where other fixes have times.
  case missingTime
  /// Impossible implied speed from the last accepted fix (see ``OutlierFilter``).
  case outlier

}

/// Number of dropped fixes per ``DropReason``. A fixed-size value: counting never allocates.
public struct DropCounts: Hashable, Sendable {
  @usableFromInline internal var invalidAccuracy = 0
  @usableFromInline internal var inaccurate = 0
  @usableFromInline internal var staleFix = 0
  @usableFromInline internal var duplicateFix = 0
  @usableFromInline internal var conflictingTimestamp = 0
  @usableFromInline internal var missingTime = 0
  @usableFromInline internal var outlier = 0

  /// All counts zero.
  public init() {}

  /// The count for `reason`.
  @inlinable
  public subscript(reason: DropReason) -> Int {
    get {
      switch reason {
      case .invalidAccuracy: return invalidAccuracy
      case .inaccurate: return inaccurate
      case .staleFix: return staleFix
      case .duplicateFix: return duplicateFix
      case .conflictingTimestamp: return conflictingTimestamp
      case .missingTime: return missingTime
      case .outlier: return outlier
      }
    }
    set {
      switch reason {
      case .invalidAccuracy: invalidAccuracy = newValue
      case .inaccurate: inaccurate = newValue
      case .staleFix: staleFix = newValue
      case .duplicateFix: duplicateFix = newValue
      case .conflictingTimestamp: conflictingTimestamp = newValue
      case .missingTime: missingTime = newValue
      case .outlier: outlier = newValue
      }
    }
  }

  /// Total number of dropped fixes.
  public var total: Int {
    DropReason.allCases.reduce(0) { $0 + self[$1] }
  }

  /// The reasons with a non-zero count, in ``DropReason/allCases`` order.
  public var nonZero: [(reason: DropReason, count: Int)] {
    DropReason.allCases.compactMap { self[$0] > 0 ? ($0, self[$0]) : nil }
  }

  /// Adds each count of `rhs` to the same reason's count in `lhs`.
  public static func += (lhs: inout DropCounts, rhs: DropCounts) {
    for r in DropReason.allCases { lhs[r] += rhs[r] }
  }
}
