#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// π/180 rounded to a Double.
@usableFromInline let radiansPerDegree = 0.017453292519943295
/// π/180 − ``radiansPerDegree`` (from 50-digit π: 2.9486522708701687e-19).
@usableFromInline let radiansPerDegreeLow = 2.9486522708701687e-19
/// ``radiansPerDegree`` split in halves of 26 and 27 significant bits (Veltkamp's split,
/// 0x1.1df46ap-6 + 0x1.294e9c8p-33), so that each partial product with a 26-bit half of an
/// angle is exact.
@usableFromInline let radiansPerDegreeHigh = 0x1.1df46ap-6
/// ``radiansPerDegree`` − ``radiansPerDegreeHigh``.
@usableFromInline let radiansPerDegreeTail = 0x1.294e9c8p-33

/// Sine and cosine of an angle given in **degrees**, computed together, within 1.5 ulp of the
/// exact values (worst seen against 80-bit extended precision over 220,000 angles: 1.16 ulp).
///
/// Method: the angle is reduced exactly to `r ∈ [−45°, 45°]` with `d = r + 90° q` (exact
/// because `90 q` is an integer and `|r| <= |d|`), converted to radians as `x + low` with
/// `π/180` split in two Doubles (so the conversion is good to about 2⁻¹⁰⁶ relative), and both
/// functions are evaluated at `x` (`|x| <= π/4`) by polynomials in Estrin's form, `sin` to the
/// `x¹³` term and `cos` to `x¹⁴`, then corrected by `low` to first order. The coefficients
/// are Chebyshev fits of `(sin x − x) / x³` and `(cos x − 1 + x²/2) / x⁴` in `x²`
/// (`tools/geodesy/fit-sine-cosine.py`, 60-digit mpmath): the fits add at most 1.3e-17 of
/// relative error to `sin` and 5e-19 to `cos`, below a tenth of an ulp. The quadrant
/// `q mod 4` swaps and negates the pair.
/// Multiples of 90° give exact results (`sin 90° = 1`, `cos 90° = 0`), so the poles' unit
/// vectors are exactly `(0, 0, ±1)`; libm's `cos(90 · π/180)` is 6.1e-17 instead, and next to
/// multiples of 90° the libm route loses most of its relative accuracy to the rounding of the
/// unreduced radian angle.
///
/// This is lane 0 of ``sineCosine(degrees:)-(SIMD2<Double>)``, so the two always agree bit for
/// bit.
///
/// - Parameter degrees: any finite angle; `|degrees| > 1e9` falls back to libm `sin`/`cos` of
///   the angle in radians. NaN or ±∞ gives NaN for both.
/// - Returns: `(sin, cos)`, each in [−1, 1].
@inlinable
public func sineCosine(degrees d: Double) -> (sin: Double, cos: Double) {
  let pair = sineCosine(degrees: SIMD2(d, 0))
  return (pair.sin[0], pair.cos[0])
}

