#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A closed polygonal region: one or more polygons (a GeoJSON `Polygon` or `MultiPolygon`),
/// each an outer ring with optional holes.
///
/// - **Edges are straight lines in longitude and latitude** (plate carrée), as RFC 7946
///   §3.1.1 defines GeoJSON positions: an edge from (λ1, φ1) to (λ2, φ2) is every point
///   `(λ1 + t (λ2 − λ1), φ1 + t (φ2 − φ1))`, `t` in [0, 1]. It is not a great-circle arc; the
///   two differ by up to about 0.7 m at the middle of a 10 km east–west edge at 46° N.
/// - **Boundary**: a point on an edge or a vertex is inside (a closed set, like
///   ``CircularRegion``). The edge test allows a tolerance of ``boundaryToleranceDegrees``
///   (1e-12°, about 0.1 µm): a point within it of an edge counts as on the edge.
/// - **Longitudes** are held in one continuous frame per region (see
///   ``normalizedPolygons(_:)``): `minLongitude` in [−180, 180), `maxLongitude` up to
///   `minLongitude + 360`. A query longitude is tried as λ and λ ± 360, so a polygon that
///   crosses the antimeridian, written either cut at ±180 or with longitudes past 180, answers
///   for points on both sides.
/// - **Edge indexes** (see `PolygonStorage`): the latitude range is cut into b horizontal bands
///   of equal height; each band lists the edges that overlap it (a y-sorted segment table, 4
///   bytes an entry). With n edges whose heights add up to S and a latitude range H,
///   `b = n H / S` (at most n), so the table holds at most about 2n entries, and a band holds
///   about twice the number of edges a horizontal line crosses on average, `2 S / H`. A region
///   of 24 edges or more also has a cell grid of about one cell an edge, each cell listing the
///   edges that meet it and knowing whether its centre is inside: a point in a cell no edge
///   meets is answered from one word, otherwise from the cell's edges, O(1) for an outline
///   whose edges spread over the cells, and never more than O(n). No allocation per query.
///
/// Invariants (established by the initialiser): every ring is closed and has at least 4
/// positions; the polygons are valid in the OGC sense (checked by the caller with GEOS, see
/// `GeofenceDefinitions.PolygonValidator`); outer rings are counter-clockwise and holes
/// clockwise (RFC 7946 §3.1.6).
public struct PolygonRegion: Hashable, Sendable {
  /// Everything the region holds, behind one reference: copying a region (a set's lookup, a
  /// visit) costs one retain, and a ``Geofence`` holding it is no wider than a circle.
  @usableFromInline let storage: PolygonStorage

  /// Vertex longitudes of every ring, ring after ring, each ring closed (its last vertex
  /// repeats its first), in the region's longitude frame (degrees). O(n): built from the
  /// interleaved vertex table on each access.
  public var longitudes: [Double] { storage.points.map(\.x) }
  /// Vertex latitudes, parallel to ``longitudes`` (degrees, in [−90, 90]). O(n), as
  /// ``longitudes``.
  public var latitudes: [Double] { storage.points.map(\.y) }
  /// Ring `r` is the vertices `ringStarts[r] ..< ringStarts[r + 1]`; `ringStarts.count` is the
  /// number of rings + 1.
  public var ringStarts: [Int] { storage.ringStarts }
  /// Polygon `p` is the rings `polygonStarts[p] ..< polygonStarts[p + 1]`; its first ring is
  /// the outer ring, the others holes.
  public var polygonStarts: [Int] { storage.polygonStarts }
  /// The smallest and largest vertex longitude, in the region's frame (degrees).
  @inlinable public var minLongitude: Double { storage.minX }
  @inlinable public var maxLongitude: Double { storage.maxX }
  /// The smallest and largest vertex latitude (degrees).
  @inlinable public var minLatitude: Double { storage.minY }
  @inlinable public var maxLatitude: Double { storage.maxY }
  /// A circle that contains the whole region: the spatial index holds it as the first filter
  /// (see ``boundingCap(minLatitude:maxLatitude:minLongitude:maxLongitude:)``).
  public var boundingCap: CircularRegion { storage.boundingCap }
  /// Area in square metres, on the plate carrée scaled by the cosine of the middle latitude
  /// (see ``area(of:latitude:)``).
  public var areaSquareMeters: Double { storage.areaSquareMeters }
  /// The radius of a circle of the same area, `sqrt(area / π)`, in metres (> 0): the polygon's
  /// size for the accuracy gate and the hysteresis, as `r` is a circle's.
  public var equivalentRadiusMeters: Double { storage.equivalentRadiusMeters }

