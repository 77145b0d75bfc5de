import Foundation
import GEOSBridge
import GeofenceGeometry
import GeofenceTestSupport
import Testing

// `PolygonRegion.contains` against GEOS prepared geometry (`covers`: the boundary is inside) on
// seeded random polygons. The only difference allowed is at the edge: a point within
// `toleranceDegrees` of the boundary (GEOS's planar distance) may be judged either way.

/// Points closer than this to the boundary (in degrees) may disagree: the edge test's own
/// tolerance (1e-12°) plus the rounding of GEOS's robust predicates against ours.
private let toleranceDegrees = 1e-9

/// A star-shaped ring around (cx, cy): n vertices at increasing angles, radius scaled by
/// `shape(i)` in [minScale, 1]; star-shaped rings are simple. Counter-clockwise unless
/// `clockwise`.
private func starRing(
  cx: Double, cy: Double, rx: Double, ry: Double, n: Int, minScale: Double,
  clockwise: Bool = false, using rng: inout SeededGenerator
) -> [SIMD2<Double>] {
  var angles = (0..<n).map { i in
    (Double(i) + Double.random(in: 0.1...0.9, using: &rng)) / Double(n) * 2 * Double.pi
  }
  if clockwise { angles.reverse() }
  var ring = angles.map { a -> SIMD2<Double> in
    let s = minScale >= 1 ? 1 : Double.random(in: minScale...1, using: &rng)
    return SIMD2(cx + s * rx * cos(a), cy + s * ry * sin(a))
  }
  ring.append(ring[0])
  return ring
}

private struct Family: Sendable {
  var name: String
  var count: Int
  var make: @Sendable (inout SeededGenerator) -> [[SIMD2<Double>]]
}

private let families: [Family] = [
  Family(name: "convex", count: 40) { rng in
    [
      starRing(
        cx: Double.random(in: -170...170, using: &rng),
        cy: Double.random(in: -60...60, using: &rng),
        rx: 0.05, ry: 0.04, n: Int.random(in: 3...64, using: &rng), minScale: 1, using: &rng)
    ]
  },
  Family(name: "concave", count: 40) { rng in
    [
      starRing(
        cx: Double.random(in: -170...170, using: &rng),
        cy: Double.random(in: -60...60, using: &rng),
        rx: 0.1, ry: 0.08, n: Int.random(in: 5...400, using: &rng), minScale: 0.2, using: &rng)
    ]
  },
  Family(name: "holes", count: 30) { rng in
    let cx = Double.random(in: -170...170, using: &rng)
    let cy = Double.random(in: -60...60, using: &rng)
    // Outer radius scale >= 0.5; holes within 0.45 of it, in separate sectors' worth of
    // distance from each other: one centred hole and up to two off-centre small ones.
    var rings = [
      starRing(
        cx: cx, cy: cy, rx: 1, ry: 0.8, n: Int.random(in: 24...200, using: &rng), minScale: 0.5,
        using: &rng),
      starRing(
        cx: cx, cy: cy, rx: 0.15, ry: 0.12, n: Int.random(in: 3...40, using: &rng),
        minScale: 0.5, clockwise: true, using: &rng),
    ]
    rings.append(
      starRing(
        cx: cx + 0.3, cy: cy, rx: 0.1, ry: 0.08, n: Int.random(in: 3...20, using: &rng),
        minScale: 0.5, clockwise: Bool.random(using: &rng), using: &rng))
    return rings
  },
  Family(name: "tiny", count: 30) { rng in
    [
      starRing(
        cx: Double.random(in: -179...179, using: &rng),
        cy: Double.random(in: -80...80, using: &rng),
        rx: 1e-4, ry: 8e-5, n: Int.random(in: 3...30, using: &rng), minScale: 0.3, using: &rng)
    ]
  },
  Family(name: "continent", count: 20) { rng in
    [
      starRing(
        cx: Double.random(in: -120...120, using: &rng),
        cy: Double.random(in: -30...30, using: &rng),
        rx: 40, ry: 25, n: Int.random(in: 50...1000, using: &rng), minScale: 0.3, using: &rng)
    ]
  },
  Family(name: "near a pole", count: 30) { rng in
    let north = Bool.random(using: &rng)
    let cy = north ? 86.0 : -86.0
    return [
      starRing(
        cx: Double.random(in: -150...150, using: &rng), cy: cy, rx: 20, ry: 3.9,
        n: Int.random(in: 4...200, using: &rng), minScale: 0.3, using: &rng)
    ]
  },
  Family(name: "across the antimeridian", count: 30) { rng in
    // Written with longitudes past 180: the region's frame keeps them; queries come wrapped.
    [
      starRing(
        cx: Double.random(in: 178...182, using: &rng), cy: Double.random(in: -60...60, using: &rng),
        rx: 3, ry: 2, n: Int.random(in: 4...200, using: &rng), minScale: 0.3, using: &rng)
    ]
  },
]

