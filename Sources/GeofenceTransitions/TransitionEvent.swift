import GeofenceGeometry

/// The kind of a transition. Raw values are the names used in output files.
public enum TransitionType: String, CaseIterable, Hashable, Sendable {
  /// The device went from outside to inside the region.
  case enter
  /// The device left the region (beyond the hysteresis band).
  case exit
  /// The device has been inside the region for the loitering delay.
  case dwell
}

/// One transition of one device for one region.
public struct TransitionEvent: Hashable, Sendable {
  /// What happened.
  public var type: TransitionType
  /// The region's slot in the ``RegionSet`` (its position in the array the set was built
  /// from).
  public var slot: Int32
  /// The fix at which the transition was detected (for an inferred event, the interpolated
  /// point; see ``inferred``).
  public var fix: LocationFix
  /// Great-circle distance in metres from the region's centre to the fix.
  public var distanceMeters: Double
  /// For ``TransitionType/dwell``: the fix time minus the enter time of the visit, in seconds
  /// (`>= loiteringDelaySeconds`). `nil` for enter and exit.
  public var dwellSeconds: Double?
  /// For ``TransitionType/exit``: the fix time minus the enter time of the visit that ends, in
  /// seconds (>= 0). `nil` for enter and dwell, and for a detector without times.
  public var visitSeconds: Double?
  /// True for an ENTER or EXIT inferred from a segment between two fixes that passes through
  /// the region (``CrossingInference``): ``fix`` is then the interpolated point, not a fix the
  /// device reported. False for every other event.
  public var inferred: Bool

  public init(
    type: TransitionType, slot: Int32, fix: LocationFix, distanceMeters: Double,
    dwellSeconds: Double? = nil, visitSeconds: Double? = nil, inferred: Bool = false
  ) {
    self.type = type
    self.slot = slot
    self.fix = fix
    self.distanceMeters = distanceMeters
    self.dwellSeconds = dwellSeconds
    self.visitSeconds = visitSeconds
    self.inferred = inferred
  }
}

/// What ``TransitionDetector/process(_:into:)`` did with a fix.
public enum FixOutcome: Hashable, Sendable {
  /// The fix was used: region states were updated (possibly with no event).
  case accepted
  /// The fix was ignored for the given reason and changed no region state.
  case dropped(DropReason)
}