  /// Tolerance of the boundary test in degrees: a point whose distance from an edge's line
  /// (measured in degrees, within the edge's extent) is at most 1e-12° is on that edge. Far
  /// above the rounding of the test (about 1e-16 of the coordinates' magnitude, 4e-14°), and
  /// about 0.1 µm on the ground.
  @inlinable public static var boundaryToleranceDegrees: Double { 1e-12 }

  /// Builds a region from polygons whose rings are given as (longitude, latitude) positions in
  /// degrees (`SIMD2(x: longitude, y: latitude)`).
  ///
  /// The rings must already be in one longitude frame and valid (run
  /// ``normalizedPolygons(_:)`` and a GEOS validity check first); the winding order is fixed
  /// here: outer rings become counter-clockwise and holes clockwise (in the longitude/latitude
  /// plane). A ring whose signed area is within the rounding of its sum of zero (no area,
  /// which the validity check refuses) is kept as written. Rings are not otherwise checked
  /// for self-intersection.
  /// - Throws: ``PolygonError`` when there is no polygon, a ring has fewer than 4 positions or
  ///   is not closed, or a coordinate is not finite or out of range.
  /// - Complexity: O(n log n + e) for n vertices and e band entries.
  public init(polygons: [[[SIMD2<Double>]]]) throws(PolygonError) {
    guard !polygons.isEmpty else { throw .empty }
    var points: [SIMD2<Double>] = []
    var ringStarts: [Int] = [0]
    var polygonStarts: [Int] = [0]
    var area = 0.0
    var minX = Double.infinity
    var maxX = -Double.infinity
    var minY = Double.infinity
    var maxY = -Double.infinity
    for (p, polygon) in polygons.enumerated() {
      guard !polygon.isEmpty else { throw .emptyPolygon(polygon: p) }
      for (r, ring) in polygon.enumerated() {
        guard ring.count >= 4 else { throw .tooFewPositions(polygon: p, ring: r, ring.count) }
        guard ring.first == ring.last else { throw .ringNotClosed(polygon: p, ring: r) }
        for (i, v) in ring.enumerated() {
          guard v.x.isFinite, v.y.isFinite, abs(v.y) <= 90, abs(v.x) <= 540 else {
            throw .coordinateOutOfRange(polygon: p, ring: r, position: i, v)
          }
        }
        let signed = Self.signedArea(ring)
        // Outer rings counter-clockwise (positive), holes clockwise (negative). A sum within
        // its own rounding error of zero has no certain sign, and the reversed ring's sum
        // (the same terms negated, added in the other order) could have the same sign: such a
        // ring (of no area: GEOS refuses it) is kept as written, so that building a region
        // from a region's own rings gives it back.
        let certain = abs(signed) > Self.signedAreaRoundingBound(ring)
        let reverse = certain && (r == 0 ? signed < 0 : signed > 0)
        let ordered = reverse ? Array(ring.reversed()) : ring
        for v in ordered {
          points.append(v)
          minX = Swift.min(minX, v.x)
          maxX = Swift.max(maxX, v.x)
          minY = Swift.min(minY, v.y)
          maxY = Swift.max(maxY, v.y)
        }
        ringStarts.append(points.count)
      }
      polygonStarts.append(ringStarts.count - 1)
    }
    guard maxX - minX <= 360 else { throw .longitudeSpanTooWide(maxX - minX) }
    let middle = (minY + maxY) / 2
    for r in 0..<(ringStarts.count - 1) {
      area += Self.signedArea(points, ringStarts[r]..<ringStarts[r + 1])
    }
    let metersPerDegree = EarthModel.meanRadiusMeters * Double.pi / 180
    let squareMeters =
      abs(area) * metersPerDegree * metersPerDegree * cos(radians(fromDegrees: middle))
    // A polygon of no area (a sliver on the pole's latitude) still has a size of 1 m.
    let equivalentRadius = Swift.max(1, (squareMeters / Double.pi).squareRoot())
    // Parts of a MultiPolygon cut at ±180 lie at both ends of the frame: the cap covers the
    // shortest arc of longitude holding every part, not the frame's span.
    var parts: [(Double, Double)] = []
    for p in 0..<(polygonStarts.count - 1) {
      let outer = ringStarts[polygonStarts[p]]..<ringStarts[polygonStarts[p] + 1]
      var low = Double.infinity
      var high = -Double.infinity
      for i in outer {
        low = Swift.min(low, points[i].x)
        high = Swift.max(high, points[i].x)
      }
      parts.append((low, high))
    }
    let arc = Self.shortestCoveringArc(parts)
    let cap = Self.boundingCap(
      minLatitude: minY, maxLatitude: maxY, minLongitude: arc.low, maxLongitude: arc.high)

    // The band table: b = n H / S bands (see the type's discussion), 1 to min(n, 65,536).
    let edgeCount = points.count - (ringStarts.count - 1)
    let height = maxY - minY
    var heights = 0.0
    for r in 0..<(ringStarts.count - 1) {
      for i in ringStarts[r]..<(ringStarts[r + 1] - 1) {
        heights += abs(points[i + 1].y - points[i].y)
      }
    }
    let ideal = heights > 0 ? Double(edgeCount) * height / heights : 1
    let bands = Swift.max(1, Swift.min(Swift.min(edgeCount, 65_536), Int(ideal.rounded(.up))))
    let scale = height > 0 ? Double(bands) / height : 0
    func band(_ y: Double) -> Int {
      Swift.min(bands - 1, Swift.max(0, Int((y - minY) * scale)))
    }
    // One table: bands + 1 offsets into the table itself, then the entries band after band.
    var table = [Int32](repeating: 0, count: bands + 1)
    for r in 0..<(ringStarts.count - 1) {
      for i in ringStarts[r]..<(ringStarts[r + 1] - 1) {
        let lo = band(Swift.min(points[i].y, points[i + 1].y))
        let hi = band(Swift.max(points[i].y, points[i + 1].y))
        for b in lo...hi { table[b + 1] += 1 }
      }
    }
    table[0] = Int32(bands + 1)
    for b in 0..<bands { table[b + 1] += table[b] }
    var fill = Array(table[0..<bands])
    table.append(contentsOf: repeatElement(0, count: Int(table[bands]) - (bands + 1)))
    for r in 0..<(ringStarts.count - 1) {
      for i in ringStarts[r]..<(ringStarts[r + 1] - 1) {
        let lo = band(Swift.min(points[i].y, points[i + 1].y))
        let hi = band(Swift.max(points[i].y, points[i + 1].y))
        for b in lo...hi {
          table[Int(fill[b])] = Int32(i)
          fill[b] += 1
        }
      }
    }
    self.storage = PolygonStorage.make(
      minX: minX, maxX: maxX, minY: minY, maxY: maxY, bandScale: scale, bandCount: bands,
      bandTable: table, points: points, ringStarts: ringStarts, polygonStarts: polygonStarts,
      boundingCap: cap, areaSquareMeters: squareMeters,
      equivalentRadiusMeters: equivalentRadius)
  }

