import GeofenceGeometry
import GeofenceTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

#if arch(x86_64) || arch(i386)
  /// Oracle: `(cos φ cos λ, cos φ sin λ, sin φ)` in 80-bit extended precision, from
  /// `extendedSineCosine` (SineCosineTests.swift) of each angle.
  private func extendedUnitVector(_ c: Coordinate) -> (x: Float80, y: Float80, z: Float80) {
    let phi = extendedSineCosine(c.latitude)
    let lambda = extendedSineCosine(c.longitude)
    return (phi.cos * lambda.cos, phi.cos * lambda.sin, phi.sin)
  }

  /// The largest component error of `UnitVector(c)` against the oracle.
  private func componentError(_ c: Coordinate) -> Double {
    let v = UnitVector(c)
    let e = extendedUnitVector(c)
    return Double(
      max(abs(Float80(v.x) - e.x), abs(Float80(v.y) - e.y), abs(Float80(v.z) - e.z)))
  }

  /// The documented bound, 1.5e-15 a component, over random coordinates, every table node
  /// (multiples of 1/4°) and the midpoints between nodes (|t| = 1/8°, where the polynomials'
  /// truncation is largest), and angles a rounding away from them.
  @Test func unitVectorIsWithinItsBoundOfExtendedPrecision() {
    var rng = SeededGenerator(seed: 4_096)
    var worst = 0.0
    var angles: [Double] = []
    for k in -1_440...1_440 {
      let node = Double(k) / 8
      angles += [node, node.nextUp, node.nextDown]
    }
    for _ in 0..<300_000 { angles.append(Double.random(in: -180...180, using: &rng)) }
    for _ in 0..<10_000 { angles.append(Double.random(in: -1e-6...1e-6, using: &rng)) }
    for (k, lambda) in angles.enumerated() {
      let phi = max(-90, min(90, angles[(k &* 7_919) % angles.count] / 2))
      let c = Coordinate(uncheckedLatitude: phi, longitude: lambda)
      let e = componentError(c)
      worst = max(worst, e)
      #expect(e <= 1.5e-15, "(\(phi), \(lambda)): error \(e)")
    }
    // The oracle sees the rounding (about 1e-16 and more), so the bound is not vacuous.
    #expect(worst > 1e-16, "worst \(worst)")
  }
#endif

/// The table route is exact where the exact values are representable: at the poles, on the
/// equator at multiples of 90° of longitude, and at the antimeridian.
@Test func unitVectorIsExactAtPolesAndQuadrants() {
  #expect(
    UnitVector(Coordinate(uncheckedLatitude: 90, longitude: 37.3)) == UnitVector(x: 0, y: 0, z: 1))
  #expect(UnitVector(Coordinate(uncheckedLatitude: -90, longitude: -123)).z == -1)
  #expect(UnitVector(Coordinate(uncheckedLatitude: -90, longitude: -123)).x == 0)
  #expect(
    UnitVector(Coordinate(uncheckedLatitude: 0, longitude: 0)) == UnitVector(x: 1, y: 0, z: 0))
  #expect(
    UnitVector(Coordinate(uncheckedLatitude: 0, longitude: 90)) == UnitVector(x: 0, y: 1, z: 0))
  #expect(
    UnitVector(Coordinate(uncheckedLatitude: 0, longitude: 180)) == UnitVector(x: -1, y: 0, z: 0))
  #expect(
    UnitVector(Coordinate(uncheckedLatitude: 0, longitude: -180)) == UnitVector(x: -1, y: 0, z: 0))
}

/// The table route and the explicit-table initialiser (the grid index's) give the same bits;
/// out of range and NaN take the paired sine and cosine.
@Test func unitVectorRoutesAgree() {
  var rng = SeededGenerator(seed: 77)
  UnitVector.quarterDegreeTable.withUnsafeBufferPointer { table in
    for _ in 0..<20_000 {
      let c = Coordinate(
        uncheckedLatitude: Double.random(in: -90...90, using: &rng),
        longitude: Double.random(in: -180...180, using: &rng))
      let v = UnitVector(
        inRangeLatitude: c.latitude, longitude: c.longitude, table: table.baseAddress!)
      #expect(v == UnitVector(c))
    }
  }
  #expect(UnitVector(Coordinate(uncheckedLatitude: .nan, longitude: 3)).z.isNaN)
  #expect(UnitVector(Coordinate(uncheckedLatitude: 3, longitude: .nan)).y.isNaN)
  let far = UnitVector(Coordinate(uncheckedLatitude: 10, longitude: 370))
  let near = UnitVector(Coordinate(uncheckedLatitude: 10, longitude: 10))
  #expect(far.chordSquared(to: near) < 1e-29)
}
