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
  /// `(cos φ cos λ, cos φ sin λ, sin φ)`.
  ///
  /// Sines and cosines come from ``sineCosine(degrees:)-(SIMD2<Double>)`` of the latitude and
  /// the longitude together (within about one ulp; exact at multiples of 90°, so the poles are
  /// exactly `(0, 0, ±1)`), the same values as two ``sineCosine(degrees:)-(Double)`` calls.
  /// - Complexity: O(1), one paired evaluation (about 60 floating-point operations on two
  ///   lanes, no libm call for coordinates in range).
  @inlinable
  public init(_ c: Coordinate) {
    let pair = sineCosine(degrees: SIMD2(c.latitude, c.longitude))
    self.init(sineCosine: pair)
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
  /// ``init(_:)`` is this initialiser on `sineCosine` of the coordinate, so a caller holding
  /// `sineCosine(degrees: latitude)` early (for `z` alone) gets the identical vector later.
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
