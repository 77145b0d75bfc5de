import GeofenceGeometry

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Answers "which regions' closed discs contain this point?" for a fixed set of circular regions,
/// with a multi-level latitude/longitude grid.
///
/// Regions are addressed by **slot**: the position of the region in the array given to
/// ``init(regions:cellSizeDegrees:)``, as `Int32`; ``insert(_:)`` appends slots, and
/// ``remove(at:)`` takes a slot out of every answer without renumbering.
///
/// ## Answers
///
/// A query returns exactly the slots `i` for which `regions[i].contains(UnitVector(point))`
/// is true (the region given for slot `i`) and `i` is not removed (``CircularRegion/contains(_:)-(UnitVector)``, closed disc:
/// the boundary is inside).
/// The grid only chooses candidates; the canonical predicate decides, so the answer equals a
/// brute-force scan with that predicate, including at the antimeridian (longitudes −180 and 180
/// are one meridian), at the poles (latitude ±90 at any longitude) and for discs that cover the
/// whole sphere.
///
/// ## Structure
///
/// - **Levels.** Level `k` has cells `e₀ · 2^k` degrees of latitude tall and `a · e₀ · 2^k`
///   degrees of longitude wide, where `e₀` is ``finestCellSizeDegrees`` and `a` >= 1 is
///   ``columnAspect`` (1 when `cellSizeDegrees` is given; with `nil`, the median longitude /
///   latitude extent of the regions' boxes, about 1/cos(latitude) for a regional set). The
///   coarsest level is >= 180° tall. Cell ids pack `level << 58 | row << 29 | col` with
///   `row = ⌊(lat + 90) / e₀⌋ >> k` and `col = ⌊(lon + 180) / (a e₀)⌋ >> k`, clamped to the
///   grid; a query at longitude 180 uses column 0, the same as −180. See ``CellID``.
/// - **Filing.** Each region's ``CircularRegion/boundingBox`` (antimeridian-aware) has a span
///   `s = max(latitude span, longitude span / a)` in degrees. The region goes to the finest
///   level whose cell height is >= `1.5 s`, and is filed in every cell of that level its box
///   touches: at most 2 × 2 cells (2 × 3 for a box split by the antimeridian), about 2 on
///   average. Above the floor (see folding below) a region goes to the finest level, never
///   below the floor, whose height is still >= `s / 2`: at most two levels finer, at most
///   3 × 3 cells (3 × 4 split by the antimeridian), fewer candidates a query.
/// - **Everywhere list.** A region goes to a short list checked on every query instead when it
///   covers the sphere, when its box covers all longitudes or comes within
///   ``polarMarginDegrees`` of a pole, or when `1.5 s` exceeds the coarsest cell height.
/// - **Storage** (flat, struct-of-arrays):
///   - `entries: [UInt32]`, storage indices grouped by cell (CSR runs, sorted by cell id),
///     each with the 4 × 4 quarters of its cell (two levels finer) that the region's box
///     reaches, in 8 bits above a 24-bit index (up to 2^24 regions; see ``entries``);
///   - per level, where its cells' runs are: a level whose rectangle of occupied cells is small
///     is **dense**, an offset array by position in that rectangle (4 bytes a position, no
///     hashing; city and regional sets are dense at every level); a mostly empty rectangle is
///     **ranked**, one occupancy bit a position with a running count every 64 positions and
///     offsets for its non-empty cells only; the other levels share an open-addressing table
///     of `(cell id, start, count)` (16 bytes a slot, linear probing, load <= 2/3) holding only
///     non-empty cells (see `CellLayout` for the rule). A dense or ranked cell's offset carries
///     in its top four bits which of its four sub-cells (one level finer) a filed box touches;
///   - one 32-byte refine record per region (centre unit vector and squared-chord threshold,
///     copied from the region) in **storage order**: regions sorted by the first cell they are
///     filed in, so the candidates of one cell are a few contiguous runs of records. This is
///     the index's only copy of the geometry: rebuilds recompute each box from the record;
///   - the storage-index → slot map (4 bytes a region).
///
///   Geometry is 32 bytes a region. The grid adds the slot map (4 bytes), about 2.2 entries
///   (9 bytes) and the cells: 4 bytes a dense position, 1/4 byte a ranked position plus 4 a
///   ranked cell, or 24 bytes a hashed cell; 46 bytes a
///   region in all for 1,000,000 regions of 50-500 m in a 55 km city. See
///   ``memoryFootprintBytes``.
///
/// ## Cost
///
/// A query finds the point's quarter row and column once, then for each non-empty level either
/// reads two offsets (dense level; ranked: after one occupancy word and a population count) or
/// makes one hash probe, skips the cell when the point's sub-cell bit is clear, skips each
/// entry whose quarter masks miss the point's quarter (an AND and a compare), and tests the
/// other slots filed in the point's cell with one squared-chord comparison (three
/// multiplies), plus one per region in the everywhere list when the latitude band (degrees,
/// two comparisons) of one of them holds the point. The point's unit vector
/// (``UnitVector/init(_:)``: two reads of a 23 KB table and about 20 floating-point operations)
/// is computed at the first entry that passes its masks, so a point whose cells hold no box reaching its
/// quarter, or far from every everywhere-list region, costs only the lookups and no
/// trigonometry.
/// When a single dense level holds every filed region (most sets once folded), its record is
/// kept in the index value itself and the query skips the level loop. `query(_:into:)` is
/// inlined into its caller, so a loop over fixes keeps the index's fields in registers.
///
/// Sparse sets are folded: their small regions are filed at a coarser floor level so that a
/// query probes one or two levels; the build takes the finest floor whose cells hold about
/// 1.5 regions when it fits 62 bytes a region plus 1 MiB, else one holding about 4. The bytes
/// left under 62 a region (no fixed extra) then buy fewer candidates or fewer levels: a set
/// folded into one level takes the floor one level finer with every coarser level replicated
/// into it (10,000 city regions: 4.6 entries scanned a query instead of 10.3, 55 bytes a
/// region); a set that still probes several levels replicates more of them into the floor and
/// files the rest at the finest of them that fits (a ceiling level), so a regional set of
/// 20 m – 50 km radii probes two levels instead of four to six.
/// A cell of level `k` holds the regions of that level whose boxes touch it; since a region's
/// box spans a third to two thirds of the cell, typically 5 % to 20 % of a cell's entries
/// contain a point in it (7 % for 1,000,000 regions of 50-500 m in a 55 km city); the quarter
/// masks skip, without reading its record, each entry whose box misses the point's quarter of
/// the cell. Queries never allocate (beyond growing `result` the first time).
///
/// `GridIndex` is a `Sendable` value: queries only read it, so many threads may query one value
/// at once; ``insert(_:)`` and ``remove(at:)`` mutate a copy (copy-on-write arrays).
public struct GridIndex: Sendable {
  /// Refine data in storage order (see ``build(regions:cellSizeDegrees:edgePerSpan:)``):
  /// grouped by home cell, everywhere-list regions last.
  @usableFromInline internal var discs: [Disc]
  /// Storage index → slot.
  @usableFromInline internal var slotOfStored: [UInt32]
  /// Storage indices `everywhereStart ..< count` are checked on every query: the everywhere
  /// list (sphere-covering, pole-covering, very large regions), then regions inserted since the
  /// last build.
  @usableFromInline internal var everywhereStart: Int
  /// The latitude band of each region checked on every query, storage index
  /// `everywhereStart + k` at `k` (see ``Disc/latitudeBand``): a query in none of them skips
  /// the list without trigonometry.
  @usableFromInline internal var everywhereBands: [LatitudeBand]
  /// The smallest band holding every band of `everywhereBands` (empty, `+∞ ... −∞`, when there
  /// are none): a query outside it skips the list with two comparisons.
  @usableFromInline internal var everywhereSpan: LatitudeBand
  /// ``UnitVector/quarterDegreeTable``, held here so that a query reads it without the
  /// global's lazy-initialisation check (shared storage: one reference a copy of the index).
  @usableFromInline internal var unitVectorTable = UnitVector.quarterDegreeTable
  /// Storage indices `0 ..< filedEnd` are filed in cells; `filedEnd ..< everywhereStart` are
  /// slots removed before the last build.
  internal var filedEnd = 0
  /// The `cellSizeDegrees` given to `init`, reused when ``insert(_:)`` rebuilds.
  internal var requestedCellSizeDegrees: Double? = nil
  /// Slot → storage index; empty until the first ``insert(_:)`` or ``remove(at:)``.
  internal var storedOfSlot: [UInt32] = []
  /// Number of removed slots.
  internal var removedCount = 0
  /// Number of regions inserted since the last build (at the end of storage).
  internal var pendingCount = 0
  /// Cell geometry shared by all levels.
  @usableFromInline internal var grid: CellGrid
  /// Bit `k` is set when level `k` has at least one filed region.
  @usableFromInline internal var nonEmptyLevels: UInt64
  /// Levels stored densely: their cells are found by position in `offsets` (see ``LevelTable``),
  /// without hashing. The other non-empty levels are in `cells`.
  @usableFromInline internal var denseLevels: UInt64
  /// Level → its dense rectangle (`grid.levelCount` records; zero-sized for other levels).
  @usableFromInline internal var levelTables: [LevelTable]
  /// CSR offsets of the dense levels' cells into `entries`: the cell at position `p` of a level
  /// owns `entries[offsets[base + p] ..< offsets[base + p + 1]]` (low 28 bits); empty cells
  /// own an empty run. With fewer than ``subcellMaskedEntryLimit`` entries the top four bits
  /// of `offsets[base + p]` are the cell's sub-cell mask: bit `2 (row & 1) + (column & 1)`
  /// (row and column one level finer) is set when a region filed in the cell has a filing box
  /// touching that sub-cell (all four at level 0). Otherwise the offsets are plain.
  @usableFromInline internal var offsets: [UInt32]
  /// Occupancy bits and ranks of the ranked dense levels (``LevelTable/wordBase`` >= 0): such a
  /// level has offsets for its non-empty cells only, found by rank.
  @usableFromInline internal var rankWords: [RankWord]
  /// The only non-empty level when there is exactly one and it is dense (by position or
  /// ranked), else -1; its record is `soleTable`. Queries then skip the level loop.
  @usableFromInline internal var soleLevel: Int
  /// `levelTables[soleLevel]`, or ``LevelTable/none``.
  @usableFromInline internal var soleTable: LevelTable
  /// `offsetRunBits(entryCount: entries.count)`: the bits of a dense offset that hold the run
  /// start.
  @usableFromInline internal var offsetRunMask: UInt32
  /// Open-addressing table of the non-empty cells of the levels not in `denseLevels` (linear
  /// probing, load <= 2/3; empty when there are none).
  @usableFromInline internal var cells: [CellSlot]
  /// Number of non-empty cells over all levels, dense or hashed.
  @usableFromInline internal var usedCellCount: Int
  /// Storage indices grouped by cell: cell `c` owns `entries[c.start ..< c.start + c.count]`,
  /// in increasing order of storage index.
  ///
  /// With at most ``quarterMaskedRegionLimit`` filed regions, an entry is the storage index in
  /// its low 24 bits and the region's **quarter masks** in the cell above them: the cell is cut
  /// into 4 × 4 quarters (rows and columns of the grid two levels finer); bit `24 + k` is set
  /// when the region's filing box reaches quarter row `k` of the cell (0 southmost), bit `28 + k`
  /// when it reaches quarter column `k` (0 westmost, with the antimeridian rule of the columns).
  /// A query skips, without reading its refine record, an entry whose masks miss the point's
  /// quarter row or column: the box, and so the disc, cannot hold the point. Otherwise the
  /// entries are plain storage indices (see ``entryIndexMask``).
  @usableFromInline internal var entries: [UInt32]
  /// The bits of an entry that hold the storage index: the low 24 with quarter masks, else all.
  @usableFromInline internal var entryIndexMask: UInt32
  /// The bits of an entry that hold quarter masks (`0xFF00_0000`), or 0 without them: a query
  /// ANDs its quarter bits with this, so without masks every entry passes.
  @usableFromInline internal var entryQuarterBits: UInt32

