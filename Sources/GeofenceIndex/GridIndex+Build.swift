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
  internal static func grid(
    boxes: [BoundingBox?], cellSizeDegrees: Double?, edgePerSpan: Double
  ) -> CellGrid {
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
  /// - Complexity: O(n) per candidate level (a radix sort of n keys), at most `levelCount`.
  internal static func chooseMinimumLevels(_ boxes: [BoundingBox?], in grid: CellGrid)
    -> (floor: Int, finer: Int)
  {
    var natural: [(level: Int, row: Int, column: Int)] = []
    natural.reserveCapacity(boxes.count)
    var finest = Int.max
    var coarsest = -1
    for box in boxes {
      let p = placement(box: box, in: grid)
      guard p.level >= 0 else { continue }
      natural.append((p.level, p.rowLow << p.level, p.columnLow << p.level))
      finest = min(finest, p.level)
      coarsest = max(coarsest, p.level)
    }
    guard natural.count > 1, coarsest > finest else { return (0, 0) }
    var keys = [UInt64](repeating: 0, count: natural.count)
    var values = [UInt32](repeating: 0, count: natural.count)
    func density(floor: Int) -> Double {
      for (i, r) in natural.enumerated() {
        let level = max(r.level, floor)
        keys[i] = CellGrid.key(level: level, row: r.row >> level, column: r.column >> level)
      }
      radixSort(keys: &keys, values: &values)
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
  internal static func folded(
    _ grid: CellGrid, floor: Int, boxes: [BoundingBox?], allowance: Int? = nil
  ) -> CellGrid {
    let g = grid.with(minimumLevel: floor)
    return g.with(
      minimumLevel: floor,
      replicatedLevels: chooseReplicatedLevels(
        boxes, in: g, allowance: allowance ?? replicationAllowance(regionCount: boxes.count)))
  }

  /// The levels regions are filed at in `grid`, as bits. O(n) placements.
  internal static func filedLevels(_ boxes: [BoundingBox?], in grid: CellGrid) -> UInt64 {
    var levels: UInt64 = 0
    for box in boxes {
      let level = placement(box: box, in: grid).level
      if level >= 0 { levels |= 1 &<< UInt64(level) }
    }
    return levels
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
  /// - Complexity: O(n) placements.
  internal static func chooseReplicatedLevels(
    _ boxes: [BoundingBox?], in grid: CellGrid, allowance total: Int
  ) -> UInt64 {
    let floor = grid.minimumLevel
    var added = [Int](repeating: 0, count: grid.levelCount)
    var present: UInt64 = 0
    for box in boxes {
      let p = placement(box: box, in: grid)
      guard p.level > floor else { continue }
      present |= 1 &<< UInt64(p.level)
      added[p.level] += placement(box: box, in: grid, forcedLevel: floor).cellCount - p.cellCount
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
  /// `regions` are the refine records in slot order. Removed slots (``Disc/isRemoved``, from
  /// ``remove(at:)``) are stored between the filed regions and the everywhere list, and are
  /// filed nowhere. `upper` is the built grid's ``CellGrid/upperEdgePerSpan`` (tests use
  /// `edgePerSpan` to file every region at its natural level). `quarterMasks` (tests) turns the
  /// entries' quarter masks off; they are on whenever the storage indices fit
  /// (``hasQuarterMasks(regionCount:)``).
  internal static func build(
    discs regions: [Disc], cellSizeDegrees: Double?, edgePerSpan: Double = defaultEdgePerSpan,
    upperEdgePerSpan upper: Double = upperEdgePerSpan, quarterMasks: Bool = true
  ) -> GridIndex {
    let masked = quarterMasks && hasQuarterMasks(regionCount: regions.count)
    // Each region's filing box, computed once (removed slots: none, they are filed nowhere).
    let boxes = regions.map { $0.isRemoved ? nil : filingBox(of: $0) }
    let hasRemoved = regions.contains { $0.isRemoved }
    let live = hasRemoved ? zip(regions, boxes).filter { !$0.0.isRemoved }.map(\.1) : boxes
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
    _ index: GridIndex, discs regions: [Disc], boxes: [BoundingBox?], live: [BoundingBox?],
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
    _ index: GridIndex, discs regions: [Disc], boxes: [BoundingBox?], live: [BoundingBox?],
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
    _ index: GridIndex, discs regions: [Disc], boxes: [BoundingBox?], live: [BoundingBox?],
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
    for box in live {
      let p = placement(box: box, in: built)
      if p.level > built.minimumLevel { current[p.level] += p.cellCount }
    }
    while upper.nonzeroBitCount > 1 {
      let ceiling = upper.trailingZeroBitCount
      upper &= upper &- 1
      let capped = built.with(ceilingLevel: ceiling)
      var added = 0
      for box in live {
        let p = placement(box: box, in: capped)
        if p.level == ceiling { added += p.cellCount }
      }
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
    discs regions: [Disc], boxes: [BoundingBox?], grid: CellGrid, cellSizeDegrees: Double?,
    quarterMasks masked: Bool
  ) -> GridIndex {
    let n = regions.count

    // 1. Storage order.
    var homeKeys = [UInt64](repeating: 0, count: n)
    var slotOfStored = [UInt32](repeating: 0, count: n)
    var entryTotal = 0
    var nonEmptyLevels: UInt64 = 0
    for i in 0..<n {
      slotOfStored[i] = UInt32(truncatingIfNeeded: i)
      if regions[i].isRemoved {
        homeKeys[i] = removedHomeKey
        continue
      }
      let p = placement(box: boxes[i], in: grid)
      homeKeys[i] = homeKey(p)
      entryTotal += p.cellCount
      if p.level >= 0 { nonEmptyLevels |= 1 &<< UInt64(p.level) }
    }
    radixSort(keys: &homeKeys, values: &slotOfStored)
    var everywhereStart = n
    while everywhereStart > 0 && homeKeys[everywhereStart - 1] == UInt64.max {
      everywhereStart -= 1
    }
    var filedEnd = everywhereStart
    while filedEnd > 0 && homeKeys[filedEnd - 1] == removedHomeKey { filedEnd -= 1 }
    homeKeys = []
    var discs = [Disc]()
    discs.reserveCapacity(n)
    for slot in slotOfStored { discs.append(regions[Int(slot)]) }

    // 2. (cell, storage index) pairs, grouped by cell.
    var keys: [UInt64] = []
    var entries: [UInt32] = []
    keys.reserveCapacity(entryTotal)
    entries.reserveCapacity(entryTotal)
    for i in 0..<filedEnd {
      let box = boxes[Int(slotOfStored[i])]
      let p = placement(box: box, in: grid)
      let index = UInt32(truncatingIfNeeded: i)
      // Without quarter masks every entry is marked as reaching every quarter (no bits).
      let q = masked ? QuarterSpan(box: box, placement: p, grid: grid) : nil
      func entry(row: Int, column: Int, wrapped: Bool) -> UInt32 {
        guard let q else { return index }
        return index | q.rowBits(row: row, level: p.level) &<< 24
          | q.columnBits(column: column, level: p.level, wrapped: wrapped) &<< 28
      }
      for row in p.rowLow...p.rowHigh {
        for column in p.columnLow...p.columnHigh {
          keys.append(CellGrid.key(level: p.level, row: row, column: column))
          entries.append(entry(row: row, column: column, wrapped: false))
        }
        if p.wrapColumnHigh >= 0 {
          for column in 0...p.wrapColumnHigh {
            keys.append(CellGrid.key(level: p.level, row: row, column: column))
            entries.append(entry(row: row, column: column, wrapped: true))
          }
        }
      }
    }
    radixSort(keys: &keys, values: &entries)

    // 3. Runs of equal keys become cells: dense levels get CSR offsets by position, the
    //    others slots of the hash table.
    let layout = CellLayout(sortedKeys: keys, grid: grid, regionCount: n)
    var (offsets, rankWords) = layout.offsets(sortedKeys: keys)
    if keys.count < subcellMaskedEntryLimit {
      // 4. Sub-cell masks of the dense levels, in the offsets' top bits.
      rankWords.withUnsafeBufferPointer { words in
        for i in 0..<filedEnd {
          guard let box = boxes[Int(slotOfStored[i])] else { continue }
          let level = placement(box: box, in: grid).level
          layout.markSubcells(of: box, level: level, in: grid, offsets: &offsets, words: words)
        }
      }
      layout.markLevelZero(offsets: &offsets)
    }
    let table = layout.hashTable(sortedKeys: keys)
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
