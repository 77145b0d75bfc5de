import GeofenceGeometry

/// Where one region is filed: a level and a rectangle of cells at that level (a column range that
/// crosses the antimeridian is split in two), or the everywhere list.
internal struct Placement: Equatable {
  /// Level, or -1 for the everywhere list.
  var level: Int
  var rowLow: Int
  var rowHigh: Int
  var columnLow: Int
  var columnHigh: Int
  /// When >= 0, the box also covers columns `0 ... wrapColumnHigh` (antimeridian).
  var wrapColumnHigh: Int

  static let everywhere = Placement(
    level: -1, rowLow: 0, rowHigh: -1, columnLow: 0, columnHigh: -1, wrapColumnHigh: -1)

  /// Number of cells this placement files the region in.
  var cellCount: Int {
    guard level >= 0 else { return 0 }
    let columns = (columnHigh - columnLow + 1) + (wrapColumnHigh + 1)
    return (rowHigh - rowLow + 1) * columns
  }
}

extension GridIndex {
  /// The finest-level edge to use for `cellSizeDegrees` (see ``init(regions:cellSizeDegrees:)``).
  internal static func finestEdge(regions: [CircularRegion], cellSizeDegrees: Double?) -> Double {
    if let requested = cellSizeDegrees, !requested.isNaN {
      return min(maximumCellSizeDegrees, max(minimumCellSizeDegrees, requested))
    }
    let step = max(1, regions.count / 65_536)
    var smallest = Double.infinity
    var i = 0
    while i < regions.count {
      let region = regions[i]
      i += step
      if region.coversSphere { continue }
      let box = region.boundingBox
      if box.coversAllLongitudes { continue }
      let span = max(box.maxLatitude - box.minLatitude, box.longitudeSpan)
      if span > 0 { smallest = min(smallest, span) }
    }
    guard smallest.isFinite else { return 1 }
    return min(maximumCellSizeDegrees, max(minimumCellSizeDegrees, edgePerSpan * smallest))
  }

  /// Where `region` is filed in `grid`. Pure function of the region and the grid.
  internal static func placement(of region: CircularRegion, in grid: CellGrid) -> Placement {
    if region.coversSphere { return .everywhere }
    let box = region.boundingBox
    if box.coversAllLongitudes || !(box.maxLatitude < 90 - polarMarginDegrees)
      || !(box.minLatitude > -90 + polarMarginDegrees)
    {
      return .everywhere
    }
    let needed = max(box.maxLatitude - box.minLatitude, box.longitudeSpan) * edgePerSpan
    guard needed <= grid.edge(level: grid.levelCount - 1) else { return .everywhere }
    var level = 0
    var edge = grid.edgeDegrees
    while edge < needed {
      edge *= 2
      level += 1
    }
    let lastColumn = grid.columns(level: level) - 1
    var p = Placement(
      level: level,
      rowLow: grid.row(latitude: box.minLatitude) >> level,
      rowHigh: grid.row(latitude: box.maxLatitude) >> level,
      columnLow: grid.column(longitude: box.minLongitude) >> level,
      columnHigh: grid.column(longitude: box.maxLongitude) >> level,
      wrapColumnHigh: -1)
    if box.wrapsAntimeridian {
      // [minLongitude, 180] ∪ [-180, maxLongitude]
      p.wrapColumnHigh = p.columnHigh
      p.columnHigh = lastColumn
    } else if box.maxLongitude >= 180 {
      // A query at longitude 180 looks in column 0 (the same meridian as -180).
      p.wrapColumnHigh = 0
    }
    if p.wrapColumnHigh >= 0 && p.wrapColumnHigh >= p.columnLow - 1 {
      p.columnLow = 0
      p.columnHigh = lastColumn
      p.wrapColumnHigh = -1
    }
    return p
  }