/// The number of random points per polygon. Debug builds test about 1.1 million points in all
/// (a few seconds).
private let pointsPerPolygon = 5_000

@Test func pointInPolygonEqualsGEOSPreparedCoversOnRandomPolygons() throws {
  let geos = try GEOSContext()
  var rng = SeededGenerator(seed: 0x5EED_9017)
  var tested = 0
  var nearEdge = 0
  for family in families {
    for k in 0..<family.count {
      let seedState = rng.state
      let rings = family.make(&rng)
      let normalized = try PolygonRegion.normalizedPolygons([rings])
      let geometry = try geos.polygon(rings: normalized)
      try #require(try geometry.validity() == .valid, "\(family.name) #\(k) seed \(seedState)")
      let region = try PolygonRegion(polygons: normalized)
      let prepared = try geometry.prepared()
      let boundary = try geometry.boundary()
      let padX = (region.maxLongitude - region.minLongitude) * 0.1
      let padY = (region.maxLatitude - region.minLatitude) * 0.1
      for _ in 0..<pointsPerPolygon {
        let x = Double.random(
          in: (region.minLongitude - padX)...(region.maxLongitude + padX), using: &rng)
        let y = min(
          90,
          max(
            -90,
            Double.random(
              in: (region.minLatitude - padY)...(region.maxLatitude + padY), using: &rng)
          ))
        let expected = try prepared.covers(x: x, y: y)
        // The query longitude as a fix would carry it, in [-180, 180].
        let wrapped = x > 180 ? x - 360 : (x < -180 ? x + 360 : x)
        let got = region.contains(Coordinate(uncheckedLatitude: y, longitude: wrapped))
        tested += 1
        if got != expected {
          let d = try boundary.distance(to: geos.point(x: x, y: y))
          nearEdge += 1
          #expect(
            d <= toleranceDegrees,
            "\(family.name) #\(k) (seed \(seedState)): (\(x), \(y)) ours \(got), GEOS \(expected), \(d)° from the edge"
          )
        }
      }
      // Every vertex is inside (the classic bug: a vertex judged outside).
      for ring in normalized[0] {
        for v in ring {
          let wrapped = v.x > 180 ? v.x - 360 : v.x
          #expect(
            region.contains(Coordinate(uncheckedLatitude: v.y, longitude: wrapped)),
            "\(family.name) #\(k): vertex (\(v.x), \(v.y)) outside")
          #expect(try prepared.covers(x: v.x, y: v.y))
        }
      }
    }
  }
  #expect(tested == families.reduce(0) { $0 + $1.count } * pointsPerPolygon)
  // Random points almost never land within 1e-9° of an edge.
  #expect(nearEdge <= 5)
}

