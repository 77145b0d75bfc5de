import GeofenceGeometry

/// The cell grid shared by every level of a ``GridIndex``.
///
/// ## Layout
///
/// Level 0 (the finest) has cells `e₀ = finestCellSizeDegrees` degrees of latitude tall and
/// `w₀ = a · e₀` degrees of longitude wide (`a` = `columnAspect` >= 1). Level `k` has cells
/// `2^k` times taller and wider, exactly the unions of 2 × 2 cells of level `k − 1`:
///
/// - `row₀(lat) = ⌊(lat + 90) / e₀⌋`, clamped to `[0, rows₀ − 1]` with `rows₀ = ⌈180 / e₀⌉`
///   (row 0 touches the south pole; latitude 90 falls in the last row).
/// - `col₀(lon) = ⌊(lon + 180) / w₀⌋`, clamped to `[0, cols₀ − 1]` with `cols₀ = ⌈360 / w₀⌉`
///   (column 0 starts at the antimeridian). A query at longitude **180 is mapped to −180**, i.e.
///   column 0, since both name the same meridian; a box that reaches 180 from the west is filed
///   in column 0 as well.
/// - At level `k`: `row = row₀ >> k`, `col = col₀ >> k`; the level has `(rows₀ + 2^k − 1) >> k`
///   rows and `(cols₀ + 2^k − 1) >> k` columns. The last row and column of a level may be
///   partial when `e₀` does not divide 180 or 360; clamping keeps the mapping monotone.
///
/// A cell id (``GridIndex/CellID``) packs `level << 58 | row << 29 | col` into 64 bits
/// (level < 64, row and column < 2^29), so `e₀` is at least ``GridIndex/minimumCellSizeDegrees``.
@usableFromInline
internal struct CellGrid: Sendable {
  /// Level-0 cell edge in degrees of latitude.
  @usableFromInline let edgeDegrees: Double
  /// `1 / edgeDegrees`.
  @usableFromInline let inverseEdge: Double
  /// Level-0 cell width in degrees of longitude: `edgeDegrees · columnAspect`.
  @usableFromInline let columnEdgeDegrees: Double
  /// `1 / columnEdgeDegrees`.
  @usableFromInline let inverseColumnEdge: Double
  /// Number of level-0 rows, in [1, 2^29).
  @usableFromInline let rows: Int
  /// Number of level-0 columns, in [1, 2^29).
  @usableFromInline let columns: Int
  /// `4 / edgeDegrees` (exactly `4 · inverseEdge`: scaling by 4 commutes with rounding).
  @usableFromInline let inverseQuarterEdge: Double
  /// `4 / columnEdgeDegrees` (exactly `4 · inverseColumnEdge`).
  @usableFromInline let inverseQuarterColumnEdge: Double
  /// `Double(4 rows − 1)`: the clamp of ``inRangeQuarterRow(latitude:)``.
  @usableFromInline let lastQuarterRow: Double
  /// `Double(4 columns − 1)`: the clamp of ``inRangeQueryQuarterColumn(longitude:)``.
  @usableFromInline let lastQuarterColumn: Double
  /// Number of levels; the coarsest edge `edgeDegrees · 2^(levelCount − 1)` is >= 180 degrees.
  @usableFromInline let levelCount: Int

  /// A region goes to the finest level whose edge is at least this many times its box span.
  let edgePerSpan: Double

  /// A region whose level by ``edgePerSpan`` is above ``minimumLevel`` (and not replicated) is
  /// filed at the finest level, never below ``minimumLevel``, whose edge is at least this many
  /// times its box span (<= ``edgePerSpan``; equal: never finer). Set on the final grid only,
  /// after the floor and the replicated levels are chosen by ``edgePerSpan``.
  let upperEdgePerSpan: Double

  /// No region is filed finer than this level (see ``GridIndex/chooseMinimumLevels(_:in:)``): sparse
  /// sets fold their small regions into a coarser level, so a query probes fewer levels.
  let minimumLevel: Int

  /// Levels above ``minimumLevel`` whose regions are filed at ``minimumLevel`` instead, in
  /// every cell of that level their box touches (see ``GridIndex/chooseReplicatedLevels``):
  /// a query probes fewer levels for a few more entries.
  let replicatedLevels: UInt64

  /// No region is filed coarser than this level (`Int.max`: no ceiling): a region whose level
  /// by the rules above is coarser is filed at this level instead, in every cell of it that
  /// its box touches (see ``GridIndex/replicatingWithinBudget(_:discs:boxes:live:quarterMasks:)``),
  /// so that a set with a few large regions on many coarse levels probes one level for them.
  /// At least ``minimumLevel``. Regions for the everywhere list stay there.
  let ceilingLevel: Int

  /// Cell width / height in degrees, >= 1: cells are `columnAspect` times wider in longitude
  /// than tall in latitude, to match the boxes of regions away from the equator.
  @usableFromInline let columnAspect: Double

