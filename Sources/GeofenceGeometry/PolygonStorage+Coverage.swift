extension PolygonStorage {
  /// Which cells of a 16 × 16 block lie wholly inside and wholly outside the closed region
  /// (see ``PolygonRegion/coverage(minLongitude:minLatitude:cellWidth:cellHeight:)``).
  ///
  /// A cell is decided when no edge comes within twice ``gridMarginDegrees`` of it in either
  /// coordinate (``forEachTouch(x0:y0:width:height:_:)``): then the cell grown by
  /// ``gridMarginDegrees`` is on one side of the boundary, and the side is its centre's (tested exactly, far from
  /// every edge). Two decided cells side by side share their answer (their union, grown by the
  /// margin, meets no edge either), so a centre is tested only where neither the left nor the
  /// lower neighbour is decided. O(k + 256 t) for the k band entries of the block's latitudes
  /// and t centre tests.
  func coverage(x0: Double, y0: Double, width w: Double, height h: Double) -> (
    inside: SIMD4<UInt64>, outside: SIMD4<UInt64>
  ) {
    let side = PolygonRegion.coverageSide
    guard w > 0, h > 0, w.isFinite, h.isFinite, x0.isFinite, y0.isFinite else {
      return (.zero, .zero)
    }
    // Query longitudes are in [−180, 180]: a region reaching 180 also answers λ + 360 (−180
    // as 180), and one starting at −180 answers 180 as −180, which the frame of this block
    // does not see.
    guard maxX < 180, minX > -180 else { return (.zero, .zero) }
    let x1 = x0 + Double(side) * w
    let y1 = y0 + Double(side) * h
    let reach = 2 * Self.gridMarginDegrees
    // A block that misses the region's box (grown by the reach) is outside.
    if x1 < minX - reach || x0 > maxX + reach || y1 < minY - reach || y0 > maxY + reach {
      return (.zero, SIMD4(repeating: ~0))
    }
    // Row r of the block: bit c for column c.
    var touched = SIMD16<UInt16>(repeating: 0)
    forEachTouch(x0: x0, y0: y0, width: w, height: h) { _, r, c0, c1 in
      touched[r] |= UInt16(truncatingIfNeeded: (1 << (c1 + 1)) - (1 << c0))
    }
    var inside = SIMD4<UInt64>.zero
    var outside = SIMD4<UInt64>.zero
    func isSet(_ mask: SIMD4<UInt64>, _ i: Int) -> Bool {
      mask[i >> 6] & (1 << UInt64(i & 63)) != 0
    }
    for r in 0..<side {
      for c in 0..<side where touched[r] & (1 << UInt16(c)) == 0 {
        let i = r * side + c
        var known: Bool? = nil
        if c > 0 && (isSet(inside, i - 1) || isSet(outside, i - 1)) {
          known = isSet(inside, i - 1)
        } else if r > 0 && (isSet(inside, i - side) || isSet(outside, i - side)) {
          known = isSet(inside, i - side)
        }
        let isInside =
          known ?? contains(x: x0 + (Double(c) + 0.5) * w, y: y0 + (Double(r) + 0.5) * h)
        if isInside {
          inside[i >> 6] |= 1 << UInt64(i & 63)
        } else {
          outside[i >> 6] |= 1 << UInt64(i & 63)
        }
      }
    }
    return (inside, outside)
  }

  /// Calls `body(i, r, c0, c1)` for every edge (`i`, the index in ``points`` of its first
  /// vertex) and row `r` of the 16 × 16 block of cells `w` × `h` from (`x0`, `y0`) that the edge
  /// comes within twice ``gridMarginDegrees`` of (in both coordinates), with the first and last
  /// such column of the row: the edge's points whose latitude lies within that reach of the
  /// row, their longitudes widened by the reach. The rounding of this arithmetic (about 1e-16
  /// of the coordinates' magnitude) is far below the reach's second ``gridMarginDegrees``, so
  /// an edge within ``gridMarginDegrees`` of a cell is always reported for it. O(k + rows) for
  /// the k band entries of the block's latitudes.
  func forEachTouch(
    x0: Double, y0: Double, width w: Double, height h: Double,
    _ body: (_ edge: Int, _ row: Int, _ firstColumn: Int, _ lastColumn: Int) -> Void
  ) {
    let side = PolygonRegion.coverageSide
    let x1 = x0 + Double(side) * w
    let y1 = y0 + Double(side) * h
    let reach = 2 * Self.gridMarginDegrees
    func span(_ low: Double, _ high: Double, _ origin: Double, _ size: Double) -> (Int, Int) {
      let last = Double(side - 1)
      let a = ((low - origin) / size).rounded(.down)
      let b = ((high - origin) / size).rounded(.down)
      return (Int(Swift.max(0, Swift.min(last, a))), Int(Swift.max(0, Swift.min(last, b))))
    }
    let p = points
    let table = bandTable
    let firstBand = band(latitude: y0 - reach)
    let lastBand = band(latitude: y1 + reach)
    for bandIndex in firstBand...lastBand {
      for k in Int(table[bandIndex])..<Int(table[bandIndex + 1]) {
        let i = Int(table[k])
        let a = p[i]
        let b = p[i + 1]
        // An edge is listed in every band it overlaps: take it in the first of the range.
        if bandIndex > firstBand && band(latitude: Swift.min(a.y, b.y)) < bandIndex { continue }
        let ex0 = Swift.min(a.x, b.x) - reach
        let ex1 = Swift.max(a.x, b.x) + reach
        let ey0 = Swift.min(a.y, b.y) - reach
        let ey1 = Swift.max(a.y, b.y) + reach
        if ex1 < x0 || ex0 > x1 || ey1 < y0 || ey0 > y1 { continue }
        let (r0, r1) = span(ey0, ey1, y0, h)
        if a.y == b.y {
          let (c0, c1) = span(ex0, ex1, x0, w)
          for r in r0...r1 { body(i, r, c0, c1) }
          continue
        }
        // Row by row, the columns the edge itself comes within the reach of (a long slanted
        // edge crosses few of the columns its box spans).
        let slope = (b.x - a.x) / (b.y - a.y)
        let low = Swift.min(a.y, b.y)
        let high = Swift.max(a.y, b.y)
        for r in r0...r1 {
          let rowLow = Swift.max(low, y0 + Double(r) * h - reach)
          let rowHigh = Swift.min(high, y0 + Double(r + 1) * h + reach)
          if rowLow > rowHigh { continue }
          let xLow = a.x + (rowLow - a.y) * slope
          let xHigh = a.x + (rowHigh - a.y) * slope
          let (c0, c1) = span(
            Swift.min(xLow, xHigh) - reach, Swift.max(xLow, xHigh) + reach, x0, w)
          body(i, r, c0, c1)
        }
      }
    }
  }
}