  public static func == (a: PolygonRegion, b: PolygonRegion) -> Bool {
    a.storage === b.storage
      || (a.storage.points.elementsEqual(b.storage.points)
        && a.storage.ringStarts == b.storage.ringStarts
        && a.storage.polygonStarts == b.storage.polygonStarts)
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(storage.points.count)
    for point in storage.points { hasher.combine(point) }
    hasher.combine(storage.ringStarts)
  }

  /// Number of polygons.
  public var polygonCount: Int { polygonStarts.count - 1 }
  /// Number of rings (outer rings and holes).
  public var ringCount: Int { ringStarts.count - 1 }
  /// Number of vertices, the closing repeat of each ring included.
  public var vertexCount: Int { storage.points.count }
  /// Number of edges.
  public var edgeCount: Int { storage.points.count - ringCount }

  /// Bytes held by the region's tables: vertices (16 each), ring and polygon starts, the band
  /// table and the cell grid (4 bytes a band, a cell and an entry).
  public var memoryBytes: Int {
    let s = storage
    return s.points.count * 16 + (s.ringStarts.count + s.polygonStarts.count) * 8
      + s.bandTable.count * 4 + s.grid.count * 4
  }

  /// The positions of ring `ring`, as (longitude, latitude) in the region's frame.
  public func ring(_ ring: Int) -> [SIMD2<Double>] {
    Array(storage.points[storage.ringStarts[ring]..<storage.ringStarts[ring + 1]])
  }

