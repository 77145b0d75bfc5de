#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The haversine term `hav(θ) = sin²(Δφ/2) + cos φ1 cos φ2 sin²(Δλ/2)` of the central angle θ
/// between two coordinates, clamped to [0, 1] so that rounding never makes `asin` fail.
///
/// `θ = 2 asin(√hav)`. Useful for comparing distances without the `asin`.
/// - Complexity: O(1).
@inlinable
public func haversineTerm(_ a: Coordinate, _ b: Coordinate) -> Double {
  let phi1 = radians(fromDegrees: a.latitude)
  let phi2 = radians(fromDegrees: b.latitude)
  let dPhi = phi2 - phi1
  let dLambda = radians(fromDegrees: b.longitude - a.longitude)
  let s1 = sin(dPhi / 2)
  let s2 = sin(dLambda / 2)
  let h = s1 * s1 + cos(phi1) * cos(phi2) * s2 * s2
  return min(1, max(0, h))
}

/// Great-circle distance between two coordinates in metres, by the haversine formula on the
/// IUGG mean sphere (``EarthModel/meanRadiusMeters``).
///
/// Defined for all pairs, including antipodal points (the haversine term is clamped to [0, 1],
/// so the result is never NaN) and points across the antimeridian (longitudes -180 and 180 are
/// the same meridian). Result in [0, π R] metres. Well conditioned for short and medium
/// distances (rounding error well below a millimetre); within a few hundred metres of the
/// antipode the formula loses precision and the error can reach about 0.3 m.
///
/// Source: R. W. Sinnott, "Virtues of the Haversine", Sky and Telescope 68 (2), 1984.
/// - Complexity: O(1).
@inlinable
public func haversineDistance(_ a: Coordinate, _ b: Coordinate) -> Double {
  2 * EarthModel.meanRadiusMeters * asin(haversineTerm(a, b).squareRoot())
}
