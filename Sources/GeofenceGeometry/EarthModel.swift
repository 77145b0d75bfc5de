/// The spherical Earth model every distance in the engine uses.
///
/// All great-circle distances, region radii and metre-to-angle conversions go through this one
/// type, so the radius is stated once.
///
/// Source: the IUGG mean Earth radius R1 = (2a + b) / 3 of the WGS84 ellipsoid,
/// 6,371,008.8 m (Moritz, "Geodetic Reference System 1980", Bulletin Géodésique 54, 1980;
/// the same value as s2geometry's `S2Earth::RadiusMeters()`). On the sphere a distance differs
/// from the WGS84 ellipsoidal (Vincenty / Karney) distance by at most about 0.5 %.
public enum EarthModel {
  /// Mean Earth radius in metres (IUGG, 6,371,008.8 m).
  public static let meanRadiusMeters: Double = 6_371_008.8

  /// Half the great-circle circumference in metres (π R, about 20,015,115 m): no two points on
  /// the sphere are farther apart.
  public static let halfCircumferenceMeters: Double = Double.pi * meanRadiusMeters

  /// Converts a surface distance in metres to the central angle in radians it subtends.
  @inlinable
  public static func radians(fromMeters meters: Double) -> Double {
    meters / meanRadiusMeters
  }

  /// Converts a central angle in radians to a surface distance in metres.
  @inlinable
  public static func meters(fromRadians radians: Double) -> Double {
    radians * meanRadiusMeters
  }
}

/// Degrees to radians.
@inlinable
public func radians(fromDegrees degrees: Double) -> Double { degrees * (Double.pi / 180) }

/// Radians to degrees.
@inlinable
public func degrees(fromRadians radians: Double) -> Double { radians * (180 / Double.pi) }
