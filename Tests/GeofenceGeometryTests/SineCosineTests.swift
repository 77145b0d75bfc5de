import GeofenceGeometry
import GeofenceTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

#if arch(x86_64) || arch(i386)
  /// Oracle: sine and cosine in 80-bit extended precision (64-bit significand, about 2,000 times
  /// finer than a Double's). The angle is first written exactly as `r + 90° q` with
  /// `|r| <= 45°` (exact in Double arithmetic), so that the extended-precision radian angle has
  /// a small relative error even next to multiples of 90°, where the function values are tiny.
  func extendedSineCosine(_ degrees: Double) -> (sin: Float80, cos: Float80) {
    let q = (degrees / 90).rounded()
    let r = degrees - 90 * q
    let x = Float80(r) * (Float80.pi / 180)
    let (s, c) = (sin(x), cos(x))
    switch ((Int(q) % 4) + 4) % 4 {
    case 0: return (s, c)
    case 1: return (c, -s)
    case 2: return (-s, -c)
    default: return (-c, s)
    }
  }

  /// Error in units of the last place of the Double nearest to `exact`.
  private func ulps(_ value: Double, _ exact: Float80) -> Double {
    let error = abs(Float80(value) - exact)
    let rounded = Double(exact)
    let ulp = rounded == 0 ? Double.leastNonzeroMagnitude : rounded.ulp
    return Double(error) / ulp
  }

  @Test func sineCosineIsWithinOneAndAHalfUlpOfExtendedPrecision() {
    var rng = SeededGenerator(seed: 90)
    var worst = 0.0
    var angles: [Double] = [
      0, 1e-300, 1e-9, 0.5, 30, 44.999_999, 45, 45.000_001, 60, 89.999_999_9,
      -179.999_999, 180, -180, 270, 359.999, 720.5, -1234.567,
    ]
    for _ in 0..<200_000 { angles.append(Double.random(in: -360...360, using: &rng)) }
    for _ in 0..<20_000 { angles.append(Double.random(in: -1e-6...1e-6, using: &rng)) }
    for d in angles {
      let (s, c) = sineCosine(degrees: d)
      let exact = extendedSineCosine(d)
      let e = max(ulps(s, exact.sin), ulps(c, exact.cos))
      worst = max(worst, e)
      #expect(e <= 1.5, "\(d)°: sin \(s) cos \(c), \(e) ulp")
    }
    // Rounding is visible to the oracle (worst seen: 1.16 ulp), so the bound is not vacuous.
    #expect(worst > 0.5, "the oracle should see rounding (worst \(worst) ulp)")
  }
#endif

@Test func sineCosineIsExactAtMultiplesOfNinetyDegrees() {
  for k in -8...8 {
    let (s, c) = sineCosine(degrees: Double(k) * 90)
    let expected: [(Double, Double)] = [(0, 1), (1, 0), (0, -1), (-1, 0)]
    let (es, ec) = expected[((k % 4) + 4) % 4]
    #expect(s == es && c == ec, "\(k * 90)°: (\(s), \(c))")
  }
  #expect(
    UnitVector(Coordinate(uncheckedLatitude: 90, longitude: 37)) == UnitVector(x: 0, y: 0, z: 1))
  #expect(UnitVector(Coordinate(uncheckedLatitude: -90, longitude: -123)).z == -1)
}

@Test func sineCosineOfNonFiniteAndHugeAngles() {
  #expect(sineCosine(degrees: .nan).sin.isNaN)
  #expect(sineCosine(degrees: .infinity).cos.isNaN)
  let big = 1e12 + 30
  let (s, c) = sineCosine(degrees: big)
  #expect(s == sin(big * (Double.pi / 180)) && c == cos(big * (Double.pi / 180)))
}

/// The paired evaluation is two independent lanes: lane 1 gives, bit for bit, what the scalar
/// function (lane 0) gives for the same angle, whatever the other lane holds, including the
/// libm fallback and NaN.
@Test func pairedSineCosineLanesAreIndependent() {
  var rng = SeededGenerator(seed: 180)
  var angles: [Double] = [
    0, -0.0, 45, -45, 90, -90, 180, -180, 270, 1e-300, 1e9, -1e9, 1e9.nextUp, 3e12, .nan,
    .infinity, -.infinity,
  ]
  for _ in 0..<20_000 { angles.append(Double.random(in: -540...540, using: &rng)) }
  func same(_ a: Double, _ b: Double) -> Bool {
    a.bitPattern == b.bitPattern || (a.isNaN && b.isNaN)
  }
  for (k, d) in angles.enumerated() {
    let other = angles[(k * 7 + 3) % angles.count]
    let pair = sineCosine(degrees: SIMD2(other, d))
    let single = sineCosine(degrees: d)
    let first = sineCosine(degrees: other)
    #expect(
      same(pair.sin[1], single.sin) && same(pair.cos[1], single.cos), "\(d)° beside \(other)°")
    #expect(same(pair.sin[0], first.sin) && same(pair.cos[0], first.cos), "\(other)° beside \(d)°")
  }
  // Out of range, the unit vector is the pair of the latitude and the longitude.
  let c = Coordinate(uncheckedLatitude: 47.376_888, longitude: 188.541_694)
  let (sl, cl) = sineCosine(degrees: c.latitude)
  let (sg, cg) = sineCosine(degrees: c.longitude)
  #expect(UnitVector(c) == UnitVector(x: cl * cg, y: cl * sg, z: sl))
}
