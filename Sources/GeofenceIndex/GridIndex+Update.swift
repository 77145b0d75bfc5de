import GeofenceGeometry

extension GridIndex {
  /// The most regions ``insert(_:)`` keeps in the per-query scan list before rebuilding:
  /// `64 + ⌊√count⌋` (1,064 at 1,000,000 regions).
  public var pendingLimit: Int { 64 + Int(Double(count).squareRoot()) }

  /// Number of regions inserted since the last (re)build; each is tested on every query.
  public var pendingInsertCount: Int { pendingCount }

  /// Number of slots removed with ``remove(at:)``.
  public var removedSlotCount: Int { removedCount }

  /// Adds `region` in a new slot, `count` before the call, and returns that slot.
  ///
  /// The region is answered by queries at once. Until the next rebuild it sits in a short list
  /// tested on every query (one squared-chord comparison each); when that list exceeds
  /// ``pendingLimit`` the whole index is rebuilt, keeping every slot number, the
  /// `cellSizeDegrees` given to `init` and the removed slots.
  ///
  /// For a batch of more than about ``pendingLimit`` insertions, building a new index from the
  /// full array is faster.
  /// - Precondition: `count < Int32.max`.
  /// - Complexity: amortised O(√n) region placements per insertion (a rebuild is O(n) and
  ///   happens every ~√n insertions); O(n) once for the first update, which builds the slot →
  ///   storage map (4 bytes per region).
  public mutating func insert(_ region: CircularRegion) -> Int32 {
    precondition(count < Int(Int32.max), "GridIndex holds at most Int32.max regions")
    prepareForUpdates()
    let slot = count
    storedOfSlot.append(UInt32(truncatingIfNeeded: discs.count))
    slotOfStored.append(UInt32(truncatingIfNeeded: slot))
    let disc = Disc(region)
    discs.append(disc)
    everywhereBands.append(disc.latitudeBand)
    everywhereSpan = everywhereSpan.union(disc.latitudeBand)
    pendingCount += 1
    if pendingCount > pendingLimit { rebuild() }
    return Int32(truncatingIfNeeded: slot)
  }

  /// Removes the region in `slot` from every later answer. The slot number is not reused;
  /// ``isRemoved(_:)`` tells removed slots.
  ///
  /// Removing a removed slot does nothing.
  /// - Precondition: `0 <= slot < count`.
  /// - Complexity: O(1) (O(n) once for the first update, see ``insert(_:)``). Queries cost the
  ///   same as before: the slot's entries stay in their cells until the next rebuild but never
  ///   match.
  public mutating func remove(at slot: Int32) {
    precondition(slot >= 0 && Int(slot) < count, "slot \(slot) out of range")
    prepareForUpdates()
    let i = Int(storedOfSlot[Int(slot)])
    if discs[i].isRemoved { return }
    discs[i] = discs[i].removed
    removedCount += 1
  }

  /// True when `slot` was removed with ``remove(at:)``.
  /// - Precondition: `0 <= slot < count`.
  /// - Complexity: O(1) (O(n) the first time, see ``insert(_:)``).
  public func isRemoved(_ slot: Int32) -> Bool {
    if removedCount == 0 { return false }
    if !storedOfSlot.isEmpty { return discs[Int(storedOfSlot[Int(slot)])].isRemoved }
    return discs[slotOfStored.firstIndex(of: UInt32(truncatingIfNeeded: slot)) ?? 0].isRemoved
  }

  /// Rebuilds the grid from the current regions, keeping slot numbers and removals, and empties
  /// the pending list. The cell size is chosen again from the live regions when `init` was
  /// given `nil`.
  ///
  /// The index rebuilds from its own refine records (each region's box is recomputed from its
  /// centre vector and threshold, see ``Disc/centerCoordinate``), so it keeps no other copy of the
  /// regions.
  /// - Complexity: O(n), the same as ``init(regions:cellSizeDegrees:)``.
  public mutating func rebuild() {
    prepareForUpdates()
    let bySlot = storedOfSlot.map { discs[Int($0)] }
    self = GridIndex.build(
      discs: bySlot, cellSizeDegrees: requestedCellSizeDegrees, edgePerSpan: grid.edgePerSpan,
      upperEdgePerSpan: grid.upperEdgePerSpan)
    prepareForUpdates()
  }

  /// Builds the slot → storage map on the first update.
  private mutating func prepareForUpdates() {
    if storedOfSlot.count == slotOfStored.count { return }
    var map = [UInt32](repeating: 0, count: slotOfStored.count)
    for (i, slot) in slotOfStored.enumerated() { map[Int(slot)] = UInt32(truncatingIfNeeded: i) }
    storedOfSlot = map
  }
}