  /// The polygons as GeoJSON `coordinates` would hold them: polygon → ring → position.
  public var polygons: [[[SIMD2<Double>]]] {
    (0..<polygonCount).map { p in
      (polygonStarts[p]..<polygonStarts[p + 1]).map { ring($0) }
    }
  }

  // MARK: - Containment

  /// Whether the closed region contains `point` (a point on the boundary is inside). A pole
  /// (latitude ±90, any longitude: one point) is inside when the region reaches it, at a
  /// vertex or along an edge on that latitude.
  /// - Complexity: O(k) for the k edges of the point's band, tried for at most two longitudes
  ///   (λ and λ + 360, or −180 and 180 for a point at 180); a point outside the longitude/latitude box is answered from the box
  ///   alone. No allocation, no trigonometry, no division.
  @inlinable
  public func contains(_ point: Coordinate) -> Bool {
    storage.contains(x: point.longitude, y: point.latitude)
  }

  /// A longitude/latitude box wholly inside the closed region, in the region's frame (degrees),
  /// or nil: the largest square block of the cell grid's cells that no edge meets and whose
  /// centres are inside, shrunk by 1e-9° on every side (far above the rounding of the cells'
  /// bounds). Every point of the box is inside the region, so a caller may answer a point in
  /// it without the edge test. Nil for a region without a cell grid (fewer than 24 edges).
  /// - Complexity: O(c) for the grid's c cells (about one an edge); no trigonometry.
  public var innerBox:
    (minLongitude: Double, maxLongitude: Double, minLatitude: Double, maxLatitude: Double)?
  {
    let s = storage
    guard let square = s.interiorSquare() else { return nil }
    let margin = PolygonStorage.gridMarginDegrees
    let x0 = s.minX + Double(square.column) * s.cellWidth + margin
    let x1 = s.minX + Double(square.column + square.side) * s.cellWidth - margin
    let y0 = s.minY + Double(square.row) * s.cellHeight + margin
    let y1 = s.minY + Double(square.row + square.side) * s.cellHeight - margin
    guard x0 < x1, y0 < y1 else { return nil }
    return (x0, x1, y0, y1)
  }

  /// Cells along each side of a ``coverage(minLongitude:minLatitude:cellWidth:cellHeight:)``
  /// block: 16.
  public static let coverageSide = 16

  /// Which cells of a 16 × 16 block of equal cells lie wholly inside, and which wholly
  /// outside, the closed region: cell `i = 16 r + c`, in row `r` (from the south) and column
  /// `c` (from the west), `[minLongitude + c w, minLongitude + (c + 1) w] × [minLatitude + r h,
  /// minLatitude + (r + 1) h]`, is bit `i % 64` of lane `i / 64`. A set bit holds for the cell
  /// grown by 1e-9° on every side (far above the rounding of a caller's cell arithmetic), so a
  /// caller may answer a point it files in that cell without the edge test; a cell in neither
  /// mask is undecided (an edge comes near it). Longitudes as queries give them, in
  /// [−180, 180]; a region whose frame reaches 180 or starts at −180 decides no cell (both
  /// masks 0).
  /// - Parameters:
  ///   - minLongitude: the block's west side (degrees).
  ///   - minLatitude: the block's south side (degrees).
  ///   - cellWidth: a cell's width in degrees of longitude (> 0; otherwise nothing is decided).
  ///   - cellHeight: a cell's height in degrees of latitude (> 0; otherwise nothing is
  ///     decided).
  /// - Complexity: O(k + 256 t) for the k band entries of the block's latitudes and t point
  ///   tests (at most one a group of cells no edge separates); no allocation.
  public func coverage(
    minLongitude: Double, minLatitude: Double, cellWidth: Double, cellHeight: Double
  ) -> (inside: SIMD4<UInt64>, outside: SIMD4<UInt64>) {
    storage.coverage(x0: minLongitude, y0: minLatitude, width: cellWidth, height: cellHeight)
  }