/// ``sineCosine(degrees:)-(Double)`` of two angles in degrees at once, lane by lane: each
/// lane's result is bit for bit what the scalar function returns for that lane's angle (the
/// same IEEE 754 operations in the same order; the quadrant's swap and signs are applied by
/// selection and exact multiplications by ±1 instead of a branch).
///
/// The two evaluations share the packed (SSE2) arithmetic, so both cost about what one does:
/// about 60 floating-point operations for the pair, and no call. A unit vector needs the
/// latitude's and the longitude's pair (see ``UnitVector/init(_:)``).
///
/// - Parameter degrees: two angles; a lane with `|angle| > 1e9` falls back to libm `sin`/`cos`
///   of that angle in radians, and NaN or ±∞ gives NaN for that lane.
/// - Returns: `(sin, cos)`, lane `i` for angle `i`, each in [−1, 1].
@inlinable
public func sineCosine(degrees d: SIMD2<Double>) -> (sin: SIMD2<Double>, cos: SIMD2<Double>) {
  guard abs(d[0]) <= 1e9 && abs(d[1]) <= 1e9 else { return sineCosineOutOfRange(d) }
  // Nearest quadrant q = round(d / 90) without a libm call: adding 1.5 · 2⁵² rounds to an
  // integer (|d / 90| < 2⁵¹), whose low bits are q in two's complement.
  let magic = SIMD2<Double>(repeating: 6_755_399_441_055_744)
  let shifted = d * (1.0 / 90.0) + magic
  let r = d - (shifted - magic) * 90
  // x + low = r · π/180 to about 2⁻¹⁰⁰: the product's rounding error, exact by Dekker's
  // two-product with Veltkamp's split (no FMA instruction needed), plus r times the part of
  // π/180 below the Double `π/180`.
  let x = r * radiansPerDegree
  let split = 134_217_729 * r  // 2^27 + 1
  let rHigh = split - (split - r)
  let rLow = r - rHigh
  let low =
    (((rHigh * radiansPerDegreeHigh - x) + rHigh * radiansPerDegreeTail) + rLow
      * radiansPerDegreeHigh) + rLow * radiansPerDegreeTail + r * radiansPerDegreeLow
  let z = x * x
  // Both polynomials by Estrin's scheme: three independent pairs, then two levels, so the
  // dependency chain is about half of Horner's (the latency, not the operation count, bounds
  // a query that needs the sines right away).
  let z2 = z * z
  // sin x = x + x³ P(z), P to the z⁵ term (x¹³).
  let p01 = -0x1.5555555555555p-3 + 0x1.1111111110bb2p-7 * z
  let p23 = -0x1.a01a019e83aaep-13 + 0x1.71de37968a100p-19 * z
  let p45 = -0x1.ae600b02b6262p-26 + 0x1.5e0b19f8b1451p-33 * z
  let p = p01 + z2 * (p23 + z2 * p45)
  let sine0 = x + (x * z) * p
  // cos x = 1 − z/2 + z² Q(z), Q to the z⁵ term (x¹⁴).
  let q01 = 0x1.5555555555555p-5 + -0x1.6c16c16c16967p-10 * z
  let q23 = 0x1.a01a019f4eb01p-16 + -0x1.27e4fa17da09ep-22 * z
  let q45 = 0x1.1eeb68e93b64cp-29 + -0x1.907da367a37cbp-37 * z
  let q = q01 + z2 * (q23 + z2 * q45)
  let half = 0.5 * z
  let w = 1 - half
  // Recover the rounding of 1 − z/2 before adding the small terms (Kahan-style correction).
  let cosine0 = w + (((1 - w) - half) + z2 * q)
  // sin(x + low) ≈ sin x + low cos x, cos(x + low) ≈ cos x − low sin x (|low| <= 2⁻⁵³ |x|).
  let sine = sine0 + low * cosine0
  let cosine = cosine0 - low * sine0
  // Quadrant q mod 4: 0 → (s, c), 1 → (c, −s), 2 → (−s, −c), 3 → (−c, s). Odd quadrants swap;
  // the sine is negated in quadrants 2 and 3, the cosine in 1 and 2 (negation is exact, and
  // so is multiplying by −1).
  let q0 = Int64(truncatingIfNeeded: shifted[0].bitPattern)
  let q1 = Int64(truncatingIfNeeded: shifted[1].bitPattern)
  let quadrant = SIMD2<Int64>(q0, q1)
  let swap = quadrant & 1 .!= 0
  let sineSign = SIMD2<Double>(1 &- 2 &* (quadrant &>> 1 & 1))
  let cosineSign = SIMD2<Double>(1 &- 2 &* ((quadrant ^ quadrant &>> 1) & 1))
  let s = sine.replacing(with: cosine, where: swap)
  let c = cosine.replacing(with: sine, where: swap)
  return (s * sineSign, c * cosineSign)
}

/// ``sineCosine(degrees:)-(SIMD2<Double>)`` when a lane is outside `±1e9` degrees or not a
/// number: such a lane from libm `sin`/`cos` of its angle in radians, the other as usual.
@usableFromInline
internal func sineCosineOutOfRange(_ d: SIMD2<Double>) -> (sin: SIMD2<Double>, cos: SIMD2<Double>) {
  var s = SIMD2<Double>()
  var c = SIMD2<Double>()
  for lane in 0..<2 {
    if abs(d[lane]) <= 1e9 {
      let inRange = sineCosine(degrees: SIMD2(d[lane], 0))
      (s[lane], c[lane]) = (inRange.sin[0], inRange.cos[0])
    } else {
      let x = radians(fromDegrees: d[lane])
      (s[lane], c[lane]) = (sin(x), cos(x))
    }
  }
  return (s, c)
}
