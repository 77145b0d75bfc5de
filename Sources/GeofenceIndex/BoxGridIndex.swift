/// Answers "which longitude/latitude boxes may contain this point?" with a one-level planar grid
/// keyed by the point's degrees: no unit vector, no trigonometry. The first filter for polygons,
/// whose containment test is itself planar in longitude and latitude.
///
/// Each box carries a payload (an `Int32` the caller chooses, such as a polygon's number). A
/// query calls its body with the payload of every box that contains the point, and possibly of a
/// few boxes that do not (see **Answers**); the caller's exact test decides.
///
/// ## Answers
///
/// - **Never misses**: every box whose closed extent (in degrees) contains the point is
///   reported, exactly once, unless the build's coverage says its shape wholly misses the
///   point's subcell (see ``init(boxes:payloads:coverage:)``).
/// - **May over-report** by rounding only: the boxes are held as `Float` bounds and the point is
///   rounded to `Float` for the comparison, so a point within about one `Float` ulp (about 4e-6°
///   at 180°, 0.4 m) outside a box may be reported. Rounding to nearest is monotonic, so a point
///   inside a box is never rounded outside it.
/// - **Longitudes**: a box is given in its own frame, `minLongitude` in [−180, 180) and
///   `maxLongitude` up to `minLongitude + 360`; the part past 180 is filed again 360° lower, and
///   a box whose west side is −180 is filed again at 180 (the same meridian), so that a query
///   longitude λ in [−180, 180] finds a box that holds λ, λ + 360 or λ − 360. A box spanning
///   more than 359.999° is filed as all longitudes.
/// - **Domain**: latitude in [−90, 90], longitude in [−180, 180]; a caller must answer other
///   points (NaN, or out of range through `Coordinate(uncheckedLatitude:longitude:)`) itself.
///
/// ## Structure
///
/// A dense grid over the rectangle the boxes occupy, its cells half the median box width and
/// height (coarser when that would give more than 8 cells a box), holding a CSR list of
/// entries: per entry the box as `SIMD4<Float>(minLongitude, minLatitude, −maxLongitude,
/// −maxLatitude)`, the payload, and two 256-bit masks over the cell cut into 16 × 16 subcells
/// (the subcells the box's shape wholly covers, and those it wholly misses, when the builder
/// is given the shapes' coverage), so a cell's candidates are tested, a point deep inside a
/// shape answered and a point in a shape's box but clear of the shape dropped, with one vector
/// comparison and two bit tests each, without reading anything else. A box that would meet
/// more than ``maximumCellsPerBox`` cells goes to a **wide list** tested on every query
/// instead (with its inner box, ``Box/inner``, and no subcells), and so do boxes added after
/// the build (``insert(_:payload:)``) until the owner rebuilds.
///
/// Memory: 4 bytes a cell plus 96 bytes an entry (one and a half cache lines); with cells half
/// a box's size a box meets about 4 to 9 cells.
public struct BoxGridIndex: Sendable {
  /// A box in degrees: `minLongitude` in [−180, 180), `maxLongitude` in
  /// [`minLongitude`, `minLongitude + 360`], latitudes in [−90, 90] with `minLatitude <=
  /// maxLatitude`.
  public struct Box: Sendable, Equatable {
    public var minLongitude: Double
    public var maxLongitude: Double
    public var minLatitude: Double
    public var maxLatitude: Double
    /// Optionally, a box wholly inside the payload's shape, as (minLongitude, minLatitude,
    /// maxLongitude, maxLatitude) with longitudes in [−180, 180]: while the box is on the wide
    /// list, a point in it is reported as certainly inside (see
    /// ``forEachCandidate(longitude:latitude:_:)``); a box filed in cells answers from the
    /// build's coverage instead. Nil: none.
    public var inner: SIMD4<Double>?

    public init(
      minLongitude: Double, maxLongitude: Double, minLatitude: Double, maxLatitude: Double,
      inner: SIMD4<Double>? = nil
    ) {
      self.minLongitude = minLongitude
      self.maxLongitude = maxLongitude
      self.minLatitude = minLatitude
      self.maxLatitude = maxLatitude
      self.inner = inner
    }
  }