@Test func pointsOnVerticesAndEdgesAreInside() throws {
  let geos = try GEOSContext()
  // A concave polygon with a hole, integer coordinates: edge midpoints are exact.
  let outer: [SIMD2<Double>] = [
    [0, 0], [10, 0], [10, 10], [6, 10], [5, 4], [4, 10], [0, 10], [0, 0],
  ]
  let hole: [SIMD2<Double>] = [[1, 1], [1, 3], [3, 3], [3, 1], [1, 1]]
  let region = try PolygonRegion(polygons: [[outer, hole]])
  let prepared = try geos.polygon(rings: [[outer, hole]]).prepared()
  for ring in [outer, hole] {
    for i in 0..<(ring.count - 1) {
      let a = ring[i]
      let b = ring[i + 1]
      for t in [0.0, 0.25, 0.5, 0.75] {
        let p = a + (b - a) * t
        #expect(region.contains(Coordinate(uncheckedLatitude: p.y, longitude: p.x)), "\(p)")
        #expect(try prepared.covers(x: p.x, y: p.y), "GEOS \(p)")
      }
    }
  }
  // The reflex vertex (5, 4) and points just around it.
  #expect(region.contains(Coordinate(uncheckedLatitude: 4, longitude: 5)))
  #expect(!region.contains(Coordinate(uncheckedLatitude: 4.5, longitude: 5)))
  #expect(region.contains(Coordinate(uncheckedLatitude: 3.5, longitude: 5)))
  // Inside the hole, outside the polygon, on the hole's edge.
  #expect(!region.contains(Coordinate(uncheckedLatitude: 2, longitude: 2)))
  #expect(!region.contains(Coordinate(uncheckedLatitude: 5, longitude: 11)))
  #expect(region.contains(Coordinate(uncheckedLatitude: 2, longitude: 3)))
  // The horizontal line through the top vertices (the crossing rule's half-open case).
  for x in stride(from: -1.0, through: 11, by: 0.5) {
    let expected = try prepared.covers(x: x, y: 10)
    #expect(region.contains(Coordinate(uncheckedLatitude: 10, longitude: x)) == expected, "\(x)")
  }
  // Edges that are not axis-aligned: points at a tenth of a micro-degree off the line are
  // judged as GEOS judges them, and points on it (within rounding) are inside.
  let slanted: [SIMD2<Double>] = [[0, 0], [3, 1], [1, 3], [0, 0]]
  let triangle = try PolygonRegion(polygons: [[slanted]])
  for t in stride(from: 0.05, to: 1, by: 0.05) {
    let on = SIMD2(3.0, 1.0) + (SIMD2(1.0, 3.0) - SIMD2(3.0, 1.0)) * t
    #expect(triangle.contains(Coordinate(uncheckedLatitude: on.y, longitude: on.x)), "\(on)")
    #expect(!triangle.contains(Coordinate(uncheckedLatitude: on.y + 1e-7, longitude: on.x + 1e-7)))
    #expect(triangle.contains(Coordinate(uncheckedLatitude: on.y - 1e-7, longitude: on.x - 1e-7)))
  }
}

/// `ring` with every edge cut into `pieces` equal parts (exact for integer coordinates and a
/// power-of-two `pieces`).
private func subdivided(_ ring: [SIMD2<Double>], pieces: Int) -> [SIMD2<Double>] {
  var out: [SIMD2<Double>] = []
  for i in 0..<(ring.count - 1) {
    for k in 0..<pieces {
      out.append(ring[i] + (ring[i + 1] - ring[i]) * (Double(k) / Double(pieces)))
    }
  }
  out.append(ring[0])
  return out
}

