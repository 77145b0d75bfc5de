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
/// entries (per entry the box as `SIMD4<Float>(minLongitude, minLatitude, −maxLongitude,
/// −maxLatitude)` and the payload), and for each cell a **subcell table**: the cell cut into
/// 16 × 16 subcells, and for each subcell two bit masks over the cell's entries, the entries
/// that may contain a point of the subcell (the box meets it and the shape does not wholly miss
/// it) and those whose shape wholly covers it (when the builder is given the shapes'
/// coverage). A query reads its subcell's row, a few bytes, and then only the entries it
/// names: a point deep inside a shape is answered from the row and the payload, a point in a
/// shape's box but clear of the shape, or outside the box by a subcell, costs nothing, and the
/// other candidates take one vector comparison each. However many entries the cell holds, the
/// common path touches the cell's record, one row and the named entries. A box that would meet
/// more than ``maximumCellsPerBox`` cells goes to a **wide list** tested on every query
/// instead (with its inner box, ``Box/inner``, and no subcells), and so do boxes added after
/// the build (``insert(_:payload:)``) until the owner rebuilds.
///
/// Memory: 4 bytes a cell and 84 bytes an entry (20 for the box and payload, 64 for its two
/// bits in each of 256 rows); with cells half a box's size a box meets about 4 to 9 cells.
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
  /// `columns × rows + 1` offsets into the entries: cell `c` (row-major) holds entries
  /// `cellStarts[c] ..< cellStarts[c + 1]`, and its subcell table starts at byte
  /// `64 cellStarts[c]` of ``subcellBits``.
  @usableFromInline var cellStarts: [UInt32]
  /// Per entry, in cell order: the box as `(minLongitude, minLatitude, −maxLongitude,
  /// −maxLatitude)`, `Float` rounded to nearest (a removed entry holds +∞ in every lane and
  /// contains no point), and its payload.
  @usableFromInline var bounds: [SIMD4<Float>]
  @usableFromInline var payloads: [Int32]
  /// The cells' subcell tables, subcell-major so that a query reads one row: a cell of `n`
  /// entries takes 256 rows of `2 n` bits (64 `n` bytes), row `i = 16 r + c` for subcell
  /// (c, r) (see ``subcell(u:v:column:row:)``) starting at bit `512 cellStarts[cell] + 2 n i`
  /// (bit `b` is bit `b % 8` of byte `b / 8`) and holding first the **candidate** mask, bit `j`
  /// set when the cell's entry `j` may contain a point of the subcell (its shape does not
  /// wholly miss the subcell and its `Float` box meets it), then the **inside** mask, bit `j`
  /// set when the shape wholly covers the subcell (a subset of the candidates). Eight zero
  /// bytes follow the last table, so that a query may load eight bytes from any row.
  @usableFromInline var subcellBits: [UInt64]
  /// The wide list: boxes tested on every query, as ``bounds`` (then the inner box) and
  /// their payloads.
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
    precondition(starts[cellCount] < UInt32.max, "fewer than 2^32 entries")
    let entryCount = Int(starts[cellCount])
    var bounds = [SIMD4<Float>](repeating: SIMD4(repeating: .infinity), count: entryCount)
    var entryPayloads = [Int32](repeating: -1, count: entryCount)
    var entryPieces = [Int32](repeating: -1, count: entryCount)
    var fill = Array(starts[0..<cellCount])
    for (k, s) in spans.enumerated() where s.c0 <= s.c1 {
      for r in s.r0...s.r1 {
        for c in s.c0...s.c1 {
          let cell = r * columns + c
          let at = Int(fill[cell])
          bounds[at] = packedPieces[k].lowHalf
          entryPayloads[at] = pieceOwners[k]
          entryPieces[at] = Int32(k)
          fill[cell] += 1
        }
      }
    }
    // The subcell tables: 64 n bytes a cell of n entries (see `subcellBits`).
    var table = [UInt64](repeating: 0, count: 8 * entryCount + 1)
    // A subcell's size, as queries cut the cells (see `subcell`); none without extent.
    let subcell = SIMD2(
      1 / (Double(Self.subcellsPerSide) * scaleX), 1 / (Double(Self.subcellsPerSide) * scaleY))
    let decides = coverage != nil && scaleX > 0 && scaleY > 0
    table.withUnsafeMutableBytes { table in
      for r in 0..<rows {
        for c in 0..<columns {
          let cell = r * columns + c
          let first = Int(starts[cell])
          let n = Int(starts[cell + 1]) - first
          if n == 0 { continue }
          let base = 512 * first
          let corner = SIMD2(low.x + Double(c) / scaleX, low.y + Double(r) / scaleY)
          for j in 0..<n {
            let e = first + j
            var inside = SIMD4<UInt64>.zero
            var outside = SIMD4<UInt64>.zero
            if decides, let coverage {
              let masks = coverage(pieceBoxes[Int(entryPieces[e])], corner, subcell)
              // A subcell cannot be both; a shape that says so decides neither.
              let both = masks.inside & masks.outside
              inside = masks.inside & ~both
              outside = masks.outside & ~both
            }
            let meets = Self.subcellsMeeting(
              bounds[e], corner: corner, subcell: subcell, scaleX: scaleX, scaleY: scaleY)
            let candidate = meets & ~outside
            inside &= candidate
            // Set bits only: most subcells of an entry are wholly missed.
            for lane in 0..<4 {
              var m = candidate[lane]
              while m != 0 {
                let i = lane << 6 | m.trailingZeroBitCount
                m &= m - 1
                let bit = base + i * 2 * n + j
                table[bit >> 3] |= 1 << UInt8(bit & 7)
                if inside[lane] & (1 << UInt64(i & 63)) != 0 {
                  table[(bit + n) >> 3] |= 1 << UInt8((bit + n) & 7)
                }
              }
            }
          }
        }
      }
    }
    self.cellStarts = starts
    self.bounds = bounds
    self.payloads = entryPayloads
    self.subcellBits = table
    self.wideBounds = wideBounds
    self.widePayloads = widePayloads
  }

  /// The subcells of the cell at `corner` (degrees; subcells of `subcell` degrees, as
  /// ``init(boxes:payloads:coverage:)`` gives them) that a point inside `bounds` (as
  /// ``bounds``) may lie in, as 256 bits: each subcell grown by 1e-9° and by two `Float` ulps of
  /// its coordinates, since a query compares the point rounded to `Float`. Every subcell along
  /// an axis without extent (scale 0).
  static func subcellsMeeting(
    _ bounds: SIMD4<Float>, corner: SIMD2<Double>, subcell: SIMD2<Double>, scaleX: Double,
    scaleY: Double
  ) -> SIMD4<UInt64> {
    func along(_ origin: Double, _ size: Double, _ lo: Float, _ hi: Float, _ scale: Double)
      -> UInt32
    {
      if !(scale > 0) { return 0xFFFF }
      if lo > hi { return 0 }  // removed: +∞ in every lane
      var bits: UInt32 = 0
      let side = Self.subcellsPerSide
      // Two ulps at the cell's largest magnitude, at least those of each subcell's.
      let largest = Swift.max(abs(origin), abs(origin + Double(side) * size))
      let margin = 1e-9 + 2 * Double(Float(largest).ulp)
      for k in 0..<side {
        let a = origin + Double(k) * size
        let b = origin + Double(k + 1) * size
        if b + margin >= Double(lo) && a - margin <= Double(hi) { bits |= 1 << UInt32(k) }
      }
      return bits
    }
    let columns = along(corner.x, subcell.x, bounds.x, -bounds.z, scaleX)
    let rows = along(corner.y, subcell.y, bounds.y, -bounds.w, scaleY)
    var result = SIMD4<UInt64>.zero
    for r in 0..<Self.subcellsPerSide where rows & (1 << UInt32(r)) != 0 {
      let i = r * Self.subcellsPerSide
      result[i >> 6] |= UInt64(columns) << UInt64(i & 63)
    }
    return result
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

  /// Subcells along each side of a cell (see ``subcellBits``).
  @usableFromInline static let subcellsPerSide = 16

  /// The point's subcell in its cell, `i = 16 r + c` for subcell column `c = ⌊16 (u −
  /// column)⌋` and row `r` likewise (each at most 15), or nil when the point lies outside the
  /// grid's rectangle (`u` or `v` outside `0 ..< columns` or `0 ..< rows`). The build decides
  /// each entry's subcells for the same cuts (see `init`).
  @inlinable @inline(__always)
  func subcell(u: Double, v: Double, column: Int, row: Int) -> Int? {
    guard u >= 0, v >= 0, u < Double(columns), v < Double(rows) else { return nil }
    let side = Self.subcellsPerSide
    let c = Swift.min(side &- 1, Int((u - Double(column)) * Double(side)))
    let r = Swift.min(side &- 1, Int((v - Double(row)) * Double(side)))
    return r &* side &+ c
  }

  /// Calls `body` with the payload of every box that contains (`longitude`, `latitude`) and
  /// whose shape may contain it, each once, and possibly of boxes within rounding of it (see
  /// **Answers**), and whether the point is certainly inside the shape: in a subcell the
  /// build's `coverage` put wholly inside, or for a box of the wide list in its inner box
  /// (``Box/inner``); false says nothing. A box whose `coverage` put the point's subcell wholly
  /// outside the shape is not reported. Does not allocate.
  /// - Precondition: `latitude` in [−90, 90] and `longitude` in [−180, 180] (not NaN).
  /// - Complexity: O(c / 64 + k + w): one row of the point's cell's subcell table (c entries;
  ///   one 8-byte load up to 28 entries, almost always one cache line), one `Float` vector
  ///   comparison for each of the k candidates the subcell does not decide, and one for each
  ///   of the w boxes of the wide list.
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
    try cellStarts.withUnsafeBufferPointer { starts in
      let first = Int(truncatingIfNeeded: starts[cell])
      let end = Int(truncatingIfNeeded: starts[cell &+ 1])
      if first == end { return }
      try bounds.withUnsafeBufferPointer { bounds in
        try payloads.withUnsafeBufferPointer { payloads in
          guard let i = subcell(u: u, v: v, column: column, row: row) else {
            // Outside the rectangle: only `Float` rounding can put the point in a box.
            for k in first..<end where all(bounds[k] .<= q) { try body(payloads[k], false) }
            return
          }
          // Each 8-byte load at bit `b` gives at least 57 bits from `b` on.
          let n = end &- first
          let rowBit = first &<< 9 &+ i &* 2 &* n
          try subcellBits.withUnsafeBytes { table in
            @inline(__always) func bits(at b: Int) -> UInt64 {
              table.loadUnaligned(fromByteOffset: b &>> 3, as: UInt64.self) &>> UInt64(b & 7)
            }
            var j = 0
            repeat {
              let valid: UInt64 = (1 &<< UInt64(Swift.min(56, n &- j))) &- 1
              let word = bits(at: rowBit &+ j)
              var candidates = word & valid
              // Up to 28 entries, both masks come in one load.
              let inside = (n <= 28 ? word &>> UInt64(n) : bits(at: rowBit &+ n &+ j)) & valid
              while candidates != 0 {
                let b = candidates.trailingZeroBitCount
                candidates &= candidates &- 1
                let k = first &+ j &+ b
                if inside & (1 &<< UInt64(b)) != 0 {
                  try body(payloads[k], true)
                } else if all(bounds[k] .<= q) {
                  try body(payloads[k], false)
                }
              }
              j &+= 56
            } while j < n
          }
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
  /// - Complexity: O(k + 256 m) for the k entries of the cells the box meets, or of the wide
  ///   list, and the m of them that are `payload`'s.
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
            let first = Int(cellStarts[cell])
            let n = Int(cellStarts[cell + 1]) - first
            for k in first..<(first + n) where payloads[k] == payload {
              bounds[k] = removed.lowHalf
              subcellBits.withUnsafeMutableBytes { table in
                for i in 0..<256 {
                  let bit = 512 * first + i * 2 * n + k - first
                  table[bit >> 3] &= ~(1 << UInt8(bit & 7))
                  table[(bit + n) >> 3] &= ~(1 << UInt8((bit + n) & 7))
                }
              }
            }
          }
        }
      }
    }
    for k in wideBounds.indices where widePayloads[k] == payload { wideBounds[k] = removed }
  }

  /// Heap bytes of the grid, entries and wide list, by capacity.
  public var memoryFootprintBytes: Int {
    cellStarts.capacity * 4 + bounds.capacity * 16 + payloads.capacity * 4 + subcellBits.capacity
      * 8
      + wideBounds.capacity * 32 + widePayloads.capacity * 4
  }

  /// Number of entries in the cells and the wide list (for diagnostics).
  public var entryCount: Int { payloads.count + wideBounds.count }
}
