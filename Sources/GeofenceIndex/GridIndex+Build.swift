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

/// The quarter rows and columns (``CellGrid/quarterRow(latitude:)``) a filing box reaches, for
/// the quarter masks of its entries (see ``GridIndex/entries``). Every query point in the box
/// has its quarter row in `rowLow ... rowHigh` and its quarter column in `columnLow ...
/// columnHigh` or, for the part of the box filed in columns `0 ... wrapColumnHigh` of its
/// placement, in `0 ... wrapHigh`: the quarter functions are monotone and are the ones the
/// query uses (a query at longitude 180 is in quarter column 0).
internal struct QuarterSpan {
  var rowLow: Int
  var rowHigh: Int
  var columnLow: Int
  var columnHigh: Int
  /// The highest quarter column of the wrapped part (columns from 0), or -1 when none.
  var wrapHigh: Int

  /// The span of `box` (nil: the everywhere list, never filed) filed at placement `p`.
  init?(box: BoundingBox?, placement p: Placement, grid: CellGrid) {
    guard let box, p.level >= 0 else { return nil }
    rowLow = grid.quarterRow(latitude: box.minLatitude)
    rowHigh = grid.quarterRow(latitude: box.maxLatitude)
    let last = grid.columns &* 4 &- 1
    columnLow = grid.quarterColumn(longitude: box.minLongitude)
    columnHigh = grid.quarterColumn(longitude: box.maxLongitude)
    wrapHigh = -1
    if box.wrapsAntimeridian {
      // [minLongitude, 180] ∪ [-180, maxLongitude]
      wrapHigh = columnHigh
      columnHigh = last
    } else if box.maxLongitude >= 180 {
      // A query at longitude 180 is in quarter column 0.
      wrapHigh = 0
    }
    if p.wrapColumnHigh < 0 && wrapHigh >= 0 {
      // The placement merged the two parts into every column: so do the quarters.
      columnLow = 0
      columnHigh = last
      wrapHigh = -1
    }
  }

  /// The quarter bits (bit `k` for quarter `k` of the cell) of `low ... high` in cell `cell`
  /// of `level`; all four when the range misses the cell (not expected; a superset is safe).
  static func bits(low: Int, high: Int, cell: Int, level: Int) -> UInt32 {
    let cellLow = cell &<< (level &+ 2)
    let cellHigh = cellLow &+ (1 &<< (level &+ 2)) &- 1
    let lo = max(low, cellLow)
    let hi = min(high, cellHigh)
    guard lo <= hi else { return 0xF }
    let first = (lo &>> level) & 3
    let last = (hi &>> level) & 3
    return UInt32(truncatingIfNeeded: ((1 &<< (last &+ 1)) &- 1) & ~((1 &<< first) &- 1))
  }

  /// The row bits of the box in row `row` of `level`.
  func rowBits(row: Int, level: Int) -> UInt32 {
    QuarterSpan.bits(low: rowLow, high: rowHigh, cell: row, level: level)
  }

  /// The column bits of the box in column `column` of `level`, of the wrapped part (columns
  /// `0 ... wrapColumnHigh` of the placement) or the main one.
  func columnBits(column: Int, level: Int, wrapped: Bool) -> UInt32 {
    wrapped
      ? QuarterSpan.bits(low: 0, high: wrapHigh, cell: column, level: level)
      : QuarterSpan.bits(low: columnLow, high: columnHigh, cell: column, level: level)
  }
}

extension GridIndex {
  /// The grid for `cellSizeDegrees` (see ``init(regions:cellSizeDegrees:)``).
  ///
  /// An explicit size gives square cells (in degrees). `nil` (or NaN) looks at a sample of up to
  /// 65,536 regions: the column aspect is the median ratio of longitude span to latitude span of
  /// their boxes (clamped to [1, 16]; 1/cos(latitude) for a single-latitude set), and the
  /// finest edge is `edgePerSpan` times the smallest box span measured in cell units.
  internal static func grid<Boxes: RandomAccessCollection<BoundingBox?>>(
    boxes: Boxes, cellSizeDegrees: Double?, edgePerSpan: Double
  ) -> CellGrid where Boxes.Index == Int {
    func clamped(_ edge: Double) -> Double {
      min(maximumCellSizeDegrees, max(minimumCellSizeDegrees, edge))
    }
    if let requested = cellSizeDegrees, !requested.isNaN {
      return CellGrid(edgeDegrees: clamped(requested), edgePerSpan: edgePerSpan)
    }
    let step = max(1, boxes.count / 65_536)
    var spans: [(latitude: Double, longitude: Double)] = []
    var i = 0
    while i < boxes.count {
      let filed = boxes[i]
      i += step
      guard let box = filed else { continue }
      let latitudeSpan = box.maxLatitude - box.minLatitude
      if box.coversAllLongitudes || !(latitudeSpan > 0) { continue }
      spans.append((latitudeSpan, box.longitudeSpan))
    }
    guard !spans.isEmpty else { return CellGrid(edgeDegrees: 1, edgePerSpan: edgePerSpan) }
    var ratios = spans.map { $0.longitude / $0.latitude }
    ratios.sort()
    let aspect = min(16, max(1, ratios[ratios.count / 2]))
    var smallest = Double.infinity
    for s in spans { smallest = min(smallest, max(s.latitude, s.longitude / aspect)) }
    return CellGrid(
      edgeDegrees: clamped(edgePerSpan * smallest), columnAspect: aspect, edgePerSpan: edgePerSpan)
  }

  /// Where `region` is filed in `grid`. Pure function of the region and the grid.
  ///
  /// - Parameter forcedLevel: file at this level (at most the natural one) instead of the
  ///   natural level; `nil` for the grid's rule (natural level, raised to
  ///   ``CellGrid/minimumLevel``, lowered to it for ``CellGrid/replicatedLevels``).
  internal static func placement(
    of region: CircularRegion, in grid: CellGrid, forcedLevel: Int? = nil
  ) -> Placement {
    placement(of: Disc(region), in: grid, forcedLevel: forcedLevel)
  }

  /// Where the region with refine record `disc` is filed: the box comes from the record alone
  /// (``Disc/centerCoordinate`` and ``Disc/angularRadius``), so the index needs no other copy of the
  /// geometry to build or rebuild.
  internal static func placement(
    of disc: Disc, in grid: CellGrid, forcedLevel: Int? = nil
  ) -> Placement {
    placement(box: filingBox(of: disc), in: grid, forcedLevel: forcedLevel)
  }

  /// The box a region is filed by, or `nil` for the everywhere list: a sphere-covering disc,
  /// a non-finite centre (an unchecked NaN coordinate), a box covering all longitudes or
  /// within ``polarMarginDegrees`` of a pole. Also for a removed record (its region's box).
  /// - Complexity: O(1), five inverse or direct trigonometric calls.
  internal static func filingBox(of disc: Disc) -> BoundingBox? {
    if disc.coversSphere { return nil }
    guard let center = disc.centerCoordinate else { return nil }
    let box = disc.boundingBox(around: center)
    if box.coversAllLongitudes || !(box.maxLatitude < 90 - polarMarginDegrees)
      || !(box.minLatitude > -90 + polarMarginDegrees)
    {
      return nil
    }
    return box
  }

  /// Where a region with filing box `box` (``filingBox(of:)``) is filed in `grid`.
  internal static func placement(
    box filing: BoundingBox?, in grid: CellGrid, forcedLevel: Int? = nil
  ) -> Placement {
    guard let box = filing else { return .everywhere }
    let span = max(box.maxLatitude - box.minLatitude, box.longitudeSpan / grid.columnAspect)
    let needed = span * grid.edgePerSpan
    guard needed <= grid.edge(level: grid.levelCount - 1) else { return .everywhere }
    var level = grid.minimumLevel
    var edge = grid.edge(level: level)
    while edge < needed {
      edge *= 2
      level += 1
    }
    if let forced = forcedLevel {
      level = min(level, forced)
    } else if grid.replicatedLevels & (1 &<< UInt64(level)) != 0 {
      level = grid.minimumLevel
    } else {
      // Above the floor: the finest level whose edge is still >= upperEdgePerSpan spans (at
      // most two levels finer at 0.5, as the natural edge is under 3 spans).
      while level > grid.minimumLevel && 0.5 * edge >= span * grid.upperEdgePerSpan {
        level -= 1
        edge *= 0.5
      }
      level = min(level, grid.ceilingLevel)
    }
    return cells(of: box, level: level, in: grid)
  }