  // MARK: - Distance to the boundary

  /// Distance in metres from `point` to the nearest edge (inside or outside the region), when
  /// it is at most `limit`; otherwise some value greater than `limit`.
  ///
  /// Measured in an equirectangular projection centred on the point: `x = Δλ · cos φ₀ · k`,
  /// `y = Δφ · k` with `k = R π / 180` (``EarthModel/meanRadiusMeters``) and φ₀ the point's
  /// latitude, then the planar distance to each edge (straight in that plane, as the edges
  /// are straight in longitude and latitude). Against the haversine distance to the same
  /// boundary point, the relative error grows as about `D · |tan φ₀| / (2R)` plus
  /// `(D/R)² / 6` for a distance D: about 4e-5 (4 cm) at 500 m and 46°, 1e-3 at 10 km and
  /// 60°. Within about 1° of a pole (where cos φ₀ → 0) the distance is an underestimate
  /// of up to the longitude extent times cos φ of the far vertex; polygons there still test
  /// containment exactly. A region cut at the antimeridian (RFC 7946 §3.1.9) is measured to
  /// its real boundary: the cut edges along ±180 that face each other lie inside it and are
  /// left out.
  /// - Parameter limit: metres (>= 0, may be `.infinity` to get the exact distance always).
  /// - Complexity: O(k) for the edges of the bands within `limit` of the point's latitude
  ///   (every edge when `limit` covers the whole latitude range); no allocation.
  public func boundaryDistance(to point: Coordinate, notBeyond limit: Double) -> Double {
    let metersPerDegree = EarthModel.meanRadiusMeters * Double.pi / 180
    let y0 = point.latitude
    let kx = metersPerDegree * cos(radians(fromDegrees: y0))
    let ky = metersPerDegree
    let reachDegrees = limit / ky
    var best = Double.infinity
    // Longitudes to try: the point's in every frame shift that lies within 180° of the region.
    var x0 = point.longitude - 360
    while x0 <= maxLongitude + 180 {
      if x0 >= minLongitude - 180 {
        best = Swift.min(
          best,
          planarDistance(x0: x0, y0: y0, kx: kx, ky: ky, reachDegrees: reachDegrees))
      }
      x0 += 360
    }
    return best
  }

  private func planarDistance(
    x0: Double, y0: Double, kx: Double, ky: Double, reachDegrees: Double
  ) -> Double {
    func segment(_ e: SIMD4<Double>) -> Double {
      let ax = (e.x - x0) * kx
      let ay = (e.y - y0) * ky
      let bx = (e.z - x0) * kx
      let by = (e.w - y0) * ky
      let dx = bx - ax
      let dy = by - ay
      let length2 = dx * dx + dy * dy
      var t = length2 > 0 ? -(ax * dx + ay * dy) / length2 : 0
      t = Swift.min(1, Swift.max(0, t))
      let px = ax + t * dx
      let py = ay + t * dy
      return px * px + py * py
    }
    var best2 = Double.infinity
    let s = storage
    let ps = s.points
    let low = y0 - reachDegrees
    let high = y0 + reachDegrees
    // A region cut at the antimeridian: its cut edges lie inside it (the parts meet there),
    // and only the pieces of the meridian in ``PolygonStorage/meridianBoundary`` bound it.
    if let meridian = s.meridianBoundary {
      for e in meridian { best2 = Swift.min(best2, segment(e)) }
    }
    if !(low > minLatitude && high < maxLatitude) || s.bandScale == 0 {
      // The reach covers much of the region (or is infinite): every edge once.
      for r in 0..<(s.ringStarts.count - 1) {
        for i in s.ringStarts[r]..<(s.ringStarts[r + 1] - 1) where !s.isCutEdge(ps[i], ps[i + 1]) {
          best2 = Swift.min(best2, segment(SIMD4(lowHalf: ps[i], highHalf: ps[i + 1])))
        }
      }
      return best2.squareRoot()
    }
    let first = s.band(latitude: low)
    let last = s.band(latitude: high)
    let table = s.bandTable
    for k in Int(table[first])..<Int(table[last + 1]) {
      let i = Int(table[k])
      if s.isCutEdge(ps[i], ps[i + 1]) { continue }
      best2 = Swift.min(best2, segment(SIMD4(lowHalf: ps[i], highHalf: ps[i + 1])))
    }
    return best2.squareRoot()
  }

