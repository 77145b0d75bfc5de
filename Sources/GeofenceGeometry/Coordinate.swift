/// A WGS84 position in decimal degrees.
///
/// - `latitude` is in [-90, 90] degrees, positive north.
/// - `longitude` is in [-180, 180] degrees, positive east. Both -180 and 180 are accepted and
///   name the same meridian; distances treat them as equal.
///
/// The validating initializer rejects NaN, infinities and out-of-range values; the
/// `unchecked` initializer is for callers that have validated already (the hot path).
public struct Coordinate: Hashable, Sendable, CustomStringConvertible {
  /// Latitude in degrees, [-90, 90].
  public let latitude: Double
  /// Longitude in degrees, [-180, 180].
  public let longitude: Double

  /// Creates a coordinate after checking its ranges.
  ///
  /// - Parameters:
  ///   - latitude: Degrees north, finite, in [-90, 90].
  ///   - longitude: Degrees east, finite, in [-180, 180].
  /// - Throws: `CoordinateError.invalidLatitude` or `.invalidLongitude` naming the bad value.
  public init(latitude: Double, longitude: Double) throws(CoordinateError) {
    guard latitude.isFinite, (-90.0...90.0).contains(latitude) else {
      throw .invalidLatitude(latitude)
    }
    guard longitude.isFinite, (-180.0...180.0).contains(longitude) else {
      throw .invalidLongitude(longitude)
    }
    self.latitude = latitude
    self.longitude = longitude
  }

  /// Creates a coordinate without checking. The caller guarantees the documented ranges.
  @inlinable
  public init(uncheckedLatitude latitude: Double, longitude: Double) {
    self.latitude = latitude
    self.longitude = longitude
  }

  public var description: String { "(\(latitude), \(longitude))" }

  /// Great-circle (haversine) distance to `other` in metres on the IUGG mean sphere.
  ///
  /// Always in [0, π R]. See ``haversineDistance(_:_:)``.
  /// - Complexity: O(1), five trigonometric calls.
  @inlinable
  public func distance(to other: Coordinate) -> Double {
    haversineDistance(self, other)
  }
}

/// Why a coordinate was rejected.
public enum CoordinateError: Error, Equatable, Sendable, CustomStringConvertible {
  /// Latitude not finite or outside [-90, 90] degrees.
  case invalidLatitude(Double)
  /// Longitude not finite or outside [-180, 180] degrees.
  case invalidLongitude(Double)

  public var description: String {
    switch self {
    case .invalidLatitude(let v): return "latitude \(v) is not a finite value in [-90, 90]"
    case .invalidLongitude(let v): return "longitude \(v) is not a finite value in [-180, 180]"
    }
  }
}
