/// Everything a ``PolygonRegion`` holds, immutable once built: the region itself is one
/// reference, so that a ``RegionShape`` (and every ``Geofence``) is no wider than a circle.
///
/// Two edge indexes answer containment:
/// - **The cell grid** (regions of at least ``gridMinimumEdges`` edges): the box is cut into
///   about as many cells as the region has edges. Each cell lists the edges whose box (widened
///   by ``gridMarginDegrees``) meets it, and knows whether its centre is inside. A point in a
///   cell that no edge meets has the centre's answer, at no edge test (most of a region's area,
///   and the usual case for a fix); otherwise the segment from the centre to the point is
///   tested against the cell's edges, and each crossing flips the centre's answer. A cell whose
///   centre lies within ``gridMarginDegrees`` of an edge has no answer of its own and defers
///   to the bands.
/// - **The bands**: the latitude range cut into horizontal bands (see ``PolygonRegion``); a ray
///   to the east from the point is tested against the edges of the point's band. Small regions
///   use only these.
///
/// Laid out for the containment test: the box and the grid's parameters come first (with the
/// object's header, two cache lines), then the tables. The vertices, the grid and the band table
/// are one allocation, owned by the object (freed in `deinit`) and read through buffer pointers
/// held in the object: a test reads the object, one or two grid words and the edges it tests,
/// each two adjacent vertices (32 bytes), with no array header between them.
///
/// Immutable after `init`, so a storage may be read from any thread (`@unchecked Sendable`:
/// the buffer pointers are never written through after the build).
@usableFromInline
final class PolygonStorage: @unchecked Sendable {
  /// The longitude/latitude box, in the region's frame (degrees).
  @usableFromInline let minX: Double
  @usableFromInline let maxX: Double
  @usableFromInline let minY: Double
  @usableFromInline let maxY: Double
  /// Grid columns and rows (0 when the region has no grid), and cells per degree.
  @usableFromInline let gridColumns: Int
  @usableFromInline let gridRows: Int
  @usableFromInline let gridScaleX: Double
  @usableFromInline let gridScaleY: Double
  /// A cell's width and height (degrees).
  @usableFromInline let cellWidth: Double
  @usableFromInline let cellHeight: Double
  /// The grid: `gridColumns × gridRows + 1` words, row after row, then the entries. Word `c`
  /// holds in its low 30 bits the position in this table of cell `c`'s first entry (its last
  /// is before word `c + 1`'s), in bit 31 whether the cell's centre is inside, in bit 30 that
  /// the centre is too near an edge to be used. An entry is the index in ``points`` of an
  /// edge's first vertex. Empty without a grid.
  @usableFromInline let grid: UnsafeBufferPointer<UInt32>
  /// The vertices of every ring, ring after ring, each ring closed, as (longitude, latitude).
  /// The start of the object's one allocation.
  @usableFromInline let points: UnsafeBufferPointer<SIMD2<Double>>
  /// Bands per degree of latitude (0 for a region of no height: one band); band 0 starts at
  /// `minY`.
  @usableFromInline let bandScale: Double
  /// Number of bands, 1 to 65,536.
  @usableFromInline let bandCount: Int
  /// `bandTable[b] ..< bandTable[b + 1]` (b in 0 ..< bandCount) are the positions in this same
  /// table of band b's entries; an entry is the index in ``points`` of an edge's first vertex
  /// (the edge runs to the next vertex).
  @usableFromInline let bandTable: UnsafeBufferPointer<Int32>
  let ringStarts: [Int]
  let polygonStarts: [Int]
  let boundingCap: CircularRegion
  let areaSquareMeters: Double
  let equivalentRadiusMeters: Double
  /// For a region cut at the antimeridian (edges along both x = 180 and x = −180, the two
  /// sides of one meridian): the pieces of that meridian that bound the region, as segments
  /// `(x0, y0, x1, y1)`, where only one side has an edge (the cut edges that face each other
  /// lie inside the region and bound nothing). Nil for every other region, whose edges are
  /// all boundary (``isCutEdge(_:_:)`` is then never true). See
  /// ``meridianBoundary(points:ringStarts:)``.
  let meridianBoundary: [SIMD4<Double>]?

