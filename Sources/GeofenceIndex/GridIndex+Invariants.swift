import GeofenceGeometry

#if GEOFENCE_INDEX_INVARIANTS
  // Compiled only with `-Xswiftc -DGEOFENCE_INDEX_INVARIANTS`, for tests:
  // `swift test -Xswiftc -DGEOFENCE_INDEX_INVARIANTS --filter GeofenceIndexTests`.

  extension GridIndex {
    /// Traps with a message when the structure is inconsistent: array lengths, the slot
    /// permutation, refine records, the cell table, the CSR runs and each region's filing.
    /// - Complexity: O(n + m + table capacity), plus one placement per region.
    internal func checkInvariants() {
      let n = discs.count
      precondition(slotOfStored.count == n && centers.count == n && radiiMeters.count == n)
      precondition((0...n).contains(everywhereStart))
      var seen = [Bool](repeating: false, count: n)
      for (i, slot) in slotOfStored.enumerated() {
        let s = Int(slot)
        precondition(s < n && !seen[s], "slot map is not a permutation at \(i)")
        seen[s] = true
        let r = region(at: Int32(s))
        // Bit patterns, so that a NaN centre (unchecked coordinate) compares equal to itself.
        let c = discs[i].center
        let t = discs[i].chordSquaredThreshold
        precondition(
          c.x.bitPattern == r.centerVector.x.bitPattern
            && c.y.bitPattern == r.centerVector.y.bitPattern
            && c.z.bitPattern == r.centerVector.z.bitPattern
            && (t.bitPattern == r.chordSquaredThreshold.bitPattern || discs[i].isRemoved),
          "refine record \(i) differs from region \(s)")
        precondition(
          !(filedEnd..<everywhereStart).contains(i) || discs[i].isRemoved,
          "storage \(i) between the filed regions and the everywhere list is not removed")
      }
      precondition(discs.filter(\.isRemoved).count == removedCount)
      if !storedOfSlot.isEmpty {
        precondition(storedOfSlot.count == n)
        for (i, slot) in slotOfStored.enumerated() {
          precondition(storedOfSlot[Int(slot)] == i, "slot map is not inverse at \(slot)")
        }
      }

      // Cell table: every used slot is reachable from its home, runs partition `entries`.
      precondition(cells.isEmpty || cells.count > usedCellCount, "table has no empty slot")
      var used = 0
      var levels: UInt64 = 0
      var runs: [(start: Int, count: Int, key: UInt64)] = []
      for (h, cell) in cells.enumerated() where cell.key != CellSlot.emptyKey {
        used += 1
        levels |= 1 &<< (cell.key >> 58)
        runs.append((Int(cell.start), Int(cell.count), cell.key))
        var probe = CellSlot.home(cell.key, capacity: cells.count)
        while probe != h {
          precondition(cells[probe].key != CellSlot.emptyKey, "cell \(cell.key) unreachable")
          probe = (probe + 1) % cells.count
        }
      }
      precondition(used == usedCellCount && levels == nonEmptyLevels)
      runs.sort { $0.start < $1.start }
      var next = 0
      var filedIn = [Int](repeating: 0, count: n)
      for run in runs {
        precondition(run.start == next && run.count > 0, "runs do not tile the entries")
        next += run.count
        var previous = -1
        for e in run.start..<(run.start + run.count) {
          let i = Int(entries[e])
          precondition(i > previous && i < filedEnd, "bad entry \(i) in cell \(run.key)")
          previous = i
          filedIn[i] += 1
        }
      }
      precondition(next == entries.count)

      // Each region is filed exactly in its placement's cells; storage order is by home cell.
      // Regions inserted since the build (the last `pendingCount`) are on no cell.
      var previousHome: UInt64 = 0
      for i in 0..<(n - pendingCount) where !(filedEnd..<everywhereStart).contains(i) {
        let p = GridIndex.placement(of: region(at: Int32(slotOfStored[i])), in: grid)
        precondition((p.level < 0) == (i >= everywhereStart), "storage \(i) on the wrong list")
        let home = GridIndex.homeKey(p)
        precondition(home >= previousHome, "storage order is not by home cell at \(i)")
        previousHome = home
        precondition(filedIn[i] == p.cellCount, "storage \(i) filed in \(filedIn[i]) cells")
      }
      precondition(everywhereStart <= n - pendingCount)
    }
  }
#endif