@Test func aDyadicLatticeEqualsGEOSOnVerticesEdgesAndInteriorsAtEverySize() throws {
  // The concave polygon with a hole above, with integer vertices: every point of a lattice of
  // step 1/16 is exact, and so is GEOS's judgement of it, boundary points included (vertices,
  // points on horizontal, vertical and slanted edges, the reflex vertex). Cut into 1, 4 and 16
  // pieces an edge the polygon has 11, 44 and 176 edges: the band test alone answers the first,
  // the cell grid (from 24 edges) the others, with cells of different sizes.
  let geos = try GEOSContext()
  let outer: [SIMD2<Double>] = [
    [0, 0], [10, 0], [10, 10], [6, 10], [5, 4], [4, 10], [0, 10], [0, 0],
  ]
  let hole: [SIMD2<Double>] = [[1, 1], [1, 3], [3, 3], [3, 1], [1, 1]]
  let prepared = try geos.polygon(rings: [[outer, hole]]).prepared()
  var expected: [Bool] = []
  var lattice: [SIMD2<Double>] = []
  for i in -16...176 {
    for j in -16...176 {
      let p = SIMD2(Double(i) / 16, Double(j) / 16)
      lattice.append(p)
      expected.append(try prepared.covers(x: p.x, y: p.y))
    }
  }
  #expect(expected.filter { $0 }.count > 10_000)
  for pieces in [1, 4, 16] {
    let region = try PolygonRegion(
      polygons: [[subdivided(outer, pieces: pieces), subdivided(hole, pieces: pieces)]])
    var wrong = 0
    for (p, want) in zip(lattice, expected)
    where region.contains(Coordinate(uncheckedLatitude: p.y, longitude: p.x)) != want {
      wrong += 1
      if wrong <= 5 { Issue.record("\(pieces) pieces: \(p) should be \(want ? "in" : "out")side") }
    }
    #expect(wrong == 0, "\(pieces) pieces an edge")
  }
}

@Test func pointsOnTheEdgesOfALargeRandomPolygonAreInside() throws {
  // Vertices and points on the edges (within rounding) of star polygons of 100 to 2,000
  // vertices, which the cell grid answers; points a micro-degree off an edge are judged as GEOS
  // judges them.
  let geos = try GEOSContext()
  var rng = SeededGenerator(seed: 0x6E1D)
  for _ in 0..<6 {
    let n = Int.random(in: 100...2000, using: &rng)
    let ring = starRing(
      cx: Double.random(in: -170...170, using: &rng), cy: Double.random(in: -60...60, using: &rng),
      rx: 0.01, ry: 0.008, n: n, minScale: 0.3, using: &rng)
    let region = try PolygonRegion(polygons: [[ring]])
    let prepared = try geos.polygon(rings: [[ring]]).prepared()
    for i in 0..<(ring.count - 1) {
      let a = ring[i]
      let b = ring[i + 1]
      for t in [0.0, 0.3, 0.5, 0.9] {
        let p = a + (b - a) * t
        #expect(region.contains(Coordinate(uncheckedLatitude: p.y, longitude: p.x)), "\(p)")
      }
      // A micro-degree to either side of the edge's middle.
      let m = (a + b) / 2
      let normal = SIMD2(b.y - a.y, a.x - b.x) / ((b - a) * (b - a)).sum().squareRoot() * 1e-6
      for q in [m + normal, m - normal] {
        #expect(
          region.contains(Coordinate(uncheckedLatitude: q.y, longitude: q.x))
            == (try prepared.covers(x: q.x, y: q.y)), "\(q)")
      }
    }
  }
}

@Test func aPolygonCutAtTheAntimeridianAnswersOnBothSides() throws {
  let geos = try GEOSContext()
  // RFC 7946 3.1.9: a box from 170° E to 170° W, cut at ±180 into a MultiPolygon.
  let east: [SIMD2<Double>] = [[170, -10], [180, -10], [180, 10], [170, 10], [170, -10]]
  let west: [SIMD2<Double>] = [[-180, -10], [-170, -10], [-170, 10], [-180, 10], [-180, -10]]
  let cut = try PolygonRegion(polygons: PolygonRegion.normalizedPolygons([[east], [west]]))
  // The same box written with longitudes past 180.
  let past: [SIMD2<Double>] = [[170, -10], [190, -10], [190, 10], [170, 10], [170, -10]]
  let whole = try PolygonRegion(polygons: PolygonRegion.normalizedPolygons([[past]]))
  let oracle = try geos.polygon(rings: [[past]]).prepared()
  var rng = SeededGenerator(seed: 180)
  for _ in 0..<20_000 {
    let x = Double.random(in: 160...200, using: &rng)
    let y = Double.random(in: -15...15, using: &rng)
    let wrapped = x > 180 ? x - 360 : x
    let point = Coordinate(uncheckedLatitude: y, longitude: wrapped)
    let expected = try oracle.covers(x: x, y: y)
    #expect(cut.contains(point) == expected, "\(x), \(y)")
    #expect(whole.contains(point) == expected, "\(x), \(y)")
  }
  for lon in [180.0, -180] {
    #expect(cut.contains(Coordinate(uncheckedLatitude: 0, longitude: lon)))
    #expect(whole.contains(Coordinate(uncheckedLatitude: 0, longitude: lon)))
  }
  // The bounding cap holds the whole box, centred on the antimeridian.
  #expect(abs(abs(whole.boundingCap.center.longitude) - 180) < 1e-9)
  for corner in [(-10.0, 170.0), (10, -170), (10, 170), (-10, -170)] {
    #expect(
      whole.boundingCap.contains(Coordinate(uncheckedLatitude: corner.0, longitude: corner.1)))
  }
}