  /// The cells of `level` that `box` touches: the placement of a region with that filing box
  /// at exactly that level.
  internal static func cells(of box: BoundingBox, level: Int, in grid: CellGrid) -> Placement {
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

  /// ``CellGrid/upperEdgePerSpan`` of a built index: a region above the floor goes to the
  /// finest level, never below the floor, whose cell is at least half its box span (0.5
  /// against the 1.5 of ``defaultEdgePerSpan``): at most two levels finer. Its box then
  /// touches at most 3 × 3 cells (3 × 4 split by the antimeridian), and a query at the
  /// regions' levels scans candidates from a cell at most about twice a box instead of up to
  /// 3 times: on the dense 100,000-region sets a quarter to a third fewer instructions a
  /// query, for up to about 8 more bytes a region (metro 1M: 48.7 → 56.9 B). Sparse sets,
  /// whose regions all sit on the floor, are unchanged.
  internal static let upperEdgePerSpan: Double = 0.5

  /// Regions per occupied home cell above which folding a level into a coarser one is not worth
  /// the saved probe (see ``chooseMinimumLevels(_:in:)``).
  internal static let foldedDensityLimit: Double = 4

  /// The density limit of the finer floor that a build tries first (see
  /// ``chooseMinimumLevels(_:in:)``): fewer candidates a cell, more cells.
  internal static let compactFoldedDensityLimit: Double = 1.5

  /// Index plus geometry bytes per region that the finer floor may cost, plus
  /// ``finerFloorBudgetExtraBytes``; above it the build uses the coarser floor (the documented
  /// bound is 64 bytes a region at 1,000,000 regions).
  internal static let finerFloorBudgetBytesPerRegion = 62

  /// Fixed bytes the finer floor may cost beyond ``finerFloorBudgetBytesPerRegion`` per region
  /// (1 MiB: a world-wide set of a few ten thousand regions pays about 18 bytes a region for
  /// its occupancy bits).
  internal static let finerFloorBudgetExtraBytes = 1 << 20

  /// The finest level regions may be filed at, chosen so that a query probes few levels
  /// without scanning many more candidates: `floor` for the density limit
  /// ``foldedDensityLimit`` and `finer` (<= `floor`) for ``compactFoldedDensityLimit``.
  ///
  /// For each candidate floor `L` (finest first) every region's home cell is computed at
  /// `max(its own level, L)`, and the density `regions / distinct home cells` measured; each
  /// result is the coarsest `L` whose density (and that of every finer floor) stays within
  /// `max(limit, 1.25 · density(0))`. Sparse sets (global, mixed) fold into one or two levels;
  /// dense city sets, whose density grows at once, keep their levels. Filing coarser never
  /// costs entries: a box at most two thirds of a cell touches at most 2 × 2 cells at any
  /// coarser level.
  /// - Complexity: O(n) per candidate level (a radix sort of n keys), at most `levelCount`;
  ///   the placements and keys on ``BuildThreads``.
  internal static func chooseMinimumLevels<Boxes: RandomAccessCollection<BoundingBox?>>(
    _ boxes: Boxes, in grid: CellGrid
  ) -> (floor: Int, finer: Int) where Boxes.Index == Int {
    // Each filed region's level and home cell, the cell given by its level-0 row and column
    // (``CellGrid/key(level:row:column:)``), a part of the regions at a time: part p's keys
    // from the start of its range on, in an array made on this thread (a worker thread
    // allocates nothing: see ``BuildThreads``).
    var natural = [UInt64](repeating: 0, count: boxes.count)
    let parts = natural.withUnsafeMutableBufferPointer { natural in
      let natural = natural
      return BuildThreads.map(count: boxes.count) { range in
        var count = 0
        var finest = Int.max
        var coarsest = -1
        for i in range {
          let p = placement(box: boxes[boxes.startIndex + i], in: grid)
          guard p.level >= 0 else { continue }
          natural[range.lowerBound + count] = CellGrid.key(
            level: p.level, row: p.rowLow << p.level, column: p.columnLow << p.level)
          count += 1
          finest = min(finest, p.level)
          coarsest = max(coarsest, p.level)
        }
        return (start: range.lowerBound, count: count, finest: finest, coarsest: coarsest)
      }
    }
    let finest = parts.map(\.finest).min() ?? Int.max
    let coarsest = parts.map(\.coarsest).max() ?? -1
    var starts = [0]
    for part in parts { starts.append(starts[starts.count - 1] + part.count) }
    let filed = starts[starts.count - 1]
    guard filed > 1, coarsest > finest else { return (0, 0) }
    var keys = [UInt64](repeating: 0, count: filed)
    func density(floor: Int) -> Double {
      keys.withUnsafeMutableBufferPointer { out in
        let out = out
        _ = BuildThreads.perform(parts.count) { p in
          for k in 0..<parts[p].count {
            let key = natural[parts[p].start + k]
            let level = max(Int(key >> 58), floor)
            let row = Int((key >> 29) & 0x1FFF_FFFF)
            let column = Int(key & 0x1FFF_FFFF)
            out[starts[p] + k] = CellGrid.key(
              level: level, row: row >> level, column: column >> level)
          }
        }
      }
      radixSort(keys: &keys)
      var distinct = 1
      for i in 1..<keys.count where keys[i] != keys[i - 1] { distinct += 1 }
      return Double(keys.count) / Double(distinct)
    }
    let base = 1.25 * density(floor: finest)
    let limit = max(foldedDensityLimit, base)
    let compactLimit = min(limit, max(compactFoldedDensityLimit, base))
    var chosen = 0
    var finer = 0
    var finerOpen = true
    for floor in (finest + 1)...coarsest {
      let d = density(floor: floor)
      if d > limit { break }
      chosen = floor
      if finerOpen && d <= compactLimit { finer = floor } else { finerOpen = false }
    }
    return (chosen, finer)
  }

  /// `grid` with minimum level `floor` and the replicated levels chosen for it within
  /// `allowance` added entries (default ``replicationAllowance(regionCount:)``).
  internal static func folded<Boxes: RandomAccessCollection<BoundingBox?>>(
    _ grid: CellGrid, floor: Int, boxes: Boxes, allowance: Int? = nil
  ) -> CellGrid where Boxes.Index == Int {
    let g = grid.with(minimumLevel: floor)
    return g.with(
      minimumLevel: floor,
      replicatedLevels: chooseReplicatedLevels(
        boxes, in: g, allowance: allowance ?? replicationAllowance(regionCount: boxes.count)))
  }

  /// The levels regions are filed at in `grid`, as bits. O(n) placements, on
  /// ``BuildThreads``.
  internal static func filedLevels<Boxes: RandomAccessCollection<BoundingBox?>>(
    _ boxes: Boxes, in grid: CellGrid
  ) -> UInt64 where Boxes.Index == Int {
    BuildThreads.map(count: boxes.count) { range in
      var levels: UInt64 = 0
      for i in range {
        let level = placement(box: boxes[boxes.startIndex + i], in: grid).level
        if level >= 0 { levels |= 1 &<< UInt64(level) }
      }
      return levels
    }.reduce(0, |)
  }

  /// Extra entries that replicating coarse levels into the minimum level may add:
  /// `n / 2 + 4,096` (at most 2 bytes a region plus 16 KiB).
  internal static func replicationAllowance(regionCount n: Int) -> Int { n / 2 + 4_096 }

  /// Index plus geometry bytes per region that a build may spend on replicating more coarse
  /// levels into the floor than ``replicationAllowance(regionCount:)`` allows (see
  /// ``replicatingWithinBudget(_:discs:boxes:live:quarterMasks:)``): 62, under the documented
  /// bound of 64 bytes a region, with no fixed extra, so that it holds at every size.
  internal static let replicationBudgetBytesPerRegion = 62

  /// The levels above `grid.minimumLevel` whose regions are filed at the minimum level instead
  /// (``CellGrid/replicatedLevels``), so that a query probes fewer levels.
  ///
  /// Filing a region at a finer level puts it in more cells but never adds candidates to a
  /// query (the finer cells are inside the coarse one). Levels are taken cheapest first (by
  /// the entries they add) while the added entries stay within ``replicationAllowance``. A
  /// sparse set with a few large or near-polar regions on many coarse levels (the global set:
  /// 8 levels at 1,000,000 regions) ends with one or two.
  /// - Complexity: O(n) placements, on ``BuildThreads``.
  internal static func chooseReplicatedLevels<Boxes: RandomAccessCollection<BoundingBox?>>(
    _ boxes: Boxes, in grid: CellGrid, allowance total: Int
  ) -> UInt64 where Boxes.Index == Int {
    let floor = grid.minimumLevel
    var added = [Int](repeating: 0, count: grid.levelCount)
    var present: UInt64 = 0
    let parts = BuildThreads.map(count: boxes.count) { range in
      var added = [Int](repeating: 0, count: grid.levelCount)
      var present: UInt64 = 0
      for i in range {
        let box = boxes[boxes.startIndex + i]
        let p = placement(box: box, in: grid)
        guard p.level > floor else { continue }
        present |= 1 &<< UInt64(p.level)
        added[p.level] +=
          placement(box: box, in: grid, forcedLevel: floor).cellCount - p.cellCount
      }
      return (present, added)
    }
    for part in parts {
      present |= part.0
      for level in 0..<grid.levelCount { added[level] += part.1[level] }
    }
    var candidates: [(level: Int, added: Int)] = []
    for level in 0..<grid.levelCount where present & (1 &<< UInt64(level)) != 0 {
      candidates.append((level, added[level]))
    }
    candidates.sort { ($0.added, $0.level) < ($1.added, $1.level) }
    var allowance = total
    var replicated: UInt64 = 0
    for c in candidates where c.added <= allowance {
      allowance -= c.added
      replicated |= 1 &<< UInt64(c.level)
    }
    return replicated
  }

  /// Sorts removed slots after every cell and before the everywhere list.
  internal static let removedHomeKey: UInt64 = .max - 1

  /// The id of the first cell (lowest row, lowest column) a placement files into, or
  /// `UInt64.max` for the everywhere list: the order in which regions are stored.
  internal static func homeKey(_ p: Placement) -> UInt64 {
    p.level < 0
      ? UInt64.max : CellGrid.key(level: p.level, row: p.rowLow, column: p.columnLow)
  }

  /// Builds the whole structure (see ``init(regions:cellSizeDegrees:)``).
  ///
  /// 1. Every region's placement gives a home cell; refine records are stored in home-cell order
  ///    (ties by slot), everywhere-list regions last, so that the regions filed in one cell
  ///    occupy a few contiguous runs of storage.
  /// 2. Every (cell, storage index) pair is generated in storage order and radix-sorted by cell
  ///    (stably), giving each cell's run of `entries` in increasing storage order.
  /// 3. Runs become positions of a dense level or slots of the open-addressing cell table
  ///    (``CellLayout``).
  ///
  /// `regions` are the refine records in slot order (given, or computed from packed circles). Removed slots (``Disc/isRemoved``, from
  /// ``remove(at:)``) are stored between the filed regions and the everywhere list, and are
  /// filed nowhere. `upper` is the built grid's ``CellGrid/upperEdgePerSpan`` (tests use
  /// `edgePerSpan` to file every region at its natural level). `quarterMasks` (tests) turns the
  /// entries' quarter masks off; they are on whenever the storage indices fit
  /// (``hasQuarterMasks(regionCount:)``).
  internal static func build(
    discs: [Disc], cellSizeDegrees: Double?, edgePerSpan: Double = defaultEdgePerSpan,
    upperEdgePerSpan upper: Double = upperEdgePerSpan, quarterMasks: Bool = true
  ) -> GridIndex {
    build(
      discs: DiscSource(discs: discs), cellSizeDegrees: cellSizeDegrees,
      edgePerSpan: edgePerSpan, upperEdgePerSpan: upper, quarterMasks: quarterMasks)
  }

  internal static func build(
    discs regions: DiscSource, cellSizeDegrees: Double?,
    edgePerSpan: Double = defaultEdgePerSpan, upperEdgePerSpan upper: Double = upperEdgePerSpan,
    quarterMasks: Bool = true
  ) -> GridIndex {
    let masked = quarterMasks && hasQuarterMasks(regionCount: regions.count)
    // Each region's filing box, computed once (removed slots: none, they are filed nowhere).
    let boxes = FilingBoxes(count: regions.count) { i in
      regions.isRemoved(i) ? nil : filingBox(of: regions[i])
    }
    var live = boxes
    if regions.hasRemoved {
      live = FilingBoxes()
      for i in 0..<regions.count where !regions.isRemoved(i) { live.append(boxes[i]) }
    }
    let grid = grid(boxes: live, cellSizeDegrees: cellSizeDegrees, edgePerSpan: edgePerSpan)
    if cellSizeDegrees == nil || cellSizeDegrees?.isNaN == true {
      let floors = chooseMinimumLevels(live, in: grid)
      let coarse = folded(grid, floor: floors.floor, boxes: live)
      if floors.finer < floors.floor {
        // The finer floor, when it probes no more levels and fits the memory budget.
        let fine = folded(grid, floor: floors.finer, boxes: live)
        let fineLevels = filedLevels(live, in: fine).nonzeroBitCount
        if fineLevels <= filedLevels(live, in: coarse).nonzeroBitCount {
          let trial = assemble(
            discs: regions, boxes: boxes, grid: fine.with(upperEdgePerSpan: upper),
            cellSizeDegrees: cellSizeDegrees, quarterMasks: masked)
          let budget = finerFloorBudgetBytesPerRegion * regions.count + finerFloorBudgetExtraBytes
          if trial.memoryFootprintBytes <= budget {
            return replicatingWithinBudget(
              trial, discs: regions, boxes: boxes, live: live, quarterMasks: masked)
          }
        }
      }
      return replicatingWithinBudget(
        assemble(
          discs: regions, boxes: boxes, grid: coarse.with(upperEdgePerSpan: upper),
          cellSizeDegrees: cellSizeDegrees, quarterMasks: masked),
        discs: regions, boxes: boxes, live: live, quarterMasks: masked)
    }
    return assemble(
      discs: regions, boxes: boxes, grid: grid.with(upperEdgePerSpan: upper),
      cellSizeDegrees: cellSizeDegrees, quarterMasks: masked)
  }

  /// `index` (a folded build that probes more than one level), or the same regions rebuilt
  /// with more of its coarse levels replicated into its floor when that probes fewer levels
  /// and stays within ``replicationBudgetBytesPerRegion``.
  ///
  /// The bytes `index` leaves under the budget buy entries (4 bytes each) beyond
  /// ``replicationAllowance(regionCount:)``; ``chooseReplicatedLevels(_:in:allowance:)`` takes
  /// levels cheapest first within them. A replicated region sits in finer cells inside the
  /// coarse cell it had, so a query scans no more candidates and probes one level fewer per
  /// replicated level: on a regional set of mostly small regions with a few large ones (20 m –
  /// 50 km), the large ones' levels fold into the floor. The rebuilt index is kept only when
  /// its measured footprint fits the budget.
  /// - Complexity: O(n) placements, plus one more assembly when a level is added.
  internal static func replicatingWithinBudget(
    _ index: GridIndex, discs regions: DiscSource, boxes: FilingBoxes, live: FilingBoxes,
    quarterMasks masked: Bool
  ) -> GridIndex {
    let levels = index.nonEmptyLevels.nonzeroBitCount
    guard levels > 1 else {
      return finerFloorWithinBudget(
        index, discs: regions, boxes: boxes, live: live, quarterMasks: masked)
    }
    let budget = replicationBudgetBytesPerRegion * regions.count
    let spare = budget - index.memoryFootprintBytes
    guard spare > 0 else { return index }
    let built = index.grid
    // The grid the replicated levels are chosen on: every region at its 1.5-span level.
    let natural = built.with(upperEdgePerSpan: built.edgePerSpan)
    let allowance = replicationAllowance(regionCount: live.count) + spare / 4
    let wider = folded(natural, floor: built.minimumLevel, boxes: live, allowance: allowance)
    guard wider.replicatedLevels & ~built.replicatedLevels != 0 else {
      return ceilingWithinBudget(
        index, discs: regions, boxes: boxes, live: live, quarterMasks: masked)
    }
    let trial = assemble(
      discs: regions, boxes: boxes, grid: wider.with(upperEdgePerSpan: built.upperEdgePerSpan),
      cellSizeDegrees: nil, quarterMasks: masked)
    guard trial.nonEmptyLevels.nonzeroBitCount < levels,
      trial.memoryFootprintBytes <= budget
    else {
      return ceilingWithinBudget(
        index, discs: regions, boxes: boxes, live: live, quarterMasks: masked)
    }
    return ceilingWithinBudget(
      trial, discs: regions, boxes: boxes, live: live, quarterMasks: masked)
  }

  /// `index` (a folded build that probes one level), or the same regions rebuilt on the floor
  /// one level finer, with every coarser level replicated into it, when that still probes one
  /// level, stays within ``replicationBudgetBytesPerRegion`` and finds its cell no slower
  /// (``lookupKind``; a world-wide set of 100,000 regions whose finer level would be ranked
  /// instead of stored by position ran 0.74–0.87 × as fast): cells a quarter the area hold
  /// fewer candidates a query. Sets of a few ten thousand city regions take it; denser or
  /// world-wide sets, whose finer floor costs more than the budget, keep theirs.
  /// - Complexity: O(n) placements, plus one more assembly when the levels fit.
  internal static func finerFloorWithinBudget(
    _ index: GridIndex, discs regions: DiscSource, boxes: FilingBoxes, live: FilingBoxes,
    quarterMasks masked: Bool
  ) -> GridIndex {
    let built = index.grid
    guard index.nonEmptyLevels.nonzeroBitCount == 1, built.minimumLevel > 0,
      built.ceilingLevel == .max
    else { return index }
    let budget = replicationBudgetBytesPerRegion * regions.count
    let spare = budget - index.memoryFootprintBytes
    guard spare > 0 else { return index }
    let natural = built.with(upperEdgePerSpan: built.edgePerSpan)
    // The entries of `index` move to the finer floor, so the allowance counts them too.
    let allowance = index.entries.count + spare / 4
    let finer = folded(natural, floor: built.minimumLevel - 1, boxes: live, allowance: allowance)
      .with(upperEdgePerSpan: built.upperEdgePerSpan)
    guard filedLevels(live, in: finer).nonzeroBitCount == 1 else { return index }
    let trial = assemble(
      discs: regions, boxes: boxes, grid: finer, cellSizeDegrees: nil, quarterMasks: masked)
    guard trial.nonEmptyLevels.nonzeroBitCount == 1, trial.memoryFootprintBytes <= budget,
      trial.lookupKind <= index.lookupKind
    else { return index }
    return trial
  }

  /// How a query finds its cell in an index that probes one level: 0 by position in a dense
  /// level, 1 by rank (an occupancy word and a population count), 2 by hashing.
  internal var lookupKind: Int {
    soleLevel < 0 ? 2 : (soleTable.wordBase < 0 ? 0 : 1)
  }

  /// `index`, or the same regions rebuilt with a ``CellGrid/ceilingLevel``: the levels above
  /// the floor from the finest one whose regions, with those of every coarser level, fit the
  /// bytes left under ``replicationBudgetBytesPerRegion`` when filed at it. A query then probes
  /// that level instead of it and all the coarser ones, and a large region sits in cells
  /// smaller than its box, so fewer of its cell's candidates miss the point.
  /// - Complexity: O(n) placements per level tried, plus one more assembly when one fits.
  internal static func ceilingWithinBudget(
    _ index: GridIndex, discs regions: DiscSource, boxes: FilingBoxes, live: FilingBoxes,
    quarterMasks masked: Bool
  ) -> GridIndex {
    let built = index.grid
    let levels = index.nonEmptyLevels.nonzeroBitCount
    var upper = index.nonEmptyLevels & ~((2 &<< UInt64(built.minimumLevel)) &- 1)
    guard upper.nonzeroBitCount > 1, built.ceilingLevel == .max else { return index }
    let budget = replicationBudgetBytesPerRegion * regions.count
    let spare = budget - index.memoryFootprintBytes
    guard spare > 0 else { return index }
    // Entries each candidate ceiling adds, against the filing of `index`.
    var current = [Int](repeating: 0, count: built.levelCount)
    for part in BuildThreads.map(
      count: live.count,
      { range in
        var entries = [Int](repeating: 0, count: built.levelCount)
        for i in range {
          let p = placement(box: live[i], in: built)
          if p.level > built.minimumLevel { entries[p.level] += p.cellCount }
        }
        return entries
      })
    {
      for level in 0..<built.levelCount { current[level] += part[level] }
    }
    while upper.nonzeroBitCount > 1 {
      let ceiling = upper.trailingZeroBitCount
      upper &= upper &- 1
      let capped = built.with(ceilingLevel: ceiling)
      var added = BuildThreads.map(count: live.count) { range in
        var added = 0
        for i in range {
          let p = placement(box: live[i], in: capped)
          if p.level == ceiling { added += p.cellCount }
        }
        return added
      }.reduce(0, +)
      for level in ceiling..<built.levelCount { added -= current[level] }
      guard added <= spare / 4 else { continue }
      let trial = assemble(
        discs: regions, boxes: boxes, grid: capped, cellSizeDegrees: nil, quarterMasks: masked)
      if trial.nonEmptyLevels.nonzeroBitCount < levels && trial.memoryFootprintBytes <= budget {
        return trial
      }
    }
    return index
  }

  /// Files `regions` (refine records in slot order, with their filing boxes) in `grid`, the
  /// folded grid with the built index's ``CellGrid/upperEdgePerSpan``: steps 1 to 4 of
  /// ``build(discs:cellSizeDegrees:edgePerSpan:upperEdgePerSpan:quarterMasks:)``, with quarter
  /// masks in the entries when `quarterMasks`.
  private static func assemble(
    discs regions: DiscSource, boxes: FilingBoxes, grid: CellGrid, cellSizeDegrees: Double?,
    quarterMasks masked: Bool
  ) -> GridIndex {
    let n = regions.count

    // 1. Storage order, and the entries each row of each level will hold; a part of the
    //    slots at a time on ``BuildThreads``, each part's counts added in part order.
    var homeKeys = [UInt64](repeating: 0, count: n)
    let parts = homeKeys.withUnsafeMutableBufferPointer { keys in
      let keys = keys
      return BuildThreads.map(count: n) { range in
        var counts = FilingCounts(levelCount: grid.levelCount)
        for i in range {
          if regions.isRemoved(i) {
            keys[i] = removedHomeKey
            continue
          }
          let p = placement(box: boxes[i], in: grid)
          keys[i] = homeKey(p)
          counts.add(p, in: grid)
        }
        return counts
      }
    }
    var counts = FilingCounts(levelCount: grid.levelCount)
    for part in parts { counts.merge(part) }
    var rowEntries = counts.rowEntries
    let rowHomes = counts.rowHomes
    let rowSpan = counts.rowSpan
    let entryTotal = counts.entryTotal
    let nonEmptyLevels = counts.nonEmptyLevels
    var slotOfStored = (0..<n).map { UInt32(truncatingIfNeeded: $0) }
    radixSortInPlace(keys: &homeKeys, values: &slotOfStored)
    var everywhereStart = n
    while everywhereStart > 0 && homeKeys[everywhereStart - 1] == UInt64.max {
      everywhereStart -= 1
    }
    var filedEnd = everywhereStart
    while filedEnd > 0 && homeKeys[filedEnd - 1] == removedHomeKey { filedEnd -= 1 }
    homeKeys = []
    let discs = regions.records(of: slotOfStored)

    // 2. (cell, storage index) pairs, grouped by cell: made band by band (a band is a range
    //    of cell keys, whole rows of a level), each band sorted in place and reduced to its
    //    runs of equal keys, so that no array of every entry's key is held at once.
    let (bands, largestBand) = keyBands(rowEntries: rowEntries, entryTotal: entryTotal)
    rowEntries = []
    // Filed regions are stored by (level, first row, first column): the first storage index
    // of each level's regions whose first row is `row` or later, at `row` (one more at the end).
    var firstStored = [[Int]](repeating: [], count: grid.levelCount)
    var stored = 0
    for level in 0..<grid.levelCount where !rowHomes[level].isEmpty {
      var starts = [Int](repeating: 0, count: rowHomes[level].count + 1)
      for (row, count) in rowHomes[level].enumerated() {
        starts[row] = stored
        stored += count
      }
      starts[rowHomes[level].count] = stored
      firstStored[level] = starts
    }
    var entries: [UInt32] = []
    entries.reserveCapacity(entryTotal)
    var runs = KeyRuns()
    // The pairs of band `band`, sorted by key: its regions' boxes are read a chunk of storage
    // indices at a time, gathered first (see ``FilingBoxes/gather(_:into:)``).
    func sortPairs(band: Int, into buffers: inout BandBuffers) {
      let low = bands[band]
      let high = bands[band + 1]
      buffers.keys.removeAll(keepingCapacity: true)
      buffers.entries.removeAll(keepingCapacity: true)
      for level in 0..<grid.levelCount where !firstStored[level].isEmpty {
        let starts = firstStored[level]
        let rows = starts.count - 1
        let bandFirst = Swift.max(0, rowInBand(low, level: level, below: false))
        let bandLast = Swift.min(rows - 1, rowInBand(high, level: level, below: true))
        if bandFirst > bandLast { continue }
        // Regions starting up to `rowSpan` rows above the band may reach into it.
        let candidates = starts[Swift.max(0, bandFirst - rowSpan[level])]..<starts[bandLast + 1]
        for i in candidates {
          let k = (i - candidates.lowerBound) % FilingBoxes.gatherChunk
          if k == 0 {
            let end = Swift.min(candidates.upperBound, i + FilingBoxes.gatherChunk)
            boxes.gather(slotOfStored[i..<end], into: &buffers.chunk)
          }
          let box = buffers.chunk[k]
          let p = placement(box: box, in: grid)
          // Rows of the region's level whose keys fall in the band.
          let first = Swift.max(p.rowLow, bandFirst)
          let last = Swift.min(p.rowHigh, bandLast)
          if first > last { continue }
          let index = UInt32(truncatingIfNeeded: i)
          // Without quarter masks every entry is marked as reaching every quarter (no bits).
          let q = masked ? QuarterSpan(box: box, placement: p, grid: grid) : nil
          func entry(row: Int, column: Int, wrapped: Bool) -> UInt32 {
            guard let q else { return index }
            return index | q.rowBits(row: row, level: p.level) &<< 24
              | q.columnBits(column: column, level: p.level, wrapped: wrapped) &<< 28
          }
          for row in first...last {
            for column in p.columnLow...p.columnHigh {
              buffers.keys.append(CellGrid.key(level: p.level, row: row, column: column))
              buffers.entries.append(entry(row: row, column: column, wrapped: false))
            }
            if p.wrapColumnHigh >= 0 {
              for column in 0...p.wrapColumnHigh {
                buffers.keys.append(CellGrid.key(level: p.level, row: row, column: column))
                buffers.entries.append(entry(row: row, column: column, wrapped: true))
              }
            }
          }
        }
      }
      sortByKey(
        &buffers.keys, &buffers.entries, hasValues: true, scratchKeys: &buffers.scratchKeys,
        scratchValues: &buffers.scratchEntries)
    }
    // Bands a few at a time on ``BuildThreads`` (a small index: one at a time), appended in
    // band order.
    // Each part's arrays are made here, large enough for any band, and reused: a worker
    // thread allocates nothing (what it freed would stay in its own malloc arena, raising
    // the process's peak).
    let bandCount = bands.count - 1
    let together = BuildThreads.parts(count: entryTotal)
    var buffers = (0..<together).map { _ in BandBuffers(capacity: largestBand) }
    var band = 0
    buffers.withUnsafeMutableBufferPointer { buffers in
      while band < bandCount {
        let group = Swift.min(together, bandCount - band)
        _ = BuildThreads.perform(group) { sortPairs(band: band + $0, into: &buffers[$0]) }
        for part in 0..<group {
          runs.append(sortedKeys: buffers[part].keys, at: entries.count)
          entries += buffers[part].entries
        }
        band += group
      }
    }
    buffers = []
    runs.total = entries.count

    // 3. Runs of equal keys become cells: dense levels get CSR offsets by position, the
    //    others slots of the hash table.
    let layout = CellLayout(runs: runs, grid: grid, regionCount: n)
    var (offsets, rankWords) = layout.offsets(runs: runs)
    let table = layout.hashTable(runs: runs)
    runs = KeyRuns()
    if entries.count < subcellMaskedEntryLimit {
      // 4. Sub-cell masks of the dense levels, in the offsets' top bits: on two threads, the
      //    stored regions cut where no cell is marked from both parts
      //    (``subcellParts(filedEnd:firstStored:rowSpan:)``), the regions near the cut after.
      let parts = subcellParts(filedEnd: filedEnd, firstStored: firstStored, rowSpan: rowSpan)
      // Made here: a worker thread allocates nothing (see step 2).
      var chunks = (0..<2).map { _ in
        var chunk = FilingBoxes()
        chunk.reserveCapacity(FilingBoxes.gatherChunk)
        return chunk
      }
      offsets.withUnsafeMutableBufferPointer { offsets in
        rankWords.withUnsafeBufferPointer { words in
          let offsets = offsets
          func mark(_ stored: Range<Int>, chunk: inout FilingBoxes) {
            for i in stored {
              let k = (i - stored.lowerBound) % FilingBoxes.gatherChunk
              if k == 0 {
                let end = Swift.min(stored.upperBound, i + FilingBoxes.gatherChunk)
                boxes.gather(slotOfStored[i..<end], into: &chunk)
              }
              guard let box = chunk[k] else { continue }
              let level = placement(box: box, in: grid).level
              layout.markSubcells(of: box, level: level, in: grid, offsets: offsets, words: words)
            }
          }
          chunks.withUnsafeMutableBufferPointer { chunks in
            if parts.count == 1 {
              mark(parts[0], chunk: &chunks[0])
            } else {
              _ = BuildThreads.perform(2) { p in mark(parts[p], chunk: &chunks[p]) }
              mark(parts[2], chunk: &chunks[0])
            }
          }
        }
      }
      layout.markLevelZero(offsets: &offsets)
    }
    var index = GridIndex(
      discs: discs, slotOfStored: slotOfStored, everywhereStart: everywhereStart, grid: grid,
      nonEmptyLevels: nonEmptyLevels, denseLevels: layout.denseLevels,
      levelTables: layout.levelTables, offsets: offsets, rankWords: rankWords, cells: table,
      usedCellCount: layout.cellCount, entries: entries, quarterMasks: masked)
    index.requestedCellSizeDegrees = cellSizeDegrees
    index.filedEnd = filedEnd
    index.removedCount = everywhereStart - filedEnd
    return index
  }

  /// The stored regions `0 ..< filedEnd` in the parts whose sub-cell masks step 4 of
  /// ``assemble`` marks: one part, or three, the first two marked at once (on two threads) and
  /// the third after them. A region marks cells of its own level only, in its rows (home row
  /// to at most `rowSpan[level]` rows below it). The regions are stored by level, then home
  /// row, so a cut at home row `R` of one level leaves every cell that regions before
  /// `R - rowSpan` mark above row `R`, and every one that regions from `R` on mark at row `R`
  /// or below it; the regions between go in the third part.
  /// - Parameters:
  ///   - firstStored: per level, the first storage index of the regions whose home row is
  ///     `row` or later, at `row`, one more at the end (empty for a level without regions).
  ///   - rowSpan: per level, the most rows a region spans beyond its home row.
  /// - Complexity: O(r) in the rows of the level cut.
  internal static func subcellParts(
    filedEnd: Int, firstStored: [[Int]], rowSpan: [Int]
  ) -> [Range<Int>] {
    guard BuildThreads.parts(count: filedEnd) > 1 else { return [0..<filedEnd] }
    let middle = filedEnd / 2
    for (level, starts) in firstStored.enumerated() where !starts.isEmpty {
      guard starts[0] <= middle, middle < starts[starts.count - 1] else { continue }
      // The row of the middle region.
      var row = 0
      while starts[row + 1] <= middle { row += 1 }
      let earlierEnd = starts[Swift.max(0, row - rowSpan[level])]
      let laterStart = starts[row]
      return [0..<earlierEnd, laterStart..<filedEnd, earlierEnd..<laterStart]
    }
    return [0..<filedEnd]
  }

  /// Key boundaries that cut the entries into bands of whole rows, about `entryTotal / 64`
  /// entries each (at least 2^16; a row is never split): the first boundary is 0, the last
  /// `UInt64.max`, and band `b` holds the keys in `bounds[b] ..< bounds[b + 1]`; and the
  /// most entries a band holds.
  /// - Parameter rowEntries: per level, the entries of each row (empty for a level without).
  /// - Complexity: O(r) in the rows of the levels used.
  internal static func keyBands(rowEntries: [[Int]], entryTotal: Int) -> (
    bounds: [UInt64], largest: Int
  ) {
    let target = Swift.max(1 << 16, entryTotal / 64)
    var bounds: [UInt64] = [0]
    var filled = 0
    var largest = 0
    for (level, rows) in rowEntries.enumerated() {
      for (row, count) in rows.enumerated() where count > 0 {
        if filled > 0 && filled + count > target {
          bounds.append(CellGrid.key(level: level, row: row, column: 0))
          largest = Swift.max(largest, filled)
          filled = 0
        }
        filled += count
      }
    }
    bounds.append(.max)
    return (bounds, Swift.max(largest, filled))
  }

  /// The first row of `level` whose keys are at or above `bound` (`below` false), or the last
  /// row whose keys are below it (`below` true); rows run from 0 to 2^29 − 1.
  @inline(__always)
  internal static func rowInBand(_ bound: UInt64, level: Int, below: Bool) -> Int {
    let levelStart = CellGrid.key(level: level, row: 0, column: 0)
    let nextLevel = CellGrid.key(level: level + 1, row: 0, column: 0)
    let rowLimit = 1 << 29
    if bound <= levelStart { return below ? -1 : 0 }
    if bound >= nextLevel || bound == .max { return below ? rowLimit - 1 : rowLimit }
    // Band bounds are row starts (column 0).
    let row = Int((bound >> 29) & UInt64(rowLimit - 1))
    return below ? row - 1 : row
  }

  /// Sorts `keys` in place, permuting `values` alongside: by key, and equal keys by value
  /// (for increasing values in the input, the order ``radixSort(keys:values:)`` gives), with
  /// no copy of either array. The home-cell sort of a build uses it: its n pairs are the
  /// build's largest temporary there, where a scratch copy (12 bytes a region) raised the
  /// peak of a 1,000,000-region load by a tenth. The band and density sorts use
  /// ``radixSort(keys:values:)``.
  ///
  /// A most-significant-digit radix sort on 8-bit digits that permutes in place (the
  /// "American flag" sort), on the 96-bit pair (key, value): the key's digits, then the
  /// value's, so that a run of equal keys (a dense home cell's regions) is ordered by the
  /// same passes. Digits equal in every pair are skipped; ranges of up to 32 pairs are
  /// finished by insertion sort. With ``BuildThreads`` parts, the buckets of the first
  /// digit are sorted on two threads, about half the pairs each.
  /// - Complexity: O(n d) for d non-constant digits (at most 12); 96 KB of counters, no other
  ///   allocation.
  internal static func radixSortInPlace(keys: inout [UInt64], values: inout [UInt32]) {
    let n = keys.count
    precondition(values.count == n, "one value per key")
    if n < 2 { return }
    var allValues: UInt32 = 0
    var commonValues: UInt32 = .max
    for v in values {
      allValues |= v
      commonValues &= v
    }
    let digits = PairDigits(keys: varyingBits(keys), values: allValues ^ commonValues)
    let threads = BuildThreads.parts(count: n)
    // 256 counts and 256 fill positions for each level of recursion, a block a thread.
    var counters = [Int](repeating: 0, count: threads * PairDigits.levels * 512)
    keys.withUnsafeMutableBufferPointer { k in
      values.withUnsafeMutableBufferPointer { v in
        counters.withUnsafeMutableBufferPointer { c in
          guard let base = c.baseAddress else { return }
          sortRange(
            k, v, 0, n, shift: PairDigits.topShift, digits: digits, counters: base, depth: 0,
            threads: threads)
        }
      }
    }
  }

  /// The bits in which the pairs of ``radixSortInPlace(keys:values:)`` differ, and its digit
  /// positions: a shift `s` of the 96-bit pair `key << 32 | value`, in steps of 8 from 88.
  private struct PairDigits {
    var keys: UInt64
    var values: UInt32

    /// The highest digit's shift, and the most digits (levels of recursion) there are.
    static let topShift = 88
    static let levels = 12

    /// True when digit `s` differs between some pairs.
    @inline(__always)
    func varies(_ s: Int) -> Bool {
      s >= 32 ? (keys >> UInt64(s - 32)) & 0xFF != 0 : (values >> UInt32(s)) & 0xFF != 0
    }

    /// Digit `s` of the pair (`key`, `value`).
    @inline(__always)
    static func digit(_ key: UInt64, _ value: UInt32, _ s: Int) -> Int {
      s >= 32
        ? Int(truncatingIfNeeded: (key >> UInt64(s - 32)) & 0xFF)
        : Int(truncatingIfNeeded: (value >> UInt32(s)) & 0xFF)
    }
  }

  /// Sorts `k[low..<high]` (and `v` alongside) on the pair digit at `shift` and the ones below
  /// it; see ``radixSortInPlace(keys:values:)``. The pairs of the range agree above `shift + 8`.
  /// `counters` holds 512 counters a level for ``PairDigits/levels`` levels, for each of
  /// `threads` threads; with 2, the buckets found here are sorted on two threads.
  private static func sortRange(
    _ k: UnsafeMutableBufferPointer<UInt64>, _ v: UnsafeMutableBufferPointer<UInt32>,
    _ low: Int, _ high: Int, shift startShift: Int, digits: PairDigits,
    counters: UnsafeMutablePointer<Int>, depth: Int, threads: Int = 1
  ) {
    if high - low <= 32 {
      insertionSortInPlace(k, v, low, high)
      return
    }
    var shift = startShift
    while shift >= 0 && !digits.varies(shift) { shift -= 8 }
    // Equal pairs: nothing to order.
    if shift < 0 { return }
    let count = counters + depth * 512
    let next = count + 256
    for d in 0..<256 { count[d] = 0 }
    for i in low..<high { count[PairDigits.digit(k[i], v[i], shift)] += 1 }
    var sum = low
    for d in 0..<256 {
      next[d] = sum
      sum += count[d]
    }
    // `next[d]`: the first place in bucket d that does not hold a pair of d yet. Each pair
    // taken from there moves to its own bucket, displacing the one it finds, until a pair of
    // d comes back.
    var start = low
    for d in 0..<256 {
      let end = start + count[d]
      while next[d] < end {
        var key = k[next[d]]
        var value = v[next[d]]
        var b = PairDigits.digit(key, value, shift)
        while b != d {
          let at = next[b]
          next[b] = at + 1
          swap(&key, &k[at])
          swap(&value, &v[at])
          b = PairDigits.digit(key, value, shift)
        }
        k[next[d]] = key
        v[next[d]] = value
        next[d] += 1
      }
      start = end
    }
    // The buckets `buckets` but `skipped` (the first pair of the first at `first`), each on
    // the calling thread.
    func sortBuckets(
      _ buckets: Range<Int>, from first: Int, except skipped: Int = -1,
      counters: UnsafeMutablePointer<Int>
    ) {
      var start = first
      for d in buckets {
        let size = count[d]
        if size > 1 && d != skipped {
          sortRange(
            k, v, start, start + size, shift: shift - 8, digits: digits, counters: counters,
            depth: depth + 1)
        }
        start += size
      }
    }
    guard threads > 1 else {
      sortBuckets(0..<256, from: low, counters: counters)
      return
    }
    // A bucket of more than half the pairs is itself sorted on both threads first.
    var first = low
    var big = 0
    while big < 256 && 2 * count[big] <= high - low {
      first += count[big]
      big += 1
    }
    if big < 256 {
      sortRange(
        k, v, first, first + count[big], shift: shift - 8, digits: digits, counters: counters,
        depth: depth + 1, threads: BuildThreads.parts(count: count[big]))
    }
    // The other buckets in two runs of about half their pairs each, one a thread, each
    // thread with its own block of counters (this level's, read by both, are in the first).
    let others = high - low - (big < 256 ? count[big] : 0)
    var cut = 0
    var before = low
    var taken = 0
    while cut < 256 && 2 * (taken + (cut == big ? 0 : count[cut])) <= others {
      if cut != big { taken += count[cut] }
      before += count[cut]
      cut += 1
    }
    if BuildThreads.parts(count: others) < 2 {
      sortBuckets(0..<256, from: low, except: big, counters: counters)
      return
    }
    let block = PairDigits.levels * 512
    _ = BuildThreads.perform(2) { p in
      if p == 0 {
        sortBuckets(0..<cut, from: low, except: big, counters: counters)
      } else {
        sortBuckets(cut..<256, from: before, except: big, counters: counters + block)
      }
    }
  }

  /// Insertion sort of a short range by (key, value).
  private static func insertionSortInPlace(
    _ k: UnsafeMutableBufferPointer<UInt64>, _ v: UnsafeMutableBufferPointer<UInt32>,
    _ low: Int, _ high: Int
  ) {
    var i = low + 1
    while i < high {
      let key = k[i]
      let value = v[i]
      var j = i
      while j > low && (k[j - 1] > key || (k[j - 1] == key && v[j - 1] > value)) {
        k[j] = k[j - 1]
        v[j] = v[j - 1]
        j -= 1
      }
      k[j] = key
      v[j] = value
      i += 1
    }
  }

  /// Sorts `keys` in place, permuting `values` alongside, stably: equal keys keep their
  /// input order. Every caller hands equal keys with increasing values (slot or storage
  /// numbers), so each run of equal keys ends in increasing value order.
  ///
  /// A least-significant-digit radix sort on 11-bit digits that covers only the bits in which
  /// the keys differ (each digit starts at the lowest differing bit not yet covered): a
  /// counting pass and a scatter pass a digit into a scratch copy, the two copies taking
  /// turns, each pass cut into parts on ``BuildThreads``. Up to 48 pairs: insertion sort. It replaced an in-place
  /// most-significant-digit sort whose runs of equal keys (a dense cell's entries) went
  /// through a comparison sort: at 10,000,000 regions that sort was 18 % of loading a file.
  /// - Complexity: O(n d) for d digits (at most 6; 2 to 4 for a build's cell keys), with a
  ///   scratch copy of both arrays (12 bytes a pair) and 16 KB of counters a digit.
  internal static func radixSort(keys: inout [UInt64], values: inout [UInt32]) {
    precondition(values.count == keys.count, "one value per key")
    var scratchKeys: [UInt64] = []
    var scratchValues: [UInt32] = []
    sortByKey(
      &keys, &values, hasValues: true, scratchKeys: &scratchKeys, scratchValues: &scratchValues)
  }

  /// Sorts `keys` in place: ``radixSort(keys:values:)`` without values.
  internal static func radixSort(keys: inout [UInt64]) {
    var none: [UInt32] = []
    var scratchKeys: [UInt64] = []
    var scratchValues: [UInt32] = []
    sortByKey(
      &keys, &none, hasValues: false, scratchKeys: &scratchKeys, scratchValues: &scratchValues)
  }

  /// The bits that differ between some two of `keys` (none for fewer than two): the digits a
  /// radix sort must look at. O(n); no allocation.
  private static func varyingBits(_ keys: [UInt64]) -> UInt64 {
    var all: UInt64 = 0
    var common: UInt64 = .max
    for k in keys {
      all |= k
      common &= k
    }
    return all ^ common
  }

  /// Bits of a radix digit (2,048 buckets: 16 KB of counters, within the first-level cache).
  private static let radixDigitBits = 11

  /// ``radixSort(keys:values:)``, its scratch copies in `scratchKeys` and `scratchValues`
  /// (reused when their capacity suffices; each ends holding one of the two copies).
  private static func sortByKey(
    _ keys: inout [UInt64], _ values: inout [UInt32], hasValues: Bool,
    scratchKeys otherKeys: inout [UInt64], scratchValues otherValues: inout [UInt32]
  ) {
    let n = keys.count
    if n < 2 { return }
    if n <= 48 {
      insertionSort(&keys, &values, hasValues: hasValues)
      return
    }
    // Digit shifts, low to high, over the differing bits only.
    var varying = varyingBits(keys)
    var shifts: [UInt64] = []
    while varying != 0 {
      let shift = varying.trailingZeroBitCount
      shifts.append(UInt64(shift))
      let next = shift + radixDigitBits
      varying = next >= 64 ? 0 : varying & ~((1 &<< UInt64(next)) &- 1)
    }
    if shifts.isEmpty { return }
    let buckets = 1 << radixDigitBits
    let mask = UInt64(buckets - 1)
    // Each pass cut into parts on ``BuildThreads``: every part counts its own range's
    // digits, and scatters them to places after those of the parts before it, bucket by
    // bucket, so that the order is the one a single pass gives.
    let parts = BuildThreads.parts(count: n)
    otherKeys.removeAll(keepingCapacity: true)
    otherKeys.append(contentsOf: repeatElement(0, count: n))
    otherValues.removeAll(keepingCapacity: true)
    if hasValues { otherValues.append(contentsOf: repeatElement(0, count: n)) }
    for shift in shifts {
      keys.withUnsafeBufferPointer { k in
        values.withUnsafeBufferPointer { v in
          otherKeys.withUnsafeMutableBufferPointer { ok in
            otherValues.withUnsafeMutableBufferPointer { ov in
              var starts = BuildThreads.perform(parts) { p in
                var c = [Int](repeating: 0, count: buckets)
                c.withUnsafeMutableBufferPointer { c in
                  for i in BuildThreads.range(p, of: parts, count: n) {
                    c[Int(truncatingIfNeeded: (k[i] &>> shift) & mask)] &+= 1
                  }
                }
                return c
              }
              var sum = 0
              for b in 0..<buckets {
                for p in 0..<parts {
                  let count = starts[p][b]
                  starts[p][b] = sum
                  sum += count
                }
              }
              _ = BuildThreads.perform(parts) { p in
                var next = starts[p]
                next.withUnsafeMutableBufferPointer { c in
                  for i in BuildThreads.range(p, of: parts, count: n) {
                    let key = k[i]
                    let b = Int(truncatingIfNeeded: (key &>> shift) & mask)
                    let at = c[b]
                    c[b] = at &+ 1
                    ok[at] = key
                    if hasValues { ov[at] = v[i] }
                  }
                }
              }
            }
          }
        }
      }
      swap(&keys, &otherKeys)
      if hasValues { swap(&values, &otherValues) }
    }
  }

  /// Stable insertion sort of a short array by key (values alongside when `hasValues`).
  private static func insertionSort(
    _ k: inout [UInt64], _ v: inout [UInt32], hasValues: Bool
  ) {
    var i = 1
    while i < k.count {
      let key = k[i]
      let value = hasValues ? v[i] : 0
      var j = i
      while j > 0 && k[j - 1] > key {
        k[j] = k[j - 1]
        if hasValues { v[j] = v[j - 1] }
        j -= 1
      }
      k[j] = key
      if hasValues { v[j] = value }
      i += 1
    }
  }
}

/// The arrays of one band of a build's step 2 (``GridIndex/assemble``): its (cell key,
/// entry) pairs, the radix sort's scratch copies of them, and the boxes of a chunk of
/// storage indices.
internal struct BandBuffers {
  var keys: [UInt64] = []
  var entries: [UInt32] = []
  var scratchKeys: [UInt64] = []
  var scratchEntries: [UInt32] = []
  var chunk = FilingBoxes()