  /// Builds the whole structure (see ``init(regions:cellSizeDegrees:)``).
  internal static func build(regions: [CircularRegion], cellSizeDegrees: Double?) -> GridIndex {
    let grid = CellGrid(
      edgeDegrees: finestEdge(regions: regions, cellSizeDegrees: cellSizeDegrees))
    var keys: [UInt64] = []
    var slots: [UInt32] = []
    keys.reserveCapacity(regions.count * 2)
    slots.reserveCapacity(regions.count * 2)
    var everywhere: [UInt32] = []
    var nonEmptyLevels: UInt64 = 0
    for (i, region) in regions.enumerated() {
      let slot = UInt32(truncatingIfNeeded: i)
      let p = placement(of: region, in: grid)
      if p.level < 0 {
        everywhere.append(slot)
        continue
      }
      nonEmptyLevels |= 1 &<< UInt64(p.level)
      for row in p.rowLow...p.rowHigh {
        for column in p.columnLow...p.columnHigh {
          keys.append(CellGrid.key(level: p.level, row: row, column: column))
          slots.append(slot)
        }
        if p.wrapColumnHigh >= 0 {
          for column in 0...p.wrapColumnHigh {
            keys.append(CellGrid.key(level: p.level, row: row, column: column))
            slots.append(slot)
          }
        }
      }
    }
    radixSort(keys: &keys, values: &slots)

    // Runs of equal keys become cells.
    var runCount = 0
    var previous = CellSlot.emptyKey
    for key in keys where key != previous {
      runCount += 1
      previous = key
    }
    var capacity = 4
    while capacity < 2 * runCount { capacity *= 2 }
    var table = [CellSlot](
      repeating: CellSlot(key: CellSlot.emptyKey, start: 0, count: 0),
      count: runCount == 0 ? 0 : capacity)
    let mask = table.count - 1
    var start = 0
    while start < keys.count {
      let key = keys[start]
      var end = start + 1
      while end < keys.count && keys[end] == key { end += 1 }
      var h = CellSlot.hash(key) & mask
      while table[h].key != CellSlot.emptyKey { h = (h + 1) & mask }
      table[h] = CellSlot(
        key: key, start: UInt32(truncatingIfNeeded: start),
        count: UInt32(truncatingIfNeeded: end - start))
      start = end
    }
    keys = []
    slots.shrinkToFitIfNeeded()
    everywhere.shrinkToFitIfNeeded()
    return GridIndex(
      regions: regions, grid: grid, nonEmptyLevels: nonEmptyLevels, cells: table,
      usedCellCount: runCount, entries: slots, everywhere: everywhere)
  }

  /// Stable least-significant-digit radix sort of `keys`, permuting `values` alongside, with
  /// 16-bit digits; digits that are equal in every key are skipped.
  /// - Complexity: O(n) per non-constant digit (at most 4), plus 2^16 counters per digit.
  internal static func radixSort(keys: inout [UInt64], values: inout [UInt32]) {
    let n = keys.count
    if n < 2 { return }
    var counts = [Int](repeating: 0, count: 4 << 16)
    keys.withUnsafeBufferPointer { k in
      counts.withUnsafeMutableBufferPointer { c in
        for key in k {
          c[Int(key & 0xffff)] += 1
          c[(1 << 16) + Int((key >> 16) & 0xffff)] += 1
          c[(2 << 16) + Int((key >> 32) & 0xffff)] += 1
          c[(3 << 16) + Int(key >> 48)] += 1
        }
      }
    }
    var keyScratch = [UInt64](repeating: 0, count: n)
    var valueScratch = [UInt32](repeating: 0, count: n)
    for digit in 0..<4 {
      let base = digit << 16
      let shift = UInt64(digit * 16)
      let firstDigit = Int((keys[0] >> shift) & 0xffff)
      if counts[base + firstDigit] == n { continue }
      var offsets = [Int](repeating: 0, count: 1 << 16)
      var sum = 0
      for d in 0..<(1 << 16) {
        offsets[d] = sum
        sum += counts[base + d]
      }
      keys.withUnsafeBufferPointer { srcK in
        values.withUnsafeBufferPointer { srcV in
          keyScratch.withUnsafeMutableBufferPointer { dstK in
            valueScratch.withUnsafeMutableBufferPointer { dstV in
              offsets.withUnsafeMutableBufferPointer { o in
                for i in 0..<n {
                  let key = srcK[i]
                  let d = Int((key >> shift) & 0xffff)
                  let at = o[d]
                  o[d] = at + 1
                  dstK[at] = key
                  dstV[at] = srcV[i]
                }
              }
            }
          }
        }
      }
      swap(&keys, &keyScratch)
      swap(&values, &valueScratch)
    }
  }
}

extension Array {
  /// Drops spare capacity when it exceeds an eighth of the count.
  fileprivate mutating func shrinkToFitIfNeeded() {
    if capacity - count > count / 8 + 16 { self = Array(self) }
  }
}