  // MARK: - Helpers

  /// The signed area of a closed ring in the longitude/latitude plane (square
  /// degrees), positive when counter-clockwise (the shoelace formula); 0 for fewer than two
  /// positions.
  public static func signedArea(_ ring: [SIMD2<Double>]) -> Double {
    var sum = 0.0
    for i in 0..<Swift.max(0, ring.count - 1) {
      sum += ring[i].x * ring[i + 1].y - ring[i + 1].x * ring[i].y
    }
    return sum / 2
  }

  /// A bound on the rounding error of ``signedArea(_:)`` for `ring`: `n ε Σ|t| / 2` for its
  /// n terms t and ε = `Double.ulpOfOne`, above the `(n − 1) u Σ|t|` of recursive summation
  /// (Higham, *Accuracy and Stability of Numerical Algorithms*, §4.2, with u = ε / 2) plus the
  /// rounding of each term.
  static func signedAreaRoundingBound(_ ring: [SIMD2<Double>]) -> Double {
    var magnitude = 0.0
    for i in 0..<Swift.max(0, ring.count - 1) {
      magnitude += abs(ring[i].x * ring[i + 1].y) + abs(ring[i + 1].x * ring[i].y)
    }
    return Double(ring.count) * Double.ulpOfOne * magnitude / 2
  }

  static func signedArea(_ points: [SIMD2<Double>], _ range: Range<Int>) -> Double {
    var sum = 0.0
    let origin = points[range.lowerBound]
    for i in range.lowerBound..<(range.upperBound - 1) {
      let a = points[i] - origin
      let b = points[i + 1] - origin
      sum += a.x * b.y - b.x * a.y
    }
    return sum / 2
  }

  /// The shortest arc of longitude (degrees, `low` ≤ `high` ≤ `low` + 360, `low` below 180
  /// when the intervals start below 180) that holds every interval of `intervals` (each `low ≤ high`,
  /// spans up to 360°), the intervals taken modulo 360°: the circle less its largest gap
  /// between intervals. Two parts at 177…180 and −180…−179 give 177…181.
  /// - Complexity: O(k log k) for k intervals.
  public static func shortestCoveringArc(_ intervals: [(Double, Double)]) -> (
    low: Double, high: Double
  ) {
    guard let first = intervals.first else { return (0, 0) }
    // Each interval moved so that it starts in [first's start, first's start + 360).
    let base = first.0
    let moved = intervals.map { interval -> (Double, Double) in
      var shift = 0.0
      while interval.0 + shift < base { shift += 360 }
      while interval.0 + shift >= base + 360 { shift -= 360 }
      return (interval.0 + shift, interval.1 + shift)
    }.sorted { $0.0 < $1.0 }
    // Walk the union; the largest gap (the wrap-around gap included) is left out.
    var reach = moved[0].1
    var bestGap = -Double.infinity
    var bestStart = moved[0].0
    for k in 1..<moved.count {
      let gap = moved[k].0 - reach
      if gap > bestGap {
        bestGap = gap
        bestStart = moved[k].0
      }
      reach = Swift.max(reach, moved[k].1)
    }
    let wrapGap = moved[0].0 + 360 - reach
    if wrapGap >= bestGap || bestGap <= 0 { return (moved[0].0, reach) }
    // The arc starts after the largest inner gap and ends 360° later, at that gap's start;
    // moved back below 180 when it starts past it.
    let low = bestStart >= 180 ? bestStart - 360 : bestStart
    return (low, low + 360 - bestGap)
  }

