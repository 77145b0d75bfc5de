import GeofenceGeometry

/// Answers "which regions' closed discs contain this point?" for a fixed set of circular regions,
/// with a multi-level latitude/longitude grid.
///
/// Regions are addressed by **slot**: the position of the region in the array given to
/// ``init(regions:cellSizeDegrees:)``, as `Int32`.
///
/// ## Answers
///
/// A query returns exactly the slots `i` for which `region(at: i).contains(UnitVector(point))`
/// is true (``CircularRegion/contains(_:)-(UnitVector)``, closed disc: the boundary is inside).
/// The grid only chooses candidates; the canonical predicate decides, so the answer equals a
/// brute-force scan with that predicate, including at the antimeridian (longitudes −180 and 180
/// are one meridian), at the poles (latitude ±90 at any longitude) and for discs that cover the
/// whole sphere.
///
/// ## Structure
///
/// - **Levels.** Level `k` has square cells of edge `e₀ · 2^k` degrees, where `e₀` is
///   ``finestCellSizeDegrees``; the coarsest level's edge is >= 180°. Cell ids pack
///   `level << 58 | row << 29 | col` with `row = ⌊(lat + 90) / e₀⌋ >> k` and
///   `col = ⌊(lon + 180) / e₀⌋ >> k` (clamped to the grid; a query at longitude 180 uses column
///   0, the same as −180). See ``CellID``.
/// - **Filing.** Each region's ``CircularRegion/boundingBox`` (antimeridian-aware) has a span
///   `s = max(latitude span, longitude span)` in degrees. The region goes to the finest level
///   whose edge is >= `2 s`, and is filed in every cell of that level its box touches: at most
///   2 × 2 cells (2 × 3 for a box split by the antimeridian), typically 1.5-2 cells.
/// - **Everywhere list.** A region goes to a short list checked on every query instead when it
///   covers the sphere, when its box covers all longitudes or comes within
///   ``polarMarginDegrees`` of a pole, or when `2 s` exceeds the coarsest edge.
/// - **Storage** (flat): one `[UInt32]` of slots, grouped by cell (CSR runs), and an
///   open-addressing table of `(cell id, start, count)` with linear probing at load <= 1/2,
///   holding only non-empty cells. The regions themselves stay in one contiguous
///   `[CircularRegion]`, whose `centerVector` and `chordSquaredThreshold` are the refine data.
///
/// ## Cost
///
/// A query computes the point's unit vector once (four trigonometric calls), then for each
/// non-empty level one hash probe and one squared-chord test (three multiplies) per slot filed
/// in the point's cell, plus one test per region in the everywhere list. A cell of level `k`
/// holds the regions of that level whose boxes touch it; since a region's box is at least a
/// quarter of the cell edge wide, roughly 1/16 to 1/4 of a cell's candidates contain a point in
/// it. Queries never allocate (beyond growing `result` the first time).
///
/// The value is immutable after `init` and `Sendable`; queries from many threads are safe.
public struct GridIndex: Sendable {
  /// Slot → region; also the refine data (centre vector and squared-chord threshold).
  @usableFromInline internal var regions: [CircularRegion]
  /// Cell geometry shared by all levels.
  @usableFromInline internal var grid: CellGrid
  /// Bit `k` is set when level `k` has at least one filed region.
  @usableFromInline internal var nonEmptyLevels: UInt64
  /// Open-addressing table of non-empty cells; its count is a power of two (or 0).
  @usableFromInline internal var cells: [CellSlot]
  /// Number of used slots in `cells`.
  @usableFromInline internal var usedCellCount: Int
  /// Slots grouped by cell: cell `c` owns `entries[c.start ..< c.start + c.count]`, in increasing
  /// slot order.
  @usableFromInline internal var entries: [UInt32]
  /// Slots of regions checked on every query (sphere-covering, pole-covering, very large).
  @usableFromInline internal var everywhere: [UInt32]

  /// A cell id: `level << 58 | row << 29 | col` (see ``GridIndex`` for the row/column rule).
  public typealias CellID = UInt64

  /// The smallest accepted `cellSizeDegrees` (1e-6°, about 0.11 m of latitude), so that rows
  /// and columns fit the 29-bit fields of a ``CellID``.
  public static let minimumCellSizeDegrees: Double = 1e-6

  /// The largest accepted `cellSizeDegrees` (180°).
  public static let maximumCellSizeDegrees: Double = 180

  /// A region whose bounding box comes within this many degrees of a pole (about 1.1 km) goes
  /// to the everywhere list: near a pole a longitude range is ill-conditioned, so such boxes are
  /// treated as covering all longitudes.
  public static let polarMarginDegrees: Double = 0.01

  /// A region is filed at the finest level whose cell edge is at least this many times its box
  /// span (degrees), so that its box touches at most 2 cells per axis.
  internal static let edgePerSpan: Double = 2

  /// Builds the index.
  ///
  /// - Parameters:
  ///   - regions: the regions; slot `i` is `regions[i]`. At most `Int32.max` regions.
  ///   - cellSizeDegrees: the finest level's cell edge in degrees, clamped to
  ///     [``minimumCellSizeDegrees``, ``maximumCellSizeDegrees``]; NaN or `nil` (the default)
  ///     chooses twice the smallest bounding-box span among the regions (a sample of up to
  ///     65,536 of them), which puts the smallest regions in 1-4 cells of the finest level.
  /// - Complexity: O(n + m) time for `n` regions filed in `m` cells in all (m <= 6 n), plus one
  ///   bounding box (four trigonometric calls) per region. Memory while building: about 24 bytes
  ///   per filed entry of scratch, released before returning.
  public init(regions: [CircularRegion], cellSizeDegrees: Double? = nil) {
    precondition(regions.count <= Int(Int32.max), "GridIndex holds at most Int32.max regions")
    self = GridIndex.build(regions: regions, cellSizeDegrees: cellSizeDegrees)
  }