  /// The most filed regions whose entries carry quarter masks (2^24: the storage index must
  /// fit the low 24 bits). Larger sets are answered the same, testing every entry of a cell.
  @usableFromInline internal static let quarterMaskedRegionLimit = 1 << 24

  /// The quarter bits of a point in its cell at `level`, from the point's quarter row and
  /// column (``CellGrid/inRangeQuarterRow(latitude:)``): one row bit and one column bit, both
  /// of which an entry must have (see ``entries``); 0 without quarter masks.
  @inlinable @inline(__always)
  internal func quarterBits(level: Int, quarterRow: Int, quarterColumn: Int) -> UInt32 {
    let r = UInt32(truncatingIfNeeded: (quarterRow &>> level) & 3)
    let c = UInt32(truncatingIfNeeded: (quarterColumn &>> level) & 3)
    return ((1 &<< (24 &+ r)) | (1 &<< (28 &+ c))) & entryQuarterBits
  }

  /// True when the entries of an index built over `regionCount` slots carry quarter masks (see
  /// ``entries``): every storage index fits 24 bits.
  internal static func hasQuarterMasks(regionCount: Int) -> Bool {
    regionCount <= quarterMaskedRegionLimit
  }

  /// Entry count from which the dense offsets carry no sub-cell masks (2^28: the offsets
  /// need all 32 bits).
  @usableFromInline internal static let subcellMaskedEntryLimit = 1 << 28