  /// Buffers with room for `capacity` pairs.
  init(capacity: Int) {
    keys.reserveCapacity(capacity)
    entries.reserveCapacity(capacity)
    scratchKeys.reserveCapacity(capacity)
    scratchEntries.reserveCapacity(capacity)
    chunk.reserveCapacity(FilingBoxes.gatherChunk)
  }
}

/// What step 1 of a build (``GridIndex/assemble``) counts over the regions it files: per
/// level, the entries each row will hold, the regions whose first row each row is and the
/// most rows a region spans beyond its first; the entries in all and the levels used.
internal struct FilingCounts {
  var rowEntries: [[Int]]
  var rowHomes: [[Int]]
  var rowSpan: [Int]
  var entryTotal = 0
  var nonEmptyLevels: UInt64 = 0

  init(levelCount: Int) {
    rowEntries = [[Int]](repeating: [], count: levelCount)
    rowHomes = [[Int]](repeating: [], count: levelCount)
    rowSpan = [Int](repeating: 0, count: levelCount)
  }

  /// Counts a region filed at `p` (the everywhere list: its entries only, none).
  mutating func add(_ p: Placement, in grid: CellGrid) {
    entryTotal += p.cellCount
    guard p.level >= 0 else { return }
    nonEmptyLevels |= 1 &<< UInt64(p.level)
    if rowEntries[p.level].count <= p.rowHigh {
      grow(level: p.level, to: Swift.max(grid.rows(level: p.level), p.rowHigh + 1))
    }
    let perRow = p.cellCount / (p.rowHigh - p.rowLow + 1)
    for row in p.rowLow...p.rowHigh { rowEntries[p.level][row] += perRow }
    rowHomes[p.level][p.rowLow] += 1
    rowSpan[p.level] = Swift.max(rowSpan[p.level], p.rowHigh - p.rowLow)
  }