  /// Regions with fewer edges use the bands only: a band then holds a handful of edges, and a
  /// grid would cost more memory than it saves time.
  static let gridMinimumEdges = 24
  /// How far (in degrees) an edge's box is widened when it is filed in the grid's cells, and
  /// how near an edge a cell's centre may lie before the cell defers to the bands: 1e-9°
  /// (0.1 mm), far above the rounding of a cell's bounds (about 1e-16 of the coordinates'
  /// magnitude, 4e-14°) and far below a cell's size.
  static let gridMarginDegrees = 1e-9

  @usableFromInline static let centreInside: UInt32 = 1 << 31
  @usableFromInline static let centreUnusable: UInt32 = 1 << 30
  @usableFromInline static let positionMask: UInt32 = (1 << 30) - 1

  /// A region's storage with its grid (when it has ``gridMinimumEdges`` edges or more).
  static func make(
    minX: Double, maxX: Double, minY: Double, maxY: Double, bandScale: Double, bandCount: Int,
    bandTable: [Int32], points: [SIMD2<Double>], ringStarts: [Int], polygonStarts: [Int],
    boundingCap: CircularRegion, areaSquareMeters: Double, equivalentRadiusMeters: Double
  ) -> PolygonStorage {
    let layout = boundedGridLayout(
      points: points, ringStarts: ringStarts, minX: minX, maxX: maxX, minY: minY, maxY: maxY)
    func storage(grid: [UInt32]) -> PolygonStorage {
      PolygonStorage(
        minX: minX, maxX: maxX, minY: minY, maxY: maxY, bandScale: bandScale,
        bandCount: bandCount, gridColumns: layout.columns, gridRows: layout.rows, grid: grid,
        bandTable: bandTable, points: points, ringStarts: ringStarts,
        polygonStarts: polygonStarts, boundingCap: boundingCap,
        areaSquareMeters: areaSquareMeters, equivalentRadiusMeters: equivalentRadiusMeters)
    }
    let banded = storage(grid: [])
    return layout.columns == 0 ? banded : storage(grid: banded.buildGrid())
  }

  private init(
    minX: Double, maxX: Double, minY: Double, maxY: Double, bandScale: Double, bandCount: Int,
    gridColumns: Int, gridRows: Int, grid: [UInt32], bandTable: [Int32],
    points: [SIMD2<Double>], ringStarts: [Int], polygonStarts: [Int],
    boundingCap: CircularRegion, areaSquareMeters: Double, equivalentRadiusMeters: Double
  ) {
    self.minX = minX
    self.maxX = maxX
    self.minY = minY
    self.maxY = maxY
    self.bandScale = bandScale
    self.bandCount = bandCount
    self.gridColumns = gridColumns
    self.gridRows = gridRows
    self.gridScaleX = gridColumns > 0 ? Double(gridColumns) / (maxX - minX) : 0
    self.gridScaleY = gridRows > 0 ? Double(gridRows) / (maxY - minY) : 0
    self.cellWidth = gridColumns > 0 ? (maxX - minX) / Double(gridColumns) : 0
    self.cellHeight = gridRows > 0 ? (maxY - minY) / Double(gridRows) : 0
    // One allocation: the vertices (16-byte aligned), then the grid, then the bands.
    let pointBytes = points.count * MemoryLayout<SIMD2<Double>>.stride
    let gridBytes = grid.count * MemoryLayout<UInt32>.stride
    let bandBytes = bandTable.count * MemoryLayout<Int32>.stride
    let base = UnsafeMutableRawPointer.allocate(
      byteCount: Swift.max(1, pointBytes + gridBytes + bandBytes),
      alignment: MemoryLayout<SIMD2<Double>>.alignment)
    let p = base.bindMemory(to: SIMD2<Double>.self, capacity: points.count)
    p.initialize(from: points, count: points.count)
    let g = (base + pointBytes).bindMemory(to: UInt32.self, capacity: grid.count)
    g.initialize(from: grid, count: grid.count)
    let b = (base + pointBytes + gridBytes).bindMemory(to: Int32.self, capacity: bandTable.count)
    b.initialize(from: bandTable, count: bandTable.count)
    self.points = UnsafeBufferPointer(start: p, count: points.count)
    self.grid = UnsafeBufferPointer(start: g, count: grid.count)
    self.bandTable = UnsafeBufferPointer(start: b, count: bandTable.count)
    self.ringStarts = ringStarts
    self.polygonStarts = polygonStarts
    self.boundingCap = boundingCap
    self.areaSquareMeters = areaSquareMeters
    self.equivalentRadiusMeters = equivalentRadiusMeters
    self.meridianBoundary = Self.meridianBoundary(points: points, ringStarts: ringStarts)
  }