  /// The bits of a dense offset that hold the run start: the low 28 when the offsets carry
  /// sub-cell masks (fewer than ``subcellMaskedEntryLimit`` entries), else all 32.
  @inlinable @inline(__always)
  internal static func offsetRunBits(entryCount: Int) -> UInt32 {
    entryCount < subcellMaskedEntryLimit ? 0x0FFF_FFFF : 0xFFFF_FFFF
  }

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

  /// A region is filed at the finest level whose cell height is at least this many times its
  /// box span (in cell units), so that its box touches at most 2 cells per axis. Larger values
  /// file fewer entries but test more candidates per query (1,000,000 city regions: 1.0 gives
  /// 2.9 entries and ~830 candidates, 1.5 gives 2.2 and ~1,380, 2.0 gives 1.8 and ~2,130).
  internal static let defaultEdgePerSpan: Double = 1.5

  /// Builds the index.
  ///
  /// - Parameters:
  ///   - regions: the regions; slot `i` is `regions[i]`. At most `Int32.max` regions.
  ///   - cellSizeDegrees: the finest level's cell edge in degrees (square cells), clamped to
  ///     [``minimumCellSizeDegrees``, ``maximumCellSizeDegrees``]. NaN or `nil` (the default)
  ///     chooses from a sample of up to 65,536 regions: the ``columnAspect`` is the median
  ///     longitude / latitude extent of their boxes, and the finest height is 1.5 times the
  ///     smallest box span, so the smallest regions land in 1-4 cells of the finest level.
  /// - Complexity: O(n + m) time for `n` regions filed in `m` cells in all (m <= 12 n), with two
  ///   bounding boxes (eight trigonometric calls) per region and an in-place radix sort.
  ///   Scratch memory while building, released before returning: the records in slot order
  ///   (32 bytes a region; none for ``init(circles:cellSizeDegrees:)``), a filing box (32 bytes
  ///   a region), and the cell keys (8 bytes an entry) of one band of about a sixteenth of the
  ///   entries at a time. 1,000,000 city regions build in about 0.7 s (release, one core).
  public init(regions: [CircularRegion], cellSizeDegrees: Double? = nil) {
    precondition(regions.count <= Int(Int32.max), "GridIndex holds at most Int32.max regions")
    self = GridIndex.build(discs: regions.map(Disc.init), cellSizeDegrees: cellSizeDegrees)
  }