@Test func edgeDistanceMatchesGEOSInALocalProjection() throws {
  // Near Neuchatel (47° N): the distance to a small polygon's boundary, against GEOS's planar
  // distance in the same equirectangular scaling (x scaled by cos φ of the point).
  let geos = try GEOSContext()
  var rng = SeededGenerator(seed: 47)
  let ring = starRing(cx: 6.93, cy: 47.0, rx: 0.02, ry: 0.015, n: 60, minScale: 0.4, using: &rng)
  let region = try PolygonRegion(polygons: [[ring]])
  let metersPerDegree = EarthModel.meanRadiusMeters * Double.pi / 180
  for _ in 0..<500 {
    let x = Double.random(in: 6.89...6.97, using: &rng)
    let y = Double.random(in: 46.97...47.03, using: &rng)
    let k = cos(y * Double.pi / 180)
    let scaled = ring.map { SIMD2(($0.x - x) * k * metersPerDegree, ($0.y - y) * metersPerDegree) }
    let boundary = try geos.polygon(rings: [[scaled]]).boundary()
    let expected = try boundary.distance(to: geos.point(x: 0, y: 0))
    let point = Coordinate(uncheckedLatitude: y, longitude: x)
    let got = region.boundaryDistance(to: point, notBeyond: .infinity)
    #expect(abs(got - expected) <= 1e-6 * max(1, expected), "\(x), \(y): \(got) vs \(expected)")
    // A limit below the distance gives a value beyond it; one above gives the distance.
    let limited = region.boundaryDistance(to: point, notBeyond: expected * 0.5)
    #expect(limited > expected * 0.5)
    #expect(abs(region.boundaryDistance(to: point, notBeyond: expected + 1) - got) < 1e-9)
  }
}

@Test func innerBoxesLieInsideByGEOS() throws {
  // `PolygonRegion.innerBox` lets a caller answer a point without the edge test: GEOS must
  // cover every point of it, corners included, on every family (holes, poles, antimeridian).
  let geos = try GEOSContext()
  var rng = SeededGenerator(seed: 0x1A4E_2B0C)
  var boxes = 0
  for family in families {
    for k in 0..<family.count {
      let seedState = rng.state
      let normalized = try PolygonRegion.normalizedPolygons([family.make(&rng)])
      let region = try PolygonRegion(polygons: normalized)
      let prepared = try geos.polygon(rings: normalized).prepared()
      guard let box = region.innerBox else { continue }
      boxes += 1
      #expect(box.minLongitude >= region.minLongitude && box.maxLongitude <= region.maxLongitude)
      var points: [SIMD2<Double>] = [
        [box.minLongitude, box.minLatitude], [box.maxLongitude, box.minLatitude],
        [box.minLongitude, box.maxLatitude], [box.maxLongitude, box.maxLatitude],
      ]
      for _ in 0..<500 {
        points.append(
          [
            Double.random(in: box.minLongitude...box.maxLongitude, using: &rng),
            Double.random(in: box.minLatitude...box.maxLatitude, using: &rng),
          ])
      }
      for p in points {
        #expect(
          try prepared.covers(x: p.x, y: p.y),
          "\(family.name) #\(k) (seed \(seedState)): (\(p.x), \(p.y)) of the inner box")
      }
    }
  }
  // Most families have grids: the test must have boxes to judge.
  #expect(boxes > 100)
}