  init(
    edgeDegrees: Double, columnAspect: Double = 1,
    edgePerSpan: Double = GridIndex.defaultEdgePerSpan, minimumLevel: Int = 0,
    replicatedLevels: UInt64 = 0, upperEdgePerSpan: Double? = nil, ceilingLevel: Int = .max
  ) {
    self.replicatedLevels = replicatedLevels
    self.upperEdgePerSpan = min(edgePerSpan, upperEdgePerSpan ?? edgePerSpan)
    self.edgeDegrees = edgeDegrees
    self.columnAspect = columnAspect
    self.edgePerSpan = edgePerSpan
    self.inverseEdge = 1 / edgeDegrees
    self.columnEdgeDegrees = edgeDegrees * columnAspect
    self.inverseColumnEdge = 1 / columnEdgeDegrees
    self.rows = max(1, Int((180 * inverseEdge).rounded(.up)))
    self.columns = max(1, Int((360 * inverseColumnEdge).rounded(.up)))
    self.inverseQuarterEdge = 4 * inverseEdge
    self.inverseQuarterColumnEdge = 4 * inverseColumnEdge
    self.lastQuarterRow = Double(4 * rows - 1)
    self.lastQuarterColumn = Double(4 * columns - 1)
    var levels = 1
    var edge = edgeDegrees
    while edge < 180 {
      edge *= 2
      levels += 1
    }
    self.levelCount = levels
    self.minimumLevel = min(max(0, minimumLevel), levels - 1)
    self.ceilingLevel = max(self.minimumLevel, ceilingLevel)
  }

  /// The same grid with another ``minimumLevel`` and ``replicatedLevels``.
  func with(minimumLevel level: Int, replicatedLevels replicated: UInt64 = 0) -> CellGrid {
    CellGrid(
      edgeDegrees: edgeDegrees, columnAspect: columnAspect, edgePerSpan: edgePerSpan,
      minimumLevel: level, replicatedLevels: replicated, upperEdgePerSpan: upperEdgePerSpan,
      ceilingLevel: ceilingLevel)
  }

  /// The same grid with another ``ceilingLevel``.
  func with(ceilingLevel ceiling: Int) -> CellGrid {
    CellGrid(
      edgeDegrees: edgeDegrees, columnAspect: columnAspect, edgePerSpan: edgePerSpan,
      minimumLevel: minimumLevel, replicatedLevels: replicatedLevels,
      upperEdgePerSpan: upperEdgePerSpan, ceilingLevel: ceiling)
  }

  /// The same grid with another ``upperEdgePerSpan``.
  func with(upperEdgePerSpan upper: Double) -> CellGrid {
    CellGrid(
      edgeDegrees: edgeDegrees, columnAspect: columnAspect, edgePerSpan: edgePerSpan,
      minimumLevel: minimumLevel, replicatedLevels: replicatedLevels, upperEdgePerSpan: upper,
      ceilingLevel: ceilingLevel)
  }

  /// Cell edge of `level` in degrees (exact: a power-of-two multiple of the level-0 edge).
  @inlinable func edge(level: Int) -> Double {
    edgeDegrees * Double(sign: .plus, exponent: level, significand: 1)
  }

  /// Level-0 row of a latitude (degrees), clamped; NaN maps to row 0:
  /// `quarterRow(latitude:) >> 2`.
  @inlinable @inline(__always)
  func row(latitude: Double) -> Int { quarterRow(latitude: latitude) &>> 2 }

  /// Level-0 column of a longitude (degrees), clamped; 180 is clamped to the last column here
  /// (for filing the east edge of a box). NaN maps to column 0: `quarterColumn(longitude:) >> 2`.
  @inlinable @inline(__always)
  func column(longitude: Double) -> Int { quarterColumn(longitude: longitude) &>> 2 }

  /// Quarter row of a latitude (degrees): the row of a grid four times finer than level 0,
  /// `⌊4 (lat + 90) / e₀⌋` clamped to `[0, 4 rows₀ − 1]`, NaN to 0. `quarterRow >> 2` is
  /// the level-0 row (`4 t` is exact, so `⌊4 t⌋ >> 2 = ⌊t⌋`); at level `k` the point lies in
  /// quarter `(quarterRow >> k) & 3` of its cell's rows (see ``GridIndex/entries``).
  @inlinable @inline(__always)
  func quarterRow(latitude: Double) -> Int {
    let t = (latitude + 90) * inverseQuarterEdge
    if !(t > 0) { return 0 }
    if t >= Double(rows &* 4) { return rows &* 4 &- 1 }
    return Int(t)
  }

  /// Quarter column of a longitude (degrees), the column of a grid four times finer than level
  /// 0, clamped to `[0, 4 columns₀ − 1]` (180 to the last quarter column, for filing the east
  /// edge of a box), NaN to 0. `quarterColumn >> 2` is the level-0 column.
  @inlinable @inline(__always)
  func quarterColumn(longitude: Double) -> Int {
    let t = (longitude + 180) * inverseQuarterColumnEdge
    if !(t > 0) { return 0 }
    if t >= Double(columns &* 4) { return columns &* 4 &- 1 }
    return Int(t)
  }