  /// Adds the counts of `other` (made over other regions).
  mutating func merge(_ other: FilingCounts) {
    entryTotal += other.entryTotal
    nonEmptyLevels |= other.nonEmptyLevels
    for level in rowSpan.indices {
      rowSpan[level] = Swift.max(rowSpan[level], other.rowSpan[level])
      let rows = other.rowEntries[level].count
      if rowEntries[level].count < rows { grow(level: level, to: rows) }
      for row in 0..<rows {
        rowEntries[level][row] += other.rowEntries[level][row]
        rowHomes[level][row] += other.rowHomes[level][row]
      }
    }
  }

  private mutating func grow(level: Int, to rows: Int) {
    let more = rows - rowEntries[level].count
    rowEntries[level] += repeatElement(0, count: more)
    rowHomes[level] += repeatElement(0, count: more)
  }
}

/// The refine records a build files, in slot order: given as records (a rebuild from an
/// index's own), or computed from packed circles when they are read (a build from a load),
/// so that such a build holds no array of records beside the one it stores.
internal struct DiscSource {
  private let discs: [Disc]
  private let circles: [PackedCircle]

  init(discs: [Disc]) {
    self.discs = discs
    self.circles = []
  }

  init(circles: [PackedCircle]) {
    self.discs = []
    self.circles = circles
  }