  /// Builds the index from packed circles, as ``init(regions:cellSizeDegrees:)`` does from
  /// the same circles as regions (the same records, bit for bit), without a temporary array of
  /// regions (56 bytes each) or of records in slot order (32 bytes each): each record is
  /// computed from its circle when the build reads it.
  /// - Parameters:
  ///   - circles: the circles; slot `i` is `circles[i]`. At most `Int32.max` of them.
  ///   - cellSizeDegrees: see ``init(regions:cellSizeDegrees:)``.
  /// - Complexity: that of ``init(regions:cellSizeDegrees:)``, plus one paired sine and
  ///   cosine and one sine per circle.
  public init(circles: [PackedCircle], cellSizeDegrees: Double? = nil) {
    precondition(circles.count <= Int(Int32.max), "GridIndex holds at most Int32.max regions")
    self = GridIndex.build(discs: DiscSource(circles: circles), cellSizeDegrees: cellSizeDegrees)
  }

  @usableFromInline
  internal init(
    discs: [Disc], slotOfStored: [UInt32], everywhereStart: Int, grid: CellGrid,
    nonEmptyLevels: UInt64, denseLevels: UInt64,
    levelTables: [LevelTable], offsets: [UInt32], rankWords: [RankWord], cells: [CellSlot],
    usedCellCount: Int, entries: [UInt32], quarterMasks masked: Bool
  ) {
    self.discs = discs
    self.slotOfStored = slotOfStored
    self.everywhereStart = everywhereStart
    self.everywhereBands = discs[everywhereStart...].map(\.latitudeBand)
    self.everywhereSpan = everywhereBands.reduce(.none) { $0.union($1) }
    self.grid = grid
    self.nonEmptyLevels = nonEmptyLevels
    self.denseLevels = denseLevels
    self.levelTables = levelTables
    self.offsets = offsets
    self.rankWords = rankWords
    self.cells = cells
    self.usedCellCount = usedCellCount
    self.entries = entries
    precondition(!masked || GridIndex.hasQuarterMasks(regionCount: discs.count))
    self.entryIndexMask = masked ? 0x00FF_FFFF : 0xFFFF_FFFF
    self.entryQuarterBits = masked ? 0xFF00_0000 : 0
    self.offsetRunMask = GridIndex.offsetRunBits(entryCount: entries.count)
    let sole = nonEmptyLevels.nonzeroBitCount == 1 && denseLevels & nonEmptyLevels != 0
    self.soleLevel = sole ? nonEmptyLevels.trailingZeroBitCount : -1
    self.soleTable = sole ? levelTables[nonEmptyLevels.trailingZeroBitCount] : .none
  }

  /// Number of slots (`0 ..< count`), including removed ones (see ``remove(at:)``).
  /// - Complexity: O(1).
  public var count: Int { discs.count }

  /// Replaces `result`'s contents with the slots of every region whose closed disc contains
  /// `point`, in no particular order. Reuses `result`'s capacity: no allocation once it holds
  /// the largest answer.
  ///
  /// - Parameters:
  ///   - point: the position; latitude in [−90, 90] and longitude in [−180, 180] degrees
  ///     (180 and −180 are the same meridian). A point outside those ranges (possible with
  ///     `Coordinate(uncheckedLatitude:longitude:)`) is answered by testing every region, O(n),
  ///     so the answer is still exact; NaN finds nothing.
  ///   - result: receives the slots; each containing slot appears exactly once. Slots removed
  ///     with ``remove(at:)`` never appear.
  /// - Complexity: O(L + c + w): `L` non-empty levels (one hash probe each), `c` slots filed in
  ///   the point's cell at each of those levels, `w` regions in the everywhere list. Each
  ///   candidate costs one squared-chord comparison (three multiplies) on a 32-byte record.
  @inlinable @inline(__always)
  public func query(_ point: Coordinate, into result: inout [Int32]) {
    GridIndex.clear(&result)
    forEachRegion(containing: point, knownVector: nil) { result.append($0) }
  }

  /// ``query(_:into:)`` for a caller that already holds `vector`, the point's unit vector
  /// (`UnitVector(point)`), so that it is not computed twice.
  ///
  /// Same answers, preconditions and cost as ``query(_:into:)``, minus the unit vector.
  /// - Precondition: `vector` is `UnitVector(point)`; another vector gives the answer for
  ///   that vector in the cells of `point`.
  @inlinable @inline(__always)
  public func query(_ point: Coordinate, unitVector vector: UnitVector, into result: inout [Int32])
  {
    GridIndex.clear(&result)
    forEachRegion(containing: point, knownVector: vector) { result.append($0) }
  }

  /// Replaces `result`'s contents with the slots of every region whose closed disc contains
  /// `point`, in no particular order: the same answers as ``query(_:into:)-(_,[Int32])``, at
  /// a store and an add per containing region (see ``SlotBuffer``).
  ///
  /// - Parameters:
  ///   - point: as for ``query(_:into:)-(_,[Int32])``.
  ///   - result: receives the slots; grows when a cell holds more candidates than its free
  ///     capacity, and never allocates again once it has held the largest cell's candidates.
  /// - Complexity: as ``query(_:into:)-(_,[Int32])``.
  @inlinable @inline(__always)
  public func query(_ point: Coordinate, into result: inout SlotBuffer) {
    query(point, knownVector: nil, into: &result)
  }