/// Whether the segment from `a` to `b` meets the closed box (Liang–Barsky clipping).
private func segmentMeetsBox(
  _ a: SIMD2<Double>, _ b: SIMD2<Double>, _ left: Double, _ right: Double, _ bottom: Double,
  _ top: Double
) -> Bool {
  if Swift.max(a.x, b.x) < left || Swift.min(a.x, b.x) > right || Swift.max(a.y, b.y) < bottom
    || Swift.min(a.y, b.y) > top
  {
    return false
  }
  var t0 = 0.0
  var t1 = 1.0
  let d = b - a
  for (p, q) in [(-d.x, a.x - left), (d.x, right - a.x), (-d.y, a.y - bottom), (d.y, top - a.y)] {
    if p == 0 {
      if q < 0 { return false }
    } else {
      let t = q / p
      if p < 0 { t0 = Swift.max(t0, t) } else { t1 = Swift.min(t1, t) }
      if t0 > t1 { return false }
    }
  }
  return true
}

@Test func coverageMasksAgreeWithGEOS() throws {
  // `PolygonRegion.coverage` lets the box index answer a point without the edge test, or skip
  // the polygon: every subcell it decides must be decided the same way by GEOS at its corners
  // (grown by almost the promised 1e-9°), its centre and random points, and no vertex or point
  // on an edge may lie in a decided subcell. Blocks of every size, from a sixty-fourth of the
  // region to twice it, placed at random around it.
  let geos = try GEOSContext()
  var rng = SeededGenerator(seed: 0xC0_7E4A)
  var decided = 0
  var undecided = 0
  for family in families {
    for k in 0..<family.count {
      let seedState = rng.state
      let normalized = try PolygonRegion.normalizedPolygons([family.make(&rng)])
      let region = try PolygonRegion(polygons: normalized)
      let prepared = try geos.polygon(rings: normalized).prepared()
      let width = region.maxLongitude - region.minLongitude
      let height = region.maxLatitude - region.minLatitude
      // Points on the boundary: every vertex, and points along every edge.
      var boundary: [SIMD2<Double>] = []
      for ring in normalized.joined() {
        for i in 0..<(ring.count - 1) {
          boundary.append(ring[i])
          let t = Double.random(in: 0...1, using: &rng)
          boundary.append(ring[i] + t * (ring[i + 1] - ring[i]))
          boundary.append(ring[i] + 0.5 * (ring[i + 1] - ring[i]))
        }
      }
      for _ in 0..<6 {
        let fraction = exp(Double.random(in: log(1.0 / 64)...log(2.0), using: &rng)) / 16
        let w = width * fraction
        let h = height * fraction
        let x0 = Double.random(in: (region.minLongitude - 8 * w)...region.maxLongitude, using: &rng)
        let y0 = Double.random(in: (region.minLatitude - 8 * h)...region.maxLatitude, using: &rng)
        let masks = region.coverage(minLongitude: x0, minLatitude: y0, cellWidth: w, cellHeight: h)
        #expect(masks.inside & masks.outside == .zero)
        if region.maxLongitude >= 180 {
          #expect(
            masks.inside == .zero && masks.outside == .zero, "a frame past 180 decides nothing")
          continue
        }
        let label = "\(family.name) #\(k) (seed \(seedState)), block (\(x0), \(y0)) \(w) × \(h)"
        for bit in 0..<256 {
          let mask: UInt64 = 1 << UInt64(bit % 64)
          let inside = masks.inside[bit / 64] & mask != 0
          guard inside || masks.outside[bit / 64] & mask != 0 else {
            undecided += 1
            continue
          }
          decided += 1
          let c = Double(bit % 16)
          let r = Double(bit / 16)
          let grow = 0.9e-9
          let left = x0 + c * w - grow
          let right = x0 + (c + 1) * w + grow
          let bottom = y0 + r * h - grow
          let top = y0 + (r + 1) * h + grow
          var points: [SIMD2<Double>] = [
            [left, bottom], [right, bottom], [left, top], [right, top],
            [(left + right) / 2, (bottom + top) / 2],
          ]
          for _ in 0..<3 {
            points.append(
              [
                Double.random(in: left...right, using: &rng),
                Double.random(in: bottom...top, using: &rng),
              ])
          }
          for p in points where abs(p.y) <= 90 && abs(p.x) <= 180 {
            #expect(try prepared.covers(x: p.x, y: p.y) == inside, "\(label): (\(p.x), \(p.y))")
            #expect(
              region.contains(Coordinate(uncheckedLatitude: p.y, longitude: p.x)) == inside,
              "\(label): (\(p.x), \(p.y)) by the edge test")
          }
          for p in boundary where p.x >= left && p.x <= right && p.y >= bottom && p.y <= top {
            Issue.record("\(label): boundary point (\(p.x), \(p.y)) in a decided subcell")
          }
          // No edge comes within the promised margin of the subcell: each edge clipped to the
          // grown subcell must leave nothing (slanted edges that only their boxes would bring
          // near are judged by their own points).
          for ring in normalized.joined() {
            for i in 0..<(ring.count - 1)
            where segmentMeetsBox(ring[i], ring[i + 1], left, right, bottom, top) {
              Issue.record("\(label): edge \(ring[i]) – \(ring[i + 1]) meets a decided subcell")
            }
          }
        }
      }
    }
  }
  // Both kinds must occur for the test to judge anything.
  #expect(decided > 10_000 && undecided > 1_000, "\(decided) decided, \(undecided) not")
}