  @usableFromInline
  internal init(
    regions: [CircularRegion], grid: CellGrid, nonEmptyLevels: UInt64, cells: [CellSlot],
    usedCellCount: Int, entries: [UInt32], everywhere: [UInt32]
  ) {
    self.regions = regions
    self.grid = grid
    self.nonEmptyLevels = nonEmptyLevels
    self.cells = cells
    self.usedCellCount = usedCellCount
    self.entries = entries
    self.everywhere = everywhere
  }

  /// Number of regions (slots `0 ..< count`).
  /// - Complexity: O(1).
  public var count: Int { regions.count }

  /// The region in `slot`.
  /// - Precondition: `0 <= slot < count`.
  /// - Complexity: O(1).
  public func region(at slot: Int32) -> CircularRegion { regions[Int(slot)] }

  /// Replaces `result`'s contents with the slots of every region whose closed disc contains
  /// `point`, in no particular order. Reuses `result`'s capacity: no allocation once it holds
  /// the largest answer.
  ///
  /// - Parameters:
  ///   - point: the position; latitude in [−90, 90] and longitude in [−180, 180] degrees
  ///     (180 and −180 are the same meridian). Out-of-range values are clamped to the grid for
  ///     candidate selection and then tested exactly; NaN finds nothing.
  ///   - result: receives the slots; each containing slot appears exactly once.
  /// - Complexity: O(L + c + w): `L` non-empty levels (one hash probe each), `c` slots filed in
  ///   the point's cell at each of those levels, `w` regions in the everywhere list. Each
  ///   candidate costs one squared-chord comparison.
  public func query(_ point: Coordinate, into result: inout [Int32]) {
    result.removeAll(keepingCapacity: true)
    forEachRegion(containing: point) { result.append($0) }
  }

  /// Calls `body` with the slot of every region whose closed disc contains `point`, in no
  /// particular order, each exactly once. Does not allocate.
  ///
  /// Same answers, preconditions and cost as ``query(_:into:)``.
  @inlinable
  public func forEachRegion(containing point: Coordinate, _ body: (Int32) -> Void) {
    let v = UnitVector(point)
    regions.withUnsafeBufferPointer { regionBuffer in
      everywhere.withUnsafeBufferPointer { list in
        for slot in list where regionBuffer[Int(slot)].contains(v) {
          body(Int32(truncatingIfNeeded: slot))
        }
      }
      var levels = nonEmptyLevels
      if levels == 0 { return }
      let row0 = grid.row(latitude: point.latitude)
      let column0 = grid.queryColumn(longitude: point.longitude)
      cells.withUnsafeBufferPointer { table in
        entries.withUnsafeBufferPointer { slots in
          let mask = table.count &- 1
          while levels != 0 {
            let level = levels.trailingZeroBitCount
            levels &= levels &- 1
            let key = CellGrid.key(level: level, row: row0 &>> level, column: column0 &>> level)
            var h = CellSlot.hash(key) & mask
            while true {
              let cell = table[h]
              if cell.key == key {
                let start = Int(cell.start)
                for i in start..<(start &+ Int(cell.count)) {
                  let slot = slots[i]
                  if regionBuffer[Int(slot)].contains(v) { body(Int32(truncatingIfNeeded: slot)) }
                }
                break
              }
              if cell.key == CellSlot.emptyKey { break }
              h = (h &+ 1) & mask
            }
          }
        }
      }
    }
  }
}

// MARK: - Statistics

extension GridIndex {
  /// The finest level's cell edge in degrees (level `k` has edge `finestCellSizeDegrees · 2^k`).
  public var finestCellSizeDegrees: Double { grid.edgeDegrees }

  /// Number of grid levels (non-empty or not); the coarsest edge is >= 180°.
  public var levelCount: Int { grid.levelCount }

  /// The levels that hold at least one region, finest first. Each is probed by a query.
  public var nonEmptyLevelList: [Int] {
    var list: [Int] = []
    var bits = nonEmptyLevels
    while bits != 0 {
      list.append(bits.trailingZeroBitCount)
      bits &= bits &- 1
    }
    return list
  }

  /// Number of non-empty cells over all levels.
  public var cellCount: Int { usedCellCount }

  /// Number of (cell, slot) entries over all levels: the sum over cells of their region counts.
  public var entryCount: Int { entries.count }

  /// Number of regions checked on every query (sphere- or pole-covering, or very large).
  public var everywhereCount: Int { everywhere.count }

  /// Bytes held by the grid structure: the entry array (4 bytes per entry), the cell table
  /// (16 bytes per table slot, at most 2 slots per non-empty cell... 4 for tiny tables) and the
  /// everywhere list (4 bytes per region). Counts capacity, excludes the regions.
  public var indexFootprintBytes: Int {
    entries.capacity * MemoryLayout<UInt32>.stride
      + cells.capacity * MemoryLayout<CellSlot>.stride
      + everywhere.capacity * MemoryLayout<UInt32>.stride
  }

  /// ``indexFootprintBytes`` plus the region array (`MemoryLayout<CircularRegion>.stride`,
  /// 56 bytes, per region: centre, radius, centre vector and threshold), i.e. everything the
  /// index owns apart from the fixed-size struct itself.
  public var memoryFootprintBytes: Int {
    indexFootprintBytes + regions.capacity * MemoryLayout<CircularRegion>.stride
  }
}