  var count: Int { circles.isEmpty ? discs.count : circles.count }

  /// The record of slot `i`: from a circle, the same bits as ``Disc/init(_:)`` of its region.
  /// O(1); from a circle one paired sine and cosine and one sine.
  subscript(i: Int) -> Disc {
    circles.isEmpty ? discs[i] : Self.record(of: circles[i])
  }

  private static func record(of c: PackedCircle) -> Disc {
    Disc(
      center: UnitVector(c.center),
      chordSquaredThreshold: CircularRegion.chordSquaredThreshold(radiusMeters: c.radiusMeters))
  }

  /// The records of `slots`, in that order: `slots.map { self[Int($0)] }`, but the circles
  /// of a chunk are first copied in a loop that does nothing else, so that the cache misses
  /// of a scattered order overlap instead of waiting behind each record's trigonometry, and
  /// the parts of `slots` are made on ``BuildThreads``. O(n).
  func records(of slots: [UInt32]) -> [Disc] {
    [Disc](unsafeUninitializedCapacity: slots.count) { buffer, initialized in
      let out = buffer
      _ = BuildThreads.map(count: slots.count) { range in
        if circles.isEmpty {
          for i in range { out.initializeElement(at: i, to: discs[Int(slots[i])]) }
          return
        }
        var chunk: [PackedCircle] = []
        chunk.reserveCapacity(FilingBoxes.gatherChunk)
        var start = range.lowerBound
        while start < range.upperBound {
          let end = Swift.min(range.upperBound, start + FilingBoxes.gatherChunk)
          chunk.removeAll(keepingCapacity: true)
          for slot in slots[start..<end] { chunk.append(circles[Int(slot)]) }
          for (k, c) in chunk.enumerated() {
            out.initializeElement(at: start + k, to: Self.record(of: c))
          }
          start = end
        }
      }
      initialized = slots.count
    }
  }