@Test func nearlyLevelEdgesAcrossASubcellRowLeaveTheirSubcellsUndecided() throws {
  // An edge whose latitudes differ by far less than its longitudes has a slope up to about
  // 5e7: any error in the longitude found at a row's latitude is scaled by it, and one far
  // below the 2e-9° margin in latitude would move the columns by far more than the margin.
  // Blocks are placed so that a subcell row's edge falls inside the nearly level edge's
  // latitudes; no decided subcell, grown by 0.9e-9°, may meet an edge.
  var rng = SeededGenerator(seed: 0x1E7E1)
  var decided = 0
  for k in 0..<400 {
    let x = Double.random(in: -170...170, using: &rng)
    let y = Double.random(in: -70...70, using: &rng)
    let length = Double.random(in: 0.005...0.05, using: &rng)
    let rise = exp(Double.random(in: log(1e-9)...log(1e-6), using: &rng))
    let height = length * Double.random(in: 0.3...1, using: &rng)
    // A quadrilateral whose lower edge rises by `rise` over `length`.
    let ring: [SIMD2<Double>] = [
      [x, y], [x + length, y + rise], [x + length, y + height], [x, y + height], [x, y],
    ]
    let normalized = try PolygonRegion.normalizedPolygons([[ring]])
    let region = try PolygonRegion(polygons: normalized)
    for _ in 0..<4 {
      let w = length / Double.random(in: 4...64, using: &rng)
      let h = w * Double.random(in: 0.5...2, using: &rng)
      // Row `r`'s lower edge at a latitude inside the lower edge's rise.
      let r = Int.random(in: 1...15, using: &rng)
      let y0 = y + Double.random(in: 0...1, using: &rng) * rise - Double(r) * h
      let x0 = x + Double.random(in: -4...12, using: &rng) * w
      let masks = region.coverage(minLongitude: x0, minLatitude: y0, cellWidth: w, cellHeight: h)
      for bit in 0..<256 {
        let mask: UInt64 = 1 << UInt64(bit % 64)
        guard (masks.inside[bit / 64] | masks.outside[bit / 64]) & mask != 0 else { continue }
        decided += 1
        let c = Double(bit % 16)
        let row = Double(bit / 16)
        let grow = 0.9e-9
        let (left, right) = (x0 + c * w - grow, x0 + (c + 1) * w + grow)
        let (bottom, top) = (y0 + row * h - grow, y0 + (row + 1) * h + grow)
        for ring in normalized.joined() {
          for i in 0..<(ring.count - 1)
          where segmentMeetsBox(ring[i], ring[i + 1], left, right, bottom, top) {
            let block = "(\(x0), \(y0)) \(w) × \(h)"
            Issue.record(
              "#\(k): edge \(ring[i]) – \(ring[i + 1]) meets decided subcell \(bit) of \(block)")
          }
        }
      }
    }
  }
  #expect(decided > 10_000, "\(decided) decided")
}

