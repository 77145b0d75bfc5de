extension PolygonStorage {
  /// Which cells of an 8 × 8 block lie wholly inside and wholly outside the closed region (see
  /// ``PolygonRegion/coverage(minLongitude:minLatitude:cellWidth:cellHeight:)``).
  ///
  /// A cell is decided when no edge's box, widened by twice ``gridMarginDegrees``, meets it:
  /// then no edge comes within ``gridMarginDegrees`` of the cell, so the cell grown by that
  /// margin is on one side of the boundary, and the side is its centre's (tested exactly, far
  /// from every edge). Two decided cells side by side share their answer (their union, grown by
  /// the margin, meets no edge either), so a centre is tested only where neither the left nor
  /// the lower neighbour is decided. O(k + 64 t) for the k band entries of the block's
  /// latitudes and t centre tests.
  func coverage(x0: Double, y0: Double, width w: Double, height h: Double) -> (
    inside: UInt64, outside: UInt64
  ) {
    guard w > 0, h > 0, w.isFinite, h.isFinite, x0.isFinite, y0.isFinite else { return (0, 0) }
    // Query longitudes are in [−180, 180]: a region reaching 180 also answers λ + 360 (−180
    // as 180), which the frame of this block does not see.
    guard maxX < 180 else { return (0, 0) }
    let x1 = x0 + 8 * w
    let y1 = y0 + 8 * h
    let reach = 2 * Self.gridMarginDegrees
    // A block that misses the region's box (grown by the reach) is outside.
    if x1 < minX - reach || x0 > maxX + reach || y1 < minY - reach || y0 > maxY + reach {
      return (0, ~0)
    }
    var touched: UInt64 = 0
    func span(_ low: Double, _ high: Double, _ origin: Double, _ size: Double) -> (Int, Int) {
      let a = ((low - origin) / size).rounded(.down)
      let b = ((high - origin) / size).rounded(.down)
      return (Int(Swift.max(0, Swift.min(7, a))), Int(Swift.max(0, Swift.min(7, b))))
    }
    let p = points
    let table = bandTable
    let firstBand = band(latitude: y0 - reach)
    let lastBand = band(latitude: y1 + reach)
    for k in Int(table[firstBand])..<Int(table[lastBand + 1]) {
      let i = Int(table[k])
      let a = p[i]
      let b = p[i + 1]
      let ex0 = Swift.min(a.x, b.x) - reach
      let ex1 = Swift.max(a.x, b.x) + reach
      let ey0 = Swift.min(a.y, b.y) - reach
      let ey1 = Swift.max(a.y, b.y) + reach
      if ex1 < x0 || ex0 > x1 || ey1 < y0 || ey0 > y1 { continue }
      let (c0, c1) = span(ex0, ex1, x0, w)
      let (r0, r1) = span(ey0, ey1, y0, h)
      var rowBits: UInt64 = 0
      for c in c0...c1 { rowBits |= 1 << UInt64(c) }
      for r in r0...r1 { touched |= rowBits << UInt64(8 * r) }
    }
    var inside: UInt64 = 0
    var outside: UInt64 = 0
    for r in 0..<8 {
      for c in 0..<8 {
        let bit: UInt64 = 1 << UInt64(8 * r + c)
        if touched & bit != 0 { continue }
        let left: UInt64 = c > 0 ? bit >> 1 : 0
        let below: UInt64 = r > 0 ? bit >> 8 : 0
        let known = (inside | outside) & (left | below)
        let isInside: Bool
        if known != 0 {
          isInside = inside & known != 0
        } else {
          let cx = x0 + (Double(c) + 0.5) * w
          let cy = y0 + (Double(r) + 0.5) * h
          isInside = contains(x: cx, y: cy)
        }
        if isInside { inside |= bit } else { outside |= bit }
      }
    }
    return (inside, outside)
  }
}