  /// A circle containing the longitude/latitude box: centred on the box's middle, with the
  /// largest haversine distance to its four corners as the radius, widened by a relative 1e-9
  /// and 1 m. The farthest point of the box lies on its boundary, and along a parallel or a
  /// meridian the distance from the centre has a single minimum, so a corner is the farthest.
  public static func boundingCap(
    minLatitude: Double, maxLatitude: Double, minLongitude: Double, maxLongitude: Double
  ) -> CircularRegion {
    let midLatitude = (minLatitude + maxLatitude) / 2
    var midLongitude = (minLongitude + maxLongitude) / 2
    if midLongitude >= 180 { midLongitude -= 360 }
    let center = Coordinate(uncheckedLatitude: midLatitude, longitude: midLongitude)
    var radius = 0.0
    for lat in [minLatitude, maxLatitude] {
      for lon in [minLongitude, maxLongitude] {
        var wrapped = lon
        if wrapped > 180 { wrapped -= 360 }
        let corner = Coordinate(uncheckedLatitude: lat, longitude: wrapped)
        radius = Swift.max(radius, haversineDistance(center, corner))
      }
    }
    // `CircularRegion` accepts any finite positive radius; this one is >= 1 m.
    let widened = radius * (1 + 1e-9) + 1
    guard let cap = try? CircularRegion(center: center, radiusMeters: widened) else {
      preconditionFailure("a finite radius >= 1 m is a valid circle")
    }
    return cap
  }
}

/// Why polygon coordinates were rejected before (or instead of) the GEOS validity check.
/// Rings and positions are 0-based indices into the GeoJSON `coordinates`.
public enum PolygonError: Error, Hashable, Sendable, CustomStringConvertible {
  /// No polygon at all (an empty MultiPolygon).
  case empty
  /// A polygon with no ring.
  case emptyPolygon(polygon: Int)
  /// A ring with fewer than 4 positions (RFC 7946 §3.1.6).
  case tooFewPositions(polygon: Int, ring: Int, Int)
  /// A ring whose last position differs from its first.
  case ringNotClosed(polygon: Int, ring: Int)
  /// A longitude not finite or outside [−540, 540], or a latitude not finite or outside
  /// [−90, 90].
  case coordinateOutOfRange(polygon: Int, ring: Int, position: Int, SIMD2<Double>)
  /// The region spans more than 360° of longitude.
  case longitudeSpanTooWide(Double)
  /// The ring winds around a pole: its longitude steps, each taken the short way, add up to
  /// ±360°. A plate carrée polygon cannot hold it; cut it at ±180 and close it along the
  /// pole's latitude (±90) instead.
  case ringAroundPole(polygon: Int, ring: Int, north: Bool)
  /// An edge steps more than 180° of longitude: as GeoJSON edges are straight in longitude,
  /// it runs the long way round. A polygon that crosses the antimeridian must be cut at ±180
  /// (RFC 7946 §3.1.9) or written with longitudes past 180.
  case edgeSpansAntimeridian(polygon: Int, ring: Int, position: Int)