/// A closed star ring around (7, 47) of `vertices` positions alternating between radii 0.1°
/// and 0.01°: every edge spans about half the box.
private func spikyStar(vertices n: Int) -> [SIMD2<Double>] {
  var ring = (0..<n).map { i -> SIMD2<Double> in
    let a = Double(i) / Double(n) * 2 * Double.pi
    let r = i % 2 == 0 ? 0.1 : 0.01
    return SIMD2(7 + r * cos(a), 47 + r * sin(a))
  }
  ring.append(ring[0])
  return ring
}

/// A star of long spikes (every edge spans about half the box) would file each edge in a
/// share of all the grid's cells, O(n²) entries: the grid is coarsened until it holds at most
/// 64 entries an edge, and the answers still equal GEOS's (prepared covers).
@Test func aStarOfLongSpikesKeepsItsGridLinearAndEqualsGEOS() throws {
  let geos = try GEOSContext()
  let n = 6_000
  let ring = spikyStar(vertices: n)
  let region = try PolygonRegion(polygons: [[ring]])
  // Vertices (16 B), bands and grid (4 B an entry): far below n² entries (144 MB).
  #expect(region.memoryBytes < n * (16 + 4 * (64 + 8)), "\(region.memoryBytes) bytes")
  let geometry = try geos.polygon(rings: [[ring]])
  #expect(try geometry.validity() == .valid)
  let prepared = try geometry.prepared()
  let boundary = try geometry.boundary()
  var rng = SeededGenerator(seed: 6_000)
  var disagreements = 0
  for _ in 0..<4_000 {
    let x = Double.random(in: 6.89...7.11, using: &rng)
    let y = Double.random(in: 46.89...47.11, using: &rng)
    let expected = try prepared.covers(x: x, y: y)
    if region.contains(Coordinate(uncheckedLatitude: y, longitude: x)) != expected {
      disagreements += 1
      #expect(try boundary.distance(to: geos.point(x: x, y: y)) <= toleranceDegrees)
    }
  }
  #expect(disagreements <= 2)
}

/// GEOS's validity check is quadratic on such a star; with a budget it is interrupted and
/// reports so, and the next check (budgeted or not) runs normally.
@Test func aValidityCheckPastItsBudgetIsInterrupted() throws {
  let geos = try GEOSContext()
  let ring = spikyStar(vertices: 40_000)
  let star = try geos.polygon(rings: [[ring]])
  let start = Date()
  #expect(throws: GEOSError(code: .timeBudgetExceeded(0.2))) {
    try star.validity(timeBudgetSeconds: 0.2)
  }
  #expect(Date().timeIntervalSince(start) < 3)
  let square = try geos.polygon(fromWKT: "POLYGON ((0 0, 1 0, 1 1, 0 1, 0 0))")
  #expect(try square.validity(timeBudgetSeconds: 0.2) == .valid)
  #expect(try square.validity() == .valid)
  let bowTie = try geos.polygon(fromWKT: "POLYGON ((0 0, 1 1, 1 0, 0 1, 0 0))")
  guard case .invalid = try bowTie.validity(timeBudgetSeconds: 5) else {
    Issue.record("a bow tie is invalid")
    return
  }
}
