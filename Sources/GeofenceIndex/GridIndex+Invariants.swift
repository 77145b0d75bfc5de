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
      precondition(slotOfStored.count == n)
      precondition((0...n).contains(everywhereStart))
      precondition(everywhereBands.count == n - everywhereStart, "one band per listed region")
      for (k, band) in everywhereBands.enumerated() {
        precondition(band == discs[everywhereStart + k].latitudeBand, "stale band at \(k)")
        precondition(
          everywhereSpan.low <= band.low && everywhereSpan.high >= band.high,
          "band \(k) outside the span")
      }
      var seen = [Bool](repeating: false, count: n)
      for (i, slot) in slotOfStored.enumerated() {
        let s = Int(slot)
        precondition(s < n && !seen[s], "slot map is not a permutation at \(i)")
        seen[s] = true
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

      // Cell table (levels not dense): every used slot is reachable from its home.
      precondition(
        cells.isEmpty || cells.count > cells.filter { $0.key != CellSlot.emptyKey }.count,
        "table has no empty slot")
      var levels: UInt64 = 0
      var runs: [(start: Int, count: Int, key: UInt64)] = []
      for (h, cell) in cells.enumerated() where cell.key != CellSlot.emptyKey {
        precondition(denseLevels & (1 &<< (cell.key >> 58)) == 0, "dense level in the table")
        levels |= 1 &<< (cell.key >> 58)
        runs.append((Int(cell.start), Int(cell.count), cell.key))
        var probe = CellSlot.home(cell.key, capacity: cells.count)
        while probe != h {
          precondition(cells[probe].key != CellSlot.emptyKey, "cell \(cell.key) unreachable")
          probe = (probe + 1) % cells.count
        }
      }
      // Dense levels: offsets never decrease; each non-empty position is a run.
      precondition(levelTables.count == grid.levelCount)
      for level in 0..<grid.levelCount where denseLevels & (1 &<< UInt64(level)) != 0 {
        let t = levelTables[level]
        let positions = t.rowCount * t.columnCount
        precondition(positions > 0)
        precondition(t.wordBase >= 0 || t.base + positions < offsets.count)
        if t.wordBase >= 0 {
          // Ranked: ranks count the set bits before each word; a set bit is a non-empty cell.
          var rank: UInt32 = 0
          for w in t.wordBase..<(t.wordBase + (positions + 63) / 64) {
            precondition(rankWords[w].rank == rank, "rank of word \(w) at level \(level)")
            rank += UInt32(rankWords[w].bits.nonzeroBitCount)
          }
          precondition(t.base + Int(rank) < offsets.count)
        }
        let runBits = GridIndex.offsetRunBits(entryCount: entries.count)
        for p in 0..<positions {
          let k = rankWords.withUnsafeBufferPointer { t.offsetIndex(position: p, words: $0) }
          if k < 0 { continue }
          let start = Int(offsets[k] & runBits)
          let end = Int(offsets[k + 1] & runBits)
          precondition(start <= end, "offsets decrease at level \(level), position \(p)")
          if start == end { continue }
          levels |= 1 &<< UInt64(level)
          let key = CellGrid.key(
            level: level, row: t.rowLow + p / t.columnCount,
            column: t.columnLow + p % t.columnCount)
          runs.append((start, end - start, key))
        }
      }
      precondition(runs.count == usedCellCount && levels == nonEmptyLevels)
      runs.sort { $0.start < $1.start }
      var next = 0
      var filedIn = [Int](repeating: 0, count: n)
      for run in runs {
        precondition(run.start == next && run.count > 0, "runs do not tile the entries")
        next += run.count
        var previous = -1
        for e in run.start..<(run.start + run.count) {
          let i = Int(entries[e] & entryIndexMask)
          precondition(
            entryQuarterBits == 0 || (entries[e] & 0x0F00_0000 != 0 && entries[e] >> 28 != 0),
            "entry \(e) has an empty quarter mask")
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
        let p = GridIndex.placement(of: discs[i], in: grid)
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