  /// A box filed in more cells than this goes to the wide list.
  public static let maximumCellsPerBox = 64

  /// The grid's lower-left corner (degrees) and cells per degree along each axis (0 when the
  /// occupied rectangle has no extent on that axis: one column or row).
  @usableFromInline let originX: Double
  @usableFromInline let originY: Double
  @usableFromInline let scaleX: Double
  @usableFromInline let scaleY: Double
  @usableFromInline let columns: Int
  @usableFromInline let rows: Int
  /// `columns × rows + 1` offsets into ``entries``: cell `c` (row-major) holds entries
  /// `cellStarts[c] ..< cellStarts[c + 1]`.
  @usableFromInline let cellStarts: [UInt32]
  /// A cell's entry: one box, everything a query reads of it in one 96-byte stride.
  @usableFromInline struct Entry: Sendable {
    /// `(minLongitude, minLatitude, −maxLongitude, −maxLatitude)` as `Float` rounded to
    /// nearest. A removed entry holds +∞ in every lane and contains no point.
    @usableFromInline var bounds: SIMD4<Float>
    @usableFromInline var payload: Int32
    /// The cell cut into 16 × 16 subcells (see ``subcell(u:v:column:row:)``): bit `16 r + c`
    /// (bit `i % 64` of lane `i / 64`) set when subcell (c, r) lies wholly inside the shape,
    /// or wholly outside it; both 0 when the builder was given no coverage.
    @usableFromInline var inside: SIMD4<UInt64>
    @usableFromInline var outside: SIMD4<UInt64>
  }
  @usableFromInline var entries: [Entry]
  /// The wide list: boxes tested on every query, as ``Entry/bounds`` and their payloads.
  @usableFromInline var wideBounds: [SIMD8<Float>]
  @usableFromInline var widePayloads: [Int32]
  /// Number of wide-list entries that ``insert(_:payload:)`` added since the build.
  public private(set) var insertedCount: Int = 0

  /// An index of no box.
  public init() {
    self.init(boxes: [], payloads: [])
  }

