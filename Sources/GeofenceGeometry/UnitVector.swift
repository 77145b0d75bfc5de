#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A point on the unit sphere in Earth-centred Cartesian coordinates (x toward lat 0 / lon 0,
/// y toward lat 0 / lon 90 E, z toward the north pole). Dimensionless, |v| = 1 up to rounding.
///
/// The squared chord between two unit vectors is `4 hav(θ)` where θ is their central angle, so
/// containment tests need only subtractions and multiplications, no trigonometry per candidate.
/// The component differences are computed directly, so there is no cancellation for short
/// distances (unlike `1 - a·b`).
public struct UnitVector: Hashable, Sendable {
  public var x: Double
  public var y: Double
  public var z: Double

  @inlinable
  public init(x: Double, y: Double, z: Double) {
    self.x = x
    self.y = y
    self.z = z
  }

  /// The unit vector of a WGS84 coordinate (treated as spherical):
  /// `(cos φ cos λ, cos φ sin λ, sin φ)`, each component within 1.5e-15 of the exact value
  /// (about 10 nm on the Earth).
  ///
  /// A coordinate in range (latitude in [−90, 90], longitude in [−180, 180] degrees) takes
  /// ``init(inRangeLatitude:longitude:table:)`` on ``quarterDegreeTable``, exact at multiples
  /// of 90° (the poles are exactly `(0, 0, ±1)`). Any other (possible with
  /// `Coordinate(uncheckedLatitude:longitude:)`) takes ``sineCosine(degrees:)-(SIMD2<Double>)``
  /// of the latitude and the longitude; NaN gives NaN components.
  ///
  /// This is the vector every containment test of the engine uses, for centres and fixes
  /// alike: the grid index's query computes the same bits from its own reference to the table.
  /// - Complexity: O(1): two reads from a 23 KB table and about 20 floating-point operations on
  ///   two lanes.
  @inlinable
  public init(_ c: Coordinate) {
    if abs(c.latitude) <= 90 && abs(c.longitude) <= 180 {
      self = UnitVector.quarterDegreeTable.withUnsafeBufferPointer {
        UnitVector(
          inRangeLatitude: c.latitude, longitude: c.longitude,
          table: $0.baseAddress.unsafelyUnwrapped)
      }
    } else {
      self.init(sineCosine: sineCosine(degrees: SIMD2(c.latitude, c.longitude)))
    }
  }

  /// `(sin, cos)` of every multiple of 1/4° from −180° to 180°: entry `k + 720` is that of
  /// `k/4` degrees, `k` in −720 ... 720 (1,441 entries of 16 bytes, 23 KB, built once), from
  /// ``sineCosine(degrees:)-(Double)`` (within 1.5 ulp; exact at multiples of 90°).
  public static let quarterDegreeTable: [SIMD2<Double>] = (-720...720).map { k in
    let pair = sineCosine(degrees: Double(k) / 4)
    return SIMD2(pair.sin, pair.cos)
  }