  /// Quarter column of a query longitude: like ``quarterColumn(longitude:)`` but longitude
  /// >= 180 is the antimeridian, quarter column 0 (so level-0 column 0).
  @inlinable @inline(__always)
  func queryQuarterColumn(longitude: Double) -> Int {
    longitude >= 180 ? 0 : quarterColumn(longitude: longitude)
  }

  /// ``quarterRow(latitude:)`` of a latitude in [−90, 90] (not NaN), without branches: the same
  /// quarter row. Such a latitude gives `t = 4 (lat + 90) / e₀ >= 0`, so only the upper clamp
  /// is needed, and it is applied before the floor (`⌊min(t, 4 rows₀ − 1)⌋` is the clamped
  /// `⌊t⌋`).
  @inlinable @inline(__always)
  func inRangeQuarterRow(latitude: Double) -> Int {
    CellGrid.floorOfSmall(min((latitude + 90) * inverseQuarterEdge, lastQuarterRow))
  }

  /// ``queryQuarterColumn(longitude:)`` of a longitude in [−180, 180] (not NaN), with the clamp
  /// before the floor as in ``inRangeQuarterRow(latitude:)``: the same quarter column.
  @inlinable @inline(__always)
  func inRangeQueryQuarterColumn(longitude: Double) -> Int {
    if longitude >= 180 { return 0 }
    return CellGrid.floorOfSmall(
      min((longitude + 180) * inverseQuarterColumnEdge, lastQuarterColumn))
  }

  /// `⌊t⌋` for `t` in [0, 2^31 − 1], without the range checks of `Int(_:)`: adding 1.5 · 2^52
  /// rounds `t` to the nearest integer, which the low bits of the sum hold; the result is one
  /// less when that rounding went up. `t − round(t)` is exact (at most 1/2 in magnitude and a
  /// multiple of `t`'s ulp), so its sign bit tells.
  @inlinable @inline(__always)
  static func floorOfSmall(_ t: Double) -> Int {
    let shifted = t + 0x1.8p52
    let rounded = shifted - 0x1.8p52
    let wentUp = Int(truncatingIfNeeded: (t - rounded).bitPattern) &>> 63
    return (Int(truncatingIfNeeded: shifted.bitPattern) & 0x7FFF_FFFF) &+ wentUp
  }

  /// Number of columns at `level`.
  @inlinable func columns(level: Int) -> Int { (columns + (1 << level) - 1) >> level }

  /// Number of rows at `level`.
  @inlinable func rows(level: Int) -> Int { (rows + (1 << level) - 1) >> level }

  /// The packed cell id: `level << 58 | row << 29 | col`.
  @inlinable @inline(__always)
  static func key(level: Int, row: Int, column: Int) -> UInt64 {
    (UInt64(truncatingIfNeeded: level) &<< 58) | (UInt64(truncatingIfNeeded: row) &<< 29)
      | UInt64(truncatingIfNeeded: column)
  }
}

/// One slot of the open-addressing cell table: a cell id and its run in the entry array.
@usableFromInline
internal struct CellSlot: Sendable {
  /// Cell id, or ``CellSlot/emptyKey`` for an unused slot.
  @usableFromInline var key: UInt64
  /// First index of the cell's run in `entries`.
  @usableFromInline var start: UInt32
  /// Length of the run.
  @usableFromInline var count: UInt32

  /// Never a valid cell id (its level field would be 63).
  @usableFromInline static let emptyKey: UInt64 = .max

  @inlinable init(key: UInt64, start: UInt32, count: UInt32) {
    self.key = key
    self.start = start
    self.count = count
  }

  /// The home slot of a cell id in a table of `capacity` slots: the 64-bit finaliser of
  /// MurmurHash3 (Austin Appleby, public domain), reduced to `[0, capacity)` by the high half of
  /// a 64 × 64-bit product (Lemire's multiply-shift), so the capacity need not be a power of two.
  @inlinable @inline(__always)
  static func home(_ key: UInt64, capacity: Int) -> Int {
    var h = key
    h ^= h &>> 33
    h &*= 0xff51_afd7_ed55_8ccd
    h ^= h &>> 33
    h &*= 0xc4ce_b9fe_1a85_ec53
    h ^= h &>> 33
    return Int(
      truncatingIfNeeded: h.multipliedFullWidth(by: UInt64(truncatingIfNeeded: capacity)).high)
  }

  /// Table capacity for `cellCount` cells: load factor at most 2/3, at least one empty slot.
  static func capacity(forCellCount cellCount: Int) -> Int {
    cellCount == 0 ? 0 : max(4, cellCount + cellCount / 2 + 1)
  }
}