  /// Builds the index.
  /// - Parameters:
  ///   - boxes: the boxes, each as documented on ``Box``.
  ///   - payloads: one per box, reported by queries.
  ///   - coverage: optionally, which parts of a cell the shape of box `i` (its first argument)
  ///     covers: given the south-west corner of a 16 × 16 block of subcells (longitude in
  ///     [−180, 180], latitude, degrees) and a subcell's width and height (degrees), the
  ///     subcells wholly inside the shape and those wholly outside it, bit `16 r + c` (bit
  ///     `i % 64` of lane `i / 64`) for row `r` from the south and column `c` from the west,
  ///     each holding for the subcell grown by 1e-9° (see
  ///     ``PolygonRegion/coverage(minLongitude:minLatitude:cellWidth:cellHeight:)`` in
  ///     `GeofenceGeometry`, which answers exactly this). Called once a filed entry; nil: every
  ///     subcell undecided.
  /// - Precondition: `boxes.count == payloads.count`, fewer than 2^32 entries in all.
  /// - Complexity: O(n log n + e) for n boxes and e entries (a median sort, then two passes),
  ///   plus a `coverage` call an entry.
  public init(
    boxes: [Box], payloads: [Int32],
    coverage: (
      (Int, SIMD2<Double>, SIMD2<Double>) -> (inside: SIMD4<UInt64>, outside: SIMD4<UInt64>)
    )? = nil
  ) {
    precondition(boxes.count == payloads.count, "one payload per box")
    var pieces: [SIMD4<Double>] = []  // (minX, minY, maxX, maxY) in [−180, 180]
    var pieceOwners: [Int32] = []
    var pieceBoxes: [Int] = []
    var packedPieces: [SIMD8<Float>] = []
    pieces.reserveCapacity(boxes.count)
    pieceOwners.reserveCapacity(boxes.count)
    packedPieces.reserveCapacity(boxes.count)
    for (b, (box, payload)) in zip(boxes, payloads).enumerated() {
      for piece in Self.pieces(of: box) {
        pieces.append(piece)
        pieceOwners.append(payload)
        pieceBoxes.append(b)
        packedPieces.append(Self.packed(piece, box: box))
      }
    }
    // The occupied rectangle and the median piece size.
    var low = SIMD2<Double>(repeating: .infinity)
    var high = SIMD2<Double>(repeating: -.infinity)
    var widths: [Double] = []
    var heights: [Double] = []
    widths.reserveCapacity(pieces.count)
    heights.reserveCapacity(pieces.count)
    for p in pieces {
      low = pointwiseMin(low, SIMD2(p.x, p.y))
      high = pointwiseMax(high, SIMD2(p.z, p.w))
      widths.append(p.z - p.x)
      heights.append(p.w - p.y)
    }
    var columns = 1
    var rows = 1
    var scaleX = 0.0
    var scaleY = 0.0
    if !pieces.isEmpty {
      widths.sort()
      heights.sort()
      let extent = high - low
      // Half the median box, but at least 1e-7° (1 cm), and at most 8 cells a box.
      var cellWidth = Swift.max(widths[widths.count / 2] / 2, 1e-7)
      var cellHeight = Swift.max(heights[heights.count / 2] / 2, 1e-7)
      let cap = Double(Swift.max(1024, 8 * pieces.count))
      let cells = (extent.x / cellWidth + 1) * (extent.y / cellHeight + 1)
      if cells > cap {
        let grow = (cells / cap).squareRoot()
        cellWidth *= grow
        cellHeight *= grow
      }
      if extent.x > 0 {
        columns = Swift.max(1, Swift.min(1 << 15, Int((extent.x / cellWidth).rounded(.up))))
        scaleX = Double(columns) / extent.x
      }
      if extent.y > 0 {
        rows = Swift.max(1, Swift.min(1 << 15, Int((extent.y / cellHeight).rounded(.up))))
        scaleY = Double(rows) / extent.y
      }
    }
    self.originX = pieces.isEmpty ? 0 : low.x
    self.originY = pieces.isEmpty ? 0 : low.y
    self.scaleX = scaleX
    self.scaleY = scaleY
    self.columns = columns
    self.rows = rows
    // Count, then fill, the cells' entries; wide pieces aside.
    let cellCount = columns * rows
    var starts = [UInt32](repeating: 0, count: cellCount + 1)
    var wideBounds: [SIMD8<Float>] = []
    var widePayloads: [Int32] = []
    var spans: [(c0: Int, c1: Int, r0: Int, r1: Int)] = []
    spans.reserveCapacity(pieces.count)
    for (p, owner) in zip(pieces, pieceOwners) {
      let c0 = Self.clamp((p.x - originX) * scaleX, columns)
      let c1 = Self.clamp((p.z - originX) * scaleX, columns)
      let r0 = Self.clamp((p.y - originY) * scaleY, rows)
      let r1 = Self.clamp((p.w - originY) * scaleY, rows)
      if (c1 - c0 + 1) * (r1 - r0 + 1) > Self.maximumCellsPerBox {
        wideBounds.append(packedPieces[spans.count])
        widePayloads.append(owner)
        spans.append((1, 0, 1, 0))  // filed in no cell
        continue
      }
      spans.append((c0, c1, r0, r1))
      for r in r0...r1 {
        for c in c0...c1 { starts[r * columns + c + 1] += 1 }
      }
    }
    for c in 0..<cellCount { starts[c + 1] += starts[c] }
    let entryCount = Int(starts[cellCount])
    var entries = [Entry](
      repeating: Entry(
        bounds: SIMD4(repeating: .infinity), payload: -1, inside: .zero, outside: .zero),
      count: entryCount)
    var fill = Array(starts[0..<cellCount])
    // A subcell's size, as queries cut the cells (see `subcell`); none without extent.
    let subcell = SIMD2(
      1 / (Double(Self.subcellsPerSide) * scaleX), 1 / (Double(Self.subcellsPerSide) * scaleY))
    let decides = coverage != nil && scaleX > 0 && scaleY > 0
    for (k, s) in spans.enumerated() where s.c0 <= s.c1 {
      let packed = packedPieces[k]
      for r in s.r0...s.r1 {
        for c in s.c0...s.c1 {
          let cell = r * columns + c
          let at = Int(fill[cell])
          var entry = Entry(
            bounds: packed.lowHalf, payload: pieceOwners[k], inside: .zero, outside: .zero)
          if decides, let coverage {
            let corner = SIMD2(
              low.x + Double(c) / scaleX, low.y + Double(r) / scaleY)
            let masks = coverage(pieceBoxes[k], corner, subcell)
            // A subcell cannot be both; a shape that says so decides neither.
            let both = masks.inside & masks.outside
            entry.inside = masks.inside & ~both
            entry.outside = masks.outside & ~both
          }
          entries[at] = entry
          fill[cell] += 1
        }
      }
    }
    self.cellStarts = starts
    self.entries = entries
    self.wideBounds = wideBounds
    self.widePayloads = widePayloads
  }