  /// ``init(_:)`` of a coordinate in range, given ``quarterDegreeTable``'s storage, for a loop
  /// that holds the table (the grid index's query) and so skips the global's lazy
  /// initialisation check.
  ///
  /// Method: each angle `a` is split into the nearest multiple of 1/4°, `a₀ = k/4`, and
  /// `t = a − a₀` (both exact, `|t| <= 1/8°`); with `x = t · π/180` (`|x| <= 2.19e-3` rad),
  /// `sin a = sin a₀ cos x + cos a₀ sin x` and `cos a = cos a₀ cos x − sin a₀ sin x`, the
  /// node's pair from the table and `sin x = x − x³/6 + x⁵/120`, `cos x = 1 − x²/2 + x⁴/24`.
  /// Error per sine or cosine: the table's 1.5 ulp (1.7e-16), the polynomials' truncation
  /// (`x⁷/5040 < 2e-22`, `x⁶/720 < 2e-19`), three roundings of the sum (3.4e-16 at most):
  /// within 5.2e-16 of exact, so each component (a product of two) within 1.2e-15.
  /// `UnitVectorTests` measures the largest error against 80-bit extended precision.
  ///
  /// - Parameters:
  ///   - latitude: degrees in [−90, 90]; longitude: degrees in [−180, 180]. **Precondition**,
  ///     not checked: outside those ranges, or NaN, the table is read out of bounds.
  ///   - table: the storage of ``quarterDegreeTable``.
  /// - Complexity: O(1), as ``init(_:)``.
  @inlinable @inline(__always)
  public init(
    inRangeLatitude latitude: Double, longitude: Double, table: UnsafePointer<SIMD2<Double>>
  ) {
    let angle = SIMD2(latitude, longitude)
    // Nearest multiple of 1/4°: adding 1.5 · 2⁵² to 4a rounds it to an integer k (|4a| <= 720)
    // held in the low bits of the sum; k/4 and t = a − k/4 are exact (t by Sterbenz's lemma,
    // or t = a when k = 0), and |t| <= 1/8.
    let magic = SIMD2<Double>(repeating: 6_755_399_441_055_744)
    let shifted = angle * 4 + magic
    let t = angle - (shifted - magic) * 0.25
    let x = t * radiansPerDegree
    let z = x * x
    let sineT = x + (x * z) * (-1.0 / 6 + z * (1.0 / 120))
    let cosineT = 1 + z * (-0.5 + z * (1.0 / 24))
    let p = table[Int(Int32(truncatingIfNeeded: shifted[0].bitPattern)) &+ 720]
    let q = table[Int(Int32(truncatingIfNeeded: shifted[1].bitPattern)) &+ 720]
    let sineNode = SIMD2(p[0], q[0])
    let cosineNode = SIMD2(p[1], q[1])
    let sine = sineNode * cosineT + cosineNode * sineT
    let cosine = cosineNode * cosineT - sineNode * sineT
    self.x = cosine[0] * cosine[1]
    self.y = cosine[0] * sine[1]
    self.z = sine[0]
  }

  /// The unit vector from ``sineCosine(degrees:)-(SIMD2<Double>)`` of `(latitude, longitude)`
  /// in degrees: lane 0 is the latitude's pair, lane 1 the longitude's. Three multiplications.
  @inlinable
  public init(sineCosine pair: (sin: SIMD2<Double>, cos: SIMD2<Double>)) {
    self.init(latitude: (pair.sin[0], pair.cos[0]), longitude: (pair.sin[1], pair.cos[1]))
  }

  /// The unit vector `(cos φ cos λ, cos φ sin λ, sin φ)` from the sine and cosine of the
  /// latitude φ and the longitude λ, as ``sineCosine(degrees:)`` returns them.
  ///
  /// Each pair is `(sin, cos)` of one angle, components in [−1, 1]; pairs that are not of one
  /// angle give a vector that is not of unit length (no check is made).
  ///
  /// ``init(_:)`` is this initialiser on `sineCosine` of a coordinate out of range only; in
  /// range it takes the table (within 1.5e-15 of this, not bit for bit).
  /// - Complexity: O(1), three multiplications.
  @inlinable
  public init(
    latitude phi: (sin: Double, cos: Double), longitude lambda: (sin: Double, cos: Double)
  ) {
    self.x = phi.cos * lambda.cos
    self.y = phi.cos * lambda.sin
    self.z = phi.sin
  }

  /// Squared chord length to `other` (dimensionless, in [0, 4]).
  @inlinable
  public func chordSquared(to other: UnitVector) -> Double {
    let dx = x - other.x
    let dy = y - other.y
    let dz = z - other.z
    return dx * dx + dy * dy + dz * dz
  }

  /// Squared chord of a central angle `theta` (radians): `4 sin²(θ/2)`; 4 for θ >= π.
  @inlinable
  public static func chordSquared(forAngle theta: Double) -> Double {
    if theta >= Double.pi { return 4 }
    let s = sin(theta / 2)
    return 4 * s * s
  }
}