  /// Whether the edge from `a` to `b` lies on the antimeridian (x = ±180) of a region cut
  /// there (``meridianBoundary`` is not nil): such an edge is not boundary as it stands (its
  /// bounding pieces are in ``meridianBoundary``).
  @inline(__always)
  final func isCutEdge(_ a: SIMD2<Double>, _ b: SIMD2<Double>) -> Bool {
    meridianBoundary != nil && a.x == b.x && abs(a.x) == 180
  }

  /// The pieces of the antimeridian that bound a region cut there (RFC 7946 §3.1.9 cuts a
  /// polygon that crosses it into parts with edges along x = 180 and x = −180): the latitudes
  /// covered by edges on exactly one of the two sides, as segments on that side; nil when the
  /// region has no edge on one of the sides (nothing is cut, every edge bounds the region).
  /// - Complexity: O(n + k log k) for n vertices and k edges on the meridian.
  static func meridianBoundary(points: [SIMD2<Double>], ringStarts: [Int]) -> [SIMD4<Double>]? {
    var east: [(Double, Double)] = []
    var west: [(Double, Double)] = []
    for r in 0..<(ringStarts.count - 1) {
      for i in ringStarts[r]..<(ringStarts[r + 1] - 1) {
        let a = points[i]
        let b = points[i + 1]
        guard a.x == b.x, abs(a.x) == 180, a.y != b.y else { continue }
        let span = (Swift.min(a.y, b.y), Swift.max(a.y, b.y))
        if a.x > 0 { east.append(span) } else { west.append(span) }
      }
    }
    guard !east.isEmpty, !west.isEmpty else { return nil }
    // Each side's union of latitude intervals, then the parts covered by one side only.
    func union(_ spans: [(Double, Double)]) -> [(Double, Double)] {
      var merged: [(Double, Double)] = []
      for s in spans.sorted(by: { $0.0 < $1.0 }) {
        if let last = merged.last, s.0 <= last.1 {
          merged[merged.count - 1].1 = Swift.max(last.1, s.1)
        } else {
          merged.append(s)
        }
      }
      return merged
    }
    func minus(_ a: [(Double, Double)], _ b: [(Double, Double)]) -> [(Double, Double)] {
      var out: [(Double, Double)] = []
      for var piece in a {
        for cut in b where cut.1 > piece.0 && cut.0 < piece.1 {
          if cut.0 > piece.0 { out.append((piece.0, cut.0)) }
          piece.0 = Swift.max(piece.0, cut.1)
          if piece.0 >= piece.1 { break }
        }
        if piece.0 < piece.1 { out.append(piece) }
      }
      return out
    }
    let e = union(east)
    let w = union(west)
    return minus(e, w).map { SIMD4(180, $0.0, 180, $0.1) }
      + minus(w, e).map { SIMD4(-180, $0.0, -180, $0.1) }
  }

  deinit {
    // The vertices start the allocation (see `init`); every element is plain data.
    UnsafeMutableRawPointer(mutating: points.baseAddress)?.deallocate()
  }

  /// Most grid entries a region may have, per edge: 64 (256 bytes an edge). A region whose
  /// edges are short next to its box files each in a few cells (the bench's stars average
  /// about 4); one whose many edges each span much of the box (a star of 50,000 long spikes)
  /// would file each in a share of all its cells, O(n²) entries, gigabytes and minutes to
  /// build. Its grid is coarsened until it fits (``boundedGridLayout``).
  static let gridEntriesPerEdge = 64