  /// True for a removed slot (never for a circle). O(1).
  func isRemoved(_ i: Int) -> Bool { circles.isEmpty && discs[i].isRemoved }

  /// Whether any slot is removed. O(n) for records, O(1) for circles.
  var hasRemoved: Bool { circles.isEmpty && discs.contains(where: \.isRemoved) }
}

/// The filing boxes of a build (``GridIndex/filingBox(of:)``), by slot: 32 bytes a box, where
/// a `BoundingBox?` takes 40 (its flag pads it to 40), the absence of a box held as NaN.
internal struct FilingBoxes: RandomAccessCollection {
  /// minLatitude, maxLatitude, minLongitude, maxLongitude; NaN for no box.
  private var edges: [SIMD4<Double>] = []

  init() {}

  /// The boxes `box(0)`, ..., `box(count - 1)`, computed on ``BuildThreads`` (each part
  /// fills its own range). O(n) calls of `box`.
  init(count: Int, _ box: (Int) -> BoundingBox?) {
    edges = [SIMD4<Double>](unsafeUninitializedCapacity: count) { buffer, initialized in
      let out = buffer
      _ = BuildThreads.map(count: count) { range in
        for i in range { out.initializeElement(at: i, to: Self.edges(of: box(i))) }
      }
      initialized = count
    }
  }

