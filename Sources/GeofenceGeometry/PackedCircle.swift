/// A valid circle's centre and radius, without the unit vector and threshold that
/// ``CircularRegion`` precomputes: 24 bytes, where a region takes 56. The form in which the
/// definition readers hand circles to the engine and in which a region set keeps them.
public struct PackedCircle: Hashable, Sendable {
  /// Centre of the disc.
  public let center: Coordinate
  /// Radius in metres, finite and > 0.
  public let radiusMeters: Double

  /// The centre and radius of `region`. O(1).
  @inlinable
  public init(_ region: CircularRegion) {
    center = region.center
    radiusMeters = region.radiusMeters
  }

  /// A circle after the radius check of ``CircularRegion/init(center:radiusMeters:)``, without
  /// its trigonometry.
  /// - Throws: `RegionError.invalidRadius` when `radiusMeters` is NaN, infinite, zero or
  ///   negative.
  /// - Complexity: O(1).
  @inlinable
  public init(center: Coordinate, radiusMeters: Double) throws(RegionError) {
    guard radiusMeters.isFinite, radiusMeters > 0 else { throw .invalidRadius(radiusMeters) }
    self.center = center
    self.radiusMeters = radiusMeters
  }

  /// The region: the same bits as the ``CircularRegion`` the circle was packed from or checked
  /// like. O(1), one paired sine and cosine and one sine.
  public var region: CircularRegion {
    do {
      return try CircularRegion(center: center, radiusMeters: radiusMeters)
    } catch {
      preconditionFailure("a packed radius was checked when packed: \(error)")
    }
  }
}