  /// ``query(_:into:)-(_,SlotBuffer)`` for a caller that already holds `vector`, the point's
  /// unit vector (`UnitVector(point)`), so that it is not computed twice.
  /// - Precondition: `vector` is `UnitVector(point)`.
  @inlinable @inline(__always)
  public func query(
    _ point: Coordinate, unitVector vector: UnitVector, into result: inout SlotBuffer
  ) {
    query(point, knownVector: vector, into: &result)
  }

  @inlinable @inline(__always)
  internal func query(
    _ point: Coordinate, knownVector: UnitVector?, into result: inout SlotBuffer
  ) {
    // The slots are written through a local pointer and count: every candidate's slot is
    // stored, and the count moves past it only when the region holds the point. The buffer is
    // made unique (copy-on-write) at the first run of candidates, so a query that meets no
    // candidate costs nothing but the final count.
    var base = result.base
    var room = result.capacity
    var held = 0
    var prepared = false
    forEachCandidate(
      containing: point, knownVector: knownVector,
      reserve: { extra in
        if !prepared || room &- held < extra {
          result._prepare(held: held, extra: extra)
          base = result.base
          room = result.capacity
          prepared = true
        }
      }
    ) { slot, inside in
      // `reserve` has run: `base` is set and has room.
      base.unsafelyUnwrapped[held] = slot
      held &+= inside ? 1 : 0
    }
    result._endAnswer(held: held)
  }

  /// `UnitVector(point)` for a point in range (latitude in [−90, 90], longitude in
  /// [−180, 180]), from the index's own reference to ``UnitVector/quarterDegreeTable``.
  @inlinable @inline(__always)
  internal func tabulatedVector(_ point: Coordinate) -> UnitVector {
    unitVectorTable.withUnsafeBufferPointer {
      UnitVector(
        inRangeLatitude: point.latitude, longitude: point.longitude,
        table: $0.baseAddress.unsafelyUnwrapped)
    }
  }

  /// Empties `result`, keeping its capacity. `removeAll(keepingCapacity:)` costs about 110
  /// instructions whatever the count and `removeLast()` about 20, so short answers (the usual
  /// case: about one region per fix) are popped one by one.
  @inlinable @inline(__always)
  internal static func clear(_ result: inout [Int32]) {
    let count = result.count
    if count == 0 { return }
    if count > 4 {
      result.removeAll(keepingCapacity: true)
      return
    }
    for _ in 0..<count { result.removeLast() }
  }

  /// Calls `body` with the slot of every region whose closed disc contains `point`, in no
  /// particular order, each exactly once (removed slots never). Does not allocate.
  ///
  /// Same answers, preconditions and cost as ``query(_:into:)``.
  @inlinable
  public func forEachRegion(containing point: Coordinate, _ body: (Int32) -> Void) {
    forEachRegion(containing: point, knownVector: nil, body)
  }

  /// ``forEachRegion(containing:_:)`` with the point's unit vector when the caller has it
  /// (`nil`: computed at the first candidate).
  @inlinable @inline(__always)
  internal func forEachRegion(
    containing point: Coordinate, knownVector: UnitVector?, _ body: (Int32) -> Void
  ) {
    forEachCandidate(containing: point, knownVector: knownVector, reserve: { _ in }) {
      slot, inside in
      if inside { body(slot) }
    }
  }