  /// ``gridLayout(edgeCount:width:height:)``, coarsened by steps of √2 a side while the
  /// entries it would hold (each edge's widened box counted in cells, as `buildGrid` files it)
  /// exceed ``gridEntriesPerEdge`` a edge: a build linear in the edges whatever their shape.
  /// Regions within the bound keep the plain layout.
  /// - Complexity: O(n) a layout tried, at most about 20 layouts.
  static func boundedGridLayout(
    points: [SIMD2<Double>], ringStarts: [Int], minX: Double, maxX: Double, minY: Double,
    maxY: Double
  ) -> (columns: Int, rows: Int) {
    let edgeCount = points.count - (ringStarts.count - 1)
    let width = maxX - minX
    let height = maxY - minY
    var layout = gridLayout(edgeCount: edgeCount, width: width, height: height)
    let budget = gridEntriesPerEdge * edgeCount
    while layout.columns > 0 {
      // The same cell arithmetic as `cell(x:y:)` on the same widened boxes.
      let scaleX = Double(layout.columns) / width
      let scaleY = Double(layout.rows) / height
      func index(_ v: Double, _ low: Double, _ scale: Double, _ count: Int) -> Int {
        let u = (v - low) * scale
        return !(u > 0) ? 0 : (u < Double(count) ? Int(u) : count - 1)
      }
      let margin = gridMarginDegrees
      var entries = 0
      for r in 0..<(ringStarts.count - 1) where entries <= budget {
        for i in ringStarts[r]..<(ringStarts[r + 1] - 1) {
          let a = points[i]
          let b = points[i + 1]
          let c0 = index(Swift.min(a.x, b.x) - margin, minX, scaleX, layout.columns)
          let c1 = index(Swift.max(a.x, b.x) + margin, minX, scaleX, layout.columns)
          let r0 = index(Swift.min(a.y, b.y) - margin, minY, scaleY, layout.rows)
          let r1 = index(Swift.max(a.y, b.y) + margin, minY, scaleY, layout.rows)
          entries += (c1 - c0 + 1) * (r1 - r0 + 1)
        }
      }
      if entries <= budget || (layout.columns == 1 && layout.rows == 1) { return layout }
      layout = (
        Swift.max(1, Int(Double(layout.columns) / 2.0.squareRoot())),
        Swift.max(1, Int(Double(layout.rows) / 2.0.squareRoot()))
      )
    }
    return layout
  }

  /// The grid's size: about one cell an edge, in the box's proportions (in degrees), at most
  /// 1,024 a side; none below ``gridMinimumEdges`` edges or for a box of no width or height.
  static func gridLayout(edgeCount: Int, width: Double, height: Double) -> (
    columns: Int, rows: Int
  ) {
    guard edgeCount >= gridMinimumEdges, width > 0, height > 0 else { return (0, 0) }
    let cells = Double(edgeCount)
    let columns = Swift.min(1024, Swift.max(1, Int((cells * width / height).squareRoot())))
    let rows = Swift.min(1024, Swift.max(1, Int((cells / Double(columns)).rounded(.up))))
    return (columns, rows)
  }

  /// The band of latitude `y`, clamped to the table (a latitude outside the box gets the first
  /// or last band). `y` must not be NaN.
  @inlinable @inline(__always)
  final func band(latitude y: Double) -> Int {
    let b = (y - minY) * bandScale
    if !(b > 0) { return 0 }
    return b < Double(bandCount) ? Int(b) : bandCount &- 1
  }

  /// The grid cell of (`x`, `y`), clamped to the grid. Neither may be NaN.
  @inlinable @inline(__always)
  final func cell(x: Double, y: Double) -> (column: Int, row: Int) {
    let u = (x - minX) * gridScaleX
    let v = (y - minY) * gridScaleY
    let column = !(u > 0) ? 0 : (u < Double(gridColumns) ? Int(u) : gridColumns &- 1)
    let row = !(v > 0) ? 0 : (v < Double(gridRows) ? Int(v) : gridRows &- 1)
    return (column, row)
  }

  /// The centre of cell (`column`, `row`): the same expression at build and at query time.
  @inlinable @inline(__always)
  final func centre(column: Int, row: Int) -> SIMD2<Double> {
    SIMD2(minX + (Double(column) + 0.5) * cellWidth, minY + (Double(row) + 0.5) * cellHeight)
  }

  /// ``PolygonRegion/contains(_:)`` at (`x`, `y`) = (longitude, latitude) in degrees, the
  /// longitude in [−180, 180] or any value the region's frame may hold.
  @inlinable
  final func contains(x longitude: Double, y: Double) -> Bool {
    guard y >= minY, y <= maxY else { return false }
    // A pole is one point whatever the longitude: inside when the region reaches it (a vertex
    // at ±90, so the pole is on its boundary; a ring around a pole is refused at load).
    if y == 90 || y == -90 { return true }
    var x = longitude
    // The region's frame starts at minX in [−180, 180): λ below it is tried as λ + 360, and
    // 180 in a frame that starts at −180 as −180 (the same meridian; then also as 180).
    if x < minX { x += 360 } else if x - 360 >= minX { x -= 360 }
    guard x <= maxX else { return false }
    if planarContains(x: x, y: y) { return true }
    x += 360
    return x <= maxX && planarContains(x: x, y: y)
  }