  /// The parts of `box` within longitudes [−180, 180]: the box itself, its part past 180
  /// moved 360° lower, and its west side at −180 again as 180 (a query at 180 is the same
  /// place); all longitudes for a box spanning more than 359.999°.
  static func pieces(of box: Box) -> [SIMD4<Double>] {
    let y0 = box.minLatitude
    let y1 = box.maxLatitude
    if box.maxLongitude - box.minLongitude > 359.999 { return [SIMD4(-180, y0, 180, y1)] }
    var result: [SIMD4<Double>] = []
    let x0 = Swift.max(box.minLongitude, -180)
    let x1 = Swift.min(box.maxLongitude, 180)
    if x0 <= x1 { result.append(SIMD4(x0, y0, x1, y1)) }
    if box.maxLongitude >= 180 {
      result.append(SIMD4(-180, y0, Swift.min(box.maxLongitude - 360, 180), y1))
    }
    if box.minLongitude <= -180 { result.append(SIMD4(180, y0, 180, y1)) }
    return result
  }

  /// `(minX, minY, −maxX, −maxY)` as `Float`, then the inner box of `box` the same way, each
  /// bound moved inward (``inward(_:)``) when the inner box lies within `piece`: a point `q` as
  /// `(x, y, −x, −y)` lies in a box when every lane of the box is at most q's.
  static func packed(_ piece: SIMD4<Double>, box: Box) -> SIMD8<Float> {
    let outer = SIMD4(Float(piece.x), Float(piece.y), Float(-piece.z), Float(-piece.w))
    var inner = SIMD4<Float>(repeating: .infinity)
    if let i = box.inner, i.x >= piece.x, i.y >= piece.y, i.z <= piece.z, i.w <= piece.w {
      inner = SIMD4(inward(i.x), inward(i.y), inward(-i.z), inward(-i.w))
    }
    return SIMD8(lowHalf: outer, highHalf: inner)
  }

  /// A `Float` f with `Float(v') >= f` only for `v' > v`: the least `Float` at or above `v`,
  /// one step further up. Rounding to nearest moves a value by at most half a step, so a
  /// value whose `Float` reaches f lies above `v`: the inner box stays inside.
  static func inward(_ v: Double) -> Float {
    var f = Float(v)
    if Double(f) < v { f = f.nextUp }
    return f.nextUp
  }

  /// `⌊u⌋` clamped to `0 ..< count`; NaN gives 0.
  @inlinable @inline(__always)
  static func clamp(_ u: Double, _ count: Int) -> Int {
    if !(u > 0) { return 0 }
    return u < Double(count) ? Int(u) : count &- 1
  }

  /// Subcells along each side of a cell (see ``Entry``).
  @usableFromInline static let subcellsPerSide = 16

  /// The point's subcell in its cell, `i = 16 r + c` for subcell column `c = ⌊16 (u −
  /// column)⌋` and row `r` likewise (each at most 15), as the lane `i / 64` and a mask of bit
  /// `i % 64`; the mask is 0 when the point lies outside the grid's rectangle (`u` or `v`
  /// outside `0 ..< columns` or `0 ..< rows`). The build decides each entry's subcells for the
  /// same cuts (see `init`).
  @inlinable @inline(__always)
  func subcell(u: Double, v: Double, column: Int, row: Int) -> (lane: Int, bit: UInt64) {
    guard u >= 0, v >= 0, u < Double(columns), v < Double(rows) else { return (0, 0) }
    let side = Self.subcellsPerSide
    let c = Swift.min(side &- 1, Int((u - Double(column)) * Double(side)))
    let r = Swift.min(side &- 1, Int((v - Double(row)) * Double(side)))
    let i = r &* side &+ c
    return (i &>> 6, 1 &<< UInt64(i & 63))
  }