  public var description: String {
    func at(_ p: Int, _ r: Int) -> String { "polygon \(p), ring \(r)" }
    switch self {
    case .empty: return "no polygon"
    case .emptyPolygon(let p): return "polygon \(p) has no ring"
    case .tooFewPositions(let p, let r, let n):
      return "\(at(p, r)) has \(n) positions; a ring needs at least 4"
    case .ringNotClosed(let p, let r): return "\(at(p, r)) is not closed"
    case .coordinateOutOfRange(let p, let r, let i, let v):
      return
        "\(at(p, r)), position \(i): [\(v.x), \(v.y)] is not a finite longitude in [-540, 540]"
        + " and latitude in [-90, 90]"
    case .longitudeSpanTooWide(let span):
      return "the polygon spans \(span)° of longitude, more than 360°"
    case .ringAroundPole(let p, let r, let north):
      let pole = north ? "90" : "-90"
      return
        "\(at(p, r)) winds around the \(north ? "North" : "South") Pole; cut it at ±180 and"
        + " close it along latitude \(pole) in steps of at most 180° of longitude (edges are"
        + " straight in longitude: [180, \(pole)], [0, \(pole)], [-180, \(pole)])"
    case .edgeSpansAntimeridian(let p, let r, let i):
      return
        "\(at(p, r)), position \(i): the edge to the next position steps more than 180° of"
        + " longitude (edges are straight in longitude, so it runs the long way round); cut the"
        + " polygon at ±180 (RFC 7946 3.1.9), write longitudes past 180, or, for a band all the"
        + " way round, add a vertex at least every 180°"
    }
  }
}

extension PolygonRegion {
  /// Checks coordinates that GEOS cannot judge (ranges, the antimeridian, the poles) and
  /// moves the whole region into one longitude frame.
  ///
  /// - Every position: finite, latitude in [−90, 90], longitude in [−540, 540].
  /// - A ring whose longitude steps, each taken the short way round, add up to ±360° winds
  ///   around a pole: rejected (``PolygonError/ringAroundPole(polygon:ring:north:)``).
  /// - Otherwise an edge that steps more than 180° of longitude is rejected
  ///   (``PolygonError/edgeSpansAntimeridian(polygon:ring:position:)``).
  /// - **Normalisation**: every longitude is shifted by the same multiple of 360° so that the
  ///   smallest lies in [−180, 180). A polygon written past 180 (`[170, ...], [190, ...]`)
  ///   keeps its shape and lies in [170, 190]; a MultiPolygon cut at ±180 keeps its parts on
  ///   either side (both answer for points at ±180). The span must not pass 360°.
  /// - Throws: the first ``PolygonError`` found.
  /// - Complexity: O(n) for n positions.
  public static func normalizedPolygons(_ polygons: [[[SIMD2<Double>]]]) throws(PolygonError)
    -> [[[SIMD2<Double>]]]
  {
    guard !polygons.isEmpty else { throw .empty }
    var minX = Double.infinity
    var maxX = -Double.infinity
    for (p, polygon) in polygons.enumerated() {
      guard !polygon.isEmpty else { throw .emptyPolygon(polygon: p) }
      for (r, ring) in polygon.enumerated() {
        // GEOS takes an empty ring as valid; nothing after it would (no box, no area).
        guard !ring.isEmpty else { throw .tooFewPositions(polygon: p, ring: r, 0) }
        for (i, v) in ring.enumerated() {
          guard v.x.isFinite, v.y.isFinite, abs(v.y) <= 90, abs(v.x) <= 540 else {
            throw .coordinateOutOfRange(polygon: p, ring: r, position: i, v)
          }
          minX = Swift.min(minX, v.x)
          maxX = Swift.max(maxX, v.x)
        }
        guard ring.count >= 2 else { continue }
        var winding = 0.0
        var jump: Int? = nil
        for i in 0..<(ring.count - 1) {
          var step = ring[i + 1].x - ring[i].x
          if abs(step) > 180 {
            if jump == nil { jump = i }
            step += step > 0 ? -360 : 360
          }
          winding += step
        }
        if abs(winding) > 180 {
          let meanLatitude = ring.reduce(0.0) { $0 + $1.y } / Double(ring.count)
          throw .ringAroundPole(polygon: p, ring: r, north: meanLatitude >= 0)
        }
        if let jump { throw .edgeSpansAntimeridian(polygon: p, ring: r, position: jump) }
      }
    }
    guard maxX - minX <= 360 else { throw .longitudeSpanTooWide(maxX - minX) }
    guard minX.isFinite else { throw .empty }  // no position at all: the loops below never end
    var shift = 0.0
    while minX + shift >= 180 { shift -= 360 }
    while minX + shift < -180 { shift += 360 }
    if shift == 0 { return polygons }
    return polygons.map { polygon in
      polygon.map { ring in ring.map { SIMD2($0.x + shift, $0.y) } }
    }
  }
}
