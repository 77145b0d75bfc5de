import GeofenceIndex
import GeofenceTestSupport
import Testing

// `BoxGridIndex` against a scan of every box: each box containing the point is reported once,
// and any other box reported lies within `Float` rounding of the point.

private func randomBox(using rng: inout SeededGenerator) -> BoxGridIndex.Box {
  let w: Double
  switch Int.random(in: 0..<10, using: &rng) {
  case 0: w = Double.random(in: 5...40, using: &rng)  // wide: the wide list
  case 1: w = 0  // a line
  default: w = Double.random(in: 0.001...0.5, using: &rng)
  }
  let h = Double.random(in: 0...0.5, using: &rng)
  let x = Double.random(in: -180..<180, using: &rng)
  let y = Double.random(in: -90...(90 - h), using: &rng)
  var box = BoxGridIndex.Box(
    minLongitude: x, maxLongitude: x + w, minLatitude: y, maxLatitude: y + h)
  if Bool.random(using: &rng) {  // an inner box, the middle half, where it lies within ±180
    let inner = SIMD4(x + w / 4, y + h / 4, x + 3 * w / 4, y + 3 * h / 4)
    if inner.z <= 180 { box.inner = inner }
  }
  return box
}

/// Whether `box` holds (x, y) for some frame shift: x, x + 360 or x − 360 within its
/// longitudes (a box whose west side is −180 holds x = 180, the same meridian).
private func holds(_ box: BoxGridIndex.Box, _ x: Double, _ y: Double, slack: Double = 0) -> Bool {
  guard y >= box.minLatitude - slack, y <= box.maxLatitude + slack else { return false }
  return [x - 360, x, x + 360].contains {
    $0 >= box.minLongitude - slack && $0 <= box.maxLongitude + slack
  }
}