  /// The query's core: calls `visit(slot, inside)` for every region it refines, with `inside`
  /// true exactly for the regions whose closed disc contains `point` (each slot at most once;
  /// removed slots never inside). Before each run of candidates it calls `reserve(k)` with an
  /// upper bound `k` on the calls of `visit` in that run, so that a caller writing the slots
  /// unconditionally can make room once per run.
  @inlinable @inline(__always)
  internal func forEachCandidate(
    containing point: Coordinate, knownVector: UnitVector?, reserve: (Int) -> Void,
    _ visit: (Int32, Bool) -> Void
  ) {
    // Outside the documented ranges the grid's row and column would not name the point's
    // position on the sphere: test every region.
    let inRange = abs(point.latitude) <= 90 && abs(point.longitude) <= 180
    discs.withUnsafeBufferPointer { discBuffer in
      slotOfStored.withUnsafeBufferPointer { slotOf in
        // The unit vector waits for the first candidate: a point in empty cells, or far from
        // every everywhere-list region, costs only the lookups. In range it comes from the
        // index's reference to the quarter-degree table, the same bits as `UnitVector(point)`.
        var v = knownVector ?? UnitVector(x: 0, y: 0, z: 0)
        var haveVector = knownVector != nil
        let listEnd = discBuffer.count
        var i = inRange ? everywhereStart : 0
        if inRange && i < listEnd {
          // The everywhere list (polar, huge and pending regions) is skipped without
          // trigonometry when no region's latitude band holds the point: at once when the
          // point is outside the bands' span.
          var k = 0
          var bandCount = listEnd &- i
          if !everywhereSpan.contains(point.latitude) {
            bandCount = 0
          }
          while k < bandCount {
            if everywhereBands[k].contains(point.latitude) { break }
            k &+= 1
          }
          if k == bandCount { i = listEnd }
        }
        // The list (every region when out of range).
        if i < listEnd && !haveVector {
          v = inRange ? tabulatedVector(point) : UnitVector(point)
          haveVector = true
        }
        if i < listEnd { reserve(listEnd &- i) }
        while i < listEnd {
          visit(Int32(truncatingIfNeeded: slotOf[i]), discBuffer[i].contains(v))
          i &+= 1
        }
        if !inRange || nonEmptyLevels == 0 { return }
        let quarterRow = grid.inRangeQuarterRow(latitude: point.latitude)
        let quarterColumn = grid.inRangeQueryQuarterColumn(longitude: point.longitude)
        let indexMask = entryIndexMask
        entries.withUnsafeBufferPointer { stored in
          offsets.withUnsafeBufferPointer { offset in
            rankWords.withUnsafeBufferPointer { words in
              /// Tests the slots of `stored[start ..< end]` (the run of the point's cell at
              /// `level`) whose quarter masks hold the point's quarter (see ``entries``).
              @inline(__always) func scan(_ start: Int, _ end: Int, level: Int) {
                if start == end { return }
                let bits = quarterBits(
                  level: level, quarterRow: quarterRow, quarterColumn: quarterColumn)
                var e = start
                if !haveVector {
                  // No trigonometry until an entry's box reaches the point's quarter.
                  while e < end && stored[e] & bits != bits { e &+= 1 }
                  if e == end { return }
                  v = tabulatedVector(point)
                  haveVector = true
                }
                reserve(end &- e)
                while e < end {
                  let entry = stored[e]
                  e &+= 1
                  if entry & bits != bits { continue }
                  let i = Int(entry & indexMask)
                  visit(Int32(truncatingIfNeeded: slotOf[i]), discBuffer[i].contains(v))
                }
              }
              // One level stored by position or by rank (most sets once folded): no level
              // loop and no level table lookup.
              if soleLevel >= 0 {
                let run = soleTable.run(
                  level: soleLevel, quarterRow: quarterRow, quarterColumn: quarterColumn,
                  offsets: offset, words: words,
                  runBits: offsetRunMask)
                scan(run.start, run.end, level: soleLevel)
                return
              }
              levelTables.withUnsafeBufferPointer { tables in
                cells.withUnsafeBufferPointer { table in
                  let capacity = table.count
                  var levels = nonEmptyLevels
                  while levels != 0 {
                    let level = levels.trailingZeroBitCount
                    let bit = levels & (0 &- levels)
                    levels &= levels &- 1
                    // The point's cell at this level: `start ..< end` in `stored`.
                    var start = 0
                    var end = 0
                    if denseLevels & bit != 0 {
                      (start, end) = tables[level].run(
                        level: level, quarterRow: quarterRow, quarterColumn: quarterColumn,
                        offsets: offset, words: words, runBits: offsetRunMask)
                    } else {
                      let key = CellGrid.key(
                        level: level, row: quarterRow &>> (level &+ 2),
                        column: quarterColumn &>> (level &+ 2))
                      var h = CellSlot.home(key, capacity: capacity)
                      while true {
                        let cell = table[h]
                        if cell.key == key {
                          start = Int(cell.start)
                          end = start &+ Int(cell.count)
                          break
                        }
                        if cell.key == CellSlot.emptyKey { break }
                        h &+= 1
                        if h == capacity { h = 0 }
                      }
                    }
                    scan(start, end, level: level)
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

/// Where a dense level's cells are: the rectangle `rowLow ..< rowLow + rowCount` ×
/// `columnLow ..< columnLow + columnCount` of that level's rows and columns (the smallest one
/// holding all its non-empty cells), stored row by row from `offsets[base]`.
@usableFromInline
internal struct LevelTable: Sendable {
  @usableFromInline var rowLow: Int
  @usableFromInline var columnLow: Int
  @usableFromInline var rowCount: Int
  @usableFromInline var columnCount: Int
  @usableFromInline var base: Int
  /// For a ranked level, its first word in `rankWords`; -1 for a level stored by position.
  @usableFromInline var wordBase: Int

  /// The record of a level that is not dense: no position falls in it.
  @usableFromInline static let none = LevelTable(
    rowLow: 0, columnLow: 0, rowCount: 0, columnCount: 0, base: 0)

  @inlinable init(
    rowLow: Int, columnLow: Int, rowCount: Int, columnCount: Int, base: Int, wordBase: Int = -1
  ) {
    self.rowLow = rowLow
    self.columnLow = columnLow
    self.rowCount = rowCount
    self.columnCount = columnCount
    self.base = base
    self.wordBase = wordBase
  }

  /// The run in `entries` (`start ..< end`) of this level's cell at quarter row `quarterRow`
  /// and quarter column `quarterColumn` (``CellGrid/quarterRow(latitude:)``; this is level
  /// `level`, whose rows are `quarterRow >> (level + 2)`): empty when that cell is outside the rectangle,
  /// an empty position, or (offsets with sub-cell masks, `runBits` below 32 bits) a cell none
  /// of whose filed boxes touches the point's sub-cell.
  @inlinable @inline(__always)
  func run(
    level: Int, quarterRow: Int, quarterColumn: Int, offsets: UnsafeBufferPointer<UInt32>,
    words: UnsafeBufferPointer<RankWord>, runBits: UInt32
  ) -> (start: Int, end: Int) {
    let r = (quarterRow &>> (level &+ 2)) &- rowLow
    let c = (quarterColumn &>> (level &+ 2)) &- columnLow
    if UInt(bitPattern: r) >= UInt(bitPattern: rowCount)
      || UInt(bitPattern: c) >= UInt(bitPattern: columnCount)
    {
      return (0, 0)
    }
    let k = offsetIndex(position: r &* columnCount &+ c, words: words)
    if k < 0 { return (0, 0) }
    let word = offsets[k]
    if runBits != .max {
      // The point's sub-cell (level - 1) in this cell; level 0 has all four bits set.
      let subcell =
        ((quarterRow &>> (level &+ 1)) & 1) &<< 1 | ((quarterColumn &>> (level &+ 1)) & 1)
      if (word &>> 28) & (1 &<< UInt32(truncatingIfNeeded: subcell)) == 0 { return (0, 0) }
    }
    return (Int(word & runBits), Int(offsets[k &+ 1] & runBits))
  }

  /// The index in `offsets` of the cell at `position` (row-major in the rectangle), or -1 for
  /// an empty position of a ranked level.
  @inlinable @inline(__always)
  func offsetIndex(position p: Int, words: UnsafeBufferPointer<RankWord>) -> Int {
    if wordBase < 0 { return base &+ p }
    let word = words[wordBase &+ (p &>> 6)]
    let bit: UInt64 = 1 &<< UInt64(truncatingIfNeeded: p & 63)
    if word.bits & bit == 0 { return -1 }
    return base &+ Int(word.rank) &+ (word.bits & (bit &- 1)).nonzeroBitCount
  }
}

/// A closed range of latitudes in degrees, `low ... high`, that holds every point of a region.
@usableFromInline
internal struct LatitudeBand: Sendable, Equatable {
  @usableFromInline var low: Double
  @usableFromInline var high: Double

  @inlinable init(low: Double, high: Double) {
    self.low = low
    self.high = high
  }

  /// Every latitude (and no NaN: a query with a NaN latitude never reaches the bands).
  static let all = LatitudeBand(low: -.infinity, high: .infinity)

  /// No latitude: the identity of ``union(_:)``.
  static let none = LatitudeBand(low: .infinity, high: -.infinity)

  /// True when `latitude` (degrees) is in `low ... high`, both ends included; false for NaN.
  @inlinable @inline(__always)
  func contains(_ latitude: Double) -> Bool { latitude >= low && latitude <= high }

  /// The smallest band holding both bands.
  func union(_ other: LatitudeBand) -> LatitudeBand {
    LatitudeBand(low: min(low, other.low), high: max(high, other.high))
  }
}

/// 64 positions of a ranked level: which hold a non-empty cell, and how many non-empty cells
/// the level has before them.
@usableFromInline
internal struct RankWord: Sendable {
  @usableFromInline var bits: UInt64
  @usableFromInline var rank: UInt32

  @inlinable init(bits: UInt64, rank: UInt32) {
    self.bits = bits
    self.rank = rank
  }
}

/// A region's refine record: its centre unit vector and squared-chord threshold, exactly as in
/// the ``CircularRegion`` (32 bytes).
@usableFromInline
internal struct Disc: Sendable {
  @usableFromInline let center: UnitVector
  /// The region's threshold (>= 0, or +∞), negated for a removed slot: no squared chord is
  /// below a negative threshold, and the region's own stays recoverable for its box.
  @usableFromInline let chordSquaredThreshold: Double

  @inlinable init(_ region: CircularRegion) {
    self.center = region.centerVector
    self.chordSquaredThreshold = region.chordSquaredThreshold
  }

  @inlinable init(center: UnitVector, chordSquaredThreshold: Double) {
    self.center = center
    self.chordSquaredThreshold = chordSquaredThreshold
  }

  /// The record of a removed slot: contains no point (the threshold negated; a threshold that
  /// underflowed to 0 becomes the least negative Double).
  var removed: Disc {
    if isRemoved { return self }
    let t = chordSquaredThreshold
    return Disc(center: center, chordSquaredThreshold: t == 0 ? -.leastNonzeroMagnitude : -t)
  }

  /// True for the record of a removed slot.
  var isRemoved: Bool { chordSquaredThreshold < 0 }

  /// The region's threshold, also for a removed slot.
  var regionThreshold: Double { abs(chordSquaredThreshold) }

  /// True when the region covers the whole sphere (a threshold of +∞), removed or not.
  var coversSphere: Bool { regionThreshold == .infinity }

  /// The centre as latitude and longitude in degrees, recovered from the unit vector
  /// (`atan2`, well conditioned everywhere; within about 1e-15 rad of the given centre,
  /// 3e-10° in longitude at the polar margin), or `nil` for a non-finite vector.
  var centerCoordinate: Coordinate? {
    guard center.x.isFinite && center.y.isFinite && center.z.isFinite else { return nil }
    let horizontal = (center.x * center.x + center.y * center.y).squareRoot()
    let latitude = degrees(fromRadians: atan2(center.z, horizontal))
    let longitude = horizontal == 0 ? 0 : degrees(fromRadians: atan2(center.y, center.x))
    return Coordinate(uncheckedLatitude: latitude, longitude: longitude)
  }

  /// Angular radius in radians from the threshold, `2 asin(√T / 2)`, widened by a relative
  /// 1e-12 (far above the rounding of the chord and of ``centerCoordinate``), so that the box of
  /// ``boundingBox(around:)`` holds every point the refine test accepts.
  var angularRadius: Double {
    let half = min(1, regionThreshold.squareRoot() / 2)
    return 2 * asin(half) * (1 + 1e-12)
  }

  /// The cap box (``BoundingBox/cap(center:angularRadius:)``, with its 1e-9° padding) of the
  /// disc around `center` (from ``centerCoordinate``).
  func boundingBox(around center: Coordinate) -> BoundingBox {
    BoundingBox.cap(center: center, angularRadius: angularRadius)
  }

  /// The latitudes, in degrees, of the region's cap box (``boundingBox(around:)``, the box the
  /// grid files by, so it holds every point the refine test accepts); all latitudes for a
  /// sphere-covering disc or a non-finite centre. Removed records give their region's band.
  var latitudeBand: LatitudeBand {
    guard !coversSphere, let center = centerCoordinate else { return .all }
    let box = boundingBox(around: center)
    return LatitudeBand(low: box.minLatitude, high: box.maxLatitude)
  }

  /// The same comparison as ``CircularRegion/contains(_:)-(UnitVector)``, on the same values.
  @inlinable @inline(__always)
  func contains(_ point: UnitVector) -> Bool {
    center.chordSquared(to: point) <= chordSquaredThreshold
  }
}

// MARK: - Statistics

extension GridIndex {
  /// The finest level's cell height in degrees of latitude (level `k`:
  /// `finestCellSizeDegrees · 2^k`).
  public var finestCellSizeDegrees: Double { grid.edgeDegrees }

  /// Cell width / height in degrees (>= 1): cells are `columnAspect · finestCellSizeDegrees · 2^k`
  /// degrees of longitude wide.
  public var columnAspect: Double { grid.columnAspect }

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
  public var everywhereCount: Int { discs.count - everywhereStart - pendingCount }

  /// Bytes held by the grid structure: the entry array (4 bytes per entry), the dense levels'
  /// offsets (4 bytes per position, or per non-empty cell of a ranked level), the ranked
  /// levels' occupancy words (16 bytes per 64 positions), the cell table of the other levels
  /// (16 bytes per table slot, 1.5 slots per non-empty cell), the level records (48 bytes per
  /// level), the storage → slot map (4 bytes per region; 8 once ``insert(_:)`` or
  /// ``remove(at:)`` has been used) and the latitude bands of the everywhere list and pending
  /// insertions (16 bytes each). Counts capacity.
  public var indexFootprintBytes: Int {
    entries.capacity * MemoryLayout<UInt32>.stride
      + offsets.capacity * MemoryLayout<UInt32>.stride
      + rankWords.capacity * MemoryLayout<RankWord>.stride
      + levelTables.capacity * MemoryLayout<LevelTable>.stride
      + cells.capacity * MemoryLayout<CellSlot>.stride
      + (slotOfStored.capacity + storedOfSlot.capacity) * MemoryLayout<UInt32>.stride
      + everywhereBands.capacity * MemoryLayout<LatitudeBand>.stride
  }

  /// Bytes of region geometry: the refine records (32 bytes per region: centre unit vector
  /// and squared-chord threshold), the only copy of the geometry the index keeps. Counts
  /// capacity.
  public var geometryFootprintBytes: Int { discs.capacity * MemoryLayout<Disc>.stride }

  /// ``indexFootprintBytes`` + ``geometryFootprintBytes``: every heap byte the index owns (the
  /// struct itself is under 200 bytes).
  public var memoryFootprintBytes: Int { indexFootprintBytes + geometryFootprintBytes }
}

// MARK: - Diagnostics

extension GridIndex {
  /// Number of candidates a query at `point` (in range) scans: the everywhere list when one
  /// of its latitude bands holds the point (the query skips it otherwise) plus the entries of
  /// the point's cell at every non-empty level. For measurements.
  internal func _candidateCount(at point: Coordinate) -> Int {
    _candidates(at: point).scanned
  }

  /// Number of refine tests a query at `point` (in range) makes: the everywhere list when one
  /// of its latitude bands holds the point plus the entries of the point's cells whose quarter
  /// masks hold the point's quarter. For measurements.
  internal func _refineCount(at point: Coordinate) -> Int {
    _candidates(at: point).refined
  }

  /// Entries scanned and refined (see ``_candidateCount(at:)`` and ``_refineCount(at:)``).
  private func _candidates(at point: Coordinate) -> (scanned: Int, refined: Int) {
    let listTested = everywhereBands.contains { $0.contains(point.latitude) }
    var scanned = listTested ? everywhereCount : 0
    var refined = scanned
    let quarterRow = grid.quarterRow(latitude: point.latitude)
    let quarterColumn = grid.queryQuarterColumn(longitude: point.longitude)
    for level in nonEmptyLevelList {
      var run = (start: 0, end: 0)
      if denseLevels & (1 &<< UInt64(level)) != 0 {
        run = offsets.withUnsafeBufferPointer { offset in
          rankWords.withUnsafeBufferPointer { words in
            levelTables[level].run(
              level: level, quarterRow: quarterRow, quarterColumn: quarterColumn,
              offsets: offset, words: words, runBits: offsetRunMask)
          }
        }
      } else {
        let key = CellGrid.key(
          level: level, row: quarterRow >> (level + 2), column: quarterColumn >> (level + 2))
        var h = CellSlot.home(key, capacity: cells.count)
        while cells[h].key != CellSlot.emptyKey {
          if cells[h].key == key {
            run = (Int(cells[h].start), Int(cells[h].start + cells[h].count))
            break
          }
          h += 1
          if h == cells.count { h = 0 }
        }
      }
      let bits = quarterBits(level: level, quarterRow: quarterRow, quarterColumn: quarterColumn)
      scanned += run.end - run.start
      for e in run.start..<run.end where entries[e] & bits == bits { refined += 1 }
    }
    return (scanned, refined)
  }
}
