#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A latitude/longitude box in degrees that may cross the antimeridian.
///
/// - `minLatitude <= maxLatitude`, both in [-90, 90].
/// - Longitudes are in [-180, 180]. When `minLongitude <= maxLongitude` the box spans
///   `[minLongitude, maxLongitude]`; when `minLongitude > maxLongitude` it **wraps** across
///   ±180 and spans `[minLongitude, 180] ∪ [-180, maxLongitude]`.
/// - A box touching a pole covers every longitude: `minLongitude == -180, maxLongitude == 180`.
///
/// All bounds are closed: a point on an edge is inside.
public struct BoundingBox: Hashable, Sendable {
  public var minLatitude: Double
  public var maxLatitude: Double
  public var minLongitude: Double
  public var maxLongitude: Double

  public init(minLatitude: Double, maxLatitude: Double, minLongitude: Double, maxLongitude: Double)
  {
    self.minLatitude = minLatitude
    self.maxLatitude = maxLatitude
    self.minLongitude = minLongitude
    self.maxLongitude = maxLongitude
  }

  /// The whole sphere.
  public static let world = BoundingBox(
    minLatitude: -90, maxLatitude: 90, minLongitude: -180, maxLongitude: 180)

  /// True when the box crosses the antimeridian.
  @inlinable public var wrapsAntimeridian: Bool { minLongitude > maxLongitude }

  /// True when the box spans all longitudes.
  @inlinable public var coversAllLongitudes: Bool {
    minLongitude <= -180 && maxLongitude >= 180
  }

  /// Longitude extent in degrees, in [0, 360].
  public var longitudeSpan: Double {
    wrapsAntimeridian ? (180 - minLongitude) + (maxLongitude + 180) : maxLongitude - minLongitude
  }

  /// Whether the closed box contains `c`. Longitude 180 and -180 are the same meridian.
  public func contains(_ c: Coordinate) -> Bool {
    guard c.latitude >= minLatitude, c.latitude <= maxLatitude else { return false }
    if coversAllLongitudes { return true }
    let lon = c.longitude
    if wrapsAntimeridian {
      return lon >= minLongitude || lon <= maxLongitude || lon == 180 || lon == -180
    }
    if lon == 180 || lon == -180 {
      return (minLongitude <= -180) || (maxLongitude >= 180)
    }
    return lon >= minLongitude && lon <= maxLongitude
  }

  /// Padding added on every side of a computed cap box, in degrees (1e-9 deg ≈ 0.1 mm), so that
  /// floating-point rounding never puts a point of the disc outside its box.
  public static let capPaddingDegrees: Double = 1e-9

  /// The smallest box (plus ``capPaddingDegrees``) that contains the spherical cap of angular
  /// radius `angularRadius` radians around `center`.
  ///
  /// Latitude: `[φ - δ, φ + δ]`, clamped at the poles; a cap that reaches a pole covers every
  /// longitude. Longitude: `λ ± asin(sin δ / cos φ)` — the exact half-width of a cap on the
  /// sphere (Bronshtein; also J. P. Matuschek, "Finding Points Within a Distance of a
  /// Latitude/Longitude Using Bounding Coordinates"), which is the angular radius widened by
  /// about 1/cos(latitude). A cap of δ >= π is the whole sphere.
  /// - Complexity: O(1).
  public static func cap(center: Coordinate, angularRadius delta: Double) -> BoundingBox {
    if !(delta < Double.pi) { return .world }
    let deltaDeg = degrees(fromRadians: delta) + capPaddingDegrees
    var minLat = center.latitude - deltaDeg
    var maxLat = center.latitude + deltaDeg
    var fullLongitude = false
    if maxLat >= 90 {
      maxLat = 90
      fullLongitude = true
    }
    if minLat <= -90 {
      minLat = -90
      fullLongitude = true
    }
    if fullLongitude {
      return BoundingBox(
        minLatitude: minLat, maxLatitude: maxLat, minLongitude: -180, maxLongitude: 180)
    }
    let phi = radians(fromDegrees: center.latitude)
    let ratio = sin(delta) / cos(phi)
    if !(ratio < 1) {
      return BoundingBox(
        minLatitude: minLat, maxLatitude: maxLat, minLongitude: -180, maxLongitude: 180)
    }
    let dLon = degrees(fromRadians: asin(ratio)) + capPaddingDegrees
    if dLon >= 180 {
      return BoundingBox(
        minLatitude: minLat, maxLatitude: maxLat, minLongitude: -180, maxLongitude: 180)
    }
    var minLon = center.longitude - dLon
    var maxLon = center.longitude + dLon
    if minLon < -180 { minLon += 360 }
    if maxLon > 180 { maxLon -= 360 }
    return BoundingBox(
      minLatitude: minLat, maxLatitude: maxLat, minLongitude: minLon, maxLongitude: maxLon)
  }
}