  /// Calls `body` with the payload of every box that contains (`longitude`, `latitude`) and
  /// whose shape may contain it, each once, and possibly of boxes within rounding of it (see
  /// **Answers**), and whether the point is certainly inside the shape: in a subcell the
  /// build's `coverage` put wholly inside, or for a box of the wide list in its inner box
  /// (``Box/inner``); false says nothing. A box whose `coverage` put the point's subcell wholly outside the shape is not
  /// reported. Does not allocate.
  /// - Precondition: `latitude` in [−90, 90] and `longitude` in [−180, 180] (not NaN).
  /// - Complexity: O(c + w): the c entries of the point's cell and the w of the wide list, one
  ///   `Float` vector comparison each.
  @inlinable
  public func forEachCandidate(
    longitude x: Double, latitude y: Double, _ body: (Int32, Bool) throws -> Void
  ) rethrows {
    let xf = Float(x)
    let yf = Float(y)
    let q = SIMD4<Float>(xf, yf, -xf, -yf)
    let u = (x - originX) * scaleX
    let v = (y - originY) * scaleY
    let column = Self.clamp(u, columns)
    let row = Self.clamp(v, rows)
    let cell = row &* columns &+ column
    let (lane, bit) = subcell(u: u, v: v, column: column, row: row)
    try cellStarts.withUnsafeBufferPointer { starts in
      try entries.withUnsafeBufferPointer { entries in
        var k = Int(starts[cell])
        let end = Int(starts[cell &+ 1])
        while k < end {
          let e = entries[k]
          if all(e.bounds .<= q) && e.outside[lane] & bit == 0 {
            try body(e.payload, e.inside[lane] & bit != 0)
          }
          k &+= 1
        }
      }
    }
    if wideBounds.isEmpty { return }
    for k in wideBounds.indices where all(wideBounds[k].lowHalf .<= q) {
      try body(widePayloads[k], all(wideBounds[k].highHalf .<= q))
    }
  }

  /// Adds `box` with `payload` to the wide list (tested on every query): O(1), but each insert
  /// adds a comparison to every query until the owner rebuilds the index (see
  /// ``insertedCount``).
  public mutating func insert(_ box: Box, payload: Int32) {
    for piece in Self.pieces(of: box) {
      wideBounds.append(Self.packed(piece, box: box))
      widePayloads.append(payload)
      insertedCount += 1
    }
  }

  /// Takes `payload`'s entries for `box` (the box it was given with) out of every answer.
  /// - Complexity: O(k) for the k entries of the cells the box meets, or of the wide list.
  public mutating func remove(_ box: Box, payload: Int32) {
    let removed = SIMD8<Float>(repeating: .infinity)
    for p in Self.pieces(of: box) {
      let c0 = Self.clamp((p.x - originX) * scaleX, columns)
      let c1 = Self.clamp((p.z - originX) * scaleX, columns)
      let r0 = Self.clamp((p.y - originY) * scaleY, rows)
      let r1 = Self.clamp((p.w - originY) * scaleY, rows)
      if (c1 - c0 + 1) * (r1 - r0 + 1) <= Self.maximumCellsPerBox {
        for r in r0...r1 {
          for c in c0...c1 {
            let cell = r * columns + c
            for k in Int(cellStarts[cell])..<Int(cellStarts[cell + 1])
            where entries[k].payload == payload {
              entries[k].bounds = removed.lowHalf
            }
          }
        }
      }
    }
    for k in wideBounds.indices where widePayloads[k] == payload { wideBounds[k] = removed }
  }

  /// Heap bytes of the grid, entries and wide list, by capacity.
  public var memoryFootprintBytes: Int {
    cellStarts.capacity * 4 + entries.capacity * MemoryLayout<Entry>.stride
      + wideBounds.capacity * 32 + widePayloads.capacity * 4
  }

  /// Number of entries in the cells and the wide list (for diagnostics).
  public var entryCount: Int { entries.count + wideBounds.count }
}
