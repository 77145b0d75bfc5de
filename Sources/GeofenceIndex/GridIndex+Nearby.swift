import GeofenceGeometry

extension GridIndex {
  /// The most cells ``forEachCandidate(near:withinMeters:_:)`` visits over all levels before it
  /// scans every region instead (65,536: a 256 × 256 block of cells, about the cost of
  /// scanning 65,536 regions).
  public static let nearbyCellLimit = 65_536

  /// Calls `body` with the slot of every region whose closed disc may come within
  /// `meters` of `point`: a superset of the regions whose edge is at most `meters` away
  /// (great-circle distance on the sphere of ``EarthModel/meanRadiusMeters``). A slot can be
  /// given more than once (a region filed in several of the visited cells); removed slots
  /// never. The caller computes the exact distance and filters.
  ///
  /// The grid files each region in every cell of its level that its bounding box touches, so
  /// a region whose disc reaches the cap of radius `meters` around `point` is filed in a cell
  /// that the cap's bounding box touches: the walk visits, at each non-empty level, exactly
  /// those cells (both sides of the antimeridian, every longitude near a pole), plus the
  /// everywhere list. When that would be more than ``nearbyCellLimit`` cells, it gives every
  /// region instead.
  ///
  /// - Parameters:
  ///   - point: a coordinate in the documented ranges (latitude [−90, 90], longitude
  ///     [−180, 180]); outside them every region is given.
  ///   - meters: the search radius, >= 0; NaN or a value past half the circumference gives
  ///     every region.
  /// - Complexity: O(c + k) for c visited cells and k filed entries in them; no allocation.
  public func forEachCandidate(
    near point: Coordinate, withinMeters meters: Double, _ body: (Int32) -> Void
  ) {
    let inRange = abs(point.latitude) <= 90 && abs(point.longitude) <= 180
    let angle = EarthModel.radians(fromMeters: meters)
    guard inRange, angle >= 0, angle < Double.pi else {
      forEachLiveSlot(body)
      return
    }
    let box = BoundingBox.cap(center: point, angularRadius: angle)
    // Column ranges of level 0 (inclusive), one or two (split at the antimeridian). Column 0
    // is added when the box reaches ±180: a box that ends at 180 from the west is filed there.
    let lastColumn = grid.columns - 1
    var first = (grid.column(longitude: box.minLongitude), grid.column(longitude: box.maxLongitude))
    var second: (Int, Int)? = nil
    if box.coversAllLongitudes {
      first = (0, lastColumn)
    } else if box.wrapsAntimeridian {
      first = (first.0, lastColumn)
      second = (0, grid.column(longitude: box.maxLongitude))
    } else if box.maxLongitude >= 180 || box.minLongitude <= -180 {
      second = (0, 0)
    }
    let rowLow = grid.row(latitude: box.minLatitude)
    let rowHigh = grid.row(latitude: box.maxLatitude)

    // The number of cells the walk would visit.
    var cellCount = 0
    var levels = nonEmptyLevels
    while levels != 0 {
      let level = levels.trailingZeroBitCount
      levels &= levels &- 1
      let rows = (rowHigh >> level) - (rowLow >> level) + 1
      cellCount += rows * ((first.1 >> level) - (first.0 >> level) + 1)
      if let (low, high) = second { cellCount += rows * ((high >> level) - (low >> level) + 1) }
      if cellCount > Self.nearbyCellLimit {
        forEachLiveSlot(body)
        return
      }
    }

    // The everywhere list (polar, huge and pending regions).
    for i in everywhereStart..<discs.count where !discs[i].isRemoved {
      body(Int32(truncatingIfNeeded: slotOfStored[i]))
    }
    levels = nonEmptyLevels
    while levels != 0 {
      let level = levels.trailingZeroBitCount
      let bit = levels & (0 &- levels)
      levels &= levels &- 1
      let dense = denseLevels & bit != 0
      for row in (rowLow >> level)...(rowHigh >> level) {
        visitColumns(level: level, dense: dense, row: row, first, body)
        if let second { visitColumns(level: level, dense: dense, row: row, second, body) }
      }
    }
  }

  /// Gives the live slots filed in the cells `columns.0 ... columns.1` (level 0 columns) of
  /// `row` at `level`.
  private func visitColumns(
    level: Int, dense: Bool, row: Int, _ columns: (Int, Int), _ body: (Int32) -> Void
  ) {
    for column in (columns.0 >> level)...(columns.1 >> level) {
      let (start, end) = cellRun(level: level, dense: dense, row: row, column: column)
      var e = start
      while e < end {
        let i = Int(entries[e] & entryIndexMask)
        e += 1
        if !discs[i].isRemoved { body(Int32(truncatingIfNeeded: slotOfStored[i])) }
      }
    }
  }

  /// Every slot not removed, once each.
  private func forEachLiveSlot(_ body: (Int32) -> Void) {
    for i in 0..<discs.count where !discs[i].isRemoved {
      body(Int32(truncatingIfNeeded: slotOfStored[i]))
    }
  }

  /// The run in ``entries`` of the cell at `row` and `column` of `level` (level units), with
  /// no sub-cell filtering: every region filed in the cell.
  private func cellRun(level: Int, dense: Bool, row: Int, column: Int) -> (Int, Int) {
    if dense {
      let table = levelTables[level]
      let r = row - table.rowLow
      let c = column - table.columnLow
      guard r >= 0, r < table.rowCount, c >= 0, c < table.columnCount else { return (0, 0) }
      let k = rankWords.withUnsafeBufferPointer { words in
        table.offsetIndex(position: r * table.columnCount + c, words: words)
      }
      if k < 0 { return (0, 0) }
      return (Int(offsets[k] & offsetRunMask), Int(offsets[k + 1] & offsetRunMask))
    }
    let capacity = cells.count
    if capacity == 0 { return (0, 0) }
    let key = CellGrid.key(level: level, row: row, column: column)
    var h = CellSlot.home(key, capacity: capacity)
    while true {
      let cell = cells[h]
      if cell.key == key { return (Int(cell.start), Int(cell.start) + Int(cell.count)) }
      if cell.key == CellSlot.emptyKey { return (0, 0) }
      h += 1
      if h == capacity { h = 0 }
    }
  }
}
