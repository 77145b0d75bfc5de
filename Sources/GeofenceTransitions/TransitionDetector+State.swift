import GeofenceGeometry

/// One region a device is inside, as the detector holds it: what must survive when the
/// monitored set is replaced by a new one.
public struct RegionVisitState: Hashable, Sendable {
  /// Slot of the region in the detector's ``RegionSet``.
  public var slot: Int32
  /// Fix time of the ENTER in seconds (NaN for a detector without times). Dwell is due at
  /// `enterTime + loiteringDelaySeconds`.
  public var enterTime: Double
  /// Whether the DWELL of this visit was already emitted.
  public var dwellEmitted: Bool

  public init(slot: Int32, enterTime: Double, dwellEmitted: Bool) {
    self.slot = slot
    self.enterTime = enterTime
    self.dwellEmitted = dwellEmitted
  }
}

extension TransitionDetector {
  /// The regions the device is inside, with their ENTER time and dwell flag, in slot order.
  /// - Complexity: O(m log m) for m regions inside; allocates the result.
  public var visitStates: [RegionVisitState] {
    visits.map {
      RegionVisitState(slot: $0.slot, enterTime: $0.enterTime, dwellEmitted: $0.dwellEmitted)
    }
    .sorted { $0.slot < $1.slot }
  }

  /// A detector over a new region set that continues this one.
  ///
  /// The result has this detector's configuration, time mode, fix history (last accepted fix,
  /// so the time checks and the outlier filter go on as before), counters, and every visit and
  /// pending (unconfirmed) ENTER whose slot `slotMap` maps to a slot of `regions`. A visit keeps
  /// its ENTER time, dwell flag and EXIT confirmation progress, so a region that is still
  /// monitored neither enters again nor restarts its dwell timer. Visits that `slotMap` maps to
  /// `nil` are dropped without an event.
  ///
  /// The geometry is read from `regions` at the next fix: a carried visit whose region moved or
  /// shrank exits at the next accepted fix that satisfies the EXIT rule against the new disc,
  /// and a region that now contains the device enters at the next fix as usual.
  /// - Parameters:
  ///   - regions: the new monitored set.
  ///   - slotMap: old slot → new slot, or `nil` for a region no longer monitored. Must map
  ///     distinct old slots to distinct new slots in `0 ..< regions.count`.
  /// - Complexity: O(m + p) calls of `slotMap` for m visits and p pending enters.
  public func migrated(to regions: RegionSet, slotMap: (Int32) -> Int32?) -> TransitionDetector {
    // A copy keeps every other field (fix history, filter state, counters, buffers) as is.
    var next = self
    next.regions = regions
    next.visits = visits.compactMap { visit in
      guard let slot = slotMap(visit.slot) else { return nil }
      precondition(slot >= 0 && Int(slot) < regions.count, "slot map out of range")
      return visit.rebased(slot: slot, in: regions, configuration: configuration)
    }
    next.insideSet = SlotSet(next.visits.map(\.slot))
    next.pendingEnters = pendingEnters.compactMap { pending in
      guard let slot = slotMap(pending.slot) else { return nil }
      precondition(slot >= 0 && Int(slot) < regions.count, "slot map out of range")
      var moved = pending
      moved.slot = slot
      return moved
    }
    return next
  }

  /// Points this detector at `placeholder` (normally an empty set) so that it no longer shares
  /// the arrays of its region set: the owner can then change that set in place without
  /// copying it, and hand it back with ``migrated(to:slotMap:)``. Visits are kept as they are;
  /// do not process fixes before migrating.
  /// - Complexity: O(1).
  public mutating func detachRegions(_ placeholder: RegionSet) {
    regions = placeholder
  }
}