  /// The closed test at (`x`, `y`) in the region's frame, inside the box: the grid, or the
  /// bands when there is no grid or the cell's centre is unusable.
  @inlinable
  final func planarContains(x: Double, y: Double) -> Bool {
    if gridColumns == 0 { return crossings(x: x, y: y) }
    let (column, row) = cell(x: x, y: y)
    let c = row &* gridColumns &+ column
    let table = grid
    let word = table[c]
    let first = Int(word & Self.positionMask)
    let end = Int(table[c &+ 1] & Self.positionMask)
    let centreInside = word & Self.centreInside != 0
    if first == end { return centreInside }
    if word & Self.centreUnusable != 0 { return crossings(x: x, y: y) }
    let o = centre(column: column, row: row)
    return Self.segmentTest(
      UnsafeBufferPointer(rebasing: table[first..<end]), points, from: o, inside: centreInside,
      to: SIMD2(x, y))
  }

  /// Whether `q` is inside, given that `o` is inside when `inside` is true and that `edges`
  /// hold every edge that may meet the segment from `o` to `q`: true at once when `q` lies
  /// within ``PolygonRegion/boundaryToleranceDegrees`` of one; otherwise `inside`, flipped at
  /// each edge the segment crosses. An edge crosses when its ends lie on either side of the
  /// segment's line (a vertex on the line counts on the right, for both its edges, so a ring
  /// passing through the line at a vertex crosses once or twice, as it should), and `o` and `q`
  /// on either side of the edge's line. No division.
  @inlinable
  static func segmentTest(
    _ edges: UnsafeBufferPointer<UInt32>, _ p: UnsafeBufferPointer<SIMD2<Double>>,
    from o: SIMD2<Double>, inside: Bool, to q: SIMD2<Double>
  ) -> Bool {
    let tolerance = PolygonRegion.boundaryToleranceDegrees
    var inside = inside
    let d = q - o
    for e in edges {
      let i = Int(e)
      let a = p[i]
      let b = p[i &+ 1]
      let ab = b - a
      // The side of q (and of o) of the edge's line: the cross product of ab with aq (ao).
      let sq = ab.x * (q.y - a.y) - ab.y * (q.x - a.x)
      if abs(sq) <= tolerance * (abs(ab.x) + abs(ab.y)) && q.x >= Swift.min(a.x, b.x)
        && q.x <= Swift.max(a.x, b.x) && q.y >= Swift.min(a.y, b.y) && q.y <= Swift.max(a.y, b.y)
      {
        return true  // on the edge
      }
      let sa = d.x * (a.y - o.y) - d.y * (a.x - o.x)
      let sb = d.x * (b.y - o.y) - d.y * (b.x - o.x)
      if (sa > 0) != (sb > 0) {
        let so = ab.x * (o.y - a.y) - ab.y * (o.x - a.x)
        if (sq > 0) != (so > 0) { inside.toggle() }
      }
    }
    return inside
  }

  /// The closed crossing test in the region's frame over the edges of `y`'s band: a ray to
  /// the east toggles `inside` at each edge it crosses (half-open in latitude, so a vertex on
  /// the ray counts once); a point within ``PolygonRegion/boundaryToleranceDegrees`` of an edge,
  /// on a vertex or on a horizontal edge is inside at once. No division.
  @inlinable
  final func crossings(x: Double, y: Double) -> Bool {
    let b = band(latitude: y)
    let tolerance = PolygonRegion.boundaryToleranceDegrees
    let table = bandTable
    let p = points
    var inside = false
    var k = Int(table[b])
    let end = Int(table[b &+ 1])
    while k < end {
      let i = Int(table[k])
      k &+= 1
      let a = p[i]
      let c = p[i &+ 1]
      if (a.y <= y) != (c.y <= y) {
        // The edge straddles the horizontal line through the point.
        let cross = (c.x - a.x) * (y - a.y) - (x - a.x) * (c.y - a.y)
        if abs(cross) <= tolerance * (abs(c.x - a.x) + abs(c.y - a.y)) { return true }
        if (cross > 0) == (c.y > a.y) { inside.toggle() }
      } else if a.y == y || c.y == y {
        // A vertex on the line, the edge on one side of it, or a horizontal edge.
        if a.y == y && x == a.x { return true }
        if c.y == y && x == c.x { return true }
        if a.y == c.y && x >= Swift.min(a.x, c.x) && x <= Swift.max(a.x, c.x) {
          return true
        }
      }
    }
    return inside
  }