@Suite struct BoxGridIndexTests {
  @Test(arguments: [1, 2, 3] as [UInt64])
  func reportsEveryContainingBoxOnce(seed: UInt64) {
    var rng = SeededGenerator(seed: seed)
    var boxes = (0..<400).map { _ in randomBox(using: &rng) }
    // Boxes at the antimeridian and the poles, touching ±180 and ±90.
    boxes.append(.init(minLongitude: 179.5, maxLongitude: 180.5, minLatitude: 0, maxLatitude: 1))
    boxes.append(.init(minLongitude: 170, maxLongitude: 180, minLatitude: 0, maxLatitude: 1))
    boxes.append(.init(minLongitude: -180, maxLongitude: -170, minLatitude: 0, maxLatitude: 1))
    boxes.append(.init(minLongitude: 10, maxLongitude: 20, minLatitude: 89, maxLatitude: 90))
    boxes.append(.init(minLongitude: -180, maxLongitude: 180, minLatitude: -90, maxLatitude: -89))
    var index = BoxGridIndex(boxes: boxes, payloads: boxes.indices.map { Int32($0) })
    var live = Array(repeating: true, count: boxes.count)
    func check(_ label: String) {
      var points: [(Double, Double)] = (0..<3000).map { _ in
        (Double.random(in: -180...180, using: &rng), Double.random(in: -90...90, using: &rng))
      }
      for b in boxes {  // corners: on the boundary
        let x0 = b.minLongitude >= 180 ? b.minLongitude - 360 : b.minLongitude
        let x1 = b.maxLongitude > 180 ? b.maxLongitude - 360 : b.maxLongitude
        points += [(x0, b.minLatitude), (x1, b.maxLatitude)]
      }
      points += [(180, 0.5), (-180, 0.5), (0, 90), (15, 90), (33, -90)]
      for b in boxes {  // inside and next to the inner boxes' corners
        guard let i = b.inner else { continue }
        for d in [-1e-7, 0, 1e-7] { points += [(i.x + d, i.y + d), (i.z + d, i.w + d)] }
      }
      for (x, y) in points {
        var reported: [Int32] = []
        index.forEachCandidate(longitude: x, latitude: y) { k, certain in
          reported.append(k)
          if certain {
            let i = boxes[Int(k)].inner ?? SIMD4(repeating: .nan)
            #expect(
              x >= i.x && y >= i.y && x <= i.z && y <= i.w,
              "seed \(seed) \(label): \(k) certain outside its inner box at \(x), \(y)")
          }
        }
        #expect(Set(reported).count == reported.count, "seed \(seed) \(label): twice at \(x), \(y)")
        for (k, b) in boxes.enumerated() where live[k] && holds(b, x, y) {
          #expect(reported.contains(Int32(k)), "seed \(seed) \(label): missed \(k) at \(x), \(y)")
        }
        for k in reported {
          #expect(live[Int(k)], "seed \(seed) \(label): removed \(k) at \(x), \(y)")
          #expect(
            holds(boxes[Int(k)], x, y, slack: 1e-4), "seed \(seed) \(label): \(k) at \(x), \(y)")
        }
      }
    }
    check("built")
    for k in stride(from: 0, to: boxes.count, by: 7) {
      index.remove(boxes[k], payload: Int32(k))
      live[k] = false
    }
    for _ in 0..<50 {
      let box = randomBox(using: &rng)
      index.insert(box, payload: Int32(boxes.count))
      boxes.append(box)
      live.append(true)
    }
    check("after removals and inserts")
  }

  @Test(arguments: [4, 5] as [UInt64])
  func coverageDecidesOnlyWhatTheShapeDecides(seed: UInt64) {
    // Each box's shape is the ellipse inscribed in it; the coverage given to the build marks a
    // subcell inside when its four corners, grown by 1e-9°, are inside (the ellipse is convex)
    // and outside when its nearest point to the centre is outside. Every point reported
    // certain must be in its ellipse, and every ellipse holding a point must be reported.
    var rng = SeededGenerator(seed: seed)
    let boxes = (0..<300).map { _ -> BoxGridIndex.Box in
      let w = Double.random(in: 0.001...0.05, using: &rng)
      let h = Double.random(in: 0.001...0.05, using: &rng)
      let x = Double.random(in: 10...10.3, using: &rng)
      let y = Double.random(in: 40...40.3, using: &rng)
      return BoxGridIndex.Box(
        minLongitude: x, maxLongitude: x + w, minLatitude: y, maxLatitude: y + h)
    }
    func normalized(_ b: BoxGridIndex.Box, _ x: Double, _ y: Double) -> SIMD2<Double> {
      let cx = (b.minLongitude + b.maxLongitude) / 2
      let cy = (b.minLatitude + b.maxLatitude) / 2
      return [
        (x - cx) / ((b.maxLongitude - b.minLongitude) / 2),
        (y - cy) / ((b.maxLatitude - b.minLatitude) / 2),
      ]
    }
    func inEllipse(_ b: BoxGridIndex.Box, _ x: Double, _ y: Double) -> Bool {
      let p = normalized(b, x, y)
      return p.x * p.x + p.y * p.y <= 1
    }
    var decided = 0
    let index = BoxGridIndex(boxes: boxes, payloads: boxes.indices.map { Int32($0) }) {
      k, corner, size in
      let b = boxes[k]
      var inside = SIMD4<UInt64>.zero
      var outside = SIMD4<UInt64>.zero
      let g = 1e-9
      for i in 0..<256 {
        let x0 = corner.x + Double(i % 16) * size.x - g
        let x1 = corner.x + Double(i % 16 + 1) * size.x + g
        let y0 = corner.y + Double(i / 16) * size.y - g
        let y1 = corner.y + Double(i / 16 + 1) * size.y + g
        let bit: UInt64 = 1 << UInt64(i % 64)
        if inEllipse(b, x0, y0) && inEllipse(b, x1, y0) && inEllipse(b, x0, y1)
          && inEllipse(b, x1, y1)
        {
          inside[i / 64] |= bit
          decided += 1
        } else {
          let a = normalized(b, x0, y0)
          let c = normalized(b, x1, y1)
          let nearest = SIMD2(min(max(0, a.x), c.x), min(max(0, a.y), c.y))
          if nearest.x * nearest.x + nearest.y * nearest.y > 1 {
            outside[i / 64] |= bit
            decided += 1
          }
        }
      }
      return (inside, outside)
    }
    #expect(decided > 100_000)
    var certain = 0
    for _ in 0..<20_000 {
      let x = Double.random(in: 9.99...10.36, using: &rng)
      let y = Double.random(in: 39.99...40.36, using: &rng)
      var reported: [Int32] = []
      index.forEachCandidate(longitude: x, latitude: y) { k, isCertain in
        reported.append(k)
        if isCertain {
          certain += 1
          #expect(inEllipse(boxes[Int(k)], x, y), "seed \(seed): \(k) certain at \(x), \(y)")
        }
      }
      for (k, b) in boxes.enumerated() where inEllipse(b, x, y) {
        #expect(reported.contains(Int32(k)), "seed \(seed): missed \(k) at \(x), \(y)")
      }
    }
    #expect(certain > 1_000)
  }

  @Test(arguments: [6, 7, 8] as [UInt64])
  func crowdedCellsAnswerAsAScanOfEveryBox(seed: UInt64) {
    // Boxes crowded into one small area, so that cells hold from a few to hundreds of entries
    // (one load of a subcell's row up to 28, several beyond). Without coverage, the reported
    // set equals exactly the boxes whose `Float` bounds hold the point rounded to `Float`;
    // with each box's shape the inscribed ellipse, the answers (certain, or reported and in
    // the ellipse) equal exactly the ellipses holding the point. Both before and after
    // removals. Points: random, on box corners and sides, and one `Float` step either side.
    var rng = SeededGenerator(seed: seed)
    let count = [40, 150, 600][Int(seed % 3)]
    let boxes = (0..<count).map { _ -> BoxGridIndex.Box in
      // A tenth large enough for the wide list, a tenth lines or points.
      let kind = Int.random(in: 0..<10, using: &rng)
      let range = kind == 0 ? 0.3...0.6 : kind == 1 ? 0...0 : 0.04...0.1
      let w = Double.random(in: range, using: &rng)
      let h = Double.random(in: range, using: &rng)
      let x = Double.random(in: 10...10.2, using: &rng)
      let y = Double.random(in: 40...40.2, using: &rng)
      return BoxGridIndex.Box(
        minLongitude: x, maxLongitude: x + w, minLatitude: y, maxLatitude: y + h)
    }
    func inEllipse(_ b: BoxGridIndex.Box, _ x: Double, _ y: Double) -> Bool {
      let a = (b.maxLongitude - b.minLongitude) / 2
      let c = (b.maxLatitude - b.minLatitude) / 2
      guard a > 0, c > 0 else { return false }
      let px = (x - (b.minLongitude + b.maxLongitude) / 2) / a
      let py = (y - (b.minLatitude + b.maxLatitude) / 2) / c
      return px * px + py * py <= 1
    }
    func inFloatBox(_ b: BoxGridIndex.Box, _ x: Double, _ y: Double) -> Bool {
      Float(b.minLongitude) <= Float(x) && Float(x) <= Float(b.maxLongitude)
        && Float(b.minLatitude) <= Float(y) && Float(y) <= Float(b.maxLatitude)
    }
    // The ellipse's coverage: a subcell (grown by 1e-9°) inside when its corners are, outside
    // when its point nearest the centre is outside.
    func coverage(_ k: Int, _ corner: SIMD2<Double>, _ size: SIMD2<Double>) -> (
      inside: SIMD4<UInt64>, outside: SIMD4<UInt64>
    ) {
      let b = boxes[k]
      var inside = SIMD4<UInt64>.zero
      var outside = SIMD4<UInt64>.zero
      let cx = (b.minLongitude + b.maxLongitude) / 2
      let cy = (b.minLatitude + b.maxLatitude) / 2
      for i in 0..<256 {
        let x0 = corner.x + Double(i % 16) * size.x - 1e-9
        let x1 = corner.x + Double(i % 16 + 1) * size.x + 1e-9
        let y0 = corner.y + Double(i / 16) * size.y - 1e-9
        let y1 = corner.y + Double(i / 16 + 1) * size.y + 1e-9
        let bit: UInt64 = 1 << UInt64(i % 64)
        if [(x0, y0), (x1, y0), (x0, y1), (x1, y1)].allSatisfy({ inEllipse(b, $0.0, $0.1) }) {
          inside[i / 64] |= bit
        } else if !inEllipse(b, min(max(cx, x0), x1), min(max(cy, y0), y1)) {
          outside[i / 64] |= bit
        }
      }
      return (inside, outside)
    }
    var points: [(Double, Double)] = (0..<4000).map { _ in
      (Double.random(in: 9.99...10.81, using: &rng), Double.random(in: 39.99...40.81, using: &rng))
    }
    for b in boxes {
      for (x, y) in [
        (b.minLongitude, b.minLatitude), (b.maxLongitude, b.maxLatitude),
        (b.minLongitude, (b.minLatitude + b.maxLatitude) / 2),
        ((b.minLongitude + b.maxLongitude) / 2, b.maxLatitude),
      ] {
        points.append((x, y))
        for (dx, dy) in [(-1, 0), (1, 0), (0, -1), (0, 1)] as [(Float, Float)] {
          let fx = dx < 0 ? Float(x).nextDown : dx > 0 ? Float(x).nextUp : Float(x)
          let fy = dy < 0 ? Float(y).nextDown : dy > 0 ? Float(y).nextUp : Float(y)
          points.append((Double(fx), Double(fy)))
        }
      }
    }
    let payloads = boxes.indices.map { Int32($0) }
    var plain = BoxGridIndex(boxes: boxes, payloads: payloads)
    var shaped = BoxGridIndex(boxes: boxes, payloads: payloads, coverage: coverage)
    var live = Array(repeating: true, count: boxes.count)
    func check(_ label: String) {
      var certain = 0
      for (x, y) in points {
        var reported: [Int32] = []
        plain.forEachCandidate(longitude: x, latitude: y) { k, _ in reported.append(k) }
        let expected = boxes.indices.filter { live[$0] && inFloatBox(boxes[$0], x, y) }
        #expect(
          reported.map(Int.init).sorted() == expected,
          "seed \(seed) \(label): plain at \(x), \(y)")
        var answers: [Int] = []
        shaped.forEachCandidate(longitude: x, latitude: y) { k, isCertain in
          #expect(live[Int(k)], "seed \(seed) \(label): removed \(k) at \(x), \(y)")
          if isCertain { certain += 1 }
          if isCertain || inEllipse(boxes[Int(k)], x, y) { answers.append(Int(k)) }
        }
        let inside = boxes.indices.filter { live[$0] && inEllipse(boxes[$0], x, y) }
        #expect(answers.sorted() == inside, "seed \(seed) \(label): shaped at \(x), \(y)")
      }
      #expect(certain > 100, "seed \(seed) \(label)")
    }
    check("built")
    for k in stride(from: 0, to: boxes.count, by: 3) {
      plain.remove(boxes[k], payload: Int32(k))
      shaped.remove(boxes[k], payload: Int32(k))
      live[k] = false
    }
    check("after removals")
  }

  @Test func emptyIndexReportsNothing() {
    var reported = 0
    BoxGridIndex().forEachCandidate(longitude: 0, latitude: 0) { _, _ in reported += 1 }
    #expect(reported == 0)
  }
}