  /// The stored form of a box: NaN edges for none.
  private static func edges(of box: BoundingBox?) -> SIMD4<Double> {
    guard let box else { return SIMD4(repeating: .nan) }
    return SIMD4(box.minLatitude, box.maxLatitude, box.minLongitude, box.maxLongitude)
  }

  var startIndex: Int { 0 }
  var endIndex: Int { edges.count }

  mutating func reserveCapacity(_ n: Int) { edges.reserveCapacity(n) }

  mutating func append(_ box: BoundingBox?) { edges.append(Self.edges(of: box)) }

  /// Storage indices a build handles at a time when it reads boxes in an order other than
  /// their own (``gather(_:into:)``): 4,096 boxes, 128 KB.
  static let gatherChunk = 4_096

  /// Replaces the contents of `out` with the boxes at `positions`, in that order. The copy is
  /// a loop that does nothing else, so that the cache misses of a scattered order overlap
  /// (in a build's storage order, boxes are read far apart). O(n).
  func gather(_ positions: ArraySlice<UInt32>, into out: inout FilingBoxes) {
    out.edges.removeAll(keepingCapacity: true)
    for p in positions { out.edges.append(edges[Int(p)]) }
  }

  /// The box appended at `i`, or nil where none was. O(1).
  subscript(i: Int) -> BoundingBox? {
    let e = edges[i]
    if e.x.isNaN { return nil }
    return BoundingBox(minLatitude: e.x, maxLatitude: e.y, minLongitude: e.z, maxLongitude: e.w)
  }
}

/// Sorted cell keys as runs: each distinct key once, with the position in the entries where
/// its run starts; a run ends where the next starts, the last at ``total``.
internal struct KeyRuns {
  var keys: [UInt64] = []
  /// Entry positions (an index holds fewer than 2^32 entries: its offsets are 32-bit).
  var starts: [UInt32] = []
  /// Number of entries in all.
  var total = 0

  /// Adds the runs of `sorted`, whose first entry is at `offset`.
  mutating func append(sortedKeys sorted: [UInt64], at offset: Int) {
    var previous = CellSlot.emptyKey
    for (i, key) in sorted.enumerated() where key != previous {
      previous = key
      keys.append(key)
      starts.append(UInt32(truncatingIfNeeded: offset + i))
    }
  }

  /// Where run `i` ends.
  func end(_ i: Int) -> Int { i + 1 < starts.count ? Int(starts[i + 1]) : total }

  /// Where run `i` starts.
  func start(_ i: Int) -> Int { Int(starts[i]) }
}