  /// The grid table (see ``grid``) for this storage's layout, built from the points and the
  /// bands (which answer for the cells' centres). O(e + c k) for e filed entries and c cells of
  /// k band edges each.
  private func buildGrid() -> [UInt32] {
    let columns = gridColumns
    let rows = gridRows
    let cells = columns * rows
    let margin = Self.gridMarginDegrees
    var table = [UInt32](repeating: 0, count: cells + 1)
    func span(_ a: SIMD2<Double>, _ b: SIMD2<Double>) -> (c0: Int, c1: Int, r0: Int, r1: Int) {
      let low = cell(x: Swift.min(a.x, b.x) - margin, y: Swift.min(a.y, b.y) - margin)
      let high = cell(x: Swift.max(a.x, b.x) + margin, y: Swift.max(a.y, b.y) + margin)
      return (low.column, high.column, low.row, high.row)
    }
    let rings = ringStarts.count - 1
    for r in 0..<rings {
      for i in ringStarts[r]..<(ringStarts[r + 1] - 1) {
        let s = span(points[i], points[i + 1])
        for row in s.r0...s.r1 {
          for column in s.c0...s.c1 { table[row * columns + column + 1] += 1 }
        }
      }
    }
    table[0] = UInt32(cells + 1)
    for c in 0..<cells { table[c + 1] += table[c] }
    var fill = Array(table[0..<cells])
    table.append(contentsOf: repeatElement(0, count: Int(table[cells]) - (cells + 1)))
    for r in 0..<rings {
      for i in ringStarts[r]..<(ringStarts[r + 1] - 1) {
        let s = span(points[i], points[i + 1])
        for row in s.r0...s.r1 {
          for column in s.c0...s.c1 {
            let c = row * columns + column
            table[Int(fill[c])] = UInt32(i)
            fill[c] += 1
          }
        }
      }
    }
    // The centres' answers, from the bands; a centre near an edge of its cell is unusable.
    for row in 0..<rows {
      for column in 0..<columns {
        let c = row * columns + column
        let o = centre(column: column, row: row)
        var flags: UInt32 = crossings(x: o.x, y: o.y) ? Self.centreInside : 0
        for k in Int(table[c])..<Int(table[c + 1]) {
          let i = Int(table[k])
          if Self.distanceSquared(o, points[i], points[i + 1]) <= margin * margin {
            flags |= Self.centreUnusable
          }
        }
        table[c] |= flags
      }
    }
    return table
  }

  /// The largest square block of grid cells that no edge meets and whose centres are inside,
  /// as its first column and row and its side in cells; nil without a grid or such a cell.
  /// Every point that ``cell(x:y:)`` maps into the block is inside the region: no edge meets
  /// the cells (edges are filed by their widened boxes), so each cell answers as its centre.
  /// O(c) for c cells (the maximal-square recurrence over the rows).
  func interiorSquare() -> (column: Int, row: Int, side: Int)? {
    guard gridColumns > 0 else { return nil }
    let columns = gridColumns
    var best = (column: 0, row: 0, side: 0)
    var previous = [Int](repeating: 0, count: columns)
    var current = [Int](repeating: 0, count: columns)
    for row in 0..<gridRows {
      for column in 0..<columns {
        let c = row * columns + column
        let word = grid[c]
        let empty = word & Self.positionMask == grid[c + 1] & Self.positionMask
        guard empty, word & Self.centreInside != 0 else {
          current[column] = 0
          continue
        }
        let side =
          row > 0 && column > 0
          ? Swift.min(previous[column], current[column - 1], previous[column - 1]) + 1 : 1
        current[column] = side
        if side > best.side { best = (column - side + 1, row - side + 1, side) }
      }
      swap(&previous, &current)
    }
    return best.side > 0 ? best : nil
  }

  /// The squared planar distance (in square degrees) from `o` to the segment from `a` to `b`.
  static func distanceSquared(_ o: SIMD2<Double>, _ a: SIMD2<Double>, _ b: SIMD2<Double>)
    -> Double
  {
    let ab = b - a
    let ao = o - a
    let length2 = ab.x * ab.x + ab.y * ab.y
    var t = length2 > 0 ? (ao.x * ab.x + ao.y * ab.y) / length2 : 0
    t = Swift.min(1, Swift.max(0, t))
    let d = ao - t * ab
    return d.x * d.x + d.y * d.y
  }
}
